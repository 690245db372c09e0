"""The simulator's accounting on tiny hand-made traces, with hand-computed times."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from solver_sched.sim.engine import simulate
from solver_sched.sim.metrics import percentile, summarize
from solver_sched.sim.model import SimParams, Speedup, TraceJob
from solver_sched.sim.policies import (
    GangFifoPolicy,
    GreedyElasticPolicy,
    PerPodPolicy,
    SnapshotBuilder,
    make_policy,
)
from solver_sched.sim.state import SimError, SimState


def params(**kw: object) -> SimParams:
    base: dict[str, object] = dict(gpus=4, gpus_per_node=4, interval=60.0)
    base.update(kw)
    return SimParams(**base)  # type: ignore[arg-type]


def test_fifo_two_jobs_exact_finish_times() -> None:
    # A takes the whole node at t=0 and ends at 3630 exactly; B (arrived at 30) waits for the
    # next cycle boundary after A's finish (3660) and runs its 1800 s.
    a = TraceJob("a", arrival=0.0, duration=3630.0, gpus=4)
    b = TraceJob("b", arrival=30.0, duration=1800.0, gpus=2)
    run = simulate([a, b], GangFifoPolicy(), params())
    jobs = {j.name: j for j in run.jobs}
    assert jobs["a"].first_start == 0.0
    assert jobs["a"].finish == pytest.approx(3630.0)
    assert jobs["b"].first_start == 3660.0
    assert jobs["b"].finish == pytest.approx(5460.0)
    s = summarize(run)
    assert s["avg_jct_h"] * 3600 == pytest.approx((3630.0 + 5430.0) / 2)
    assert s["avg_queue_h"] * 3600 == pytest.approx((0.0 + 3630.0) / 2)
    assert s["makespan_h"] * 3600 == pytest.approx(5460.0)
    # GPU-seconds: 4 x 3630 + 2 x 1800 out of 4 x 5460.
    assert s["util_alloc"] == pytest.approx((4 * 3630 + 2 * 1800) / (4 * 5460))
    assert s["util_useful"] == pytest.approx(s["util_alloc"])
    assert s["restarts_per_job"] == 0


def test_fifo_backfills_but_never_preempts() -> None:
    big = TraceJob("big", arrival=0.0, duration=600.0, gpus=3)
    wide = TraceJob("wide", arrival=1.0, duration=600.0, gpus=4)  # waits for the whole node
    small = TraceJob("small", arrival=2.0, duration=300.0, gpus=1)  # backfills beside big
    run = simulate([big, wide, small], GangFifoPolicy(), params())
    jobs = {j.name: j for j in run.jobs}
    assert jobs["small"].first_start == 60.0
    assert jobs["wide"].first_start == 600.0
    assert all(j.restarts == 0 for j in run.jobs)


def test_checkpoint_loss_on_preemption_and_resume_overhead() -> None:
    job = TraceJob("j", arrival=0.0, duration=3600.0, gpus=1)
    st = SimState([job], params(checkpoint_interval=900.0, restart_overhead=30.0), elastic=True)
    run = st.jobs["j"]
    run.visible = True
    st.apply([("sim/j-0", "node-000")], [], 0.0)
    st.advance(0.0, 600.0)
    st.advance(600.0, 1000.0)  # checkpoint at 900 on the way
    assert run.done == pytest.approx(1000.0)
    assert run.saved == pytest.approx(900.0)
    st.apply([], ["sim/j-0"], 1000.0)  # preempted: back to the checkpoint
    assert run.done == pytest.approx(900.0)
    assert run.lost_work == pytest.approx(100.0)
    assert (run.restarts, run.preemptions, run.scale_ins) == (1, 1, 0)
    st.advance(1000.0, 1200.0)
    assert run.done == pytest.approx(900.0)  # not running: no progress
    st.apply([("sim/j-0", "node-000")], [], 1200.0)
    st.advance(1200.0, 5000.0)
    # 30 s overhead, then the remaining 2700 s of work.
    assert run.finish == pytest.approx(1200.0 + 30.0 + 2700.0)
    assert run.first_start == 0.0


def test_speedup_model() -> None:
    s = Speedup(alpha=0.5)
    assert s.rate(2, 4) == 2.0  # linear below the request
    assert s.rate(4, 4) == 4.0
    assert s.rate(8, 4) == pytest.approx(4 * math.sqrt(2))  # sqrt beyond it
    assert s.rate(0, 4) == 0.0
    assert Speedup(alpha=1.0).rate(8, 4) == 8.0
    assert Speedup(alpha=0.0).rate(8, 4) == 4.0


def test_elastic_job_at_twice_its_request_finishes_sqrt2_faster() -> None:
    job = TraceJob("e", arrival=0.0, duration=3600.0, gpus=2, min_pods=1, max_pods=4)
    st = SimState([job], params(), elastic=True)
    st.jobs["e"].visible = True
    st.apply([(f"sim/e-{i}", "node-000") for i in range(4)], [], 0.0)
    st.advance(0.0, 10000.0)
    assert st.jobs["e"].finish == pytest.approx(3600.0 / math.sqrt(2))


def test_cooldown_accounting() -> None:
    job = TraceJob("e", arrival=0.0, duration=36000.0, gpus=4, min_pods=1, max_pods=4)
    p = params(cooldown=timedelta(seconds=600))
    st = SimState([job], p, elastic=True)
    run = st.jobs["e"]
    run.visible = True
    st.apply([("sim/e-0", "node-000")], [], 0.0)  # start: no cooldown
    assert st.jobs["e"].last_scale is None  # not run.last_scale: mypy keeps that None past apply
    st.apply([("sim/e-1", "node-000")], [], 60.0)  # 1 -> 2: a resize, starts the cooldown
    assert (run.last_scale, run.scale_outs, run.outs_in_cooldown) == (60.0, 1, 0)
    st.apply([("sim/e-2", "node-000"), ("sim/e-3", "node-000")], [], 120.0)  # inside it
    assert (run.scale_outs, run.outs_in_cooldown) == (2, 1)
    st.apply([], ["sim/e-2", "sim/e-3"], 200.0)  # 4 -> 2 inside the cooldown
    assert (run.scale_ins, run.ins_in_cooldown, run.restarts) == (1, 1, 1)
    st.apply([("sim/e-2", "node-000"), ("sim/e-3", "node-000")], [], 900.0)  # after it
    assert (run.scale_outs, run.outs_in_cooldown) == (3, 1)


def test_greedy_elastic_does_not_grow_in_cooldown() -> None:
    job = TraceJob("e", arrival=0.0, duration=36000.0, gpus=4, min_pods=1, max_pods=4)
    st = SimState([job], params(cooldown=timedelta(seconds=600)), elastic=True)
    st.jobs["e"].visible = True
    st.apply([("sim/e-0", "node-000")], [], 0.0)
    st.apply([("sim/e-1", "node-000")], [], 60.0)
    assert GreedyElasticPolicy().plan(st, 120.0).empty
    later = GreedyElasticPolicy().plan(st, 660.0)
    assert len(later.binds) == 2  # grows to 4 once the cooldown is over


def test_greedy_elastic_shrinks_for_a_new_gang() -> None:
    e = TraceJob("e", arrival=0.0, duration=36000.0, gpus=4, min_pods=1, max_pods=4)
    r = TraceJob("r", arrival=10.0, duration=600.0, gpus=2)
    run = simulate([e, r], GreedyElasticPolicy(), params())
    jobs = {j.name: j for j in run.jobs}
    assert jobs["r"].first_start == 60.0
    assert jobs["e"].scale_ins == 1 and jobs["e"].restarts == 1
    assert all(j.outs_in_cooldown == 0 for j in run.jobs)


def test_per_pod_partial_gang_holds_gpus_without_progress() -> None:
    a = TraceJob("a", arrival=0.0, duration=600.0, gpus=3)
    b = TraceJob("b", arrival=0.0, duration=600.0, gpus=3)
    st = SimState([a, b], params(), elastic=False)
    for j in st.jobs.values():
        j.visible = True
    d = PerPodPolicy().plan(st, 0.0)
    st.apply(d.binds, d.evictions, 0.0)
    assert (st.jobs["a"].running, st.jobs["b"].running) == (3, 1)
    st.advance(0.0, 60.0)
    sample = st.samples[-1]
    assert (sample.allocated, sample.useful) == (4.0, 3.0)
    assert st.jobs["b"].done == 0.0 and st.jobs["b"].partial_since == 0.0


def test_per_pod_partial_gang_times_out() -> None:
    a = TraceJob("a", arrival=0.0, duration=3000.0, gpus=3)
    b = TraceJob("b", arrival=0.0, duration=600.0, gpus=3)
    run = simulate([a, b], PerPodPolicy(), params(partial_timeout=600.0))
    jobs = {j.name: j for j in run.jobs}
    assert jobs["b"].partial_releases >= 1
    assert jobs["b"].finish is not None and jobs["b"].first_start is not None
    assert jobs["b"].first_start >= 3000.0


def test_apply_rejects_impossible_decisions() -> None:
    job = TraceJob("j", arrival=0.0, duration=60.0, gpus=4)
    st = SimState([job], params(), elastic=False)
    st.jobs["j"].visible = True
    with pytest.raises(SimError):
        st.apply([], ["sim/j-0"], 0.0)
    st.apply([(f"sim/j-{i}", "node-000") for i in range(4)], [], 0.0)
    other = SimState([job], params(gpus=4), elastic=False)
    other.jobs["j"].visible = True
    other.free["node-000"] = 0
    with pytest.raises(SimError):
        other.apply([("sim/j-0", "node-000")], [], 0.0)


@pytest.mark.parametrize("name", ["per-pod", "fifo", "elastic", "solver-sched"])
def test_every_policy_finishes_a_small_trace_without_cooldown_scale_outs(name: str) -> None:
    jobs = [
        TraceJob("r8", 0.0, 1800.0, 8),
        TraceJob("e4", 0.0, 3600.0, 4, min_pods=1, max_pods=8),
        TraceJob("r1", 120.0, 600.0, 1),
        TraceJob("e2", 300.0, 1200.0, 2, min_pods=1, max_pods=4),
        TraceJob("r16", 400.0, 900.0, 16, gpus_per_pod=8),
        TraceJob("r2", 500.0, 700.0, 2),
    ]
    p = SimParams(gpus=16, gpus_per_node=8, cooldown=timedelta(minutes=10))
    run = simulate(jobs, make_policy(name, time_limit=5.0), p)
    s = summarize(run)
    assert (s["unfinished"], s["scale_outs_in_cooldown"], s["rejected_cycles"]) == (0, 0, 0), s
    for j in run.jobs:
        assert j.finish is not None and j.first_start is not None
        assert j.finish >= j.spec.arrival + j.spec.duration / 2, j  # never faster than 2x GPUs


def test_percentile() -> None:
    assert percentile([], 95) == 0.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 50) == 3.0
    assert percentile([0.0, 10.0], 95) == pytest.approx(9.5)


def test_snapshot_builder_reuses_live_objects_and_drops_finished_jobs() -> None:
    a = TraceJob("a", arrival=0.0, duration=60.0, gpus=2)
    b = TraceJob("b", arrival=0.0, duration=60.0, gpus=2)
    st = SimState([a, b], params(), elastic=True)
    for job in st.jobs.values():
        job.visible = True
    builder = SnapshotBuilder(st)
    first = builder.snapshot(st)
    assert len(first.pods) == 4 and len(first.jobs) == 2
    st.jobs["a"].finish = 60.0
    second = builder.snapshot(st)
    assert set(second.jobs) == {"sim/b"}
    assert all(second.pods[p] is first.pods[p] for p in second.pods)  # unchanged: reused
    assert {name for name, _ in builder._pods} == set(second.pods)  # a's pods are gone


def test_the_oracle_backfills_smallest_work_first_within_a_priority() -> None:
    # big holds the node until 7200; then FIFO starts mid (arrived first) and the oracle small.
    big = TraceJob("big", arrival=0.0, duration=7200.0, gpus=4)
    mid = TraceJob("mid", arrival=1.0, duration=3600.0, gpus=4)
    small = TraceJob("small", arrival=2.0, duration=1800.0, gpus=4)
    urgent = TraceJob("urgent", arrival=3.0, duration=7200.0, gpus=4, priority=1)
    fifo = {j.name: j for j in simulate([big, mid, small], make_policy("fifo"), params()).jobs}
    assert (fifo["mid"].first_start, fifo["small"].first_start) == (7200.0, 10800.0)
    oracle = {
        j.name: j for j in simulate([big, mid, small], make_policy("sjf-oracle"), params()).jobs
    }
    assert (oracle["small"].first_start, oracle["mid"].first_start) == (7200.0, 9000.0)
    # A higher priority still goes first, however large.
    run = simulate([big, mid, small, urgent], make_policy("sjf-oracle"), params())
    first = {j.name: j.first_start for j in run.jobs}
    assert first["urgent"] == 7200.0 and first["small"] == 14400.0
