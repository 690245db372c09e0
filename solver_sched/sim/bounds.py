"""A lower bound on any scheduler's average JCT for a trace on a cluster, even one that knows every
job's duration in advance: it says which JCT targets no scheduler could meet.

Two relaxations of the simulated world, each a valid bound; the larger is taken:

- **Alone:** a job can finish no sooner than its work at its fastest size, started on arrival.
  Rigid jobs run at their requested size ``R``; elastic ones at their max (capped by the
  cluster), at the speedup model's rate (``sim/model.py``).
- **One machine:** every job's rate on ``g`` GPUs is at most ``g`` (the speedup model), so the
  cluster makes at most ``gpus`` units of progress per second in total. Any schedule is then a
  schedule of the same work, released at the same times, on one machine of speed ``gpus`` with
  preemption for free, where shortest remaining work first (SRPT) minimises the sum of completion
  times (Schrage, 1968).

Both ignore gang shapes, nodes, the cycle interval, checkpoints and restart overheads, which only
add time. The bound is on the *sum* (so the average) over jobs, never on one job.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from solver_sched.sim.model import SimParams, TraceJob


def alone(job: TraceJob, params: SimParams) -> float:
    """Seconds ``job`` takes at its fastest size on an empty cluster."""
    if not job.elastic:
        return job.duration
    per = job.gpus_per_pod
    pods = min(job.max_pods, max(1, params.gpus // per))
    return job.work / params.speedup.rate(pods * per, job.gpus)


def srpt_total(jobs: Sequence[TraceJob], speed: float) -> float:
    """Sum of (finish - arrival) under preemptive SRPT on one machine of ``speed`` units per
    second, each job being ``work`` units released at its arrival."""
    releases = sorted((j.arrival, j.work) for j in jobs)
    remaining: list[list[float]] = []  # heap of [work left, arrival]
    now, total, i = 0.0, 0.0, 0
    while i < len(releases) or remaining:
        if not remaining:
            now = max(now, releases[i][0])
        while i < len(releases) and releases[i][0] <= now:
            heapq.heappush(remaining, [releases[i][1], releases[i][0]])
            i += 1
        left, arrival = remaining[0]
        finish = now + left / speed
        upcoming = releases[i][0] if i < len(releases) else float("inf")
        if finish <= upcoming:
            heapq.heappop(remaining)
            now = finish
            total += now - arrival
        else:  # the next arrival comes first: the shortest job so far has run until then
            remaining[0][0] -= (upcoming - now) * speed
            now = upcoming
    return total


def avg_jct_bound(jobs: Sequence[TraceJob], params: SimParams) -> float:
    """Seconds: no scheduler's average JCT on ``jobs`` in ``params``'s world is below this. Jobs
    whose smallest gang exceeds the cluster never run, so no run's average counts them: they are
    left out here too."""
    runnable = [j for j in jobs if smallest_gpus(j) <= params.gpus]
    if not runnable:
        return 0.0
    each = sum(alone(j, params) for j in runnable)
    return max(each, srpt_total(runnable, float(params.gpus))) / len(runnable)


def smallest_gpus(job: TraceJob) -> int:
    """The GPUs of the smallest gang the job can run as."""
    return (job.min_pods if job.elastic else job.pods) * job.gpus_per_pod
