"""The cluster families: each preset is what its spec says, on a cluster a real one could be."""

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import SizePolicy
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.synthetic import PRESETS, cluster_objects, preset, preset_objects
from solver_sched.synthetic.spec import GPU_PRODUCT, MODEL_RESOURCE

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def _snap(name: str, nodes: int, seed: int = 1) -> ClusterSnapshot:
    return snapshot_from_objects(preset_objects(name, seed, NOW, nodes))


def _load(snap: ClusterSnapshot) -> float:
    gpus = sum(n.allocatable.get(res.GPU, 0) for n in snap.nodes.values())
    return sum(p.requests.get(res.GPU, 0) for p in snap.pods.values() if p.bound) / gpus


def _running(snap: ClusterSnapshot) -> list[str]:
    return [j for j, job in snap.jobs.items() if any(snap.pods[p].bound for p in job.pods)]


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_is_a_cluster_a_scheduler_could_have_made(name: str) -> None:
    snap = _snap(name, 64)
    assert snap.errors == ()
    for node, free in snap.free_per_node.items():  # no node holds more than it has
        assert all(q >= 0 for q in free.values()), (node, free)
    for j in _running(snap):  # running gangs hold at least their min: no partial gang
        job = snap.jobs[j]
        assert len(snap.running_pods(job)) >= job.min_pods, j
    usage = snap.queue_usage(p for p in snap.pods.values() if p.bound)
    for q, u in usage.items():  # admitted within every queue's max
        limit = snap.quota.queues[q].max.get(res.GPU) if q in snap.quota.queues else None
        assert limit is None or u.get(res.GPU, 0) <= limit, (q, u)
    spec = preset(name, 64)
    assert abs(_load(snap) - spec.load) < 0.1 or _load(snap) > 0.9  # full: as full as fits
    pending = len(snap.jobs) - len(_running(snap))
    assert pending == round(spec.pending_ratio * len(_running(snap)))


def test_same_seed_same_cluster_other_seed_other_cluster() -> None:
    a = preset_objects("hard", 3, NOW, 64)
    assert a == preset_objects("hard", 3, NOW, 64)
    assert a != preset_objects("hard", 4, NOW, 64)


def test_hard_is_the_cluster_of_the_issue() -> None:
    """512 nodes, about 1,000 running and 500 pending gangs, ~85% load, priorities 0/100/1000, 16
    leaf queues, 40% elastic power-of-two, some in cooldown."""
    snap = _snap("hard", 512)
    running = _running(snap)
    assert 900 <= len(running) <= 1100
    assert len(snap.jobs) - len(running) == round(len(running) / 2)
    assert 0.83 <= _load(snap) <= 0.88
    assert {j.priority for j in snap.jobs.values()} == {0, 100, 1000}
    parents = {q.parent for q in snap.quota.queues.values()}
    leaves = [q for q in snap.quota.queues.values() if q.name not in parents]
    assert len(leaves) == 16
    elastic = [j for j in snap.jobs.values() if j.max_pods != j.min_pods]
    assert 0.35 <= len(elastic) / len(snap.jobs) <= 0.45
    assert all(j.size_policy is SizePolicy.POWER_OF_TWO for j in elastic)
    cooling = [j for j in elastic if (u := j.cooldown_until()) is not None and u > NOW]
    assert cooling


def test_spread_leaves_more_nodes_partly_used_than_first_fit() -> None:
    spec = preset("hard", 128)

    def partly_used(spread: float) -> int:
        snap = snapshot_from_objects(cluster_objects(replace(spec, spread=spread), 1, NOW))
        return sum(
            0 < f.get(res.GPU, 0) < snap.nodes[n].allocatable[res.GPU]
            for n, f in snap.free_per_node.items()
        )

    assert partly_used(1.0) > 2 * partly_used(0.0)


def test_fragmented_has_other_schedulers_pods_on_gpu_nodes() -> None:
    snap = _snap("fragmented", 64)
    foreign = [p for p in snap.pods.values() if p.scheduler_name != snap.scheduler_name]
    assert any(p.requests.get(res.GPU, 0) for p in foreign)
    assert any(not p.requests.get(res.GPU, 0) for p in foreign)
    assert all(p.bound and snap.job_of(p) is None for p in foreign)  # capacity, not jobs


def test_hetero_pins_gangs_to_a_gpu_model_by_label() -> None:
    snap = _snap("hetero", 64)
    gpus = Counter(n.allocatable[res.GPU] for n in snap.nodes.values())
    assert set(gpus) == {4, 8}
    models = {n.labels[GPU_PRODUCT] for n in snap.nodes.values()}
    pinned = [p for p in snap.pods.values() if p.constraints.node_selector]
    assert pinned
    for p in pinned:
        (key, model), *_ = p.constraints.node_selector
        assert key == GPU_PRODUCT and model in models
        if p.bound:
            assert snap.nodes[p.node_name or ""].labels[GPU_PRODUCT] == model


def test_hetero_resource_asks_for_the_model_as_a_resource() -> None:
    snap = _snap("hetero-resource", 64)
    pinned = [
        p for p in snap.pods.values() if any(r.startswith(MODEL_RESOURCE) for r in p.requests)
    ]
    assert pinned
    assert not snap.quota.queues  # no quota tree in this family
    for p in pinned:
        (model,) = [r for r in p.requests if r.startswith(MODEL_RESOURCE)]
        assert p.requests[model] == p.requests[res.GPU]
        if p.bound:
            assert snap.nodes[p.node_name or ""].allocatable.get(model, 0) > 0


def test_light_and_full_span_the_load() -> None:
    assert _load(_snap("light", 128)) < 0.65
    assert _load(_snap("full", 128)) > 0.93
