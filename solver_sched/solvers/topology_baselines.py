"""One-gang-at-a-time topology placement written after Kueue TAS's BestFit and Volcano's HyperNode
tiers (the algorithms and their sources: docs/topology.md). The study compares solver-sched with
them (sim/topology.py), and the cycle takes their plans as candidates when gangs ask for topology,
so that the plan it emits is never worse by the model's objective than either baseline's.

Both take pending gangs in (priority, creation) order, each at its smallest allowed size, preempt
nothing, and place a gang whole or not at all. Their plans go through the same independent checker
as solver-sched's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Job, Pod
from solver_sched.domain.plan import BindPod, Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.domain.topology import HOSTNAME, DomainId, Mode, Topology, ask_of
from solver_sched.formulation.problem import Problem
from solver_sched.placement.nodes import NodeState
from solver_sched.placement.state import PlanState

Placement = dict[str, str]  # pending pod -> node
Free = dict[str, dict[str, int]]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _gangs(snapshot: ClusterSnapshot) -> list[tuple[Job, tuple[Pod, ...]]]:
    """Pending gangs (nothing running), highest priority first, then oldest: the pods of the
    smallest allowed size."""
    out = []
    for job in snapshot.jobs.values():
        sizes = job.allowed_sizes()
        waiting = snapshot.waiting_pods(job)
        if job.invalid or job.succeeded or snapshot.running_pods(job) or not sizes:
            continue
        if len(waiting) >= sizes[0]:
            out.append((job, waiting[: sizes[0]]))
    out.sort(key=lambda g: (-g[0].priority, g[0].created or EPOCH, g[0].name))
    return out


def level_domains(
    snapshot: ClusterSnapshot, topology: Topology, key: str
) -> dict[DomainId, list[str]]:
    out: dict[DomainId, list[str]] = {}
    for name in sorted(snapshot.nodes):
        d = topology.domain_of(snapshot.nodes[name].labels, key)
        if d is not None and snapshot.nodes[name].schedulable:
            out.setdefault(d, []).append(name)
    return out


def _plan(snapshot: ClusterSnapshot, placed: Placement) -> Plan:
    return Plan(binds=tuple(BindPod(p, n, snapshot.pods[p].job) for p, n in sorted(placed.items())))


# -- Kueue TAS, BestFit ------------------------------------------------------------------------


def kueue_best_fit(snapshot: ClusterSnapshot, topology: Topology) -> Plan:
    """Kueue's TAS assignment per gang (Kueue v0.17 ``tas_flavor_snapshot.go``): per domain, how
    many of the gang's pods fit; at the requested level, the fitting domain with the fewest such
    pods (BestFit); a preferred gang that fits no domain goes up a level, and at the top it is
    spread over the domains with the most room first, the last one chosen best-fit. Then, level by
    level down to the nodes, the chosen domains' children are taken the same way."""
    free: Free = {n: dict(f) for n, f in snapshot.free_per_node.items()}
    placed: Placement = {}
    levels = topology.levels if HOSTNAME in topology.levels else (*topology.levels, HOSTNAME)
    view = Topology(levels, topology.source)
    admits = NodeState(snapshot).admitting
    # each node's domain per level, once (not per gang: at L that was most of the baseline)
    domain = [
        {n: d for n, node in snapshot.nodes.items() if (d := view.domain_of(node.labels, key))}
        for key in levels
    ]
    for job, pods in _gangs(snapshot):
        shape = max(pods, key=lambda p: p.requests.get(res.GPU, 0))
        allowed = admits(shape)  # a node that could not hold it empty holds 0 pods of it
        ask = ask_of(job.topology, view)
        start = levels.index(ask.key) if ask is not None and ask.key in levels else 0
        required = ask is not None and ask.mode is Mode.REQUIRED
        counts = _kueue_assign(domain, free, allowed, shape, len(pods), start, required)
        if counts is None:
            continue
        nodes = [n for n, c in sorted(counts.items()) for _ in range(c)]
        for pod, node in zip(pods, nodes, strict=True):
            if not res.fits(pod.requests, free[node]):  # a gang of mixed pods: give it up
                break
        else:
            for pod, node in zip(pods, nodes, strict=True):
                free[node] = res.sub(free[node], pod.requests)
                placed[pod.name] = node
    return _plan(snapshot, placed)


def _kueue_assign(
    domain: list[dict[str, DomainId]],
    free: Free,
    allowed: frozenset[str],
    shape: Pod,
    count: int,
    level: int,
    required: bool,
) -> dict[str, int] | None:
    """Pods per node, or None when the gang does not fit as asked; ``domain``: per level (the
    view's, broadest first), each node's domain."""
    fit = {n: res.how_many_fit(shape.requests, free[n]) for n in allowed}
    state: list[dict[DomainId, int]] = []
    for of in domain:
        per: dict[DomainId, int] = {}
        for n in allowed:
            d = of.get(n)
            if d is not None:
                per[d] = per.get(d, 0) + fit[n]
        state.append(per)
    chosen: list[tuple[DomainId, int]] | None = None
    while chosen is None:
        domains = _sorted(state[level])
        if not domains:
            return None
        top = domains[0]
        if state[level][top] >= count:
            best = _best_fit(domains, state[level], count)
            chosen = [(best, count)]
        elif required:
            return None
        elif level > 0:
            level -= 1
        else:
            chosen = _take(domains, state[level], count)
            if chosen is None:
                return None
    for below in range(level + 1, len(domain)):
        nxt: list[tuple[DomainId, int]] = []
        for parent, want in chosen:
            kids = [d for d in state[below] if d[: len(parent)] == parent]
            taken = _take(_sorted({d: state[below][d] for d in kids}), state[below], want)
            if taken is None:
                return None
            nxt += taken
        chosen = nxt
    return {d[-1]: c for d, c in chosen if c}


def _sorted(state: Mapping[DomainId, int]) -> list[DomainId]:
    """Most room first, then by name (Kueue's BestFit domain order)."""
    return sorted(state, key=lambda d: (-state[d], d))


def _best_fit(domains: list[DomainId], state: Mapping[DomainId, int], need: int) -> DomainId:
    """The first domain with the least room that still holds ``need``."""
    best = domains[0]
    for d in domains:
        if need <= state[d] < state[best]:
            best = d
    return best


def _take(
    domains: list[DomainId], state: Mapping[DomainId, int], count: int
) -> list[tuple[DomainId, int]] | None:
    """Domains with the most room first, the last one best-fit for what is left."""
    out = []
    left = count
    rest = list(domains)
    while left > 0 and rest:
        d = rest[0]
        if state[d] >= left:
            d = _best_fit(rest, state, left)
        take = min(left, state[d])
        if take <= 0:
            break
        out.append((d, take))
        left -= take
        rest.remove(d)
    return out if left == 0 else None


# -- Volcano, HyperNode tiers ------------------------------------------------------------------


def volcano_tiers(snapshot: ClusterSnapshot, topology: Topology) -> Plan:
    """Volcano's network-topology-aware allocation per gang (Volcano 1.1x ``allocate`` action and
    ``network-topology-aware`` plugin): HyperNodes of tier 1 (the narrowest grouping level), then
    tier 2, ... up to ``highestTierAllowed`` (hard) or the top (soft); at the first tier where some
    HyperNode holds the whole gang, the one the binpack score likes best (the most GPUs in use
    after the gang is placed, as a share of its GPUs), the pods placed there by node binpack (the
    fullest node that fits first). A soft gang that fits no HyperNode, and a gang that asks for
    nothing, are placed over the whole cluster by node binpack."""
    free: Free = {n: dict(f) for n, f in snapshot.free_per_node.items()}
    placed: Placement = {}
    tiers = topology.tiers()
    admits = NodeState(snapshot).admitting
    by_level: dict[str, list[tuple[DomainId, list[str], int]]] = {}  # (domain, nodes, GPUs)
    for job, pods in _gangs(snapshot):
        search, required = _volcano_search(job, topology, tiers)
        need = sum(p.requests.get(res.GPU, 0) for p in pods)
        result: Placement | None = None
        for key in search:
            best: tuple[float, DomainId, Placement] | None = None
            if key not in by_level:
                by_level[key] = [
                    (d, members, _gpus(snapshot, members))
                    for d, members in sorted(level_domains(snapshot, topology, key).items())
                ]
            for d, members, total in by_level[key]:
                trial = binpack(admits, free, pods, members)
                if trial is None:
                    continue
                left = sum(free[n].get(res.GPU, 0) for n in members)
                score = (total - left + need) / total if total else 0.0
                if best is None or (score, d) > (best[0], best[1]):
                    best = (score, d, trial)
            if best is not None:
                result = best[2]
                break
        if result is None and not required:
            result = binpack(admits, free, pods, sorted(snapshot.nodes))
        if result is None:
            continue
        for pod_name, node in result.items():
            free[node] = res.sub(free[node], snapshot.pods[pod_name].requests)
            placed[pod_name] = node
    return _plan(snapshot, placed)


def _gpus(snapshot: ClusterSnapshot, members: list[str]) -> int:
    return sum(snapshot.nodes[n].allocatable.get(res.GPU, 0) for n in members)


def _volcano_search(job: Job, topology: Topology, tiers: tuple[str, ...]) -> tuple[list[str], bool]:
    """The levels a gang's HyperNodes are searched at, narrowest first, and whether it must fit
    one of them (hard mode within its highest tier)."""
    ask = job.topology
    if ask is None:
        return [], False
    level = ask.level(topology)
    if level is None:  # a tier above every level: the whole cluster
        return list(tiers), False
    if level in tiers:
        upto = list(tiers[: tiers.index(level) + 1])
        return (upto, True) if ask.mode is Mode.REQUIRED else (list(tiers), False)
    if ask.mode is Mode.REQUIRED:
        return [level], True
    return [level, *tiers], False


def binpack(
    admits: Callable[[Pod], frozenset[str]], free: Free, pods: tuple[Pod, ...], members: list[str]
) -> Placement | None:
    """Each pod to the node with the fewest free GPUs that holds it (binpack), all or none;
    ``admits``: the nodes a pod may use (``NodeState.admitting``)."""
    room = {n: dict(free[n]) for n in members}
    out: Placement = {}
    for pod in pods:
        allowed = admits(pod)
        ok = [n for n in members if n in allowed and res.fits(pod.requests, room[n])]
        if not ok:
            return None
        node = min(ok, key=lambda n: (room[n].get(res.GPU, 0), n))
        room[node] = res.sub(room[node], pod.requests)
        out[pod.name] = node
    return out


BASELINES: dict[str, Callable[[ClusterSnapshot, Topology], Plan]] = {
    "kueue-bestfit": kueue_best_fit,
    "volcano-tiers": volcano_tiers,
}


def replay(snapshot: ClusterSnapshot, problem: Problem, plan: Plan) -> PlanState:
    """A baseline's binds as a plan state of the cycle's problem, gang by gang in the baseline's
    order, each pod on the node the baseline chose: a candidate the cycle values with the model
    like greedy's. A gang the state refuses (a quota row the baseline does not know) stays out."""
    st = PlanState(snapshot, problem)
    nodes: dict[str, list[str]] = {}
    for b in plan.binds:
        nodes.setdefault(b.job, []).append(b.node)

    def chooser(pod: Pod, cluster: str) -> str | None:
        left = nodes.get(pod.job, [])
        for k, node in enumerate(left):
            if snapshot.nodes[node].cluster == cluster and res.fits(
                pod.requests, st.nodes.free[node]
            ):
                return left.pop(k)
        return None

    for name in dict.fromkeys(b.job for b in plan.binds):
        j = st.index.get(name)
        if j is None:
            continue
        st.resize(j, st.size[name] + len(nodes[name]), chooser=chooser)
    return st
