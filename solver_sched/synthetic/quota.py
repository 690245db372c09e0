"""The ElasticQuotaTree of a generated cluster, and the usage its limits allow while running gangs
are placed (a real cluster admitted them under the same limits)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from solver_sched.io import manifests as m
from solver_sched.synthetic.spec import ClusterSpec

GPU = "nvidia.com/gpu"


@dataclass
class Limits:
    """GPU max per leaf and parent, and running jobs per leaf; ``admit`` checks a gang."""

    leaf_max: list[int]
    parent_max: list[int]
    leaf_jobs: list[int | None]
    per_parent: int
    leaf_used: list[int] = field(default_factory=list)
    parent_used: list[int] = field(default_factory=list)
    leaf_running: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.leaf_used = [0] * len(self.leaf_max)
        self.parent_used = [0] * len(self.parent_max)
        self.leaf_running = [0] * len(self.leaf_max)

    def admit(self, leaf: int, gpus: int) -> bool:
        parent = leaf // self.per_parent
        cap = self.leaf_jobs[leaf]
        return (
            self.leaf_used[leaf] + gpus <= self.leaf_max[leaf]
            and self.parent_used[parent] + gpus <= self.parent_max[parent]
            and (cap is None or self.leaf_running[leaf] < cap)
        )

    def add(self, leaf: int, gpus: int) -> None:
        self.leaf_used[leaf] += gpus
        self.parent_used[leaf // self.per_parent] += gpus
        self.leaf_running[leaf] += 1


def quota_tree(spec: ClusterSpec, total_gpus: int) -> tuple[dict[str, Any] | None, Limits]:
    """``loose``: leaf mins add up to 70% of the GPUs, a leaf may borrow up to half the cluster
    and a parent up to 3/4 of it. ``tight``: the mins add up to all GPUs, a leaf borrows at most a
    quarter of its min and a parent a tenth of its own. ``none``: no tree, no limits."""
    leaves, per = spec.leaves, spec.leaves_per_parent
    if spec.quota == "none":
        unlimited = Limits([total_gpus] * leaves, [total_gpus] * spec.parents, [None] * leaves, per)
        return None, unlimited
    tight = spec.quota == "tight"
    leaf_min = total_gpus // leaves if tight else int(0.7 * total_gpus) // leaves
    leaf_max = leaf_min + leaf_min // 4 if tight else max(leaf_min, total_gpus // 2)
    parent_min = leaf_min * per
    parent_max = parent_min + parent_min // 10 if tight else max(parent_min, 3 * total_gpus // 4)
    # max-jobs: about what an even share of the running gangs needs, so busy teams hit it
    jobs_cap = max(2, total_gpus // (3 * leaves)) if spec.max_jobs else None
    parents = []
    for p in range(spec.parents):
        children = []
        for i in range(p * per, (p + 1) * per):
            mx: dict[str, str] = {GPU: str(leaf_max)}
            if jobs_cap is not None:
                mx["kube-queue/max-jobs"] = str(jobs_cap)
            children.append(
                {
                    "name": f"team-{i:02d}",
                    "namespaces": [f"team-{i:02d}"],
                    "min": {GPU: str(leaf_min)},
                    "max": mx,
                }
            )
        parents.append(
            {
                "name": f"org-{p}",
                "min": {GPU: str(parent_min)},
                "max": {GPU: str(parent_max)},
                "children": children,
            }
        )
    root = {"name": "root", "min": {GPU: str(total_gpus)}, "max": {GPU: str(total_gpus)}}
    tree = m.quota_tree({**root, "children": parents})
    limits = Limits([leaf_max] * leaves, [parent_max] * spec.parents, [jobs_cap] * leaves, per)
    return tree, limits
