"""job_states: which jobs may be planned, and why the others may not."""

from __future__ import annotations

from datetime import UTC, datetime

from solver_sched.formulation.jobs import job_states
from solver_sched.io.kube_snapshot import snapshot_from_objects
from tests.support.builders import node, pod, pod_group

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def test_a_gang_with_fewer_pods_than_its_minimum_is_left_out_with_the_counts() -> None:
    objs = [node("n1"), pod_group("g", min_member=4)]
    objs += [pod(f"g-worker-{i}", group="g") for i in range(2)]
    reasons: dict[str, str] = {}
    states = job_states(snapshot_from_objects(objs), NOW, reasons)
    assert states["default/g"].sizes == ()
    assert reasons["default/g"] == "PodGroup default/g: needs at least 4 pods, 2 exist"
