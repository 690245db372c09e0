"""The start bonus (rule 9's ``gang_start``) and what a broken gang withholds from it.

A started gang is worth ``gang_start`` more guaranteed units of its tier, so of two ways to fill the
same GPUs the one that starts more gangs wins. Per unit, small gangs are then worth more than a
running gang of their tier, and once a higher-priority start (or a reclaim) licenses a break, the
bonus alone could pay for breaking *more* running gangs, to start several small gangs of the
victims' tier in their room. Equal priority never preempts, so that must not pay.

Breaking a running gang g of tier t therefore withholds ``m[g]`` start bonuses of tier t: as many
pending gangs of tier t as fit, smallest first, in the units g holds (formulation/prepare.py).
Per tier, the bonus counts only what is left:

    s[t] <= max(0, starts[t] - sum_{g of tier t} m[g] * y[g,0])      (bonus paid: W * t * s[t])

written with one binary ``sb[t]``:  s[t] <= starts[t],  s[t] <= N[t] * sb[t],
s[t] + sum m[g] y[g,0] + M[t] * sb[t] <= starts[t] + M[t]   (N[t]: starters, M[t]: sum m[g]).

Why this is enough: a plan that breaks g to start gangs of tier t in g's room starts at most m[g]
more of them than the plan that keeps g, and withholds m[g] more bonuses, so its bonus is not
larger; gangs of lower tiers in that room are worth less than g per unit even with their bonus
(validation: each tier weighs at least 1 + gangStart times the one below). Breaking g thus pays
only through higher tiers or the queue mins, as without the bonus. Withholding stops at zero, so
a break that starts nothing of g's tier costs no bonus at all (a legitimate preemption or reclaim
is priced as without the bonus); only when gangs of g's tier start elsewhere in the same cycle is
the preemption charged for them, and they are running by the next cycle.

The argument counts g's room in value units, which is what GPUs and nodes are; a max-jobs slot or
another resource's cap is not (one 1-GPU gang's slot can let a 4-GPU gang start). Those rooms are
kept for the licensed starts by a constraint instead: rule 3b (rules/quota.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from solver_sched.formulation.linear import LinearModel
from solver_sched.formulation.problem import JobModel, Problem


def start_units(jm: JobModel) -> int | None:
    """The guaranteed units a starting gang needs at its smallest start size."""
    sizes = [o for o in jm.options if o.size > 0 and o.size >= jm.current]
    return min(sizes, key=lambda o: o.size).guaranteed_units if sizes else None


def withholdings(jobs: tuple[JobModel, ...]) -> dict[str, int]:
    """Per running gang (that may be broken): how many pending gangs of its tier, smallest first,
    fit in the units (guaranteed and elastic) it holds now."""
    pending: dict[int, list[int]] = {}
    for jm in jobs:
        if jm.starting and (u := start_units(jm)) is not None:
            pending.setdefault(jm.tier_weight, []).extend([u] * jm.count)
    for units in pending.values():
        units.sort()
    out: dict[str, int] = {}
    for jm in jobs:
        now = jm.option(jm.current) if jm.running_ok else None
        if now is None or jm.tier_weight not in pending:
            continue
        room, m = now.guaranteed_units + now.elastic_units, 0
        for u in pending[jm.tier_weight]:
            if u > room:
                break
            room -= u
            m += 1
        if m:
            out[jm.name] = m
    return out


Withheld = Mapping[int, tuple[list[int], list[int]]]  # tier -> (starting jobs, jobs withholding)


def tiers_withheld(problem: Problem) -> dict[int, tuple[list[int], list[int]]]:
    """Tier weight -> (starting jobs, running jobs that withhold) for tiers where a break can
    withhold a bonus; other tiers keep the plain per-start bonus."""
    out: dict[int, tuple[list[int], list[int]]] = {}
    if not problem.gang_start:
        return out
    for j, jm in enumerate(problem.jobs):
        if jm.starting:
            out.setdefault(jm.tier_weight, ([], []))[0].append(j)
    for j, jm in enumerate(problem.jobs):
        if jm.withholds and jm.running_ok and jm.tier_weight in out:
            out[jm.tier_weight][1].append(j)
    return {t: v for t, v in out.items() if v[1]}


def add(
    problem: Problem,
    model: LinearModel,
    y: list[list[int]],
    bonus: Mapping[int, tuple[int, int]],
    tiers: Withheld,
) -> None:
    """The ``gang_start`` term: per start, or per tier through ``bonus`` (tier -> (s, sb)) for
    the ``tiers`` where a break withholds (``tiers_withheld``, kept in the model's variables)."""
    if not problem.gang_start:
        return
    jobs = problem.jobs
    for j, jm in enumerate(jobs):
        if jm.starting and jm.tier_weight not in bonus:
            w = problem.gang_start * jm.tier_weight
            model.term("guaranteed", "gang_start", [(v, w) for v in y[j][1:]])
    for tier, (s, sb) in sorted(bonus.items()):
        starters, breakers = tiers[tier]
        starts = [(v, -1) for j in starters for v in y[j][1:]]
        withheld = [(y[g][0], jobs[g].withholds) for g in breakers]
        most = sum(jobs[g].withholds for g in breakers)
        model.add(f"bonus[{tier}]", [(s, 1), *starts], None, 0)
        model.add(f"bonus_gate[{tier}]", [(s, 1), (sb, -model.ub[s])], None, 0)
        model.add(f"bonus_withheld[{tier}]", [(s, 1), *starts, *withheld, (sb, most)], None, most)
        model.term("guaranteed", "gang_start", [(s, problem.gang_start * tier)])


def hint(
    problem: Problem, tiers: Withheld, run: list[int], sizes: Mapping[str, int]
) -> dict[int, tuple[int, int]]:
    """Per withholding tier (``tiers``), (s, sb) of a plan: ``run`` counts each job's members
    that run."""
    out = {}
    for tier, (starters, breakers) in tiers.items():
        starts = sum(run[j] for j in starters)
        jobs = problem.jobs
        withheld = sum(jobs[g].withholds for g in breakers if not sizes.get(jobs[g].name, 0))
        s = max(0, starts - withheld)
        out[tier] = (s, int(s > 0))
    return out
