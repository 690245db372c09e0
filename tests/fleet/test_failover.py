"""When a placed job is in trouble: its member unreachable, its copy failed or unschedulable."""

from __future__ import annotations

import json
from typing import Any

from solver_sched.fleet.failover import copy_pods, trouble
from solver_sched.io.fleet_hub import (
    ANN_CLUSTER,
    ANN_FAILOVER,
    ANN_GENERATION,
    ANN_NODES,
    LABEL_GENERATION,
    LABEL_UID,
)
from solver_sched.io.fleet_members import MemberState
from solver_sched.io.fleet_snapshot import build_fleet, copy_name
from tests.fleet.objects import node, pod, policy, pytorchjob


def setup(copy_status: dict[str, Any] | None, bound: int, reachable: bool = True):
    job = pytorchjob("j", masters=1, workers=1, uid="f" * 32)
    job["metadata"]["annotations"] = {
        ANN_CLUSTER: "m1",
        ANN_GENERATION: "1",
        ANN_NODES: json.dumps({"master-0": "a", "worker-0": "a"}),
    }
    hub = build_fleet([policy(), job], []).jobs["default/j"]
    name = copy_name(hub, 1)
    objects: list[dict[str, Any]] = [node("a")]
    if copy_status is not None:
        objects.append(
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "metadata": {
                    "name": name,
                    "namespace": "default",
                    "labels": {LABEL_UID: hub.uid, LABEL_GENERATION: "1"},
                },
                "status": copy_status,
            }
        )
        for i, suffix in enumerate(("master-0", "worker-0")):
            label: dict[str, Any] = {"training.kubeflow.org/job-name": name}
            objects.append(pod(f"{name}-{suffix}", "a" if i < bound else None, **label))
    member = MemberState("m1", objects, reachable)
    fleet = build_fleet([policy(), job], [member])
    return trouble(fleet.jobs["default/j"], fleet, {"m1": objects}), fleet


def cond(kind: str) -> dict[str, Any]:
    return {"conditions": [{"type": kind, "status": "True"}]}


def test_running_copy_is_fine() -> None:
    assert setup(cond("Running"), bound=2)[0] is None


def test_unreachable_member() -> None:
    assert setup(cond("Running"), bound=2, reachable=False)[0] == "member m1 unreachable"


def test_failed_copy() -> None:
    why = setup(cond("Failed"), bound=2)[0]
    assert why is not None and "failed in m1" in why


def test_unschedulable_copy() -> None:
    why = setup(cond("Created"), bound=1)[0]
    assert why is not None and "1/2 pods bound" in why


def test_a_copy_not_created_yet_is_no_trouble() -> None:
    assert setup(None, bound=0)[0] is None


def _placed_job(**anns: str) -> tuple[Any, Any]:
    job = pytorchjob("t", masters=1, workers=1, uid="e" * 32)
    job["metadata"]["annotations"] = {ANN_CLUSTER: "m1", ANN_GENERATION: "2", **anns}
    fleet = build_fleet([policy(), job], [])
    return fleet.jobs["default/t"], fleet


def test_the_failover_timer_is_read_from_the_hub_job() -> None:
    """A restarted fleet (or a new leader) goes on from the time the hub job holds."""
    from datetime import UTC, datetime

    from solver_sched.fleet.failover import due
    from solver_sched.io.fleet_hub import ANN_TROUBLE

    job, fleet = _placed_job(**{ANN_TROUBLE: "2026-01-01T12:00:00Z"})
    assert job.trouble_since == datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert not fleet.errors
    assert not due(job.trouble_since, datetime(2026, 1, 1, 12, 0, 29, tzinfo=UTC), 30)
    assert due(job.trouble_since, datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC), 30)
    assert not due(None, datetime(2030, 1, 1, tzinfo=UTC), 0)


def test_a_bad_timer_is_reported_and_started_again() -> None:
    from solver_sched.io.fleet_hub import ANN_TROUBLE

    job, fleet = _placed_job(**{ANN_TROUBLE: "yesterday"})
    assert job.trouble_since is None
    assert any(
        e.field == f"metadata.annotations[{ANN_TROUBLE}]" and "RFC 3339" in e.message
        for e in fleet.errors
    )
    job, fleet = _placed_job(**{ANN_TROUBLE: "2026-01-01T12:00:00"})  # no zone: not RFC 3339
    assert job.trouble_since is None and fleet.errors


def test_every_new_placement_and_requeue_ends_the_timer() -> None:
    from datetime import UTC, datetime

    from solver_sched.fleet.dispatch import placement_changes, requeue_changes
    from solver_sched.io.fleet_hub import ANN_FAILOVER_SINCE, ANN_TROUBLE

    job, _ = _placed_job(**{ANN_TROUBLE: "2026-01-01T12:00:00Z"})
    assert placement_changes(job, "m2", {"master-0": "a"})[ANN_TROUBLE] is None
    now = datetime(2026, 1, 1, 12, 5, tzinfo=UTC)
    direct = requeue_changes(job, "m1", None, now)
    assert direct[ANN_TROUBLE] is None and direct[ANN_FAILOVER_SINCE] is None
    graceful = requeue_changes(job, "m1", "graceful:m1/t-eeeeeeee-g2", now)
    assert graceful[ANN_FAILOVER_SINCE] == "2026-01-01T12:05:00Z"


def test_a_running_or_finished_copy_is_fine_whatever_its_pods_show() -> None:
    """A running copy whose pod is being replaced, or a finished one whose pods are gone."""
    assert setup(cond("Running"), bound=1)[0] is None
    assert setup(cond("Succeeded"), bound=0)[0] is None


def test_a_created_copy_with_every_pod_bound_is_no_trouble() -> None:
    assert setup(cond("Created"), bound=2)[0] is None


def test_a_copy_whose_member_listed_nothing_has_no_pod_bound() -> None:
    _, fleet = setup(cond("Created"), bound=2)
    why = trouble(fleet.jobs["default/j"], fleet, {})
    assert why is not None and "0/2 pods bound" in why


def test_a_job_being_withdrawn_is_no_trouble() -> None:
    job, fleet = _placed_job(**{ANN_FAILOVER: "withdrawing"})
    assert job.placement is not None and job.placement.withdrawing
    assert trouble(job, fleet, {}) is None


def test_only_live_pods_of_the_copy_count() -> None:
    label: dict[str, Any] = {"training.kubeflow.org/job-name": "c"}
    live = pod("c-worker-0", "a", **label)
    deleting = pod("c-worker-1", "a", **label)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:00Z"
    done = [pod(f"c-worker-{i}", "a", **label) for i in (2, 3)]
    done[0]["status"] = {"phase": "Succeeded"}
    done[1]["status"] = {"phase": "Failed"}
    other_label: dict[str, Any] = {"training.kubeflow.org/job-name": "d"}
    other = pod("d-worker-0", "a", **other_label)
    not_a_pod = {"kind": "Service", "metadata": {"name": "c", "labels": label}}
    assert copy_pods([live, deleting, *done, other, not_a_pod], "c") == [live]
