"""The checker must catch every kind of bad plan (hand-made plans, no solver involved)."""

from datetime import timedelta

import pytest

from solver_sched.domain.plan import BindPod, EvictJob, Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.planning.check import check
from tests.support.builders import NOW, gang, node, other, pod, pod_group, quota_tree, snapshot


def bind(p: str, n: str, job: str | None = None) -> BindPod:
    return BindPod(pod=f"default/{p}", node=n, job=job or f"default/{p.rsplit('-worker', 1)[0]}")


def evict(job: str, *pods: str) -> EvictJob:
    return EvictJob(job=f"default/{job}", pods=tuple(f"default/{p}" for p in pods), reason="t")


def gang_binds(name: str, count: int, n: str) -> tuple[BindPod, ...]:
    return tuple(bind(f"{name}-worker-{i}", n) for i in range(count))


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
        "allocatable",
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
        "evicts its first pod",
    ),
    (
        "unequal pods evicted out of order",
        snapshot(  # worker 1 requests no GPU: only pods with equal requests may go out of order
            node("a", gpus=8),
            pod_group("el", min_member=2, max_member=4),
            *(
                pod(f"el-worker-{i}", group="el", node_name="a", gpus=0 if i == 1 else 1)
                for i in range(4)
            ),
            gang("t", 6),
        ),
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
            binds=tuple(BindPod(f"team-b/bg-worker-{i}", "a", "team-b/bg") for i in range(6)),
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


@pytest.mark.parametrize(
    ("snap", "bad_plan", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_checker_rejects(snap: ClusterSnapshot, bad_plan: Plan, want: str) -> None:
    violations = check(snap, bad_plan, NOW)
    assert any(want in v for v in violations), violations


def test_checker_accepts_a_good_plan() -> None:
    snap = snapshot(node("a", gpus=8), gang("g", 4))
    assert check(snap, Plan(binds=gang_binds("g", 4, "a")), NOW) == []


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
    later = NOW + timedelta(minutes=9)
    binds = tuple(bind(f"el-worker-{i}", "a") for i in range(2, 4))
    assert check(snap, Plan(binds=binds), later) == []


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
        evictions=(EvictJob("team-b/b1", tuple(f"team-b/b1-worker-{i}" for i in range(8)), "t"),),
        binds=gang_binds("a1", 8, "a"),
    )
    assert check(snap({"nvidia.com/gpu": "8"}), plan, NOW) == []
    assert check(snap({}), plan, NOW) != []
