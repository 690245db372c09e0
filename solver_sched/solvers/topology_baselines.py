"""One-gang-at-a-time topology placement written after Kueue TAS's BestFit and Volcano's HyperNode
tiers (the algorithms and their sources: docs/topology.md). The study compares solver-sched with
them (sim/topology.py), and the cycle takes their plans as candidates when gangs ask for topology,
so that the plan it emits is never worse by the model's objective than either baseline's.

Both take pending gangs in (priority, creation) order, each at its smallest allowed size, preempt
nothing, and place a gang whole or not at all. Their plans go through the same independent checker
as solver-sched's.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Job, Pod
from solver_sched.domain.plan import BindPod, Plan
from solver_sched.domain.resources import Resources
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
    domain = _kueue_domains(snapshot, topology, levels)
    counts_of = _Counts(domain, free)
    for job, pods in _gangs(snapshot):
        shape = max(pods, key=lambda p: p.requests.get(res.GPU, 0))
        ask = ask_of(job.topology, view)
        start = levels.index(ask.key) if ask is not None and ask.key in levels else 0
        required = ask is not None and ask.mode is Mode.REQUIRED
        # a node that could not hold the shape empty holds 0 pods of it
        state = counts_of.state(shape, admits(shape))
        counts = _kueue_assign(state, counts_of.children, len(pods), start, required)
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
                counts_of.changed.append(node)
    return _plan(snapshot, placed)


def _kueue_domains(
    snapshot: ClusterSnapshot, topology: Topology, levels: tuple[str, ...]
) -> list[dict[str, DomainId]]:
    """Each node's domain per level (``levels``: the Topology's, hostname last). Kueue leaves a
    node that lacks one of the Topology's level labels out of topology-aware scheduling
    altogether (``utiltas.NodeMatchesFlavor``), so such a node counts in no domain, not even
    its broader ones (before, a block's node without a rack label counted towards the block's
    room though no rack led down to it). The last level is the node itself, by name (what a
    bind names). Once per plan, not per gang (at L that was most of the baseline)."""
    out: list[dict[str, DomainId]] = [{} for _ in levels]
    for n, node in snapshot.nodes.items():
        if any(k not in node.labels for k in topology.levels):
            continue
        values = tuple(n if k == HOSTNAME else node.labels[k] for k in levels)
        for i, per in enumerate(out):
            per[n] = values[: i + 1]
    return out


class _Counts:
    """Per pod shape, how many pods of it fit per domain of each level, kept current as the
    baseline places gangs: recounted on the nodes that changed since, not over every node per
    gang (at 10,000 nodes that recount was most of the baseline's time)."""

    def __init__(self, domain: list[dict[str, DomainId]], free: Free) -> None:
        self.domain, self.free = domain, free
        self.changed: list[str] = []  # nodes whose free resources changed, in order
        self._kept: dict[object, tuple[dict[str, int], list[dict[DomainId, int]], int]] = {}
        self._children: dict[tuple[int, int], dict[DomainId, list[DomainId]]] = {}

    def state(self, shape: Pod, allowed: frozenset[str]) -> list[dict[DomainId, int]]:
        """Per level, pods of the shape that fit per domain (domains with an allowed node)."""
        key = (shape.constraints, res.key(shape.requests))
        kept = self._kept.get(key)
        if kept is None:
            fit = {n: res.how_many_fit(shape.requests, self.free[n]) for n in allowed}
            state: list[dict[DomainId, int]] = []
            for of in self.domain:
                per: dict[DomainId, int] = {}
                for n in allowed:
                    d = of.get(n)
                    if d is not None:
                        per[d] = per.get(d, 0) + fit[n]
                state.append(per)
        else:
            fit, state, seen = kept
            for n in dict.fromkeys(self.changed[seen:]):
                if n not in allowed:
                    continue
                now = res.how_many_fit(shape.requests, self.free[n])
                if now != fit[n]:
                    for of, per in zip(self.domain, state, strict=True):
                        d = of.get(n)
                        if d is not None:
                            per[d] += now - fit[n]
                    fit[n] = now
        self._kept[key] = (fit, state, len(self.changed))
        return state

    def children(self, below: int, parent: DomainId) -> list[DomainId]:
        """Every domain of level ``below`` inside ``parent`` (a domain of a level above)."""
        index = self._children.get((below, len(parent)))
        if index is None:
            index = {}
            for d in dict.fromkeys(self.domain[below].values()):
                index.setdefault(d[: len(parent)], []).append(d)
            self._children[(below, len(parent))] = index
        return index.get(parent, [])


def _kueue_assign(
    state: list[dict[DomainId, int]],
    children: Callable[[int, DomainId], list[DomainId]],
    count: int,
    level: int,
    required: bool,
) -> dict[str, int] | None:
    """Pods per node, or None when the gang does not fit as asked; ``state``: per level (the
    view's, broadest first), pods that fit per domain; ``children``: a level's domains inside a
    domain of the level above."""
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
    for below in range(level + 1, len(state)):
        nxt: list[tuple[DomainId, int]] = []
        for parent, want in chosen:
            kids = [d for d in children(below, parent) if d in state[below]]
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
    levels: dict[str, _Domains] = {}
    cluster = _ByGpus(free, sorted(snapshot.nodes))
    for job, pods in _gangs(snapshot):
        search, required = _volcano_search(job, topology, tiers)
        need = sum(p.requests.get(res.GPU, 0) for p in pods)
        result: Placement | None = None
        for key in search:
            best: tuple[float, DomainId, Placement] | None = None
            if key not in levels:
                levels[key] = _Domains(snapshot, level_domains(snapshot, topology, key), free)
            at = levels[key]
            for k, (d, members, total) in enumerate(at.domains):
                if at.room[k] < need:
                    continue  # binpack cannot hold the gang's GPUs: not tried
                trial = binpack(admits, free, pods, members, at.by_gpus[k])
                if trial is None:
                    continue
                score = (total - at.left[k] + need) / total if total else 0.0
                if best is None or (score, d) > (best[0], best[1]):
                    best = (score, d, trial)
            if best is not None:
                result = best[2]
                break
        if result is None and not required:
            result = binpack(admits, free, pods, cluster.names, cluster)
        if result is None:
            continue
        for pod_name, node in result.items():
            before = free[node].get(res.GPU, 0)
            free[node] = res.sub(free[node], snapshot.pods[pod_name].requests)
            placed[pod_name] = node
            for domains in levels.values():
                domains.moved(node, before)
            cluster.moved(node, before)
    return _plan(snapshot, placed)


class _Domains:
    """A level's HyperNodes (name order) with their GPUs, free GPUs (``left``), free GPUs of
    the nodes that have any (``room``: what binpack could use) and nodes by free GPUs, kept
    current as gangs are placed rather than summed and scanned per gang and domain."""

    def __init__(self, snapshot: ClusterSnapshot, of: dict[DomainId, list[str]], free: Free):
        self.free = free
        self.domains = [(d, members, _gpus(snapshot, members)) for d, members in sorted(of.items())]
        self.index = {n: k for k, (_, members, _) in enumerate(self.domains) for n in members}
        gpus = [[free[n].get(res.GPU, 0) for n in members] for _, members, _ in self.domains]
        self.left = [sum(g) for g in gpus]
        self.room = [sum(max(0, x) for x in g) for g in gpus]
        self.by_gpus = [_ByGpus(free, members) for _, members, _ in self.domains]

    def moved(self, node: str, before: int) -> None:
        k = self.index.get(node)
        if k is not None:
            now = self.free[node].get(res.GPU, 0)
            self.left[k] += now - before
            self.room[k] += max(0, now) - max(0, before)
            self.by_gpus[k].moved(node, before)


class _ByGpus:
    """Every node by its free GPUs, names sorted within a level: node binpack over the whole
    cluster looks at the levels at and above a pod's GPUs, fullest first, and stops at the first
    node that holds it, instead of scanning every node per pod (10,000 at XL)."""

    def __init__(self, free: Free, names: list[str]) -> None:
        self.free = free
        self.names = names
        self.level = {n: free[n].get(res.GPU, 0) for n in self.names}
        self.at: dict[int, list[str]] = {}
        for n in self.names:
            self.at.setdefault(self.level[n], []).append(n)

    def moved(self, node: str, before: int) -> None:
        now = self.free[node].get(res.GPU, 0)
        if now != before:
            old = self.at[before]
            del old[bisect.bisect_left(old, node)]
            bisect.insort(self.at.setdefault(now, []), node)
            self.level[node] = now

    def first(
        self, pod: Pod, allowed: frozenset[str], skip: Mapping[str, object]
    ) -> tuple[int, str] | None:
        """The (free GPUs, name)-least node not in ``skip`` that holds the pod as it is now."""
        gpus = pod.requests.get(res.GPU, 0)
        for g in sorted(k for k, names in self.at.items() if k >= gpus and names):
            for n in self.at[g]:
                if n not in skip and n in allowed and res.fits(pod.requests, self.free[n]):
                    return g, n
        return None


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
    admits: Callable[[Pod], frozenset[str]],
    free: Free,
    pods: tuple[Pod, ...],
    members: list[str],
    by_gpus: _ByGpus | None = None,
) -> Placement | None:
    """Each pod to the node with the fewest free GPUs that holds it (binpack, ties by name), all
    or none; ``admits``: the nodes a pod may use (``NodeState.admitting``); ``by_gpus``: an index
    of ``free`` over exactly ``members``, to search it instead of scanning them."""
    room: dict[str, Resources] = {}  # what this trial took so far, per node it used
    out: Placement = {}
    for pod in pods:
        allowed = admits(pod)
        gpus = pod.requests.get(res.GPU, 0)
        best: tuple[int, str] | None = None
        indexed = by_gpus is not None and gpus > 0
        for n in room if indexed else members:
            left = room[n] if n in room else free[n]
            g = left.get(res.GPU, 0)
            if (
                (g >= gpus or gpus <= 0)
                and (best is None or (g, n) < best)
                and n in allowed
                and res.fits(pod.requests, left)
            ):
                best = (g, n)
        if indexed:
            assert by_gpus is not None
            other = by_gpus.first(pod, allowed, room)  # the nodes this trial has not used
            if other is not None and (best is None or other < best):
                best = other
        if best is None:
            return None
        node = best[1]
        room[node] = res.sub(room[node] if node in room else free[node], pod.requests)
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
