"""The member copy and the fleet's view of its own hub writes."""

from __future__ import annotations

from solver_sched.fleet.dispatch import HubView, copy_body
from solver_sched.io.fleet_hub import ANN_CLUSTER, ANN_HUB_JOB, LABEL_GENERATION, LABEL_UID
from solver_sched.io.fleet_snapshot import build_fleet, copy_name
from tests.fleet.objects import policy, pytorchjob


def hub_job(**kw: object):
    job = pytorchjob("train", uid="0123456789abcdef0123456789abcdef", **kw)  # type: ignore[arg-type]
    job["spec"]["runPolicy"] = {"suspend": True, "cleanPodPolicy": "None"}
    return job, build_fleet([policy(), job], []).jobs["default/train"]


def test_copy_name_is_deterministic_and_short() -> None:
    _, job = hub_job()
    assert copy_name(job, 3) == "train-01234567-g3" == copy_name(job, 3)
    long = build_fleet([policy(), pytorchjob("x" * 63, uid="ab" * 16)], []).jobs
    assert len(copy_name(next(iter(long.values())), 12)) <= 63 - len("-worker-100")


def test_copy_body_is_the_hub_spec_unsuspended_and_labelled() -> None:
    raw, job = hub_job()
    body = copy_body(job, 2)
    assert body["metadata"]["name"] == copy_name(job, 2)
    assert body["metadata"]["labels"] == {LABEL_UID: job.uid, LABEL_GENERATION: "2"}
    assert body["metadata"]["annotations"] == {ANN_HUB_JOB: "default/train"}
    assert body["spec"]["runPolicy"] == {"cleanPodPolicy": "None"}
    assert body["spec"]["pytorchReplicaSpecs"] == raw["spec"]["pytorchReplicaSpecs"]
    assert raw["spec"]["runPolicy"]["suspend"] is True  # the hub object is not changed


def test_the_view_keeps_own_writes_until_the_watch_shows_them() -> None:
    stale, _ = hub_job()
    mine = {**stale, "metadata": {**stale["metadata"], "annotations": {ANN_CLUSTER: "m1"}}}
    view = HubView()
    view.remember(mine)
    assert view.overlay([stale]) == [mine]  # the watch is behind: our write counts
    assert view.overlay([mine]) == [mine]  # seen: forgotten
    assert view.overlay([stale]) == [stale]


def test_the_fleet_cycle_has_its_own_budget_unless_the_config_sets_one() -> None:
    from solver_sched.config.schema import SchedulerConfig, Settings
    from solver_sched.fleet.controller import FLEET_CYCLE_SECONDS, fleet_config

    assert fleet_config(SchedulerConfig()).settings.cycle_seconds == FLEET_CYCLE_SECONDS
    own = SchedulerConfig(settings=Settings(cycle_seconds=2.5))
    assert fleet_config(own).settings.cycle_seconds == 2.5
