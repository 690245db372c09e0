"""Rule 2, node fit, over node classes.

For each class c and resource r: pods bound into c use at most what its nodes have free now plus
what the chosen sizes evict from them:
    sum_p req[p,r] x[p,c] - sum_{j,s} released[j,s,c,r] y[j,s] <= free[c,r].
Per shape and class, x's upper bound is how many such pods the class's nodes could hold one by one
(fit), which keeps large pods from being split across nodes. Taints, selectors and affinity are in
the index sets: x exists only for classes the shape may use. Concrete nodes are chosen after the
solve (planning/pack.py), which repairs what the aggregation allowed but nodes cannot hold.
"""

from __future__ import annotations

from collections import defaultdict

from solver_sched.formulation.linear import LinearModel, Terms
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.variables import Vars


def add(problem: Problem, model: LinearModel, v: Vars) -> None:
    use: dict[tuple[int, str], Terms] = defaultdict(list)
    for (sid, cid), var in v.x.items():
        for r, q in problem.shapes[sid].requests.items():
            if q:
                use[(cid, r)].append((var, q))
    for j, jm in enumerate(problem.jobs):
        for k, o in enumerate(jm.options):
            for cid, freed in o.released.items():
                for r, q in freed.items():
                    if q and (cid, r) in use:
                        use[(cid, r)].append((v.y[j][k], -q))
    for (cid, r), terms in sorted(use.items()):
        cap = problem.class_capacity[cid][r]  # every resource a shape requests (classes.py)
        model.add(f"cap[{cid},{r}]", terms, None, cap)
