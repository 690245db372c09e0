"""Assignment -> a full vector of model variable values (CP-SAT hints, term reports, tests)."""

from __future__ import annotations

from collections.abc import Mapping

from solver_sched.formulation.build import Built
from solver_sched.formulation.problem import Problem


def to_values(
    problem: Problem,
    built: Built,
    sizes: Mapping[str, int],
    counts: Mapping[tuple[str, int, int], int],
) -> list[int] | None:
    """None when the assignment names a size or class the model does not have."""
    model, v = built.model, built.vars
    values = [0] * len(model.names)
    run = []
    for j, jm in enumerate(problem.jobs):
        size = sizes.get(jm.name, 0)
        opt = jm.option_index(size)
        if opt is None:
            return None
        values[v.y[j][opt]] = 1
        run.append(size > 0)
    index = {jm.name: j for j, jm in enumerate(problem.jobs)}
    for (name, sid, cid), n in counts.items():
        if not n:
            continue
        var = v.x.get((sid, cid))
        if var is None:
            return None
        values[var] += n
        if v.w and name in index:
            k = problem.classes[cid].cluster
            values[v.w[(index[name], k)]] = 1
            values[v.z[(index[name], sid, k)]] += n
    w_of: dict[int, list[int]] = {}
    for (jj, _), var in v.w.items():
        w_of.setdefault(jj, []).append(var)
    for j, jm in enumerate(problem.jobs):
        if v.w and run[j] and not any(values[var] for var in w_of.get(j, ())):
            k = jm.clusters[0] if jm.clusters else problem.clusters[0]
            values[v.w[(j, k)]] = 1
    for r, var in v.u.items():
        row = problem.quotas[r]
        used = sum(
            problem.jobs[j].guaranteed_gpus_at(sizes.get(problem.jobs[j].name, 0)) for j in row.jobs
        )
        values[var] = min(model.ub[var], used)
    for key, var in built.triggers.items():
        starters = problem.triggers.get(key, ())
        values[var] = int(any(run[h] for h in starters))
    return values
