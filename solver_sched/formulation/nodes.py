"""Concrete node bookkeeping: free capacity per node while pods are placed and evicted.

Used by the greedy backend (which places pod by pod) and by the packer that turns the solver's
per-class counts into nodes. Best fit: among feasible nodes, the one left with the fewest free
GPUs (then least free CPU), which keeps whole nodes free for large pods.
"""

from __future__ import annotations

from collections.abc import Iterable

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Pod
from solver_sched.domain.snapshot import ClusterSnapshot


class NodeState:
    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.snapshot = snapshot
        self.free: dict[str, dict[str, int]] = {}
        for name, node in snapshot.nodes.items():
            used = res.total(p.requests for p in snapshot.pods_by_node.get(name, ()))
            self.free[name] = res.sub(node.allocatable, used)
        self._feasible: dict[object, tuple[str, ...]] = {}

    def feasible(self, pod: Pod) -> tuple[str, ...]:
        """Schedulable nodes whose labels/taints admit the pod and that could hold it empty."""
        key = (pod.constraints, res.key(pod.requests))
        if key not in self._feasible:
            self._feasible[key] = tuple(
                n.name
                for n in sorted(self.snapshot.nodes.values(), key=lambda n: n.name)
                if n.schedulable
                and pod.constraints.allows(n.labels, n.taints, n.name)
                and res.fits(pod.requests, n.allocatable)
            )
        return self._feasible[key]

    def best_fit(self, pod: Pod, candidates: Iterable[str]) -> str | None:
        best, best_key = None, None
        for name in candidates:
            free = self.free[name]
            if not res.fits(pod.requests, free):
                continue
            k = (
                free.get(res.GPU, 0) - pod.requests.get(res.GPU, 0),
                free.get(res.CPU, 0) - pod.requests.get(res.CPU, 0),
                name,
            )
            if best_key is None or k < best_key:
                best, best_key = name, k
        return best

    def take(self, pod: Pod, node: str) -> None:
        self.free[node] = res.sub(self.free[node], pod.requests)

    def give_back(self, pod: Pod, node: str) -> None:
        self.free[node] = res.add(self.free[node], pod.requests)
