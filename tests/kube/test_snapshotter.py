"""The planning snapshot holds what the scheduler decided but the watch does not show yet (pure:
no API server)."""

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from solver_sched.config.schema import SchedulerConfig
from solver_sched.io import manifests as m
from solver_sched.io.kube_snapshot import Parsed, snapshot_from_objects
from solver_sched.kube.assume import Assumed
from solver_sched.kube.snapshotter import (
    cluster_objects,
    planning_objects,
    stamps_seen,
    take_snapshots,
)
from solver_sched.kube.store import ObjectStore

COOLDOWN = timedelta(minutes=10)


def _store(objs: list[dict[str, Any]]) -> ObjectStore:
    store = ObjectStore()
    for i, obj in enumerate(objs):
        obj["metadata"].setdefault("uid", f"uid-{i}")
        key = f"{obj['kind']}.{obj['apiVersion']}"
        store.apply(key, "ADDED", obj)
    return store


def test_a_reserved_bind_and_an_assumed_cooldown_are_in_the_planning_snapshot() -> None:
    objs = [m.node("n1", gpus=8), *m.gang("g", 2, min_member=1, max_member=2)]
    store = _store(objs)
    assumed = Assumed()
    pod = store.get("Pod.v1", "default/g-worker-0")
    assert pod is not None
    assumed.reserve("default/g-worker-0", pod["metadata"]["uid"], "n1")
    assumed.stamp("PodGroup default/g", "2026-01-01T12:00:00Z")
    snap = snapshot_from_objects(
        planning_objects(store, assumed.snapshot()), "solver-sched", COOLDOWN
    )
    job = snap.jobs["default/g"]
    assert [p.name for p in snap.running_pods(job)] == ["default/g-worker-0"]
    assert job.last_scale_time == datetime(2026, 1, 1, 12, tzinfo=UTC)  # the cooldown runs
    group = store.get("PodGroup.scheduling.x-k8s.io/v1alpha1", "default/g")
    assert group is not None  # the cache itself is untouched
    assert "solver-sched.io/last-scale-time" not in group["metadata"]["annotations"]


def test_a_stamp_is_forgotten_once_the_watch_shows_it() -> None:
    group = m.pod_group("g", last_scale_time="2026-01-01T12:00:00Z")
    store = _store([group])
    assumed = Assumed()
    assumed.stamp("PodGroup default/g", "2026-01-01T12:00:00Z")
    seen = stamps_seen(store, list(assumed.snapshot().stamps))
    assert seen == {"PodGroup default/g": "2026-01-01T12:00:00Z"}
    assumed.reconcile({}, seen)
    assert not assumed.snapshot()


def test_later_cycles_read_again_only_the_objects_the_watch_replaced() -> None:
    """The controller keeps what its cycles parsed: a node or pod whose dict the store still
    holds is not read again; a dict a watch event replaced is, and one deleted is forgotten."""
    objs = [m.node("n1", gpus=8), m.node("n2", gpus=8)]
    objs += [*m.gang("g", 2, running_on=["n1", "n1"]), *m.gang("h", 1)]
    store = _store(objs)
    parsed = Parsed()
    config = SchedulerConfig()
    first, _ = take_snapshots(store, Assumed(), config, "solver-sched", parsed)

    def pods_read() -> set[int]:
        return {key[1] for key in parsed.entries if key[0] == "pod"}

    before = pods_read()
    bound = copy.deepcopy(store.get("Pod.v1", "default/h-worker-0"))
    assert bound is not None
    bound["spec"]["nodeName"] = "n2"
    store.apply("Pod.v1", "MODIFIED", bound)
    gone = store.get("Pod.v1", "default/g-worker-1")
    assert gone is not None
    store.apply("Pod.v1", "DELETED", gone)
    second, _ = take_snapshots(store, Assumed(), config, "solver-sched", parsed)
    assert second.nodes["n1"] is first.nodes["n1"]
    assert second.pods["default/g-worker-0"] is first.pods["default/g-worker-0"]
    assert second.pods["default/h-worker-0"].node_name == "n2"
    assert "default/g-worker-1" not in second.pods
    assert pods_read() == (before - {id(gone)}) - {
        id(o) for o in objs if o["metadata"]["name"] == "h-worker-0"
    } | {id(bound)}
    assert second == snapshot_from_objects(cluster_objects(store), "solver-sched", COOLDOWN)
