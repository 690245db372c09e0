"""PlanState: floors leave out the usage of jobs whose size must change anyway; which running pods
a scale-in takes."""

from solver_sched.formulation.prepare import prepare
from solver_sched.placement.state import PlanState
from tests.support.builders import NOW, config, gang, node, quota_tree, snapshot


def _state() -> PlanState:
    # Queue a borrows: r1 and r2 (2 GPUs each) and p, a partial gang running 2 of its 4 pods, hold
    # 6 GPUs against a min of 4. p goes whatever the floor says, so the floor is min(4, 6 - 2) = 4.
    # Queue b is below its min with a gang waiting: it may reclaim from a, down to that floor.
    tree = quota_tree(
        {
            "name": "root",
            "children": [
                {"name": "a", "namespaces": ["team-a"], "min": {"nvidia.com/gpu": "4"}},
                {"name": "b", "namespaces": ["team-b"], "min": {"nvidia.com/gpu": "2"}},
            ],
        }
    )
    snap = snapshot(
        node("n", gpus=8),
        tree,
        gang("r1", 2, namespace="team-a", running_on=["n"] * 2),
        gang("r2", 2, namespace="team-a", running_on=["n"] * 2),
        gang("p", 4, namespace="team-a", running_on=["n"] * 2),
        gang("w", 2, namespace="team-b"),
    )
    cfg = config()
    return PlanState(snap, prepare(snap, cfg.weights, cfg.settings, NOW))


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
    elastic = {"min_member": 2, "max_member": 4, "size_policy": "power-of-two"}
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
