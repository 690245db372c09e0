"""Rule 9, the objective: named terms in two bands (maximised).

Guaranteed band (times ``band`` > the largest elastic band, so rule 4 holds for any weights):
  guaranteed[tier]  tier_weight[j] * guaranteed_units[j,s] * y[j,s]
  gang_start        gang_start * tier_weight[j] * run_j         (pending gangs only; in a tier
                    where a break withholds bonuses, gang_start * tier * s[tier]: start_bonus.py)
  waiting           waiting_weight * hours_waited[j] * run_j   (pending gangs only; for a
                    counted type: waiting_weight * h * r[t,h], sum_h r[t,h] <= run_t)
  gang_break        -gang_break * y[j,0]                       (running gangs broken)
  quota_min         quota_min_weight * u[q]                    (added by rules/quota.py)
Elastic band:
  elastic           elastic_weight * elastic_units[j,s] * y[j,s]
  elastic_eviction  -eviction_weight * evicted[j,s] * y[j,s]
  packing           -packing_weight * gpus[p] * gpus_free[c] * x[p,c]   (fill used nodes first)
"""

from __future__ import annotations

from solver_sched.domain.resources import GPU
from solver_sched.formulation import start_bonus
from solver_sched.formulation.linear import LinearModel
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.variables import Vars


def add(problem: Problem, model: LinearModel, v: Vars) -> None:
    model.band = problem.band
    for j, jm in enumerate(problem.jobs):
        ys = v.y[j]
        model.term(
            "guaranteed",
            f"guaranteed[priority={jm.priority}]",
            [(ys[k], jm.tier_weight * o.guaranteed_units) for k, o in enumerate(jm.options)],
        )
        if jm.waiting_hours:  # only a starting job has waited (formulation/jobs.py)
            w = problem.waiting_weight * jm.waiting_hours
            model.term("guaranteed", "waiting", [(y, w) for y in ys[1:]])
        rs = [(h, v.r[(j, h)]) for h, _ in jm.waiting_buckets if (j, h) in v.r]
        if rs:  # a type: members of each waiting hour that start, at most those that run
            w = problem.waiting_weight
            model.term("guaranteed", "waiting", [(r, w * h) for h, r in rs])
            model.add(
                f"waited[{jm.name}]", [(r, 1) for _, r in rs] + [(y, -1) for y in ys[1:]], None, 0
            )
        if jm.running_ok:
            model.term("guaranteed", "gang_break", [(ys[0], -problem.gang_break)])
        model.term(
            "elastic",
            "elastic",
            [(ys[k], problem.elastic_weight * o.elastic_units) for k, o in enumerate(jm.options)],
        )
        model.term(
            "elastic",
            "elastic_eviction",
            [(ys[k], -problem.eviction_weight * o.evicted) for k, o in enumerate(jm.options)],
        )
    start_bonus.add(problem, model, v.y, v.bonus, v.withheld)
    packing = []
    for (sid, cid), var in v.x.items():
        gpus = problem.shapes[sid].requests.get(GPU, 0)
        packing.append((var, -problem.packing_weight * gpus * problem.classes[cid].gpus_free))
    model.term("elastic", "packing", packing)
