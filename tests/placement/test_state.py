"""PlanState: floors leave out the usage of jobs whose size must change anyway; which running pods
a scale-in takes; a state restored from what a pass sent back."""

from typing import Any

import pytest

from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.domain.topology import choose
from solver_sched.formulation.prepare import prepare
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.placement.state import HELD, PlanState, restore
from solver_sched.planning.pack import minimize_evictions
from solver_sched.solvers.greedy import greedy_plan, queue_order, start_order
from solver_sched.synthetic import SIZES, preset_objects
from solver_sched.synthetic.topology import TOPOLOGY_PRESETS, topology_objects
from tests.support.builders import NOW, config, gang, node, quota_tree, reclaim_swap, snapshot


def _queues_a_and_b() -> dict[str, object]:
    """Queues a (team-a, min 4 GPUs) and b (team-b, min 2 GPUs)."""
    return quota_tree(
        {
            "name": "root",
            "children": [
                {"name": "a", "namespaces": ["team-a"], "min": {"nvidia.com/gpu": "4"}},
                {"name": "b", "namespaces": ["team-b"], "min": {"nvidia.com/gpu": "2"}},
            ],
        }
    )


def _plan_state(snap: ClusterSnapshot) -> PlanState:
    cfg = config()
    return PlanState(snap, prepare(snap, cfg.weights, cfg.settings, NOW))


def _state() -> PlanState:
    # Queue a borrows: r1 and r2 (2 GPUs each) and p, a partial gang running 2 of its 4 pods, hold
    # 6 GPUs against a min of 4. p goes whatever the floor says, so the floor is min(4, 6 - 2) = 4.
    # Queue b is below its min with a gang waiting: it may reclaim from a, down to that floor.
    snap = snapshot(
        node("n", gpus=8),
        _queues_a_and_b(),
        gang("r1", 2, namespace="team-a", running_on=["n"] * 2),
        gang("r2", 2, namespace="team-a", running_on=["n"] * 2),
        gang("p", 4, namespace="team-a", running_on=["n"] * 2),
        gang("w", 2, namespace="team-b"),
    )
    return _plan_state(snap)


def test_a_floor_does_not_count_on_a_partial_gang_that_is_not_settled() -> None:
    st = _state()
    r1, p = st.index["team-a/r1"], st.index["team-a/p"]
    # Breaking r1 leaves 4 GPUs in use, but 2 of them are p's: the floor refuses it. Counting p,
    # greedy broke r1, then released p, and the checker rejected the plan (a at 2 < 4).
    assert [what for _, what in st.quota_blocks(r1, 0)] == ["min nvidia.com/gpu"]
    assert st.floor_debt(st.rows_of[r1]) == set()
    # Releasing p settles it: it was never counted, so the floor does not stop it.
    assert st.quota_blocks(p, 0) == []
    mark = st.mark()
    assert st.resize(p, 0)
    assert st.quota_blocks(r1, 0) != []
    st.rollback(mark)
    assert p in st.unsettled and st.size["team-a/p"] == 2


def _scale_in_state(waiting_gpus: int = 8) -> PlanState:
    # e runs 4 pods: worker 0 and 3 on a, 1 and 2 on b. b has 6 GPUs free, a has none; w waits
    # for a node with waiting_gpus free.
    elastic: dict[str, Any] = {"min_member": 2, "max_member": 4, "size_policy": "power-of-two"}
    snap = snapshot(
        node("a", gpus=8),
        node("b", gpus=8),
        gang("x", 6, running_on=["a"] * 6),
        gang("e", 4, running_on=["a", "b", "b", "a"], **elastic),
        gang("w", 1, gpus=waiting_gpus),
    )
    cfg = config()
    return PlanState(snap, prepare(snap, cfg.weights, cfg.settings, NOW))


def test_a_scale_in_for_a_large_pod_takes_the_pods_of_the_node_it_can_empty() -> None:
    st = _scale_in_state()
    # Highest index first would evict workers 2 (b) and 3 (a): no node would get 8 GPUs free.
    # a is pinned by x, so e keeps its pods there and gives up those on b first.
    order = st.problem.running_order["default/e"]
    assert [p.name.rsplit("-", 1)[1] for p in order] == ["0", "3", "1", "2"]
    assert st.order_of("default/e") == order
    assert st.resize(st.index["default/e"], 2, check_quota=False)
    assert st.evicted == {"default/e-worker-1", "default/e-worker-2"}
    assert st.nodes.free["b"]["nvidia.com/gpu"] == 8


def test_keep_order_stays_when_every_waiting_pod_fits_a_node() -> None:
    st = _scale_in_state(waiting_gpus=6)  # b holds it as it is
    assert st.problem.running_order == {}
    assert st.resize(st.index["default/e"], 2, check_quota=False)
    assert st.evicted == {"default/e-worker-2", "default/e-worker-3"}


@pytest.mark.parametrize(
    ("preset", "seed"), [("hard", 1), ("full", 2), ("fragmented", 3), ("rack8", 1)]
)
def test_a_state_restored_from_sizes_and_placements_is_the_pass_it_came_from(
    preset: str, seed: int
) -> None:
    """What a pass run in another process sends back (sizes, pending pods' nodes) restores its
    whole state: the same sizes, binds and evictions, on presets with preemption and with
    required and preferred topology."""
    cfg = config()
    if preset in TOPOLOGY_PRESETS:
        snap = snapshot_from_objects(topology_objects(preset, seed, NOW))
    else:
        snap = snapshot_from_objects(preset_objects(preset, seed, NOW, SIZES["S"]))
    topology = choose((), None, snap.topologies)[0]
    problem = prepare(snap, cfg.weights, cfg.settings, NOW, topology)
    order = queue_order(problem)
    evictions = binds = 0
    for dense, value_aware in [(False, False), (True, False), (False, True), (True, True)]:
        starts = start_order(problem, order, None, dense=True) if dense else None
        st = greedy_plan(snap, problem, starts, value_aware, order=order)
        minimize_evictions(st)
        back = restore(snap, problem, dict(st.size), dict(st.placed))
        assert (back.size, back.placed, back.evicted) == (st.size, st.placed, st.evicted)
        evictions, binds = evictions + len(st.evicted), binds + len(st.placed)
    assert binds > 0
    if preset == "hard":
        assert evictions > 0


def test_a_restored_pod_goes_only_where_it_was_placed() -> None:
    snap = snapshot(node("a", gpus=8), node("b", gpus=2), gang("g", 2, gpus=4))
    cfg = config()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    pods = sorted(snap.jobs["default/g"].pods)
    st = restore(snap, problem, {"default/g": 2}, dict.fromkeys(pods, "a"))
    assert st.placed == dict.fromkeys(pods, "a")
    with pytest.raises(ValueError, match="default/g"):
        restore(snap, problem, {"default/g": 2}, {pods[0]: "a", pods[1]: "b"})


def test_a_floor_test_reads_the_jobs_usage_at_its_size_now() -> None:
    """Queue a (min 4 GPUs) runs e (elastic, 8 pods of 1 GPU) and o (2 GPUs); queue b waits
    below its min, so a's floor counts. Taking e from 8 to 2 leaves 4: allowed. Once e is at 4,
    taking it to 2 leaves 4 again, allowed, and breaking it leaves 2, refused. Read with e's
    usage at 8 (the first test's), the take-back to 2 would leave 0."""
    snap = snapshot(
        node("n", gpus=10),
        _queues_a_and_b(),
        gang("e", 8, namespace="team-a", min_member=2, max_member=8, running_on=["n"] * 8),
        gang("o", 2, namespace="team-a", running_on=["n"] * 2),
        gang("w", 2, namespace="team-b"),
    )
    st = _plan_state(snap)
    e = st.index["team-a/e"]
    rows = [r for r in st.rows_of[e] if st.problem.quotas[r].floor]
    assert rows and st.floor_blocks(e, 2, rows, {}) == []
    assert st.resize(e, 4, check_quota=False) and st.size["team-a/e"] == 4
    assert st.floor_blocks(e, 2, rows, {}) == []
    assert st.floor_blocks(e, 0, rows, {}) == rows


def test_greedy_sees_a_broken_gang_hold_its_slot_for_starts_that_may_not_break_it() -> None:
    """Rule 3b in the plan state: with a1 and z broken for bnew's reclaim, c (which may break
    neither) still meets both in the root's max-jobs; bnew, which may, does not. A rollback gives
    the view back."""
    st = _plan_state(snapshot(*reclaim_swap()))
    j = st.index
    root = next(r for r, row in enumerate(st.problem.quotas) if row.queue == "root")
    first = (dict(st.view[root]), st.view_running[root])
    mark = st.mark()
    for name in ("qc/a1", "qc/z"):
        assert st.resize(j[name], 0, check_quota=False)
    assert (dict(st.view[root]), st.view_running[root]) == first  # broken, they hold their slot
    held = f"kube-queue/max-jobs {HELD}"
    assert st.quota_blocks(j["qc/c"], 4) == [(root, held)]
    assert st.quota_blocks(j["qb/bnew"], 1) == []
    assert st.resize(j["qc/c"], 4) is False
    st.rollback(mark)
    assert st.size["qc/a1"] == 1 and (dict(st.view[root]), st.view_running[root]) == first
    assert st.quota_blocks(j["qc/c"], 4) == [(root, "kube-queue/max-jobs")]  # the plain row


def test_a_gang_that_did_not_fit_is_refused_without_a_pick_until_a_node_gets_room_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """n0-n2 hold three of a's four 4-GPU pods (n3 is taken): a fails, and b, the same shape and
    size, is refused without a pick; c, one pod fewer, is still tried and fits. Once n3 gets its
    room back, b is tried again and fits."""
    snap = snapshot(
        [node(f"n{i}", gpus=4) for i in range(4)],
        gang("run", 1, gpus=4, running_on=["n3"]),
        gang("a", 4, gpus=4),
        gang("b", 4, gpus=4),
        gang("c", 3, gpus=4),
    )
    st = _plan_state(snap)
    picks = [0]
    pick = st.nodes.pick

    def counted(*args: Any) -> str | None:
        picks[0] += 1
        return pick(*args)

    monkeypatch.setattr(st.nodes, "pick", counted)
    a, b, c = (st.index[f"default/{n}"] for n in ("a", "b", "c"))
    assert not st.resize(a, 4)
    assert picks[0] == 4
    assert not st.resize(b, 4)
    assert picks[0] == 4  # refused at once
    mark = st.mark()
    assert st.resize(c, 3)
    assert picks[0] == 7
    st.rollback(mark)
    st.nodes.give_back(snap.pods["default/run-worker-0"], "n3")  # as an eviction does
    assert st.resize(b, 4)
    assert sorted(st.placed[p] for p in snap.jobs["default/b"].pods) == ["n0", "n1", "n2", "n3"]
