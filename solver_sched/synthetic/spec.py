"""What a generated cluster looks like: the knobs of ``cluster.cluster_objects``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GPU_PRODUCT = "nvidia.com/gpu.product"  # the GPU feature discovery label
MODEL_RESOURCE = "solver-sched.io/gpu-"  # + model: GPU model as an extended resource


@dataclass(frozen=True)
class NodeType:
    model: str  # GPU product; a label or an extended resource, see ClusterSpec.gpu_model_as
    share: float  # of the nodes
    gpus: int
    cpu: int  # cores
    memory_gi: int


A100_8 = NodeType("A100-SXM4-80GB", 1.0, 8, 96, 1024)
L4_4 = NodeType("L4", 1.0, 4, 64, 512)


@dataclass(frozen=True)
class ClusterSpec:
    """A cluster family; ``nodes`` and the seed make an instance.

    Load is what every bound pod holds (ours and other schedulers') over all GPUs. Running gangs
    are placed first fit (``spread`` of them on the emptiest nodes instead) until the load
    is reached; then ``pending_ratio`` pending gangs per running one are submitted."""

    nodes: int
    node_types: tuple[NodeType, ...] = (A100_8,)
    gpu_model_as: Literal["label", "resource"] = "label"
    pinned: float = 0.0  # share of gangs that ask for one GPU model
    load: float = 0.85
    foreign: float = 0.0  # share of the GPUs held by other schedulers' pods (1-2 GPU services)
    foreign_cpu: float = 0.0  # share of the CPU held by other schedulers' CPU-only pods
    spread: float = 0.0  # share of running gangs spread over the emptiest nodes
    pending_ratio: float = 0.5
    blend: float = 0.42  # running gangs: 0 = the traces' arrivals mix, 1 = their in-flight mix
    pending_blend: float = 0.0  # the same for pending gangs (large gangs wait longer)
    priorities: tuple[tuple[int, float], ...] = ((0, 0.6), (100, 0.3), (1000, 0.1))
    elastic: float = 0.4
    cooldown: float = 0.25  # share of running elastic gangs inside their cooldown
    quota: Literal["loose", "tight", "none"] = "loose"
    parents: int = 4
    leaves_per_parent: int = 4
    skew: float = 0.0  # Zipf exponent of the teams' share of the jobs (0: even)
    max_jobs: bool = False  # leaves cap their running jobs (kube-queue/max-jobs)

    @property
    def leaves(self) -> int:
        return self.parents * self.leaves_per_parent
