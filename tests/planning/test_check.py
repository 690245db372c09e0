"""The checker must catch every kind of bad plan (hand-made plans, no solver involved)."""

from dataclasses import replace
from datetime import timedelta

import pytest

from solver_sched.domain.plan import BindPod, EvictJob, Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.io import manifests as m
from solver_sched.planning.check import check
from tests.support.builders import (
    NOW,
    gang,
    leaf_queues,
    node,
    on_node_only,
    other,
    pod,
    pod_group,
    quota_tree,
    reclaim_swap,
    snapshot,
)


def bind(p: str, n: str, job: str | None = None, ns: str = "default") -> BindPod:
    return BindPod(pod=f"{ns}/{p}", node=n, job=job or f"{ns}/{p.rsplit('-worker', 1)[0]}")


def evict(job: str, *pods: str, ns: str = "default") -> EvictJob:
    return EvictJob(job=f"{ns}/{job}", pods=tuple(f"{ns}/{p}" for p in pods), reason="t")


def gang_binds(name: str, count: int, n: str, ns: str = "default") -> tuple[BindPod, ...]:
    return tuple(bind(f"{name}-worker-{i}", n, ns=ns) for i in range(count))


def _irregular(allowed: int | None) -> ClusterSnapshot:
    """el runs 6 pods, powers of two only, under a budget that allows ``allowed`` (or none)."""
    el = gang("el", 6, min_member=2, max_member=8, size_policy="power-of-two", running_on=["a"] * 6)
    pdb = m.pod_disruption_budget("pdb", {"scheduling.x-k8s.io/pod-group": "el"}, allowed or 0)
    return snapshot(node("a", gpus=8), el, *([pdb] if allowed is not None else []))


def _unequal() -> ClusterSnapshot:
    """el runs 4 pods on a, worker 1 without a GPU: only pods with equal requests may go out of
    order; t (6 GPUs) needs 2 of el's."""
    return snapshot(
        node("a", gpus=8),
        pod_group("el", min_member=2, max_member=4),
        *(
            pod(f"el-worker-{i}", group="el", node_name="a", gpus=0 if i == 1 else 1)
            for i in range(4)
        ),
        gang("t", 6),
    )


CASES: list[tuple[str, ClusterSnapshot, Plan, str]] = [
    (
        "partial gang",
        snapshot(node("a", gpus=8), gang("g", 4)),
        Plan(binds=gang_binds("g", 3, "a")),
        "allowed sizes",
    ),
    (
        "over capacity",
        snapshot(node("a", gpus=4), other("x", "a", 2), gang("g", 4)),
        Plan(binds=gang_binds("g", 4, "a")),
        "node a: nvidia.com/gpu 6 requested > 4 allocatable",
    ),
    (
        "cordoned",
        snapshot(node("a", gpus=8, unschedulable=True), gang("g", 1)),
        Plan(binds=gang_binds("g", 1, "a")),
        "cordoned",
    ),
    (
        "taint",
        snapshot(node("a", gpus=8, taints=[{"key": "k", "effect": "NoSchedule"}]), gang("g", 1)),
        Plan(binds=gang_binds("g", 1, "a")),
        "taint",
    ),
    (
        "bound twice",
        snapshot(node("a", gpus=8), gang("g", 1)),
        Plan(binds=(bind("g-worker-0", "a"), bind("g-worker-0", "a"))),
        "twice",
    ),
    (
        "moves a running pod",
        snapshot(node("a", gpus=8), node("b", gpus=8), gang("g", 1, running_on=["a"])),
        Plan(binds=(bind("g-worker-0", "b"),)),
        "running pods never move",
    ),
    (
        "not our pod",
        snapshot(node("a", gpus=8), pod("p", scheduler="default-scheduler")),
        Plan(binds=(BindPod("default/p", "a", "default/p"),)),
        "not ours",
    ),
    (
        "scale-in takes the first pod",
        snapshot(
            node("a", gpus=8),
            gang("el", 4, min_member=2, max_member=4, running_on=["a"] * 4),
            gang("t", 6),
        ),
        Plan(evictions=(evict("el", "el-worker-0", "el-worker-1"),), binds=gang_binds("t", 6, "a")),
        "evicts its first pod default/el-worker-0",
    ),
    (
        "unequal pods evicted out of order",
        _unequal(),
        Plan(evictions=(evict("el", "el-worker-1", "el-worker-2"),), binds=gang_binds("t", 6, "a")),
        "not its highest-index pods",
    ),
    (
        "evicts and binds one job",
        snapshot(
            node("a", gpus=8),
            gang("el", 4, min_member=2, max_member=4, running_on=["a", "a"]),
        ),
        Plan(evictions=(evict("el", "el-worker-1"),), binds=(bind("el-worker-2", "a"),)),
        "evicts and binds",
    ),
    (
        "equal priority preemption",
        snapshot(node("a", gpus=4), gang("low", 4, running_on=["a"] * 4), gang("high", 4)),
        Plan(
            evictions=(evict("low", *[f"low-worker-{i}" for i in range(4)]),),
            binds=gang_binds("high", 4, "a"),
        ),
        "gang broken",
    ),
    (
        "eviction with nothing started",
        snapshot(
            node("a", gpus=4), gang("el", 4, min_member=2, max_member=4, running_on=["a"] * 4)
        ),
        Plan(evictions=(evict("el", "el-worker-2", "el-worker-3"),)),
        "no guaranteed gang",
    ),
    (
        "scale out in cooldown",
        snapshot(
            node("a", gpus=8),
            gang(
                "el",
                8,
                min_member=2,
                max_member=8,
                running_on=["a"] * 2,
                last_scale_time="2026-01-01T11:58:00Z",
            ),
        ),
        Plan(binds=tuple(bind(f"el-worker-{i}", "a") for i in range(2, 4))),
        "cooldown",
    ),
    (
        "quota max",
        snapshot(
            node("a", gpus=8),
            quota_tree({"name": "root", "max": {"nvidia.com/gpu": "2"}, "namespaces": ["default"]}),
            gang("g", 4),
        ),
        Plan(binds=gang_binds("g", 4, "a")),
        "max 2",
    ),
    (
        "reclaim below a queue's min",
        snapshot(
            node("a", gpus=6),
            quota_tree(
                {
                    "name": "root",
                    "children": [
                        {"name": "qa", "namespaces": ["default"], "min": {"nvidia.com/gpu": "4"}},
                        {"name": "qb", "namespaces": ["team-b"], "min": {"nvidia.com/gpu": "4"}},
                    ],
                }
            ),
            *(gang(f"a{i}", 2, running_on=["a"] * 2) for i in range(3)),
            gang("bg", 6, namespace="team-b"),
        ),
        Plan(  # qa borrows 2 GPUs, yet all 6 go to qb
            evictions=tuple(evict(f"a{i}", f"a{i}-worker-0", f"a{i}-worker-1") for i in range(3)),
            binds=gang_binds("bg", 6, "a", ns="team-b"),
        ),
        "its min 4",
    ),
    (
        "power of two",
        snapshot(
            node("a", gpus=8), gang("el", 8, min_member=2, max_member=8, size_policy="power-of-two")
        ),
        Plan(binds=tuple(bind(f"el-worker-{i}", "a") for i in range(6))),
        "allowed sizes",
    ),
]


def test_checker_accepts_a_good_plan() -> None:
    snap = snapshot(node("a", gpus=8), gang("g", 4))
    assert check(snap, Plan(binds=gang_binds("g", 4, "a")), NOW) == []


def test_a_gang_running_in_two_clusters_does_not_stop_every_plan() -> None:
    """old runs on a (c1) and b (c2), as after a node was relabelled: the checker rejected every
    plan for it, even one that leaves it alone, and the cycle bound nothing, every cycle."""
    snap = snapshot(
        node("a", gpus=8, labels={"solver-sched.io/cluster": "c1"}),
        node("b", gpus=8, labels={"solver-sched.io/cluster": "c2"}),
        node("c", gpus=8, labels={"solver-sched.io/cluster": "c1"}),
        gang("old", 2, running_on=["a", "b"]),
        gang("new", 2),
    )
    assert (
        check(snap, Plan(binds=(bind("new-worker-0", "c"), bind("new-worker-1", "c"))), NOW) == []
    )


def test_checker_accepts_a_scale_in_of_any_pods_but_the_first() -> None:
    """Which pods a scale-in takes is the planner's choice (to open room on one node); only the
    first pod, which hosts the rendezvous, stays while the job runs."""
    snap = snapshot(
        node("a", gpus=8),
        gang("el", 4, min_member=2, max_member=4, running_on=["a"] * 4),
        gang("t", 6),
    )
    plan = Plan(
        evictions=(evict("el", "el-worker-1", "el-worker-2"),), binds=gang_binds("t", 6, "a")
    )
    assert check(snap, plan, NOW) == []


def test_cooldown_is_over_after_its_duration() -> None:
    snap = snapshot(
        node("a", gpus=8),
        gang(
            "el",
            8,
            min_member=2,
            max_member=8,
            running_on=["a"] * 2,
            last_scale_time="2026-01-01T11:58:00Z",
        ),
    )
    binds = tuple(bind(f"el-worker-{i}", "a") for i in range(2, 4))
    assert check(snap, Plan(binds=binds), NOW + timedelta(minutes=9)) == []
    assert check(snap, Plan(binds=binds), NOW + timedelta(minutes=8)) == []  # 11:58 + 10 min
    assert check(snap, Plan(binds=binds), NOW + timedelta(minutes=7, seconds=59)) != []


def test_reclaim_may_take_all_a_queue_without_a_min_uses_and_nothing_without_a_guarantee() -> None:
    """qb lists no min: every GPU it uses is borrowed, so qa (min 8, idle) may reclaim them. When
    no queue is guaranteed anything, nothing is borrowed, and the same eviction is a violation."""

    def snap(qa_min: dict[str, str]) -> ClusterSnapshot:
        tree = quota_tree(
            {
                "name": "root",
                "children": [
                    {"name": "qa", "namespaces": ["default"], "min": qa_min},
                    {"name": "qb", "namespaces": ["team-b"]},
                ],
            }
        )
        return snapshot(
            node("a", gpus=8),
            tree,
            gang("b1", 8, namespace="team-b", running_on=["a"] * 8, priority=100),
            gang("a1", 8),
        )

    plan = Plan(
        evictions=(evict("b1", *(f"b1-worker-{i}" for i in range(8)), ns="team-b"),),
        binds=gang_binds("a1", 8, "a"),
    )
    assert check(snap({"nvidia.com/gpu": "8"}), plan, NOW) == []
    assert check(snap({}), plan, NOW) != []


# More rules, each alone (RULE_CASES), and the boundaries the checker must let through: written
# from `make mutation MUTATE=solver_sched.planning.check` (7 Dec 2026); each fails with its rule,
# or its boundary, changed.


def _two_queues(qa: dict[str, int], qb: dict[str, int]) -> dict[str, object]:
    """qa holds namespace default, qb team-b; each with the given GPU min / max."""
    return leaf_queues(("qa", "default"), ("qb", "team-b"), gpus={"qa": qa, "qb": qb})


def _completing() -> ClusterSnapshot:
    """c: two workers running on a, a third succeeded (the gang completes)."""
    return snapshot(
        node("a", gpus=8),
        pod_group("c", min_member=2),
        *(pod(f"c-worker-{i}", group="c", node_name="a") for i in range(2)),
        pod("c-worker-2", group="c", node_name="a", phase="Succeeded"),
    )


RULE_CASES: list[tuple[str, ClusterSnapshot, Plan, str]] = [
    (
        "bind to an unknown node",
        snapshot(node("a", gpus=8), gang("g", 1)),
        Plan(binds=(bind("g-worker-0", "nowhere"),)),
        "bind default/g-worker-0 -> nowhere: unknown pod or node",
    ),
    (
        "bind under another job's name",
        snapshot(node("a", gpus=8), gang("g", 1), gang("h", 1)),
        Plan(binds=(bind("g-worker-0", "a", job="default/h"),)),
        "belongs to default/g, not default/h",
    ),
    (
        "a GPU pod on a node without GPUs",
        snapshot(node("c", gpus=0), gang("g", 1)),
        Plan(binds=gang_binds("g", 1, "c")),
        "node c: nvidia.com/gpu 1 requested > 0 allocatable",
    ),
    (
        "node-name affinity",
        snapshot(
            node("a", gpus=8),
            node("b", gpus=8),
            pod_group("g"),
            on_node_only(pod("g-worker-0", group="g"), "b"),
        ),
        Plan(binds=gang_binds("g", 1, "a")),
        "required node affinity",
    ),
    (
        "evicts a pending pod",
        snapshot(node("a", gpus=8), gang("g", 2)),
        Plan(evictions=(evict("g", "g-worker-0"),)),
        "evict default/g-worker-0: not a running pod",
    ),
    (
        "evicts an unknown pod",
        snapshot(node("a", gpus=8), gang("g", 1, running_on=["a"])),
        Plan(evictions=(evict("g", "nope"),)),
        "evict default/nope: not a running pod",
    ),
    (
        "evicts another job's pod",
        snapshot(node("a", gpus=8), gang("g", 1, running_on=["a"]), gang("h", 1, running_on=["a"])),
        Plan(evictions=(evict("h", "g-worker-0"),)),
        "belongs to default/g, not default/h",
    ),
    (
        "evicts a pod twice",
        snapshot(node("a", gpus=8), gang("g", 1, running_on=["a"])),
        Plan(evictions=(evict("g", "g-worker-0"), evict("g", "g-worker-0"))),
        "evicted twice",
    ),
    (
        "scales in to one pod with nothing started",
        snapshot(
            node("a", gpus=8), gang("el", 4, min_member=1, max_member=4, running_on=["a"] * 4)
        ),
        Plan(evictions=(evict("el", "el-worker-1", "el-worker-2", "el-worker-3"),)),
        "scaled in 4 -> 1 with no guaranteed gang starting",
    ),
    (
        "a running job that only grows starts no gang",
        snapshot(
            node("a", gpus=8),
            gang("el", 4, min_member=2, max_member=4, running_on=["a"] * 2),
            gang("el2", 2, min_member=1, max_member=2, running_on=["a"] * 2),
        ),
        Plan(
            binds=(bind("el-worker-2", "a"), bind("el-worker-3", "a")),
            evictions=(evict("el2", "el2-worker-1"),),
        ),
        "scaled in 2 -> 1 with no guaranteed gang starting",
    ),
    (
        "a gang spread over two clusters",
        snapshot(
            node("a", gpus=8, labels={"solver-sched.io/cluster": "c1"}),
            node("b", gpus=8, labels={"solver-sched.io/cluster": "c2"}),
            gang("g", 2),
        ),
        Plan(binds=(bind("g-worker-0", "a"), bind("g-worker-1", "b"))),
        "job default/g: spans clusters ['c1', 'c2']",
    ),
    (
        "a job in an invalid queue is changed",
        snapshot(
            node("a", gpus=8),
            quota_tree(
                {
                    "name": "root",
                    "namespaces": ["default"],
                    "min": {"nvidia.com/gpu": "8"},
                    "max": {"nvidia.com/gpu": "4"},
                }
            ),
            gang("g", 1),
        ),
        Plan(binds=gang_binds("g", 1, "a")),
        "job default/g: invalid, completing or in an invalid queue, yet changed",
    ),
    (
        "a completing gang is evicted",
        _completing(),
        Plan(evictions=(evict("c", "c-worker-0", "c-worker-1"),)),
        "job default/c: invalid, completing or in an invalid queue, yet changed",
    ),
    (
        "a queue of max 0 gets a pod",
        snapshot(node("a", gpus=8), _two_queues({"max": 0}, {}), gang("g", 1)),
        Plan(binds=gang_binds("g", 1, "a")),
        "queue qa: nvidia.com/gpu 1 in use > max 0",
    ),
    (
        "reclaim takes a queue's last GPU under its min",
        snapshot(  # qa (min 1) borrows one of its two GPUs; qb (min 2) reclaims both
            node("a", gpus=2),
            _two_queues({"min": 1}, {"min": 2}),
            gang("a1", 1, running_on=["a"]),
            gang("a2", 1, running_on=["a"]),
            gang("bg", 2, namespace="team-b"),
        ),
        Plan(
            evictions=(evict("a1", "a1-worker-0"), evict("a2", "a2-worker-0")),
            binds=gang_binds("bg", 2, "a", ns="team-b"),
        ),
        "queue qa: nvidia.com/gpu 0 in use < 1",
    ),
    (
        "reclaim from a queue at exactly its min",
        snapshot(  # qa uses its min of 8, so it borrows nothing qb may reclaim
            node("a", gpus=8),
            _two_queues({"min": 8}, {"min": 8}),
            gang("a1", 8, running_on=["a"] * 8, priority=100),
            gang("b1", 8, namespace="team-b"),
        ),
        Plan(
            evictions=(evict("a1", *[f"a1-worker-{i}" for i in range(8)]),),
            binds=gang_binds("b1", 8, "a", ns="team-b"),
        ),
        "gang broken",
    ),
    (
        "reclaim of a CPU-only gang where only GPUs are guaranteed",
        snapshot(  # qb has no min, but uses no GPU: it borrows nothing guaranteed
            node("a", gpus=8, cpu="64"),
            _two_queues({"min": 8}, {}),
            gang("c", 1, gpus=0, cpu="64", namespace="team-b", running_on=["a"], priority=100),
            gang("a1", 1, gpus=1, cpu="64"),
        ),
        Plan(evictions=(evict("c", "c-worker-0", ns="team-b"),), binds=gang_binds("a1", 1, "a")),
        "gang broken",
    ),
    (
        "a queue at exactly its min does not reclaim",
        snapshot(  # qb uses its min of 4: a second gang of it may not break qa's borrowed one
            node("a", gpus=8),
            _two_queues({}, {"min": 4}),
            gang("a1", 4, running_on=["a"] * 4),
            gang("b1", 4, namespace="team-b", running_on=["a"] * 4),
            gang("b2", 4, namespace="team-b"),
        ),
        Plan(
            evictions=(evict("a1", *[f"a1-worker-{i}" for i in range(4)]),),
            binds=gang_binds("b2", 4, "a", ns="team-b"),
        ),
        "gang broken",
    ),
    (
        "a break its PodDisruptionBudget refuses",
        snapshot(
            node("a", gpus=4),
            gang("low", 4, running_on=["a"] * 4, priority=0),
            gang("hi", 4, priority=100),
            m.pod_disruption_budget("pdb", {"scheduling.x-k8s.io/pod-group": "low"}, 3),
        ),
        Plan(
            evictions=(evict("low", *[f"low-worker-{i}" for i in range(4)]),),
            binds=gang_binds("hi", 4, "a"),
        ),
        "its PodDisruptionBudgets allow 3",
    ),
    (
        "a scale-in past its PodDisruptionBudget",
        snapshot(
            node("a", gpus=8),
            gang("el", 8, min_member=2, max_member=8, running_on=["a"] * 8),
            gang("t", 4),
            m.pod_disruption_budget("pdb", {"scheduling.x-k8s.io/pod-group": "el"}, 2),
        ),
        Plan(
            evictions=(evict("el", *[f"el-worker-{i}" for i in range(4, 8)]),),
            binds=gang_binds("t", 4, "a"),
        ),
        "evicts 4 running pods, its PodDisruptionBudgets allow 2",
    ),
    (
        "a partial gang rolled back past its PodDisruptionBudget",
        snapshot(
            node("a", gpus=4),
            gang("p", 4, running_on=["a", "a"]),
            gang("hi", 4, priority=100),
            m.pod_disruption_budget("pdb", {"scheduling.x-k8s.io/pod-group": "p"}, 0),
        ),
        Plan(evictions=(evict("p", "p-worker-0", "p-worker-1"),)),
        "evicts 2 running pods, its PodDisruptionBudgets allow 0",
    ),
    (
        "an irregular job taken to 0 past its PodDisruptionBudget",
        _irregular(1),
        Plan(evictions=(evict("el", *[f"el-worker-{i}" for i in range(6)]),)),
        "evicts 6 running pods, its PodDisruptionBudgets allow 1",
    ),
]


@pytest.mark.parametrize(
    ("snap", "bad_plan", "want"),
    [c[1:] for c in (*CASES, *RULE_CASES)],
    ids=[c[0] for c in (*CASES, *RULE_CASES)],
)
def test_checker_rejects(snap: ClusterSnapshot, bad_plan: Plan, want: str) -> None:
    violations = check(snap, bad_plan, NOW)
    assert any(want in v for v in violations), violations


def test_an_unknown_bind_does_not_stop_the_binds_after_it_being_checked() -> None:
    snap = snapshot(
        node("a", gpus=8), node("off", gpus=8, unschedulable=True), gang("g", 1), gang("h", 1)
    )
    plan = Plan(binds=(bind("g-worker-0", "nowhere"), bind("h-worker-0", "off")))
    violations = check(snap, plan, NOW)
    assert any("unknown pod or node" in v for v in violations), violations
    assert any("cordoned" in v for v in violations), violations


def test_a_job_in_an_invalid_queue_does_not_stop_the_jobs_after_it_being_checked() -> None:
    snap = snapshot(
        node("a", gpus=8),
        _two_queues({"min": 8, "max": 4}, {}),
        gang("g", 1),
        gang("z", 4, namespace="team-b"),
    )
    plan = Plan(
        binds=(
            bind("g-worker-0", "a"),
            *(bind(f"z-worker-{i}", "a", ns="team-b") for i in range(3)),
        )
    )
    violations = check(snap, plan, NOW)
    assert any("job default/g: invalid" in v for v in violations), violations
    assert any("job team-b/z: ends with 3 pods" in v for v in violations), violations


def test_a_broken_gang_with_nothing_started_is_one_violation() -> None:
    snap = snapshot(node("a", gpus=4), gang("low", 4, running_on=["a"] * 4))
    violations = check(
        snap, Plan(evictions=(evict("low", *[f"low-worker-{i}" for i in range(4)]),)), NOW
    )
    assert len(violations) == 1 and "gang broken" in violations[0], violations


def test_unequal_pods_may_go_from_the_highest_index_down() -> None:
    plan = Plan(
        evictions=(evict("el", "el-worker-2", "el-worker-3"),), binds=gang_binds("t", 6, "a")
    )
    assert check(_unequal(), plan, NOW) == []


def test_preemption_by_priority_is_on_by_default() -> None:
    """Within one queue at exactly its min, a higher-priority gang may break a lower one: the
    min rule does not hold a queue that borrows nothing at its usage."""
    snap = snapshot(
        node("a", gpus=4),
        _two_queues({"min": 4}, {}),
        gang("low", 4, running_on=["a"] * 4, priority=0),
        gang("hi", 2, priority=100),
    )
    plan = Plan(
        evictions=(evict("low", *[f"low-worker-{i}" for i in range(4)]),),
        binds=gang_binds("hi", 2, "a"),
    )
    assert check(snap, plan, NOW) == []
    assert check(snap, plan, NOW, priority_preemption=False) != []


@pytest.mark.parametrize("allowed", [0, 1])
def test_an_irregular_job_its_budget_keeps_whole_may_stay(allowed: int) -> None:
    assert check(_irregular(allowed), Plan(), NOW) == []
    assert check(_irregular(None), Plan(), NOW) != []  # without a budget: it may not
    snap = _irregular(None)  # nor with one that lets all its pods go (not read so by the loader)
    el = snap.jobs["default/el"]
    snap = replace(snap, jobs={**snap.jobs, el.name: replace(el, disruptions=6)})
    assert check(snap, Plan(), NOW) != []


def test_a_scale_in_within_its_pod_disruption_budget_passes() -> None:
    snap = snapshot(
        node("a", gpus=8),
        gang("el", 8, min_member=2, max_member=8, running_on=["a"] * 8),
        gang("t", 2),
        m.pod_disruption_budget("pdb", {"scheduling.x-k8s.io/pod-group": "el"}, 2),
    )
    plan = Plan(
        evictions=(evict("el", "el-worker-6", "el-worker-7"),), binds=gang_binds("t", 2, "a")
    )
    assert check(snap, plan, NOW) == []


def test_a_queue_s_floor_leaves_out_what_its_partial_gangs_hold() -> None:
    """qa (min 4) uses 5 GPUs, 2 of them a partial gang that must go anyway: its floor is 3."""
    snap = snapshot(
        node("a", gpus=8),
        _two_queues({"min": 4}, {}),
        gang("ok", 3, running_on=["a"] * 3),
        gang("part", 4, running_on=["a"] * 2),
    )
    plan = Plan(evictions=(evict("part", "part-worker-0", "part-worker-1"),))
    assert check(snap, plan, NOW) == []


def test_a_queue_without_a_min_that_uses_one_gpu_borrows_it() -> None:
    snap = snapshot(
        node("a", gpus=1),
        _two_queues({"min": 1}, {}),
        gang("b1", 1, namespace="team-b", running_on=["a"], priority=100),
        gang("a1", 1),
    )
    plan = Plan(
        evictions=(evict("b1", "b1-worker-0", ns="team-b"),), binds=gang_binds("a1", 1, "a")
    )
    assert check(snap, plan, NOW) == []


def test_a_finished_pod_holds_no_capacity() -> None:
    snap = snapshot(
        node("a", gpus=8),
        pod("done", gpus=8, node_name="a", phase="Succeeded", scheduler="default-scheduler"),
        gang("g", 8),
    )
    assert check(snap, Plan(binds=gang_binds("g", 8, "a")), NOW) == []


def test_an_empty_queue_with_max_0_is_not_over_it() -> None:
    snap = snapshot(node("a", gpus=8), _two_queues({}, {"max": 0}), gang("g", 1))
    assert check(snap, Plan(binds=gang_binds("g", 1, "a")), NOW) == []


def test_node_name_affinity_lets_the_pod_onto_the_node_it_names() -> None:
    snap = snapshot(
        node("a", gpus=8),
        node("b", gpus=8),
        pod_group("g"),
        on_node_only(pod("g-worker-0", group="g"), "b"),
    )
    assert check(snap, Plan(binds=gang_binds("g", 1, "b")), NOW) == []


def test_a_queue_below_its_min_does_not_reclaim_from_itself() -> None:
    """qa borrows GPUs (6 of min 4) while below its CPU min (24 of 100): a gang of it starting
    may reclaim from other borrowing queues, not break its own gang of equal priority."""
    snap = snapshot(
        node("a", gpus=6),
        quota_tree(
            {
                "name": "root",
                "children": [
                    {
                        "name": "qa",
                        "namespaces": ["default"],
                        "min": {"nvidia.com/gpu": "4", "cpu": "100"},
                    }
                ],
            }
        ),
        gang("keep", 4, running_on=["a"] * 4),
        gang("old", 2, running_on=["a"] * 2),
        gang("new", 2),
    )
    plan = Plan(
        evictions=(evict("old", "old-worker-0", "old-worker-1"),), binds=gang_binds("new", 2, "a")
    )
    violations = check(snap, plan, NOW)
    assert any("job default/old: gang broken" in v for v in violations), violations


def test_the_first_of_two_pods_evicted_is_named() -> None:
    snap = snapshot(
        node("a", gpus=8), gang("el", 2, min_member=1, max_member=2, running_on=["a"] * 2)
    )
    violations = check(snap, Plan(evictions=(evict("el", "el-worker-0"),)), NOW)
    assert any("evicts its first pod default/el-worker-0" in v for v in violations), violations


def _swap_plan(broken: tuple[str, ...], c: bool) -> Plan:
    """bnew bound, the qc gangs in ``broken`` evicted, and c's 4 pods bound if ``c``."""
    binds = [bind("bnew-worker-0", "n1", ns="qb")]
    if c:
        binds += gang_binds("c", 4, "n2", ns="qc")
    evictions = tuple(evict(g, f"{g}-worker-0", ns="qc") for g in broken)
    return Plan(binds=tuple(binds), evictions=evictions)


@pytest.mark.parametrize(
    ("z_priority", "broken", "c", "ok"),
    [
        pytest.param(1000, ("a1", "z"), True, False, id="c-takes-a-slot-it-may-not-break-for"),
        pytest.param(1000, ("a1",), False, True, id="one-broken-for-bnew"),
        pytest.param(0, ("a1", "z"), True, True, id="c-breaks-z-it-outranks"),
    ],
)
def test_the_room_a_break_frees_goes_to_starts_that_may_break(
    z_priority: int, broken: tuple[str, ...], c: bool, ok: bool
) -> None:
    snap = snapshot(*reclaim_swap(z_priority=z_priority))
    bad = check(snap, _swap_plan(broken, c), NOW)
    assert (bad == []) is ok
    if not ok:
        assert bad == [
            "queue root: kube-queue/max-jobs 3 > max 2 with broken gangs ['qc/a1', 'qc/z'] "
            "counted at their smallest size: a start that may not break them uses what they freed"
        ]


def test_a_cap_freed_by_a_break_goes_to_starts_that_may_break_too() -> None:
    snap = snapshot(*reclaim_swap(qc_cpu="8"))  # a1 and z hold 4 cpu each, c needs 4
    bad = check(snap, _swap_plan(("z",), True), NOW)
    assert any(b.startswith("queue qc: cpu 12000 > max 8000 with broken gangs") for b in bad)


def test_a_gang_that_never_preempts_licenses_no_break() -> None:
    """preemptionPolicy Never: the same plan as above, refused."""
    hi = gang("hi", 2, priority=100)
    for o in hi:
        if o["kind"] == "Pod":
            o["spec"]["preemptionPolicy"] = "Never"
    snap = snapshot(
        node("a", gpus=4),
        _two_queues({"min": 4}, {}),
        gang("low", 4, running_on=["a"] * 4, priority=0),
        hi,
    )
    plan = Plan(
        evictions=(evict("low", *[f"low-worker-{i}" for i in range(4)]),),
        binds=gang_binds("hi", 2, "a"),
    )
    assert any("gang broken with no higher-priority gang" in v for v in check(snap, plan, NOW))
