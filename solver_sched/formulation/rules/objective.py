"""Rule 9, the objective: named terms in two bands (maximised).

Guaranteed band (times ``band`` > the largest elastic band, so rule 4 holds for any weights):
  guaranteed[tier]  tier_weight[j] * guaranteed_units[j,s] * y[j,s]
  gang_start        gang_start * tier_weight[p] * started[p]    (per priority level p, see below)
  waiting           waiting_weight * hours_waited[j] * run_j   (pending gangs only)
  gang_break        -gang_break * y[j,0]                       (running gangs broken)
  quota_min         quota_min_weight * u[q]                    (added by rules/quota.py)
Elastic band:
  elastic           elastic_weight * elastic_units[j,s] * y[j,s]
  elastic_eviction  -eviction_weight * evicted[j,s] * y[j,s]
  packing           -packing_weight * gpus[p] * gpus_free[c] * x[p,c]   (fill used nodes first)
"""

from __future__ import annotations

from collections import defaultdict

from solver_sched.domain.resources import GPU
from solver_sched.formulation.linear import LinearModel
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.variables import Vars


def add(problem: Problem, model: LinearModel, v: Vars) -> dict[int, tuple[int, int]]:
    """Returns the start-bonus variables per priority level (for hints)."""
    model.band = problem.band
    for j, jm in enumerate(problem.jobs):
        ys = v.y[j]
        model.term(
            "guaranteed",
            f"guaranteed[priority={jm.priority}]",
            [(ys[k], jm.tier_weight * o.guaranteed_units) for k, o in enumerate(jm.options)],
        )
        if jm.starting and jm.waiting_hours:
            w = problem.waiting_weight * jm.waiting_hours
            model.term("guaranteed", "waiting", [(y, w) for y in ys[1:]])
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
    packing = []
    for (sid, cid), var in v.x.items():
        gpus = problem.shapes[sid].requests.get(GPU, 0)
        packing.append((var, -problem.packing_weight * gpus * problem.classes[cid].gpus_free))
    model.term("elastic", "packing", packing)
    return _start_bonus(problem, model, v) if problem.gang_start else {}


def _start_bonus(problem: Problem, model: LinearModel, v: Vars) -> dict[int, tuple[int, int]]:
    """The start bonus, paid per priority level p only while no gang of priority <= p is broken:
        started[p] <= sum_{h starting, prio p} run_h
        started[p] + n_p * off[p] <= n_p            off[p] >= y[j,0]  (running j, prio j <= p)
    Breaking a gang needs a higher-priority start of its queue or a reclaim (rules 5, 6). Once
    one is licensed, the bonus alone could make it pay to break more gangs than the start needs,
    to start several smaller ones of the victims' priority; withheld at and above that priority,
    it never pays for a break. off[p] is chained upwards: off[p] >= off[p'] for p' < p. A level
    with no breakable gang at or below it is paid per start, with no extra variables."""
    jobs = problem.jobs
    starters: dict[int, list[int]] = defaultdict(list)
    for h, jm in enumerate(jobs):
        if jm.starting and len(jm.options) > 1:
            starters[jm.priority].append(h)
    breakable = sorted(
        (jm.priority, j) for j, jm in enumerate(jobs) if jm.running_ok and jm.break_needs
    )
    out: dict[int, tuple[int, int]] = {}
    off: int | None = None
    k = 0  # breakable[:k] have priorities at or below the levels seen so far
    for p in sorted(starters):
        victims = []
        while k < len(breakable) and breakable[k][0] <= p:
            victims.append(breakable[k][1])
            k += 1
        if victims:
            below = off
            off = model.var(f"bonus_off[{p}]", 0, 1)
            if below is not None:
                model.add(f"bonus_off_chain[{p}]", [(off, 1), (below, -1)], 0, None)
            for j in victims:
                model.add(f"bonus_off[{p},{jobs[j].name}]", [(off, 1), (v.y[j][0], -1)], 0, None)
        hs = starters[p]
        w = problem.gang_start * jobs[hs[0]].tier_weight
        if off is None:  # no gang at or below p can break: paid per start, no extra variables
            model.term("guaranteed", "gang_start", [(y, w) for h in hs for y in v.y[h][1:]])
            continue
        n = len(hs)
        started = model.var(f"bonus[{p}]", 0, n)
        runs = [(y, -1) for h in hs for y in v.y[h][1:]]
        model.add(f"bonus_run[{p}]", [(started, 1), *runs], None, 0)
        model.add(f"bonus_withheld[{p}]", [(started, 1), (off, n)], None, n)
        model.term("guaranteed", "gang_start", [(started, w)])
        out[p] = (started, off)
    return out
