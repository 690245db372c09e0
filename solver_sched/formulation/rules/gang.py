"""Rule 1, gang all-or-nothing: each job ends at exactly one allowed size (or 0), and every pending
pod the chosen sizes need is placed, shape by shape:

    sum_s y[j,s] = 1                                  for each job j (its count, for a type)
    sum_c x[p,c] = sum_j sum_s new[j,s,p] * y[j,s]    for each shape p (one cluster)

With several clusters the supply is split per cluster through z (rules/clusters.py).
"""

from __future__ import annotations

from collections import defaultdict

from solver_sched.formulation.linear import LinearModel, Terms
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.variables import Vars


def add(problem: Problem, model: LinearModel, v: Vars) -> None:
    for j, jm in enumerate(problem.jobs):
        model.add(f"gang[{jm.name}]", [(y, 1) for y in v.y[j]], jm.count, jm.count)
    if len(problem.clusters) > 1:
        return
    supply: dict[int, Terms] = defaultdict(list)
    for (sid, _cid), var in v.x.items():
        supply[sid].append((var, 1))
    for j, jm in enumerate(problem.jobs):
        for k, o in enumerate(jm.options):
            for sid, n in o.new.items():
                supply[sid].append((v.y[j][k], -n))
    for sid, terms in sorted(supply.items()):
        model.add(f"place[{sid}]", terms, 0, 0)
