"""Per-run metrics and the ratios between policies.

- JCT: finish - arrival; queueing delay: first start - arrival (jobs that finished);
- makespan: the last finish (arrivals start at 0);
- utilization over [0, makespan]: ``allocated`` = GPUs bound to pods, ``useful`` = GPUs of complete
  gangs (those that make progress); the ``_busy`` variants average only over cycles in which some
  job was waiting, i.e. when a scheduler had work it could have started;
- restarts per job: a gang losing pods (preemption or scale-in), averaged over all jobs;
- cooldown: resizes of running gangs while their cooldown was on; scale-outs (must be 0) and
  scale-ins (on-demand shrinks for a starting gang, which solver-sched's rule 7 permits) apart;
- plan seconds: wall time of each policy call; solver seconds: the solver phase (solver-sched).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from solver_sched.sim.engine import RunResult


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 100]); 0 for no values."""
    if not values:
        return 0.0
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def summarize(run: RunResult) -> dict[str, Any]:
    done = [j for j in run.jobs if j.finish is not None]
    jct = [j.finish - j.spec.arrival for j in done if j.finish is not None]
    delay = [j.first_start - j.spec.arrival for j in done if j.first_start is not None]
    makespan = max((j.finish for j in done if j.finish is not None), default=0.0)
    gpus = run.params.gpus
    interval = run.params.interval
    inside = [s for s in run.samples if s.t < makespan]
    alloc = sum(s.allocated for s in inside) * interval
    useful = sum(s.useful for s in inside) * interval
    busy = [s for s in inside if s.waiting]
    n = max(1, len(run.jobs))
    return {
        "policy": run.policy,
        "jobs": len(run.jobs),
        "finished": len(done),
        "unfinished": len(run.jobs) - len(done),
        "avg_jct_h": mean(jct) / 3600,
        "p50_jct_h": percentile(jct, 50) / 3600,
        "p95_jct_h": percentile(jct, 95) / 3600,
        "avg_queue_h": mean(delay) / 3600,
        "p95_queue_h": percentile(delay, 95) / 3600,
        "makespan_h": makespan / 3600,
        "util_alloc": alloc / (gpus * makespan) if makespan else 0.0,
        "util_useful": useful / (gpus * makespan) if makespan else 0.0,
        "util_alloc_busy": mean([s.allocated for s in busy]) / gpus,
        "util_useful_busy": mean([s.useful for s in busy]) / gpus,
        "busy_h": len(busy) * interval / 3600,
        "restarts_per_job": sum(j.restarts for j in run.jobs) / n,
        "preemptions": sum(j.preemptions for j in run.jobs),
        "scale_ins": sum(j.scale_ins for j in run.jobs),
        "scale_outs": sum(j.scale_outs for j in run.jobs),
        "scale_outs_in_cooldown": sum(j.outs_in_cooldown for j in run.jobs),
        "scale_ins_in_cooldown": sum(j.ins_in_cooldown for j in run.jobs),
        "partial_releases": sum(j.partial_releases for j in run.jobs),
        "lost_gpu_h": sum(j.lost_work for j in run.jobs) / 3600,
        "spread_jobs": sum(j.max_racks > 1 for j in run.jobs),  # ran over several racks at once
        "calls": run.calls,
        "plan_s_mean": mean(run.plan_seconds),
        "plan_s_p95": percentile(run.plan_seconds, 95),
        "solver_s_mean": mean(run.solver_seconds),
        "solver_s_p95": percentile(run.solver_seconds, 95),
        "rejected_cycles": run.rejected,
        "wall_s": run.wall,
    }


def job_rows(run: RunResult) -> list[dict[str, Any]]:
    return [
        {
            "name": j.name,
            "arrival": j.spec.arrival,
            "gpus": j.spec.gpus,
            "duration": j.spec.duration,
            "min_pods": j.min_pods,
            "max_pods": j.max_pods,
            "first_start": j.first_start,
            "finish": j.finish,
            "restarts": j.restarts,
            "scale_ins": j.scale_ins,
            "scale_outs": j.scale_outs,
        }
        for j in run.jobs
    ]


RATIO_KEYS = ("avg_jct_h", "p95_jct_h", "avg_queue_h", "makespan_h", "util_alloc", "util_useful")


def ratios(summaries: dict[str, dict[str, Any]], base: str) -> dict[str, dict[str, float]]:
    """Each policy's metrics divided by ``base``'s (the same run), for the keys above."""
    if base not in summaries:
        return {}
    b = summaries[base]
    return {
        name: {k: (s[k] / b[k] if b[k] else float("nan")) for k in RATIO_KEYS}
        for name, s in summaries.items()
    }
