"""What a plan does to the topology (domains per gang, crossings, GPUs idle in partly used
domains, GPU value), for the study's comparison with the one-gang-at-a-time baselines written after
Kueue TAS's BestFit and Volcano's HyperNode tiers (solvers/topology_baselines.py).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Pod
from solver_sched.domain.plan import Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.domain.topology import DomainId, Mode, Topology, ask_of
from solver_sched.placement.nodes import NodeState
from solver_sched.solvers.topology_baselines import Free, binpack, level_domains

# -- metrics -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopologyMetrics:
    gangs_started: int
    gpu_value: int  # GPUs of the gangs started, x4 per rank of priority among pending gangs
    crossings: int  # sum over started gangs of (domains of the level they span - 1)
    domains_per_gang: float  # mean domains of the level over started multi-pod gangs
    idle_in_partial: int  # free GPUs in domains of the level that are partly used
    split_but_fit: int  # started gangs split although one domain could have held them
    required_split: int  # started gangs that require the level and span several domains


def metrics(snapshot: ClusterSnapshot, plan: Plan, topology: Topology, key: str) -> TopologyMetrics:
    """What a plan does at the level ``key`` (e.g. rack), counted over the gangs it starts."""
    bound = {b.pod: b.node for b in plan.binds}
    evicted = {p for e in plan.evictions for p in e.pods}
    # tiers ranked over the pending gangs' priorities, as the model ranks the jobs it decides
    priorities = sorted(
        {j.priority for j in snapshot.jobs.values() if not snapshot.running_pods(j)}
    )
    free: Free = {n: dict(f) for n, f in snapshot.free_per_node.items()}
    for pod_name in evicted:
        pod = snapshot.pods[pod_name]
        if pod.node_name in free:
            free[pod.node_name] = res.add(free[pod.node_name], pod.requests)
    for pod_name, node in bound.items():
        free[node] = res.sub(free[node], snapshot.pods[pod_name].requests)
    domains = level_domains(snapshot, topology, key)
    admits = NodeState(snapshot).admitting
    of = {n: d for d, ns in domains.items() for n in ns}
    started = value = crossings = split_fit = required_split = 0
    spans: list[int] = []
    for job in snapshot.jobs.values():
        pods = [p for p in job.pods if p in bound]
        if not pods or snapshot.running_pods(job):
            continue
        started += 1
        gpus = sum(snapshot.pods[p].requests.get(res.GPU, 0) for p in pods)
        value += gpus * 4 ** priorities.index(job.priority)
        used = {of.get(bound[p]) for p in pods}
        if len(pods) > 1:
            spans.append(len(used))
        crossings += len(used) - 1
        if len(used) > 1:
            ask = ask_of(job.topology, topology)
            required_split += ask is not None and ask.mode is Mode.REQUIRED and ask.key == key
            gang = [snapshot.pods[p] for p in pods]
            if _one_domain_holds(admits, free, domains, gang, bound):
                split_fit += 1
    idle = 0
    for members in domains.values():
        gpus_free = sum(max(0, free[n].get(res.GPU, 0)) for n in members)
        gpus_all = sum(snapshot.nodes[n].allocatable.get(res.GPU, 0) for n in members)
        if 0 < gpus_free < gpus_all:
            idle += gpus_free
    return TopologyMetrics(
        started,
        value,
        crossings,
        statistics.fmean(spans) if spans else 1.0,
        idle,
        split_fit,
        required_split,
    )


def _one_domain_holds(
    admits: Callable[[Pod], frozenset[str]],
    free: Free,
    domains: Mapping[DomainId, list[str]],
    pods: list[Pod],
    bound: Mapping[str, str],
) -> bool:
    """Whether, in the plan's final state with this gang taken out, one domain holds it whole."""
    room = {n: dict(f) for n, f in free.items()}
    for p in pods:
        room[bound[p.name]] = res.add(room[bound[p.name]], p.requests)
    return any(
        binpack(admits, room, tuple(pods), members) is not None for members in domains.values()
    )
