"""The member copy and the fleet's view of its own hub writes."""

from __future__ import annotations

from typing import Any

from solver_sched.fleet.dispatch import (
    HubView,
    copy_body,
    failed_text,
    placement_changes,
    requeue_changes,
    reserved,
)
from solver_sched.io.fleet_hub import (
    ANN_CLUSTER,
    ANN_FAILED,
    ANN_GENERATION,
    ANN_HUB_JOB,
    ANN_NODES,
    LABEL_GENERATION,
    LABEL_UID,
    HubJob,
)
from solver_sched.io.fleet_snapshot import build_fleet, copy_name
from tests.fleet.objects import policy, pytorchjob


def hub_job(**kw: object):
    job = pytorchjob("train", uid="0123456789abcdef0123456789abcdef", **kw)  # type: ignore[arg-type]
    job["spec"]["runPolicy"] = {"suspend": True, "cleanPodPolicy": "None"}
    return job, as_hub(job)


def as_hub(raw: dict[str, Any]) -> HubJob:
    """The fleet's reading of this raw job (edited after hub_job made it)."""
    return build_fleet([policy(), raw], []).jobs["default/train"]


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


def test_copy_body_is_a_pytorchjob_at_its_placed_size_without_the_fleet_s_labels() -> None:
    raw, _ = hub_job()
    raw["metadata"]["labels"] = {"team": "vision", "solver-sched.io/queue": "q1"}
    job = as_hub(raw)
    body = copy_body(job, 1, [("Worker", 8)])
    assert (body["apiVersion"], body["kind"]) == ("kubeflow.org/v1", "PyTorchJob")
    assert body["metadata"]["namespace"] == "default"
    assert body["metadata"]["labels"] == {
        "team": "vision",
        LABEL_UID: job.uid,
        LABEL_GENERATION: "1",
    }
    specs = body["spec"]["pytorchReplicaSpecs"]
    assert specs["Worker"]["replicas"] == 8  # the size the fleet chose
    assert specs["Master"]["replicas"] == raw["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"]
    assert raw["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 2  # the hub's unchanged
    assert copy_body(job, 1)["spec"]["pytorchReplicaSpecs"] == raw["spec"]["pytorchReplicaSpecs"]


def test_placement_and_requeue_annotations() -> None:
    raw, _ = hub_job()
    raw["metadata"]["annotations"] = {ANN_CLUSTER: "m1", ANN_GENERATION: "4", ANN_FAILED: "m0"}
    job = as_hub(raw)
    placed = placement_changes(job, "m2", {"worker-1": "b", "master-0": "a"})
    assert placed[ANN_CLUSTER] == "m2" and placed[ANN_GENERATION] == "5"
    assert placed[ANN_NODES] == '{"master-0":"a","worker-1":"b"}'  # sorted, compact
    assert reserved({}) == "{}"
    back = requeue_changes(job, "m1", None)
    assert back[ANN_FAILED] == "m0,m1" and back[ANN_CLUSTER] is None
    assert ANN_FAILED not in requeue_changes(job, None, None)  # nothing failed: kept as it is
    assert failed_text(job, "m0") == "m0"


def test_the_view_forgets_a_write_once_the_job_is_recreated() -> None:
    stale, _ = hub_job()
    mine = {**stale, "metadata": {**stale["metadata"], "annotations": {ANN_CLUSTER: "m1"}}}
    view = HubView()
    view.remember(mine)
    recreated = {**stale, "metadata": {**stale["metadata"], "uid": "f" * 32}}
    assert view.overlay([recreated]) == [recreated]  # another object of that name: not ours
    assert view.overlay([stale]) == [stale]  # and forgotten


def test_copy_body_of_a_job_whose_run_policy_does_not_suspend() -> None:
    raw, _ = hub_job()
    raw["spec"]["runPolicy"] = {"cleanPodPolicy": "None"}
    job = as_hub(raw)
    assert copy_body(job, 1)["spec"]["runPolicy"] == {"cleanPodPolicy": "None"}
