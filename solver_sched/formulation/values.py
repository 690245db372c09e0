"""Assignment -> a full vector of model variable values (CP-SAT hints, term reports, tests)."""

from __future__ import annotations

from collections.abc import Mapping

from solver_sched.domain.resources import GPU
from solver_sched.domain.topology import Mode
from solver_sched.formulation import start_bonus
from solver_sched.formulation.build import Built
from solver_sched.formulation.problem import JobModel, Problem


def to_values(
    problem: Problem,
    built: Built,
    sizes: Mapping[str, int],
    counts: Mapping[tuple[str, int, int], int],
) -> list[int] | None:
    """None when the assignment names a size or class the model does not have. ``sizes`` and
    ``counts`` are per job; a counted type (formulation/aggregate.py) sums its members'."""
    model, v = built.model, built.vars
    values = [0] * len(model.names)
    run = []
    index: dict[str, int] = {}
    for j, jm in enumerate(problem.jobs):
        started = 0
        for name, hours in _members(jm):
            index[name] = j
            size = sizes.get(name, 0)
            opt = jm.option_index(size)
            if opt is None:
                return None
            values[v.y[j][opt]] += 1
            if size > 0:
                started += 1
                if (j, hours) in v.r:
                    values[v.r[(j, hours)]] += 1
        run.append(started)
    cluster_of: dict[str, str] = {}
    for (name, sid, cid), n in counts.items():
        if not n:
            continue
        var = v.x.get((sid, cid))
        if var is None:
            return None
        values[var] += n
        if v.w and name in index:
            k = problem.classes[cid].cluster
            cluster_of.setdefault(name, k)
            if (index[name], sid, k) in v.z:  # none for a job of one size (new * w)
                values[v.z[(index[name], sid, k)]] += n
    placed = [0] * len(problem.jobs)
    for name, k in cluster_of.items():
        values[v.w[(index[name], k)]] += 1
        placed[index[name]] += 1
    for j, jm in enumerate(problem.jobs):
        if v.w and run[j] > placed[j]:  # running with no new pods counted: its first cluster
            k = jm.clusters[0] if jm.clusters else problem.clusters[0]
            values[v.w[(j, k)]] += run[j] - placed[j]
    for r, var in v.u.items():
        row = problem.quotas[r]
        used = sum(
            problem.jobs[j].guaranteed_gpus_at(sizes.get(name, 0))
            for j in row.jobs
            for name, _ in _members(problem.jobs[j])
        )
        values[var] = min(model.ub[var], used)
    for tier, (s, sb) in start_bonus.hint(problem, v.withheld, run, sizes).items():
        values[v.bonus[tier][0]], values[v.bonus[tier][1]] = s, sb
    for key, var in built.triggers.items():
        starters = problem.triggers.get(key, ())
        values[var] = int(any(run[h] for h in starters))
    if v.d or v.e:
        _topology(problem, built, counts, index, run, values)
    return values


def _topology(
    problem: Problem,
    built: Built,
    counts: Mapping[tuple[str, int, int], int],
    index: Mapping[str, int],
    run: list[int],
    values: list[int],
) -> None:
    """Domains used, new pods per domain, broader domains touched and free domains kept whole,
    read off the per-job counts (rules/topology.py)."""
    v = built.vars
    for (name, sid, cid), n in counts.items():
        j = index.get(name)
        ask = problem.asks.get(name)
        if not n or j is None or ask is None:
            continue
        d = problem.class_domain.get(cid, {}).get(ask.key)
        if d is not None and (j, sid, d) in v.zt:
            values[v.zt[(j, sid, d)]] += n
            values[v.d[(j, d)]] = 1
        elif d is None and (j, sid) in v.zo:
            values[v.zo[(j, sid)]] += n
    for (j, d), var in v.d.items():
        name = problem.jobs[j].name
        ask = problem.asks[name]
        if ask.mode is Mode.REQUIRED and run[j] and d in problem.held.get(name, ()):
            values[var] = 1  # running there, growing or not
    levels = problem.topology.levels
    used: dict[int, list[tuple[str, ...]]] = {}  # per job, its domains (one pass: XL has 10^5 b)
    for (j, d), dv in v.d.items():
        if values[dv]:
            used.setdefault(j, []).append(d)
    for (j, key, e), var in v.b.items():
        cut = levels.index(key) + 1
        values[var] = int(any(d[:cut] == e for d in used.get(j, ())))
    gpus_in: dict[tuple[str, tuple[str, ...]], int] = {}
    for (sid, cid), var in v.x.items():
        g = problem.shapes[sid].requests.get(GPU, 0) * values[var]
        for key, e in problem.class_domain.get(cid, {}).items():
            if g:
                gpus_in[(key, e)] = gpus_in.get((key, e), 0) + g
    for key_e, var in v.e.items():
        values[var] = int(not gpus_in.get(key_e))


def _members(jm: JobModel) -> list[tuple[str, int]]:
    """(job, hours waited) of a job, or of each member of a counted type."""
    if not jm.members:
        return [(jm.name, jm.waiting_hours)]
    hours = [h for h, n in jm.waiting_buckets for _ in range(n)]
    return [(m, hours[i] if i < len(hours) else 0) for i, m in enumerate(jm.members)]
