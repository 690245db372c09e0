"""A gang never spans clusters: with several clusters, w[j,k] picks one (sum_k w = run_j) and
x[j,p,c] <= ub * w[j,cluster(c)]. Running pods pin a job to its cluster (prepare)."""

from __future__ import annotations

from solver_sched.formulation.linear import LinearModel
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.variables import Vars


def add(problem: Problem, model: LinearModel, v: Vars) -> None:
    if len(problem.clusters) <= 1:
        return
    for j, jm in enumerate(problem.jobs):
        ws = [(var, 1) for (jj, _k), var in sorted(v.w.items()) if jj == j]
        run = [(y, -1) for y in v.y[j][1:]]
        model.add(f"cluster[{jm.name}]", ws + run, 0, 0)
    for (j, sid, cid), var in v.x.items():
        k = problem.classes[cid].cluster
        model.add(
            f"in_cluster[{j},{sid},{cid}]", [(var, 1), (v.w[(j, k)], -model.ub[var])], None, 0
        )
