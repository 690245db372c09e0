"""Gang sizes and shapes, calibrated on public GPU traces.

The mixes are the output of ``python -m benchmarks.calibrate`` (ITP cluster04 and Philly pooled,
sizes rounded up to powers of two): ``ARRIVALS`` is the jobs by count (what a queue of recent
arrivals holds), ``IN_FLIGHT`` the jobs running at an instant (length-biased: long, large jobs
weigh more). A cluster with a queue holds something in between, so running gangs are drawn from
a blend of the two (``blend`` 0 = arrivals, 1 = in flight) and pending gangs from the arrivals.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SIZES = (1, 2, 4, 8, 16, 32, 64)
ARRIVALS = (0.851, 0.007, 0.029, 0.098, 0.007, 0.008, 0.0002)  # mean 2.16 GPUs
IN_FLIGHT = (0.519, 0.030, 0.077, 0.303, 0.027, 0.041, 0.003)  # mean 5.27 GPUs


def mix(blend: float) -> tuple[float, ...]:
    """Weights over SIZES, ``blend`` of the way from the arrivals' mix to the in-flight one."""
    return tuple((1 - blend) * a + blend * f for a, f in zip(ARRIVALS, IN_FLIGHT, strict=True))


def mean_gpus(weights: tuple[float, ...]) -> float:
    return sum(s * w for s, w in zip(SIZES, weights, strict=True)) / sum(weights)


@dataclass(frozen=True)
class GangShape:
    """``pods`` pods of ``gpus`` GPUs each; elastic between ``min_pods`` and ``max_pods``."""

    pods: int
    gpus: int
    min_pods: int
    max_pods: int

    @property
    def elastic(self) -> bool:
        return self.min_pods != self.max_pods


def draw_gpus(rng: random.Random, weights: tuple[float, ...], largest: int) -> int:
    """A gang's GPUs from the mix, capped at ``largest`` (a small cluster holds no 64-GPU gang)."""
    return min(rng.choices(SIZES, weights=weights)[0], largest)


def draw_shape(
    rng: random.Random, total: int, node_gpus: int, elastic: bool, running: bool
) -> GangShape:
    """Pods for ``total`` GPUs on nodes of ``node_gpus``: whole-node pods for gangs of a node or
    more (some in half- or one-GPU pods), otherwise one pod or one GPU per pod.

    Elastic gangs run at a power-of-two size: a running one at ``total`` GPUs with a min and a max
    around it, a pending one wants ``total`` at most (a one-pod gang: two) and starts from a min
    below."""
    if total >= node_gpus:
        per_pod = rng.choices((node_gpus, node_gpus // 2, 1), weights=(7, 2, 1))[0]
    else:
        per_pod = rng.choice((total, 1))
    per_pod = max(1, per_pod)
    pods = max(1, total // per_pod)
    if not elastic:
        return GangShape(pods, per_pod, pods, pods)
    if running:
        low = max(1, pods >> rng.choice((0, 1, 2)))
        high = pods << rng.choice((0, 1, 2))
        if low == high:
            high = pods * 2
        return GangShape(pods, per_pod, low, high)
    if pods == 1:  # a one-pod gang may still grow
        return GangShape(2, per_pod, 1, 2)
    return GangShape(pods, per_pod, max(1, pods >> rng.choice((1, 2))), pods)
