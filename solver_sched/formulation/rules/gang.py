"""Rule 1, gang all-or-nothing: each job ends at exactly one allowed size (or 0), and the pending
pods that size needs are all placed: sum_c x[j,p,c] = sum_s new[j,s,p] * y[j,s]."""

from __future__ import annotations

from collections import defaultdict

from solver_sched.formulation.linear import LinearModel
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.variables import Vars


def add(problem: Problem, model: LinearModel, v: Vars) -> None:
    by_job: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for (j, sid, _cid), var in v.x.items():
        by_job[j][sid].append(var)
    for j, jm in enumerate(problem.jobs):
        model.add(f"gang[{jm.name}]", [(y, 1) for y in v.y[j]], 1, 1)
        shapes = {sid for o in jm.options for sid in o.new}
        for sid in sorted(shapes):
            terms = [(x, 1) for x in by_job[j][sid]]
            terms += [(v.y[j][k], -o.new.get(sid, 0)) for k, o in enumerate(jm.options)]
            model.add(f"place[{jm.name},{sid}]", terms, 0, 0)
