"""Concrete node bookkeeping: free capacity per node while pods are placed and evicted.

Used by the greedy backend (which places pod by pod) and by the packer that turns the solver's
per-class counts into nodes. Best fit: among the nodes a pod may use, one with the fewest free GPUs
that still holds it, which keeps whole nodes free for large pods.

Speed matters at 10,000 nodes: each pool of candidate nodes (same constraints, cluster, optional
class) keeps its nodes in buckets by free GPUs, so a pick looks at the few buckets at or above the
pod's need instead of scanning every node.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Pod
from solver_sched.domain.snapshot import ClusterSnapshot

Fence = tuple[str, tuple[str, ...]]  # (topology level key, domain): the nodes a pick may use
PoolKey = tuple[object, str, int | None, Fence | None]  # (pod kind, cluster, class, fence)


class _Pool:
    """A pod shape's candidate nodes in buckets by free GPUs, each bucket in the order its nodes
    entered it (``seq``): best fit takes the first that holds the pod in the lowest bucket."""

    def __init__(self, nodes: Iterable[str], free: Mapping[str, res.Resources]) -> None:
        self.buckets: dict[int, dict[str, None]] = defaultdict(dict)
        self.level: dict[str, int] = {}
        self.seq: dict[str, int] = {}  # when a node entered its bucket: its place there
        self.count = 0
        # How often a node had given room back when a pick last failed (a pool holds one request
        # shape): taking only shrinks room, so the pick fails again until a node gets room back.
        # On fragmented clusters (GPUs free, CPU taken by other pods) a failing pick scanned
        # every node: greedy at L fragmented made 1.47 M fits tests for 4,753 picks (dev seed 1;
        # greedy 1.77 -> 1.55 s and 2.54 -> 1.57 s on dev seeds 1-2, loaded, same plans).
        self.grown = 0
        self.failed_at: int | None = None
        # (grown, n): n picks in a row failed with ``grown`` as it is now, i.e. the pool's nodes
        # hold fewer than n pods of its request (each node holds a fixed number of copies,
        # whatever the order of the picks, and taking room only lowers it). A gang of n or more
        # such pods then fails again without a pick: greedy's starts on fragmented clusters
        # placed part of the same gang and rolled it back thousands of times (XL fragmented).
        self.short: tuple[int, int] | None = None
        # Nodes the pool's request did not fit when a pick tested them, out of their buckets
        # until they get room back: the same argument per node. Successful picks tested them
        # again and again (XL fragmented, dev seed 1: 16.8 M fits tests for 25,382 picks, most
        # of greedy's 34 s), then stepped over them (a fifth of greedy's pass there).
        self.dead: set[str] = set()
        for n in nodes:
            self.put(n, free[n].get(res.GPU, 0))

    def put(self, node: str, gpus: int) -> None:
        self.level[node] = gpus
        self.seq[node] = self.count
        self.count += 1
        if node not in self.dead:
            self.buckets[gpus][node] = None

    def move(self, node: str, gpus: int) -> None:
        old = self.level[node]
        if old != gpus:
            if node not in self.dead:
                del self.buckets[old][node]
            self.put(node, gpus)

    def bury(self, node: str) -> None:
        """The pool's request does not fit the node: out of its bucket, in its place."""
        del self.buckets[self.level[node]][node]
        self.dead.add(node)

    def revive(self, node: str) -> None:
        """The node got room back: into its bucket again, where it was."""
        if node not in self.dead:
            return
        self.dead.remove(node)
        level, seq = self.level[node], self.seq
        bucket = self.buckets[level]
        if bucket and seq[next(reversed(bucket))] > seq[node]:  # (seldom: its level unchanged)
            self.buckets[level] = dict.fromkeys(sorted([*bucket, node], key=seq.__getitem__))
        else:
            bucket[node] = None


class NodeState:
    def __init__(
        self, snapshot: ClusterSnapshot, class_of: Mapping[str, int] | None = None
    ) -> None:
        self.snapshot = snapshot
        self.class_of = class_of or {}
        # Per-node vectors are shared with the snapshot: take and give_back replace them, never
        # write into them.
        self.free: dict[str, res.Resources] = dict(snapshot.free_per_node)
        self.gpus_free = sum(
            max(0, f.get(res.GPU, 0)) for n, f in self.free.items() if snapshot.nodes[n].schedulable
        )
        self._feasible: dict[object, tuple[str, ...]] = {}
        # feasible's nodes by cluster, and by (cluster, class): each pool of a pod shape takes
        # its members from here instead of filtering all feasible nodes (the packer makes a pool
        # per shape, cluster and class: at 10,000 nodes 4,133 pools of one solver plan scanned
        # 41 M nodes, 5 s of a what-if cycle)
        self._in_cluster: dict[object, dict[str, tuple[str, ...]]] = {}
        self._in_class: dict[object, dict[tuple[str, int | None], tuple[str, ...]]] = {}
        self._admitting: dict[object, frozenset[str]] = {}
        self._pools: dict[PoolKey, _Pool] = {}
        self._pools_of: dict[str, list[_Pool]] = defaultdict(list)
        self.fence: Fence | None = None  # while set, picks stay inside this topology domain
        self._fences: dict[Fence, frozenset[str]] = {}
        self._domain_gpus: dict[Fence, int] = {}  # free GPUs per tracked domain
        self._fences_of: dict[str, list[Fence]] = defaultdict(list)
        # Every node that got room back, in order (repeats included): room elsewhere only
        # shrinks, so what was out of reach on those others stays out of reach (victims.py).
        self.given: list[str] = []

    def track(self, members: Mapping[Fence, tuple[str, ...]]) -> None:
        """Keep the free GPUs of these topology domains (their schedulable nodes)."""
        for fence, nodes in members.items():
            self._fences[fence] = frozenset(nodes)
            self._domain_gpus[fence] = sum(max(0, self.free[n].get(res.GPU, 0)) for n in nodes)
            for n in nodes:
                self._fences_of[n].append(fence)

    def domain_gpus(self, fence: Fence) -> int:
        return self._domain_gpus.get(fence, 0)

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

    def admitting(self, pod: Pod) -> frozenset[str]:
        """``feasible`` as a set, for membership tests."""
        key = (pod.constraints, res.key(pod.requests))
        if key not in self._admitting:
            self._admitting[key] = frozenset(self.feasible(pod))
        return self._admitting[key]

    def _pool(self, pod: Pod, cluster: str, cls: int | None) -> _Pool:
        fence = self.fence
        key: PoolKey = ((pod.constraints, res.key(pod.requests)), cluster, cls, fence)
        pool = self._pools.get(key)
        if pool is None:
            members: Sequence[str]
            if fence is None:
                members = self._members(pod, cluster, cls)
            else:  # the domain's few nodes, in feasible's order, not all the cluster's
                nodes = self.snapshot.nodes
                admitting = self.admitting(pod)
                among = (n for n in sorted(self._fences.get(fence, ())) if n in admitting)
                members = [
                    n
                    for n in among
                    if nodes[n].cluster == cluster and (cls is None or self.class_of.get(n) == cls)
                ]
            pool = self._pools[key] = _Pool(members, self.free)
            for n in members:
                self._pools_of[n].append(pool)
        return pool

    def _members(self, pod: Pod, cluster: str, cls: int | None) -> tuple[str, ...]:
        """The feasible nodes of the pod in the cluster (and class, when given), in feasible's
        order; grouped once per pod shape."""
        key = (pod.constraints, res.key(pod.requests))
        if key not in self._in_cluster:
            in_cluster: dict[str, list[str]] = defaultdict(list)
            in_class: dict[tuple[str, int | None], list[str]] = defaultdict(list)
            nodes = self.snapshot.nodes
            for n in self.feasible(pod):
                c = nodes[n].cluster
                in_cluster[c].append(n)
                in_class[(c, self.class_of.get(n))].append(n)
            self._in_cluster[key] = {c: tuple(ns) for c, ns in in_cluster.items()}
            self._in_class[key] = {k: tuple(ns) for k, ns in in_class.items()}
        if cls is None:
            return self._in_cluster[key].get(cluster, ())
        return self._in_class[key].get((cluster, cls), ())

    def cannot_hold(self, pods: Sequence[Pod], cluster: str) -> bool:
        """True when these pods, all of one shape, were found not to fit together (``short``)
        and no candidate node of theirs got room back since. False when unknown."""
        key = self._key(pods, cluster)
        pool = self._pools.get(key) if key is not None else None
        return (
            pool is not None
            and pool.short is not None
            and pool.short[0] == pool.grown
            and (len(pods) >= pool.short[1])
        )

    def held_fewer(self, pods: Sequence[Pod], cluster: str, n: int) -> None:
        """The first ``n`` of these pods (one shape) were picked in a row until the last failed,
        from the state the pool is in now (after the rollback): record it for ``cannot_hold``."""
        key = self._key(pods, cluster)
        pool = self._pools.get(key) if key is not None else None
        if pool is not None:
            pool.short = (pool.grown, n)

    def _key(self, pods: Sequence[Pod], cluster: str) -> PoolKey | None:
        """The pool of these pods' picks (no class) when they all have one shape."""
        first = pods[0]
        shape = first.requests, first.constraints
        if any(p.requests is not shape[0] or p.constraints != shape[1] for p in pods):
            return None
        return ((first.constraints, res.key(first.requests)), cluster, None, self.fence)

    def pick(self, pod: Pod, cluster: str, cls: int | None = None) -> str | None:
        """Best fit for the pod in the cluster (and node class, when given; inside the fence,
        when one is set), or None."""
        pool = self._pool(pod, cluster, cls)
        if pool.failed_at == pool.grown:
            return None
        need, requests, free = pod.requests.get(res.GPU, 0), pod.requests, self.free
        for level in sorted(g for g, b in pool.buckets.items() if g >= need and b):
            found, dead = None, []
            for node in pool.buckets[level]:
                if res.fits(requests, free[node]):
                    found = node
                    break
                dead.append(node)
            for node in dead:
                pool.bury(node)
            if found is not None:
                return found
        pool.failed_at = pool.grown
        return None

    def take(self, pod: Pod, node: str) -> None:
        before = self.free[node].get(res.GPU, 0)
        self.free[node] = res.sub(self.free[node], pod.requests)
        self._moved(node, before)

    def give_back(self, pod: Pod, node: str) -> None:
        before = self.free[node].get(res.GPU, 0)
        self.free[node] = res.add(self.free[node], pod.requests)
        self.given.append(node)
        for pool in self._pools_of.get(node, ()):
            pool.grown += 1  # a pick that failed may fit now, on this node
            pool.revive(node)
        self._moved(node, before)

    def _moved(self, node: str, before: int) -> None:
        gpus = self.free[node].get(res.GPU, 0)
        if self.snapshot.nodes[node].schedulable:
            self.gpus_free += max(0, gpus) - max(0, before)
            for fence in self._fences_of.get(node, ()):
                self._domain_gpus[fence] += max(0, gpus) - max(0, before)
        for pool in self._pools_of.get(node, ()):
            pool.move(node, gpus)
