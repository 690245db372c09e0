"""Rule 9, the objective: named terms in two bands (maximised).

Guaranteed band (times ``band`` > the largest elastic band, so rule 4 holds for any weights):
  guaranteed[tier]  tier_weight[j] * guaranteed_units[j,s] * y[j,s]
  gang_start        gang_start * t * started[t]                 (per tier weight t, see below)
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
    """The start bonus, paid per tier weight t and withheld while the plan breaks a gang of that
    tier (in any queue):
        started[t] <= sum_{h starting, tier h = t} run_h
        started[t] + n_t * off[t] <= n_t            off[t] >= y[j,0]  (running j, tier j = t)
    A break is licensed by a higher-priority start of the victim's queue or by a reclaim (rules
    5, 6). Once one is, the bonus could make it pay to break more gangs than the start needs, to
    start several smaller ones of the victims' tier (in any queue). Smaller gangs of a lower tier
    never pay for it (validation keeps each tier step >= 1 + gangStart), and those of a higher
    tier pay for it without any bonus; so only the victims' own tier loses its bonus, and a
    higher-priority start keeps its own. A tier with no breakable gang is paid per start, with no
    extra variables."""
    jobs = problem.jobs
    starters: dict[int, list[int]] = defaultdict(list)
    for h, jm in enumerate(jobs):
        if jm.starting and len(jm.options) > 1:
            starters[jm.tier_weight].append(h)
    victims: dict[int, list[int]] = defaultdict(list)
    for j, jm in enumerate(jobs):
        if jm.running_ok and jm.break_needs and jm.tier_weight in starters:
            victims[jm.tier_weight].append(j)
    out: dict[int, tuple[int, int]] = {}
    for t, hs in sorted(starters.items()):
        w = problem.gang_start * t
        if not victims[t]:  # no gang of this tier can break: paid per start
            model.term("guaranteed", "gang_start", [(y, w) for h in hs for y in v.y[h][1:]])
            continue
        off = model.var(f"bonus_off[{t}]", 0, 1)
        for j in victims[t]:
            model.add(f"bonus_off[{t},{jobs[j].name}]", [(off, 1), (v.y[j][0], -1)], 0, None)
        n = len(hs)
        started = model.var(f"bonus[{t}]", 0, n)
        runs = [(y, -1) for h in hs for y in v.y[h][1:]]
        model.add(f"bonus_run[{t}]", [(started, 1), *runs], None, 0)
        model.add(f"bonus_withheld[{t}]", [(started, 1), (off, n)], None, n)
        model.term("guaranteed", "gang_start", [(started, w)])
        out[t] = (started, off)
    return out
