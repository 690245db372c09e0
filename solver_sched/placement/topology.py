"""Topology domains in the tentative plan: which domain each node is in, the free GPUs of each
domain, and placing a gang's new pods so that a required gang stays in one domain and a preferred
one spans as few as it can.

The domain choice is Kueue TAS's BestFit (``docs/topology.md``): among the domains of the level
that can hold the whole gang, the one with the least room; a preferred gang that fits no domain of
its level tries the broader levels in turn, then fills the domains with the most room first. Greedy
and the packer both place through it, so every candidate plan keeps required topology.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Pod
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.domain.topology import Ask, DomainId, Mode, Topology
from solver_sched.placement.nodes import Fence, NodeState

Bind = Callable[[tuple[Pod, ...]], bool]  # binds these pods all or nothing (rolled back if not)
# The schedulable nodes a level does not label, fenced like a domain (no domain id is empty):
# the model's zo, a preferred gang's pods outside every domain, packed where it put them
OUTSIDE: DomainId = ()


class DomainIndex:
    """Per level key: each schedulable node's domain, and each domain's nodes; and the domain of
    every node, cordoned ones too, where a gang's running pods may sit."""

    def __init__(self, snapshot: ClusterSnapshot, topology: Topology, keys: Iterable[str]) -> None:
        self.topology = topology
        self.of: dict[str, dict[str, DomainId]] = {}
        self.any_of: dict[str, dict[str, DomainId]] = {}
        self.members: dict[Fence, tuple[str, ...]] = {}
        for key in sorted(set(keys)):
            of: dict[str, DomainId] = {}
            any_of: dict[str, DomainId] = {}
            groups: dict[DomainId, list[str]] = {}
            for name in sorted(snapshot.nodes):
                node = snapshot.nodes[name]
                d = topology.domain_of(node.labels, key)
                if d is None:
                    if node.schedulable:  # where the solver may put a preferred gang's pods
                        groups.setdefault(OUTSIDE, []).append(name)
                    continue
                any_of[name] = d
                if node.schedulable:
                    of[name] = d
                    groups.setdefault(d, []).append(name)
            self.of[key], self.any_of[key] = of, any_of
            for d, nodes in groups.items():
                self.members[(key, d)] = tuple(nodes)

    def domains(self, key: str) -> list[DomainId]:
        return sorted({d for (k, d) in self.members if k == key and d != OUTSIDE})

    def domains_of(self, key: str, nodes: Iterable[str]) -> set[DomainId | None]:
        """The domains of these nodes (a running gang's): a cordoned node keeps its domain, as
        the model reads it (formulation/topology.running_domains); a pod there stays where it is."""
        of = self.any_of.get(key, {})
        return {of.get(n) for n in nodes}


def place(
    nodes: NodeState,
    index: DomainIndex,
    ask: Ask,
    binds: tuple[Pod, ...],
    kept: Sequence[str],
    bind: Bind,
    mark: Callable[[], int],
    rollback: Callable[[int], None],
    first: Sequence[DomainId] = (),
) -> bool:
    """Bind the gang's new pods honouring its request; ``kept``: the nodes of its kept pods;
    ``first``: domains of its level to try first (the solver's choice, most pods first).
    All or nothing: what a failed attempt placed is rolled back before the next."""
    gpus = sum(p.requests.get(res.GPU, 0) for p in binds)
    found = index.domains_of(ask.key, kept)
    held = [d for d in found if d is not None]
    whole = len(found) == len(held) == 1  # the kept pods sit in one domain
    if ask.mode is Mode.REQUIRED:
        if kept and not whole:
            return False  # already split (or on a node outside every domain): no growth
        candidates = held if held else _first(first, _best_fit(nodes, index, ask.key, gpus))
        return any(_fenced(nodes, (ask.key, d), bind, binds) for d in candidates)
    if whole and _fenced(nodes, (ask.key, held[0]), bind, binds):
        return True
    spread = len(first) > 1
    if first:  # the solver's domains: one, or filled in its order
        m = mark()
        if not spread and _fenced(nodes, (ask.key, first[0]), bind, binds):
            return True
        # the solver spread it (its classes are aggregates, its plan maybe not optimal): one
        # domain that holds it whole now is still better, and never splits a gang that fits
        if spread and _whole(nodes, index, ask.key, gpus, binds, bind):
            return True
        if spread and _fill_in(nodes, ask.key, list(first), binds, bind):
            return True
        rollback(m)
    # the whole-domain search at its own level, unless the spread gang's failed it just now (the
    # rollback left the same room)
    if not spread and _whole(nodes, index, ask.key, gpus, binds, bind):
        return True
    for key in ask.broader:
        for d in _best_fit(nodes, index, key, gpus):
            m = mark()
            if _fill(nodes, index, ask.key, index.members[(key, d)], binds, bind):
                return True
            rollback(m)
    m = mark()
    if _fill(nodes, index, ask.key, None, binds, bind):
        return True
    rollback(m)
    return False


def _first(first: Sequence[DomainId], rest: list[DomainId]) -> list[DomainId]:
    return [*first, *(d for d in rest if d not in first)]


def _best_fit(nodes: NodeState, index: DomainIndex, key: str, gpus: int) -> list[DomainId]:
    """Domains of the level with room for ``gpus``, the least room first (BestFit)."""
    room = [(nodes.domain_gpus((key, d)), d) for d in index.domains(key)]
    return [d for g, d in sorted(room) if g >= gpus]


def _whole(
    nodes: NodeState, index: DomainIndex, key: str, gpus: int, binds: tuple[Pod, ...], bind: Bind
) -> bool:
    """The gang whole in one domain of the level, the least room first (BestFit)."""
    return any(_fenced(nodes, (key, d), bind, binds) for d in _best_fit(nodes, index, key, gpus))


def _fenced(nodes: NodeState, fence: Fence, bind: Bind, pods: tuple[Pod, ...]) -> bool:
    old = nodes.fence
    nodes.fence = fence
    try:
        return bind(pods)
    finally:
        nodes.fence = old


def _fill(
    nodes: NodeState,
    index: DomainIndex,
    key: str,
    within: Sequence[str] | None,
    binds: tuple[Pod, ...],
    bind: Bind,
) -> bool:
    """Bind pod by pod into the domains of ``key`` (inside ``within`` when given) with the most
    room first, moving on only when one is full: few domains, as Kueue distributes a gang."""
    allowed = None if within is None else set(within)
    order = sorted(
        (d for d in index.domains(key) if allowed is None or _inside(index, key, d, allowed)),
        key=lambda d: (-nodes.domain_gpus((key, d)), d),
    )
    return _fill_in(nodes, key, order, binds, bind)


def _fill_in(
    nodes: NodeState, key: str, order: list[DomainId], binds: tuple[Pod, ...], bind: Bind
) -> bool:
    """Each pod into the first domain of ``order`` that takes it."""
    return all(any(_fenced(nodes, (key, d), bind, (pod,)) for d in order) for pod in binds)


def _inside(index: DomainIndex, key: str, d: DomainId, allowed: set[str]) -> bool:
    members = index.members[(key, d)]
    return bool(members) and members[0] in allowed
