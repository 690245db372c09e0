"""Application failover: when a placed job's member is unreachable, or its copy failed or stayed
unschedulable, for ``tolerationSeconds``, the job is placed again elsewhere.

The timers live in the process (like the controller's partial-gang timers): after a restart or a
leader change they start again, which only delays a failover."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from solver_sched.io.fleet_snapshot import FleetSnapshot, HubJob
from solver_sched.io.kubeflow import KUBEFLOW_JOB_LABEL


def copy_pods(objects: Sequence[Mapping[str, Any]], copy: str) -> list[Mapping[str, Any]]:
    """Live pods of a copy in its member (not finished, not deleting)."""
    return [
        o
        for o in objects
        if o.get("kind") == "Pod"
        and ((o.get("metadata") or {}).get("labels") or {}).get(KUBEFLOW_JOB_LABEL) == copy
        and not (o.get("metadata") or {}).get("deletionTimestamp")
        and (o.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]


def trouble(
    job: HubJob, fleet: FleetSnapshot, member_objects: Mapping[str, Sequence[Mapping[str, Any]]]
) -> str | None:
    """Why the placed job may need another member now (None: it is fine, or just starting)."""
    p = job.placement
    if p is None or p.withdrawing:
        return None
    if p.cluster not in fleet.reachable:
        return f"member {p.cluster} unreachable"
    c = fleet.current_copy(job)
    if c is None:
        return None  # not created yet (or lost): it is created again, no failover
    if c.conditions.get("Failed") == "True":
        return f"copy {c.name} failed in {p.cluster}"
    if c.conditions.get("Running") == "True" or c.conditions.get("Succeeded") == "True":
        return None
    pods = copy_pods(member_objects.get(p.cluster, ()), c.name)
    bound = sum(1 for o in pods if (o.get("spec") or {}).get("nodeName"))
    need = len(job.suffixes())
    if bound < need:
        return f"copy {c.name} unschedulable in {p.cluster}: {bound}/{need} pods bound"
    return None


class FailoverTimers:
    """Since when each placement (job, generation) has been in trouble."""

    def __init__(self) -> None:
        self.since: dict[tuple[str, int], float] = {}

    def update(self, troubled: Mapping[tuple[str, int], str]) -> None:
        now = time.monotonic()
        self.since = {k: self.since.get(k, now) for k in troubled}

    def due(self, key: tuple[str, int], seconds: int) -> bool:
        start = self.since.get(key)
        return start is not None and time.monotonic() - start >= seconds
