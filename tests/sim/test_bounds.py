"""The lower bound on average JCT: hand-computed cases, tight where it should be, and never above
what a simulated policy achieves on random traces."""

from __future__ import annotations

import random

import pytest

from solver_sched.config.schema import SchedulerConfig
from solver_sched.sim.bounds import alone, avg_jct_bound, srpt_total
from solver_sched.sim.engine import simulate
from solver_sched.sim.metrics import summarize
from solver_sched.sim.model import SimParams, TraceJob
from solver_sched.sim.policies import make_policy


def test_srpt_runs_the_shortest_remaining_work_first() -> None:
    # a (10 units at 0) runs until b (2 units) arrives at 1, which then finishes at 3 (JCT 2);
    # a finishes at 12 (JCT 12). FIFO would give 10 + 11.
    jobs = [TraceJob("a", 0.0, 10.0, 1), TraceJob("b", 1.0, 2.0, 1)]
    assert srpt_total(jobs, 1.0) == pytest.approx(14.0)
    # Twice the speed: a has 8 left at 1, b ends at 2 (JCT 1), a at 6 (JCT 6).
    assert srpt_total(jobs, 2.0) == pytest.approx(7.0)
    # An idle gap: c arrives after both are done and runs alone.
    c = TraceJob("c", 100.0, 4.0, 1)
    assert srpt_total([*jobs, c], 1.0) == pytest.approx(18.0)


def test_alone_is_the_fastest_size() -> None:
    world = SimParams(gpus=16)
    rigid = TraceJob("r", 0.0, 3600.0, gpus=4)
    assert alone(rigid, world) == 3600.0
    # Elastic 2..8 pods of 1 GPU, R = 4: at 8 GPUs the rate is 4 x sqrt(2).
    el = TraceJob("e", 0.0, 3600.0, gpus=4, min_pods=2, max_pods=8)
    assert alone(el, world) == pytest.approx(3600.0 / 2**0.5)
    # On a 4-GPU cluster it can use only 4.
    assert alone(el, SimParams(gpus=4, gpus_per_node=4)) == pytest.approx(3600.0)


def test_the_bound_is_the_larger_relaxation() -> None:
    # Four 4-GPU one-hour jobs at once on 4 GPUs: alone each takes 1 h, one machine of speed 4
    # finishes them at 1, 2, 3, 4 h: the average, 2.5 h, is what FIFO achieves too.
    world = SimParams(gpus=4, gpus_per_node=4)
    jobs = [TraceJob(f"j{i}", 0.0, 3600.0, gpus=4) for i in range(4)]
    assert avg_jct_bound(jobs, world) == pytest.approx(2.5 * 3600)
    fifo = summarize(simulate(jobs, make_policy("fifo"), world))
    assert fifo["avg_jct_h"] * 3600 == pytest.approx(avg_jct_bound(jobs, world))
    # On 64 GPUs nothing queues: each job alone.
    assert avg_jct_bound(jobs, SimParams(gpus=64)) == pytest.approx(3600.0)
    # A gang larger than the cluster never runs, so no average counts it.
    huge = TraceJob("huge", 0.0, 10 * 3600.0, gpus=8)
    assert avg_jct_bound([*jobs, huge], world) == pytest.approx(2.5 * 3600)


def _queueing_trace(seed: int) -> list[TraceJob]:
    """40 jobs of 1-8 GPUs, half the multi-GPU ones elastic (R/2..2R), arriving every 2 min on
    average: queues form on 16 GPUs, so the one-machine relaxation is the binding one."""
    rng = random.Random(seed)
    out, t = [], 0.0
    for i in range(40):
        g = rng.choice((1, 1, 2, 4, 8))
        el = g > 1 and rng.random() < 0.5
        duration = rng.choice((600.0, 1800.0, 3600.0, 7200.0))
        lo, hi = (g // 2, 2 * g) if el else (0, 0)
        out.append(TraceJob(f"j{i:02d}", t, duration, g, min_pods=lo, max_pods=hi))
        t += rng.expovariate(1 / 120)
    return out


@pytest.mark.parametrize("seed", range(1, 7))
def test_no_policy_beats_the_bound(seed: int) -> None:
    world = SimParams(gpus=16, gpus_per_node=8)
    jobs = _queueing_trace(seed)
    bound = avg_jct_bound(jobs, world)
    assert bound * len(jobs) == pytest.approx(srpt_total(jobs, 16.0))
    for name in ("fifo", "elastic", "solver-sched"):
        policy = make_policy(name, SchedulerConfig(), "greedy", 1.0)
        s = summarize(simulate(jobs, policy, world))
        assert s["unfinished"] == 0
        assert s["avg_jct_h"] * 3600 >= bound, name
