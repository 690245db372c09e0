"""The decision variables, with stable OR-Tools-style names.

- ``y[job,size]`` in {0,1}: the job ends the cycle at this size (size 0 included; exactly one).
- ``x[job,shape,class]`` integer: pending pods of this shape bound into this node class.
- ``w[job,cluster]`` in {0,1}: the cluster a gang runs on (only when there are several clusters).
- ``u[queue]`` integer: GPUs of a leaf queue's min covered by its jobs (drives reclaim).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from solver_sched.formulation.linear import LinearModel
from solver_sched.formulation.problem import Problem


@dataclass
class Vars:
    y: list[list[int]] = field(default_factory=list)  # per job, per option
    x: dict[tuple[int, int, int], int] = field(default_factory=dict)  # (job, shape, class) -> var
    w: dict[tuple[int, str], int] = field(default_factory=dict)
    u: dict[int, int] = field(default_factory=dict)  # quota row -> GPUs of its min in use

    def x_of_job(self, j: int) -> list[tuple[int, int, int]]:
        return [k for k in self.x if k[0] == j]


def create(problem: Problem, model: LinearModel) -> Vars:
    v = Vars()
    for j, jm in enumerate(problem.jobs):
        v.y.append([model.var(f"y[{jm.name},{o.size}]", 0, 1) for o in jm.options])
        need: dict[int, int] = {}
        for o in jm.options:
            for sid, n in o.new.items():
                need[sid] = max(need.get(sid, 0), n)
        allowed_clusters = set(jm.clusters) or set(problem.clusters)
        for sid in sorted(need):
            for cid, fit in sorted(problem.shapes[sid].fit.items()):
                if problem.classes[cid].cluster not in allowed_clusters:
                    continue
                ub = min(need[sid], fit)
                v.x[(j, sid, cid)] = model.var(f"x[{jm.name},{sid},{cid}]", 0, ub)
        if len(problem.clusters) > 1:
            for k in sorted(allowed_clusters):
                v.w[(j, k)] = model.var(f"w[{jm.name},{k}]", 0, 1)
    for r, row in enumerate(problem.quotas):
        if row.min_gpus > 0:
            v.u[r] = model.var(f"u[{row.queue}]", 0, row.min_gpus)
    return v
