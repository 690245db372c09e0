"""Reading a fleet plan: which member each queued job goes to, which placed jobs are withdrawn
to make room, and a placement row per hub job (the what-if contract)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from solver_sched.io.fleet_hub import placed_replicas
from solver_sched.io.fleet_snapshot import FleetSnapshot


@dataclass(frozen=True, slots=True)
class Dispatch:
    job: str  # hub job ns/name
    cluster: str
    nodes: Mapping[str, str]  # replica pod suffix -> member node
    replicas: tuple[tuple[str, int], ...] = ()  # (type, count) placed; an elastic job's size


@dataclass
class PlanReading:
    dispatches: dict[str, Dispatch] = field(default_factory=dict)
    withdrawals: dict[str, str] = field(default_factory=dict)  # placed hub job -> why
    blocked: list[str] = field(default_factory=list)  # evictions the fleet cannot carry out
    placements: list[dict[str, Any]] = field(default_factory=list)  # the what-if contract


def read_plan(
    fleet: FleetSnapshot, binds: Iterable[Any], rows: Iterable[Any], evictions: Iterable[Any] = ()
) -> PlanReading:
    """Which member each queued job goes to (all of its pods bound in one member, at the size
    the plan gives it), which placed jobs are withdrawn to make room (the plan's job-level
    evictions), and a placement row per hub job: its member, or null with the reason it stays
    queued."""
    per_job: dict[str, dict[str, str]] = defaultdict(dict)
    clusters: dict[str, set[str]] = defaultdict(set)
    for b in binds:
        if b.pod in fleet.synthetic:
            owner, suffix = fleet.synthetic[b.pod]
            member, node = fleet.node_member[b.node]
            per_job[owner][suffix] = node
            clusters[owner].add(member)
    rows = list(rows)
    reasons = {r.name: r.reason for r in rows}
    planned = {r.name: r.planned for r in rows}
    out = PlanReading()
    for ev in evictions:
        job = fleet.jobs.get(ev.job)
        p = job.placement if job is not None else None
        if job is None or p is None or p.cluster not in fleet.reachable:
            out.blocked.append(ev.job)  # not a copy the fleet can withdraw
        elif not p.withdrawing:  # a job already being withdrawn is going anyway
            out.withdrawals[ev.job] = ev.reason
    for key in sorted(fleet.jobs):
        job = fleet.jobs[key]
        cluster: str | None = None
        reason = ""
        size = planned.get(key, 0)
        if job.invalid:
            reason = job.invalid
        elif job.finished:
            reason = f"finished: {job.finished}"
        elif job.placement is not None:
            cluster = job.placement.cluster
            reason = "dispatched"
            if key in out.withdrawals or job.placement.preempted:
                reason = "withdrawing (preempted)"
            elif job.placement.withdrawing:
                reason = "withdrawing (failover)"
        elif len(clusters.get(key, ())) == 1 and size > 0 and len(per_job[key]) == size:
            cluster = next(iter(clusters[key]))
            placed = placed_replicas(job.replicas, per_job[key])
            out.dispatches[key] = Dispatch(key, cluster, dict(per_job[key]), placed)
        else:
            reason = reasons.get(key) or "queued"
        out.placements.append({"job": key, "cluster": cluster, "reason": reason})
    return out
