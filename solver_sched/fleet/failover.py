"""Application failover: when a placed job's member is unreachable, or its copy failed or stayed
unschedulable, for ``tolerationSeconds``, the job is placed again elsewhere.

The timers live in the hub job (``solver-sched.io/trouble-since``, RFC 3339, written when the
trouble is first seen and removed when it ends), so a restart or a new leader goes on counting
from where the last one was: ``tolerationSeconds`` is wall-clock time since the trouble began,
whoever watched it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from solver_sched.io.fleet_hub import HubJob
from solver_sched.io.fleet_snapshot import FleetSnapshot
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


def due(since: datetime | None, now: datetime, seconds: int) -> bool:
    return since is not None and (now - since).total_seconds() >= seconds
