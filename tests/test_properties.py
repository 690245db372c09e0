"""Property-based tests over random small clusters, built as Kubernetes manifests (so every example
also goes through the real loader).

A drawn cluster is a `Scenario`: the builder calls that make it. Hypothesis prints a counter-example
as those calls (`snapshot(node(...), gang(...), ...)`), so it can be pasted into a unit test.

Properties:
1. every plan a backend produces passes the independent checker: the emitted one, and every
   candidate (solver's and greedy's) the cycle checked on the way;
2. CP-SAT and MILP agree on the model's optimum (emitted plans may differ: equal optima can pick
   different node classes, and packing then lands differently);
3. CP-SAT is never below greedy (and greedy's assignment is feasible in the model);
4. gangs are all-or-nothing seen from outside: every valid job ends at 0 or an allowed size;
5. running pods never move and no pod is bound twice;
6. CP-SAT (one worker, fixed seed) is deterministic, also when the manifests come in another order.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import solver_sched.planning.candidates as candidates_module
from solver_sched.cycle import CycleResult
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.build import build
from solver_sched.formulation.prepare import prepare
from solver_sched.formulation.values import to_values
from solver_sched.planning.check import check
from solver_sched.solvers.cpsat import solve_cpsat
from solver_sched.solvers.greedy import solve_greedy
from solver_sched.solvers.milp import solve_milp
from solver_sched.solvers.result import SolveStatus
from tests.support import builders as b
from tests.support.builders import (
    NOW,
    config,
    gang,
    node,
    other,
    plan,
    pod,
    snapshot,
    workers_after,
)

BACKENDS = ("cpsat", "milp", "greedy")
GPU = "nvidia.com/gpu"
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
CPU_SLOTS = 16  # node cpu "64" / pod cpu "4": pods per node before cpu runs out

PROPS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- random clusters -------------------------------------------------------------------------


def _ts(delta: timedelta) -> str:
    return (NOW - delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def tolerating(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods of a builder call tolerate the `dedicated` taint (counter-examples use it)."""
    for o in objs:
        if o["kind"] == "Pod":
            o["spec"]["tolerations"] = [dict(TOLERATION)]
    return objs


@dataclass(frozen=True)
class Call:
    """One call of a builder in tests/support/builders.py."""

    fn: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    tolerate: bool = False

    def objects(self) -> list[dict[str, Any]]:
        out = getattr(b, self.fn)(*self.args, **dict(self.kwargs))
        objs = out if isinstance(out, list) else [out]
        return tolerating(objs) if self.tolerate else objs

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # how hypothesis prints it
        printer.text(repr(self))

    def __repr__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        text = f"{self.fn}({', '.join(parts)})"
        return f"tolerating({text})" if self.tolerate else text


@dataclass(frozen=True)
class Scenario:
    calls: tuple[Call, ...]

    def objects(self) -> list[dict[str, Any]]:
        return [o for c in self.calls for o in c.objects()]

    def snapshot(self) -> ClusterSnapshot:
        return snapshot(self.objects())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def __repr__(self) -> str:
        body = ",\n    ".join(repr(c) for c in self.calls)
        return f"snapshot(\n    {body},\n)"


def _call(fn: str, *args: Any, tolerate: bool = False, **kwargs: Any) -> Call:
    return Call(fn, args, tuple((k, v) for k, v in kwargs.items() if v is not None), tolerate)


@st.composite
def clusters(draw: st.DrawFn) -> Scenario:
    """1-4 nodes (0-8 GPUs, some cordoned or tainted), other schedulers' pods, 1-5 gangs of 1-8
    workers x 1-4 GPUs (rigid, elastic, power-of-two, invalid, short of pods; pending, running at
    an allowed size, partial or irregular; cooldowns; priorities 0/100/1000), optionally a quota
    tree with leaves team-a/team-b. Running pods are placed where they fit: a node is overcommitted
    only by a rare, intended other-scheduler pod."""
    calls: list[Call] = []
    free_gpu: dict[str, int] = {}
    free_slots: dict[str, int] = {}
    # A third of the clusters are uniform: identical nodes form one class, the case where the
    # model's per-class counts most often need the packer's repair.
    uniform = draw(st.integers(0, 2)) == 0
    node_gpus = draw(st.sampled_from([4, 6, 8]))
    for i in range(draw(st.integers(1, 4))):
        name = f"n{i}"
        if uniform:
            gpus, cordoned, tainted = node_gpus, False, False
        else:
            gpus = draw(st.sampled_from([0, 1, 2, 3, 4, 4, 6, 8, 8, 8]))
            cordoned = draw(st.integers(0, 5)) == 0
            tainted = draw(st.integers(0, 4)) == 0
        calls.append(
            _call(
                "node",
                name,
                gpus=gpus,
                unschedulable=cordoned or None,
                taints=[dict(TAINT)] if tainted else None,
            )
        )
        free_gpu[name], free_slots[name] = gpus, CPU_SLOTS
    nodes = sorted(free_gpu)

    def place(gpus: int, overcommit: bool = False) -> str | None:
        fitting = [n for n in nodes if overcommit or (free_gpu[n] >= gpus and free_slots[n] > 0)]
        if not fitting:
            return None
        where = draw(st.sampled_from(fitting))
        free_gpu[where] -= gpus
        free_slots[where] -= 1
        return where

    with_quota = draw(st.booleans())
    namespaces = ["default", "team-a", "team-b"] if with_quota else ["default"]
    for i in range(draw(st.integers(0, 3))):  # other schedulers' pods
        gpus = draw(st.integers(0, 4))
        where = place(gpus, overcommit=draw(st.integers(0, 9)) == 0)  # rarely: intended overcommit
        if where is not None:
            ns = draw(st.sampled_from(["infra", *namespaces[1:]]))  # may count against a queue
            calls.append(
                _call("other", f"sys-{i}", where, gpus, namespace=None if ns == "infra" else ns)
            )
    for i in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):  # pods of ours without a PodGroup
        gpus = draw(st.sampled_from([0, 1, 2]))
        where = place(gpus) if draw(st.booleans()) else None
        calls.append(
            _call(
                "pod",
                f"solo-{i}",
                namespace=draw(st.sampled_from(namespaces)),
                gpus=gpus,
                node_name=where,
                priority=draw(st.sampled_from([None, 0, 100, 1000])),
            )
        )
    for i in range(draw(st.integers(1, 5))):
        workers = draw(st.integers(1, 8))
        gpus = draw(st.sampled_from([1, 1, 2, 2, 3, 4]))
        kind = draw(
            st.sampled_from(
                ["rigid"] * 4 + ["elastic"] * 4 + ["elastic-p2"] * 3 + ["invalid", "short"]
            )
        )
        min_member = max_member = policy = None
        if kind == "elastic":
            min_member = draw(st.integers(1, workers))
            max_member = draw(st.integers(min_member, workers + 1))
            policy = draw(st.sampled_from([None, "any"]))
        elif kind == "elastic-p2":
            min_member = draw(st.sampled_from([s for s in (1, 2, 4, 8) if s <= workers]))
            max_member = draw(st.integers(min_member, workers + 1))
            policy = "power-of-two"
        elif kind == "invalid":  # the loader marks the job invalid: it must not be touched
            min_member, max_member, policy = draw(
                st.sampled_from(
                    [(3, 4, "power-of-two"), (2, 1, None), (workers, workers, "sometimes")]
                )
            )
        elif kind == "short":  # minMember above the pods that exist (some not created yet)
            min_member = workers + 1
        elif draw(st.integers(0, 4)) == 0:
            min_member = draw(st.integers(1, workers))  # rigid, fewer than its pods (spares)
        lo = min_member or workers
        hi = max(lo, max_member or lo)
        sizes = [
            s
            for s in range(lo, min(hi, workers) + 1)
            if policy != "power-of-two" or s & (s - 1) == 0
        ]
        how = draw(st.sampled_from(["pending"] * 3 + ["allowed"] * 3 + ["any"]))
        running = 0
        if how == "allowed" and sizes:
            running = draw(st.sampled_from(sizes))
        elif how == "any":
            running = draw(st.integers(0, workers))  # a partial gang or an irregular size
        prefix = draw(st.integers(0, 5)) > 0  # else a random subset of workers runs
        chosen = (
            list(range(running))
            if prefix
            else sorted(
                draw(
                    st.lists(
                        st.integers(0, workers - 1), min_size=running, max_size=running, unique=True
                    )
                )
            )
        )
        running_on: list[str | None] = [None] * workers
        for w in chosen:
            running_on[w] = place(gpus)
        last = draw(st.sampled_from([None, None, timedelta(minutes=5), timedelta(hours=1)]))
        created = draw(st.sampled_from([None, timedelta(hours=3), timedelta(days=5)]))
        calls.append(
            _call(
                "gang",
                f"g{i}",
                workers,
                namespace=draw(st.sampled_from(namespaces)),
                gpus=gpus,
                min_member=min_member,
                max_member=max_member,
                size_policy=policy,
                running_on=running_on if any(running_on) else None,
                priority=draw(st.sampled_from([None, 0, 100, 1000])),
                last_scale_time=_ts(last) if last else None,
                created=_ts(created) if created else None,
                tolerate=draw(st.integers(0, 3)) == 0,
            )
        )
    if with_quota:
        leaves = []
        for team in ("team-a", "team-b"):
            mx: dict[str, str] = {GPU: str(draw(st.sampled_from([0, 1, 2, 4, 6, 8, 12, 16])))}
            if draw(st.booleans()):
                mx["kube-queue/max-jobs"] = str(draw(st.integers(1, 3)))
            leaf: dict[str, Any] = {"name": team, "namespaces": [team], "max": mx}
            if draw(st.booleans()):
                leaf["min"] = {GPU: str(draw(st.integers(0, int(mx[GPU]))))}
            leaves.append(leaf)
        root: dict[str, Any] = {"name": "root", "children": leaves}
        if draw(st.integers(0, 3)) == 0:
            root["max"] = {GPU: str(draw(st.sampled_from([2, 4, 8, 16])))}
        calls.insert(0, _call("quota_tree", root))
    return Scenario(tuple(calls))


# -- running a cycle, seeing every candidate the checker judged ------------------------------


@contextmanager
def _recording_checks() -> Iterator[list[list[str]]]:
    """Every check() the cycle runs, in order: one list of violations per candidate plan."""
    seen: list[list[str]] = []

    def recorder(*args: Any, **kwargs: Any) -> list[str]:
        out = check(*args, **kwargs)
        seen.append(list(out))
        return out

    with mock.patch.object(candidates_module, "check", recorder):
        yield seen


def run(snap: ClusterSnapshot, backend: str, **kw: Any) -> tuple[CycleResult, list[list[str]]]:
    """One cycle, and the checker's verdict on each candidate plan it judged."""
    with _recording_checks() as seen:
        result = plan(snap, backend, **kw)
    return result, seen


def _same(x: float, y: float) -> bool:
    return abs(x - y) <= 1e-6 * max(1.0, abs(x), abs(y))


# -- 1: every plan passes the independent checker --------------------------------------------


@PROPS
@given(scenario=clusters())
def test_every_backend_plan_passes_the_checker(scenario: Scenario) -> None:
    snap = scenario.snapshot()
    for backend in BACKENDS:
        result, seen = run(snap, backend)
        assert seen, backend
        assert [v for v in seen if v] == [], (backend, "a candidate plan was rejected")
        assert result.violations == [], (backend, result.violations)
        assert check(snap, result.plan, NOW) == [], backend
        event(f"{backend}: emitted {result.chosen}'s plan")


# -- 4, 5: gangs are all-or-nothing, running pods never move ---------------------------------


@PROPS
@given(scenario=clusters())
def test_gangs_are_all_or_nothing_and_running_pods_never_move(scenario: Scenario) -> None:
    snap = scenario.snapshot()
    for backend in BACKENDS:
        p = run(snap, backend)[0].plan
        after = workers_after(snap, p)
        for name, job in snap.jobs.items():
            if job.invalid is None:
                assert after[name] == 0 or after[name] in job.allowed_sizes(), (
                    backend,
                    name,
                    after[name],
                    job.allowed_sizes(),
                )
            else:
                assert after[name] == len(snap.running_pods(job)), (backend, name)
        bound = Counter(bd.pod for bd in p.binds)
        assert [n for n, k in bound.items() if k > 1] == [], (backend, "bound twice")
        for bd in p.binds:
            pod_ = snap.pods[bd.pod]
            assert pod_.node_name is None, (backend, "running pod moved", bd)
            assert not pod_.terminated, (backend, bd)
            assert pod_.scheduler_name == snap.scheduler_name, (backend, bd)
        evicted = [n for e in p.evictions for n in e.pods]
        assert len(evicted) == len(set(evicted)), (backend, "evicted twice")
        assert all(snap.pods[n].bound for n in evicted), backend
        assert not set(evicted) & set(bound), backend


# -- 2: CP-SAT and MILP agree ----------------------------------------------------------------


@PROPS
@given(scenario=clusters())
def test_cpsat_and_milp_reach_the_same_optimum(scenario: Scenario) -> None:
    snap = scenario.snapshot()
    cfg = config()
    model = build(prepare(snap, cfg.weights, cfg.settings, NOW)).model
    c_status, _, c_obj, _, _, _ = solve_cpsat(model, None, 10.0, 1, 0)
    m_status, _, m_obj, _, _, _ = solve_milp(model, 10.0, 1)
    assert (c_status is SolveStatus.INFEASIBLE) == (m_status is SolveStatus.INFEASIBLE), (
        c_status,
        m_status,
    )
    if c_status is SolveStatus.OPTIMAL and m_status is SolveStatus.OPTIMAL:
        assert c_obj is not None and m_obj is not None
        assert _same(c_obj, m_obj), ("model optimum", c_obj, m_obj)

    # Emitted plans may differ: the solvers may pick different node classes among equal optima,
    # and packing then lands differently. Both are judged by the checker in the other properties.


# -- 3: CP-SAT is never below greedy ---------------------------------------------------------


@PROPS
@given(scenario=clusters())
def test_cpsat_is_never_below_greedy(scenario: Scenario) -> None:
    snap = scenario.snapshot()
    cfg = config()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    built = build(problem)
    greedy = solve_greedy(snap, problem)
    hint = to_values(problem, built, greedy.sizes, greedy.counts)
    assert hint is not None, "greedy names a size or class the model does not have"
    assert built.model.violated(hint) == [], "greedy's assignment breaks the model"
    status, _, obj, _, _, _ = solve_cpsat(built.model, hint, 10.0, 1, 0)
    if status is SolveStatus.OPTIMAL:
        assert obj is not None
        assert obj >= built.model.objective_value(hint) - 1e-6, "model optimum below greedy"

    cp, gr = run(snap, "cpsat", cfg=cfg)[0], run(snap, "greedy", cfg=cfg)[0]
    # The cycle emits the better of the solver's and greedy's packed plans, so this holds by
    # construction; the event counts how often greedy's plan had to win (the solver's was repaired).
    event(f"cpsat cycle emitted {cp.chosen}'s plan")
    assert cp.stats.objective is not None and gr.stats.objective is not None
    assert cp.stats.objective >= gr.stats.objective - 1e-6, (cp.stats.objective, gr.stats.objective)


# -- 6: determinism --------------------------------------------------------------------------


@PROPS
@given(scenario=clusters(), rnd=st.randoms(use_true_random=False))
def test_cpsat_is_deterministic(scenario: Scenario, rnd: random.Random) -> None:
    first = run(scenario.snapshot(), "cpsat")[0].plan
    second = run(scenario.snapshot(), "cpsat")[0].plan
    assert (first.binds, first.evictions) == (second.binds, second.evictions)
    objs = scenario.objects()
    rnd.shuffle(objs)  # the same cluster, listed in another order
    shuffled = run(snapshot(objs), "cpsat")[0].plan
    assert (shuffled.binds, shuffled.evictions) == (first.binds, first.evictions)


# -- the generator itself --------------------------------------------------------------------


@PROPS
@given(scenario=clusters())
def test_generated_clusters_load_as_intended(scenario: Scenario) -> None:
    """No loader errors beyond the intended invalid PodGroups, and our running pods only where
    the nodes hold them."""
    snap = scenario.snapshot()
    assert all(str(e).startswith("PodGroup") for e in snap.errors), snap.errors
    assert 1 <= len(snap.nodes) <= 4
    assert 1 <= len(snap.jobs) <= 7
    for name, n in snap.nodes.items():
        pods = snap.pods_by_node.get(name, ())
        ours = [p for p in pods if p.scheduler_name == snap.scheduler_name]
        for r in (GPU, "cpu"):
            used = sum(p.requests.get(r, 0) for p in pods)
            assert used <= n.allocatable.get(r, 0) or not ours, (name, r)


# -- bugs found by the properties (minimal counter-examples) ---------------------------------


def test_partial_gang_in_a_borrowing_queue_does_not_block_the_cycle() -> None:
    """Found by property 1 (fixed in 49489a6, "floor ignores forced gangs"): the reclaim floor of
    a borrowing queue forbade evicting a partial gang that cannot be completed, the model was
    infeasible, and an empty plan (leaving the partial gang, placing nothing) was emitted."""
    snap = snapshot(
        b.quota_tree(
            {
                "name": "root",
                "children": [
                    {
                        "name": "team-a",
                        "namespaces": ["team-a"],
                        "min": {GPU: "1"},
                        "max": {GPU: "1"},
                    }
                ],
            }
        ),
        node("n0", gpus=8),
        gang("a", 4, namespace="team-a", gpus=2, running_on=["n0", "n0"]),
        gang("b", 1, gpus=1),
    )
    for backend in BACKENDS:
        result = plan(snap, backend)
        assert result.violations == [], backend
        assert [bd.pod for bd in result.plan.binds] == ["default/b-worker-0"], backend
        assert [e.job for e in result.plan.evictions] == ["team-a/a"], backend


def test_pod_may_bind_to_a_node_overcommitted_on_a_resource_it_does_not_request() -> None:
    snap = snapshot(
        node("n0", gpus=4),
        other("sys", "n0", 5),  # e.g. a GPU failed and allocatable dropped under a running pod
        node("n1", gpus=8),
        pod("cpu-only", gpus=0),  # best fit sends it to n0 (fewest free GPUs)
        gang("train", 2, gpus=4),  # fits n1, unrelated to n0
    )
    result = plan(snap)
    assert result.violations == []
    assert {bd.pod for bd in result.plan.binds} == {
        "default/cpu-only",
        "default/train-worker-0",
        "default/train-worker-1",
    }


def test_solver_plan_needs_no_repair_when_a_gang_cannot_be_completed() -> None:
    """Gang a runs 2 of 3 pods of 4 GPUs, with 2 GPUs free beside each. When n0 and n1 were one
    class, the model completed a into 2 + 2 free GPUs of two nodes, packing evicted a instead and
    the cycle emitted greedy's plan while reporting OPTIMAL. Nodes that run pods the plan may
    evict are classes of their own now, so the model's node fit is exact there."""
    snap = snapshot(
        node("n0", gpus=6),
        node("n1", gpus=6),
        gang("a", 3, gpus=4, running_on=["n0", "n1"]),  # partial: 2 of 3, 2 GPUs free per node
        gang("b", 1, gpus=4),
    )
    result = plan(snap, "cpsat")
    assert [bd.pod for bd in result.plan.binds] == ["default/b-worker-0"]
    assert result.chosen == "cpsat", result.chosen
    assert not [n for n in result.plan.notes if "repair" in n]
