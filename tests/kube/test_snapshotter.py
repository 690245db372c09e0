"""The planning snapshot holds what the scheduler decided but the watch does not show yet (pure:
no API server)."""

from datetime import UTC, datetime, timedelta

from solver_sched.io import manifests as m
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.kube.assume import Assumed
from solver_sched.kube.snapshotter import planning_objects, stamps_seen
from solver_sched.kube.store import ObjectStore

COOLDOWN = timedelta(minutes=10)


def _store(objs: list[dict]) -> ObjectStore:
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
