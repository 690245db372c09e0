"""The decision variables, with stable OR-Tools-style names.

- ``y[job,size]`` in {0,1}: the job ends the cycle at this size (size 0 included; exactly one).
- ``x[shape,class]`` integer: pending pods of this shape bound into this node class, all jobs
  together. Jobs are interchangeable inside a class, so a per-job split would only add symmetry;
  the packer picks concrete nodes per job afterwards.
- ``w[job,cluster]`` in {0,1} and ``z[job,shape,cluster]`` integer: with several clusters, the
  cluster a gang runs on and its new pods there (no z for a job of one size to start at: its new
  pods there are ``new * w``).
- ``u[queue]`` integer: GPUs of a leaf queue's min covered by its jobs (drives reclaim).

For a counted type of jobs (formulation/aggregate.py) ``y``, ``w`` and ``z`` count its members,
and ``r[type,hours]`` those of a waiting hour that start (the waiting term).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from solver_sched.formulation.linear import LinearModel
from solver_sched.formulation.problem import JobModel, Problem
from solver_sched.formulation.start_bonus import tiers_withheld


@dataclass
class Vars:
    y: list[list[int]] = field(default_factory=list)  # per job, per option
    x: dict[tuple[int, int], int] = field(default_factory=dict)  # (shape, class) -> var
    w: dict[tuple[int, str], int] = field(default_factory=dict)  # (job, cluster) -> var
    z: dict[tuple[int, int, str], int] = field(default_factory=dict)  # (job, shape, cluster)
    u: dict[int, int] = field(default_factory=dict)  # quota row -> GPUs of its min in use
    r: dict[tuple[int, int], int] = field(default_factory=dict)  # (type, hours) -> starting
    # topology (rules/topology.py): domain used, new pods per domain, broader domain touched,
    # free domain kept whole
    d: dict[tuple[int, tuple[str, ...]], int] = field(default_factory=dict)
    zt: dict[tuple[int, int, tuple[str, ...]], int] = field(default_factory=dict)
    zo: dict[tuple[int, int], int] = field(default_factory=dict)  # preferred: pods outside any
    b: dict[tuple[int, str, tuple[str, ...]], int] = field(default_factory=dict)
    e: dict[tuple[str, tuple[str, ...]], int] = field(default_factory=dict)
    # start bonus (formulation/start_bonus.py): tier -> (bonuses paid, whether any is), and the
    # tiers where a break withholds bonuses -> (their starting jobs, the jobs that withhold)
    bonus: dict[int, tuple[int, int]] = field(default_factory=dict)
    withheld: dict[int, tuple[list[int], list[int]]] = field(default_factory=dict)


def demand(problem: Problem) -> dict[int, dict[int, int]]:
    """Per job: the most pods of each shape any of its options binds (times a type's count)."""
    out: dict[int, dict[int, int]] = {}
    for j, jm in enumerate(problem.jobs):
        need: dict[int, int] = {}
        for o in jm.options:
            for sid, n in o.new.items():
                need[sid] = max(need.get(sid, 0), n * jm.count)
        if need:
            out[j] = need
    return out


def rigid_size(jm: JobModel) -> int | None:
    """The option index of the one size a job can start or grow to (None: several, or none)."""
    grows = [k for k, o in enumerate(jm.options) if o.new]
    return grows[0] if len(grows) == 1 and len(jm.options) == 2 else None


def create(problem: Problem, model: LinearModel) -> Vars:
    v = Vars()
    for jm in problem.jobs:
        v.y.append([model.var(f"y[{jm.name},{o.size}]", 0, jm.count) for o in jm.options])
    need = demand(problem)
    total: dict[int, int] = {}
    for per_job in need.values():
        for sid, n in per_job.items():
            total[sid] = total.get(sid, 0) + n
    for sid in sorted(total):
        for cid, fit in sorted(problem.shapes[sid].fit.items()):
            v.x[(sid, cid)] = model.var(f"x[{sid},{cid}]", 0, min(total[sid], fit))
    if len(problem.clusters) > 1:
        for j, jm in enumerate(problem.jobs):
            allowed = sorted(set(jm.clusters) or set(problem.clusters))
            for k in allowed:
                v.w[(j, k)] = model.var(f"w[{jm.name},{k}]", 0, jm.count)
                if rigid_size(jm) is not None:
                    continue  # its new pods in k are new * w[j,k] (rules/clusters.py)
                for sid, n in sorted(need.get(j, {}).items()):
                    v.z[(j, sid, k)] = model.var(f"z[{jm.name},{sid},{k}]", 0, n)
    if problem.waiting_weight:
        for j, jm in enumerate(problem.jobs):
            for hours, n in jm.waiting_buckets:
                v.r[(j, hours)] = model.var(f"r[{jm.name},{hours}]", 0, n)
    v.withheld = tiers_withheld(problem)
    for tier, (starters, _) in sorted(v.withheld.items()):
        n = sum(problem.jobs[j].count for j in starters)
        v.bonus[tier] = (model.var(f"s[{tier}]", 0, n), model.var(f"sb[{tier}]", 0, 1))
    for r, row in enumerate(problem.quotas):
        if row.min_gpus > 0:
            v.u[r] = model.var(f"u[{row.queue}]", 0, row.min_gpus)
    return v
