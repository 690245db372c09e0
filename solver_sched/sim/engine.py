"""The discrete-event loop: cycle boundaries every ``interval`` seconds of simulated time.

At each boundary ``t``: jobs that arrived in ``(t - interval, t]`` become visible; the policy plans
(when something may have changed, see below) and its decisions are applied at ``t``; then every job
runs until ``t + interval``, finishing at its exact time (its GPUs count as free from then on, and
the policy sees the finish at the next boundary).

The policy is called at a boundary only when its input may differ from the last call's: a job
arrived or finished, the previous call changed something, a cooldown or a partial-gang timeout
ran out, or (``recheck_cycles``) every N cycles while jobs wait. All four policies are pure
functions of the state and the time (solver-sched's waiting-hours tie-break aside), so this skips
only calls that would decide nothing; it keeps long idle stretches cheap.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from solver_sched.sim.model import SimParams, TraceJob
from solver_sched.sim.policies import Policy
from solver_sched.sim.state import JobRun, Sample, SimState


@dataclass
class RunResult:
    policy: str
    jobs: list[JobRun]
    samples: list[Sample]
    params: SimParams
    calls: int = 0
    plan_seconds: list[float] = field(default_factory=list)  # wall time of each policy call
    solver_seconds: list[float] = field(default_factory=list)  # the solver's part, if any
    rejected: int = 0  # solver-sched cycles whose candidates all failed the checker
    end: float = 0.0  # simulated time when the run stopped
    wall: float = 0.0


def simulate(
    trace: Sequence[TraceJob],
    policy: Policy,
    params: SimParams,
    on_finish: Callable[[int], None] | None = None,
) -> RunResult:
    jobs = sorted(trace, key=lambda j: (j.arrival, j.name))
    state = SimState(jobs, params, policy.elastic)
    out = RunResult(policy.name, list(state.jobs.values()), state.samples, params)
    started = time.perf_counter()
    interval = params.interval
    nxt = 0  # next job to arrive
    remaining = len(jobs)
    dirty = False
    wake: float | None = None
    k = 0
    t = 0.0
    while remaining and t <= params.horizon:
        while nxt < len(jobs) and jobs[nxt].arrival <= t:
            state.jobs[jobs[nxt].name].visible = True
            nxt += 1
            dirty = True
        due = wake is not None and wake <= t
        recheck = params.recheck_cycles > 0 and k % params.recheck_cycles == 0
        if (dirty or due or recheck) and any(True for _ in state.active()):
            call_start = time.perf_counter()
            decisions = policy.plan(state, t)
            out.plan_seconds.append(time.perf_counter() - call_start)
            out.calls += 1
            if decisions.solver_seconds is not None:
                out.solver_seconds.append(decisions.solver_seconds)
            out.rejected += decisions.rejected
            dirty = state.apply(decisions.binds, decisions.evictions, t)
            wake = state.next_wake(t)
        else:
            dirty = False
        finished = state.advance(t, t + interval)
        if finished:
            dirty = True
            remaining -= len(finished)
            if on_finish is not None:
                on_finish(len(finished))
        t += interval
        k += 1
    out.end = t
    out.wall = time.perf_counter() - started
    return out
