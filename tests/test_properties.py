"""Property-based tests over random small clusters, built as Kubernetes manifests (so every example
also goes through the real loader).

A drawn cluster is a `Scenario`: the builder calls that make it, printed as Python when hypothesis
reports a counter-example, so the example can be pasted into a unit test as is.

Properties:
1. every backend's plan passes the independent checker;
2. CP-SAT and MILP agree on the optimum of the model, and on the emitted plan's objective unless the
   post-solve packing repaired one of the plans;
3. CP-SAT is never below greedy (and greedy's assignment is feasible in the model);
4. gangs are all-or-nothing seen from outside: every valid job ends at 0 or an allowed size;
5. running pods never move and no pod is bound twice;
6. CP-SAT (one worker, fixed seed) is deterministic.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

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
from tests.support.builders import NOW, config, plan, snapshot, workers_after

BACKENDS = ("cpsat", "milp", "greedy")
GPU = "nvidia.com/gpu"
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
CPU_SLOTS = 16  # node cpu "64" / pod cpu "4": pods per node before cpu runs out

PROPS = settings(
    max_examples=50,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# How often property 2 had to skip the plan comparison because packing repaired a plan.
STATS: Counter[str] = Counter()


def _ts(delta: timedelta) -> str:
    return (NOW - delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fmt(value: Any) -> str:
    return repr(value)


@dataclass(frozen=True)
class Call:
    """One builder call; `post` patches every pod it makes (tolerations)."""

    fn: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]
    tolerate: bool = False

    def objects(self) -> list[dict[str, Any]]:
        out = getattr(b, self.fn)(*self.args, **dict(self.kwargs))
        objs = out if isinstance(out, list) else [out]
        if self.tolerate:
            for o in objs:
                if o["kind"] == "Pod":
                    o["spec"]["tolerations"] = [dict(TOLERATION)]
        return objs

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # hypothesis's printer
        printer.text(repr(self))

    def __repr__(self) -> str:
        parts = [_fmt(a) for a in self.args] + [f"{k}={_fmt(v)}" for k, v in self.kwargs]
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
    calls: list[Call] = []
    free_gpu: dict[str, int] = {}
    free_slots: dict[str, int] = {}
    for i in range(draw(st.integers(1, 4))):
        name = f"n{i}"
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


def tolerating(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For pasting counter-examples: the pods of a builder call tolerate the `dedicated` taint."""
    for o in objs:
        if o["kind"] == "Pod":
            o["spec"]["tolerations"] = [dict(TOLERATION)]
    return objs


def _same(a: float, c: float) -> bool:
    return abs(a - c) <= 1e-6 * max(1.0, abs(a), abs(c))


# -- 1, 4, 5: every backend's plan is valid --------------------------------------------------


@pytest.mark.slow
@PROPS
@given(scenario=clusters())
def test_every_backend_plan_passes_the_checker(scenario: Scenario) -> None:
    snap = scenario.snapshot()
    for backend in BACKENDS:
        result = plan(snap, backend)
        assert result.violations == [], (backend, result.violations)
        assert check(snap, result.plan, NOW) == [], backend
        assert "plan rejected by the checker" not in result.plan.notes, backend


@pytest.mark.slow
@PROPS
@given(scenario=clusters())
def test_gangs_are_all_or_nothing_and_running_pods_never_move(scenario: Scenario) -> None:
    snap = scenario.snapshot()
    for backend in BACKENDS:
        p = plan(snap, backend).plan
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
        assert [n for n, k in bound.items() if k > 1] == [], backend
        for bd in p.binds:
            pod = snap.pods[bd.pod]
            assert pod.node_name is None, (backend, bd)
            assert pod.scheduler_name == snap.scheduler_name, (backend, bd)
        evicted = [n for e in p.evictions for n in e.pods]
        assert len(evicted) == len(set(evicted)), backend
        assert all(snap.pods[n].bound for n in evicted), backend
        assert not set(evicted) & set(bound), backend


# -- 2: CP-SAT and MILP agree ----------------------------------------------------------------


@pytest.mark.slow
@PROPS
@given(scenario=clusters())
def test_cpsat_and_milp_reach_the_same_optimum(scenario: Scenario) -> None:
    snap = scenario.snapshot()
    cfg = config()
    problem = prepare(snap, cfg.weights, cfg.settings, NOW)
    model = build(problem).model
    c_status, _, c_obj, _, _, _ = solve_cpsat(model, None, 10.0, 1, 0)
    m_status, _, m_obj, _, _, _ = solve_milp(model, 10.0, 1)
    assert (c_status is SolveStatus.INFEASIBLE) == (m_status is SolveStatus.INFEASIBLE)
    if c_status is SolveStatus.OPTIMAL and m_status is SolveStatus.OPTIMAL:
        assert c_obj is not None and m_obj is not None
        assert _same(c_obj, m_obj), ("model optimum", c_obj, m_obj)

    cp, mi = plan(snap, "cpsat", cfg=cfg), plan(snap, "milp", cfg=cfg)
    if cp.stats.status is not SolveStatus.OPTIMAL or mi.stats.status is not SolveStatus.OPTIMAL:
        STATS["not both optimal"] += 1
        event("not both optimal")
        return
    assert cp.stats.objective is not None and mi.stats.objective is not None
    STATS["both optimal"] += 1
    if _same(cp.stats.objective, mi.stats.objective):
        return
    repaired = any("repair" in n for n in (*cp.plan.notes, *mi.plan.notes))
    if repaired:
        STATS["plans differ after packing repair (skipped)"] += 1
        event("plans differ after packing repair (skipped)")
        return
    raise AssertionError(
        f"emitted objectives differ without a repair: cpsat {cp.stats.objective} "
        f"({cp.chosen}, notes {cp.plan.notes}) vs milp {mi.stats.objective} "
        f"({mi.chosen}, notes {mi.plan.notes})"
    )


# -- 3: CP-SAT is never below greedy ---------------------------------------------------------


@pytest.mark.slow
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

    cp, gr = plan(snap, "cpsat", cfg=cfg), plan(snap, "greedy", cfg=cfg)
    assert cp.stats.objective is not None and gr.stats.objective is not None
    assert cp.stats.objective >= gr.stats.objective - 1e-6, (cp.stats.objective, gr.stats.objective)


# -- 6: determinism --------------------------------------------------------------------------


@pytest.mark.slow
@settings(PROPS, max_examples=40)
@given(scenario=clusters())
def test_cpsat_is_deterministic(scenario: Scenario) -> None:
    first = plan(scenario.snapshot(), "cpsat").plan
    second = plan(scenario.snapshot(), "cpsat").plan
    assert first.binds == second.binds
    assert first.evictions == second.evictions


# -- the generator itself --------------------------------------------------------------------


@PROPS
@given(scenario=clusters())
def test_generated_clusters_load_cleanly(scenario: Scenario) -> None:
    """The generator builds what it means to: no loader errors beyond intended invalid jobs, and
    running pods only where the nodes hold them (unless an overcommit was drawn)."""
    snap = scenario.snapshot()
    assert all("PodGroup" in str(e) for e in snap.errors), snap.errors
    assert 1 <= len(snap.nodes) <= 4
    assert 1 <= len(snap.jobs) <= 5
    for name, node in snap.nodes.items():
        pods = snap.pods_by_node.get(name, ())
        used = sum(p.requests.get(GPU, 0) for p in pods)
        ours = [p for p in pods if p.scheduler_name == snap.scheduler_name]
        assert used <= node.allocatable.get(GPU, 0) or not ours, name
        assert sum(p.requests.get("cpu", 0) for p in pods) <= node.allocatable["cpu"] or not ours
