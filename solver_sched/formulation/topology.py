"""What the model needs of the topology, computed once in ``prepare``: the levels that cut the
node classes (so a class never straddles a domain and the model stays independent of the node
count: classes per domain), each class's domains, the domains a gang's running pods are in, the
domains that are entirely free (for the fragmentation term), and the band the terms add."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Node, Pod
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.domain.topology import HOSTNAME, Ask, DomainId, Mode, Topology
from solver_sched.formulation.problem import NodeClass

DomainOf = Callable[[Node], tuple[DomainId | None, ...]]


def model_keys(topology: Topology, asks: Mapping[str, Ask], fragmentation: int) -> tuple[str, ...]:
    """Every level the model reasons about: the asked levels and those above them, and (with a
    fragmentation weight) every grouping level of the topology."""
    keys = {k for a in asks.values() for k in (a.key, *a.broader)}
    if fragmentation:
        keys.update(topology.tiers())
    return tuple(sorted(keys))


def domain_key(topology: Topology, keys: tuple[str, ...]) -> DomainOf | None:
    """The node's domain at every model level: the class key part that keeps domains apart."""
    if not keys:
        return None
    return lambda node: tuple(topology.domain_of(node.labels, k) for k in keys)


def class_domains(
    snapshot: ClusterSnapshot,
    topology: Topology,
    classes: tuple[NodeClass, ...],
    keys: tuple[str, ...],
) -> dict[int, dict[str, DomainId]]:
    out: dict[int, dict[str, DomainId]] = {}
    for c in classes:
        labels = snapshot.nodes[c.nodes[0]].labels
        out[c.id] = {k: d for k in keys if (d := topology.domain_of(labels, k)) is not None}
    return out


def running_domains(
    snapshot: ClusterSnapshot,
    topology: Topology,
    asks: Mapping[str, Ask],
    running: Mapping[str, tuple[Pod, ...]],
) -> dict[str, tuple[DomainId | None, ...]]:
    """Per job with a request: the domain of its level of each running pod, in keep order
    (None: a node outside every domain, or gone). A cordoned node keeps its domain."""
    out: dict[str, tuple[DomainId | None, ...]] = {}
    for name, ask in asks.items():
        nodes = (snapshot.nodes.get(p.node_name or "") for p in running.get(name, ()))
        out[name] = tuple(
            None if n is None else topology.domain_of(n.labels, ask.key) for n in nodes
        )
    return out


def split_sizes(
    asks: Mapping[str, Ask], where: Mapping[str, tuple[DomainId | None, ...]]
) -> dict[str, frozenset[int]]:
    """Per required gang whose running pods (``where``, in keep order) are not in one domain
    of its level (split before the request, or on nodes outside every domain): the sizes above
    0 it may end at, as placement and the checker allow them. As it is, and each shrink whose
    kept pods lie in one domain; never a growth."""
    out: dict[str, frozenset[int]] = {}
    for name, ask in asks.items():
        found = where.get(name, ())
        if ask.mode is not Mode.REQUIRED or not found:
            continue
        if len(set(found)) == 1 and found[0] is not None:
            continue  # whole: rule one_domain keeps it there
        # the longest prefix in one domain: the first pods (kept longest) up to the first
        # that sits elsewhere
        one = next(i for i, d in enumerate(found) if d != found[0]) if found[0] else 0
        out[name] = frozenset({len(found), *range(1, one + 1)})
    return out


def free_domains(
    snapshot: ClusterSnapshot, topology: Topology, keys: tuple[str, ...]
) -> tuple[tuple[str, DomainId, int], ...]:
    """(level, domain, GPUs) of the grouping-level domains with no GPU in use: those the
    fragmentation term rewards keeping whole."""
    out = []
    free = snapshot.free_per_node
    for key in keys:
        if key == HOSTNAME or key not in topology.tiers():
            continue
        whole: dict[DomainId, int] = {}
        broken: set[DomainId] = set()
        for node in snapshot.nodes.values():
            d = topology.domain_of(node.labels, key)
            if d is None or not node.schedulable:
                continue
            gpus = node.allocatable.get(res.GPU, 0)
            if free[node.name].get(res.GPU, 0) < gpus:
                broken.add(d)
            whole[d] = whole.get(d, 0) + gpus
        out += [(key, d, g) for d, g in sorted(whole.items()) if d not in broken and g > 0]
    return tuple(out)


def topology_band(
    asks: Mapping[str, Ask],
    pods_of: Mapping[str, int],
    domains: Mapping[str, int],
    free: tuple[tuple[str, DomainId, int], ...],
    spread: int,
    fragmentation: int,
) -> int:
    """The most the topology terms can move the elastic band: per preferred gang, a domain per
    new pod at each level (twice at its own), and every free domain kept whole."""
    total = fragmentation * sum(g for _, _, g in free)
    for name, ask in asks.items():
        if ask.mode is Mode.PREFERRED:
            n = pods_of.get(name, 0)
            total += 2 * spread * min(n, domains.get(ask.key, 0))
            total += sum(spread * min(n, domains.get(k, 0)) for k in ask.broader)
    return total
