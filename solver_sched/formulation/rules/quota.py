"""Rule 3, queue capacity, at every level of the quota tree.

For each queue q and resource r with a max: sum_{j in q} sum_s usage[j,s,r] y[j,s] <= cap[q,r]
(max minus usage fixed outside the model; never below today's usage, so a lowered max stops growth
without forcing evictions). Running jobs: sum_{j in q} run_j <= jobs_cap[q]. A borrowing queue keeps
its min when others reclaim: sum usage >= floor[q,r].

Reclaim is also valued: u[q] <= sum_{j in q} guaranteed_gpus[j,s] y[j,s] with u[q] <= min[q] counts
the GPUs of each leaf's min held by guaranteed parts, and the guaranteed band rewards
quota_min_weight * u[q]. A queue below its min therefore wins capacity back from borrowing queues
even against higher priorities there; elastic pods never count, so rule 4 still holds.
The floor leaves out gangs that must change anyway (partial or irregular sizes).

Rule 3b: what a licensed break frees in a row belongs to the starts that may break (rules 5-6).
With B the row's members a start may break and L its starting members that may break one of
them, every other member must fit as if no gang of B were broken:
sum_{j in q, j not in L} sum_s held[j,s,r] y[j,s] <= cap[q,r], held[g,0] = usage[g,smallest] for
g in B (usage otherwise), and sum_{j not in L} run_j + sum_{g in B} y[g,0] <= jobs_cap[q].
Without it a start in a below-min queue licenses breaking every borrowing gang, and a start of
equal priority takes the second gang's slot. Shrinks stay open to all (rule 4's ``any``).
"""

from __future__ import annotations

from functools import partial

from solver_sched.domain.quota import MAX_JOBS
from solver_sched.formulation.linear import LinearModel, Terms
from solver_sched.formulation.problem import Problem, QuotaRow
from solver_sched.formulation.variables import Vars


def _usage(problem: Problem, v: Vars, members: tuple[int, ...], r: str) -> Terms:
    return [
        (v.y[j][k], q)
        for j in members
        for k, o in enumerate(problem.jobs[j].options)
        if (q := o.usage.get(r))
    ]


def add(problem: Problem, model: LinearModel, v: Vars) -> None:
    for index, row in enumerate(problem.quotas):
        for r, cap in sorted(row.cap.items()):
            if r != MAX_JOBS:
                model.add(f"quota[{row.queue},{r}]", _usage(problem, v, row.jobs, r), None, cap)
        for r, floor in sorted(row.floor.items()):
            if r != MAX_JOBS and floor > 0:
                model.add(f"quota_min[{row.queue},{r}]", _usage(problem, v, row.jobs, r), lo=floor)
        if (r_u := v.u.get(index)) is not None:
            covered = [
                (v.y[j][k], -o.guaranteed_gpus)
                for j in row.jobs
                for k, o in enumerate(problem.jobs[j].options)
            ]
            terms = [(r_u, 1), *covered]
            model.add(f"quota_min_used[{row.queue}]", terms, None, 0)
            model.term("guaranteed", "quota_min", [(r_u, problem.quota_min_weight)])
        if row.jobs_cap is not None:
            runs = [(y, 1) for j in row.jobs for y in v.y[j][1:]]
            model.add(f"quota[{row.queue},{MAX_JOBS}]", runs, None, row.jobs_cap)
        if row.breakable:  # rows only: written when a solver reads them
            model.later(partial(_licensed, problem, model, v, row))


def _licensed(problem: Problem, model: LinearModel, v: Vars, row: QuotaRow) -> None:
    """Rule 3b: the row as the members that may break none of its gangs see it."""
    others = [j for j in row.jobs if j not in row.licensed]
    for r, cap in sorted(row.cap.items()):  # max-jobs is never among the caps (jobs_cap)
        terms = [
            (v.y[j][k], q)
            for j in others
            for k in range(len(problem.jobs[j].options))
            if (o := problem.jobs[j].held_at(problem.jobs[j].options[k].size)) is not None
            and (q := o.usage.get(r))
        ]
        model.add(f"quota_licensed[{row.queue},{r}]", terms, None, cap)
    if row.jobs_cap is not None:
        runs = [(y, 1) for j in others for y in v.y[j][1:]]
        runs += [(v.y[g][0], 1) for g in row.breakable]
        model.add(f"quota_licensed[{row.queue},{MAX_JOBS}]", runs, None, row.jobs_cap)
