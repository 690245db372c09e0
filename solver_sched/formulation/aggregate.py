"""Interchangeable jobs as one counted type, so the model's size follows the number of distinct
job types, not the number of jobs (a fleet queue of 2,000 jobs has a few hundred types).

Pending gangs with nothing running whose every coefficient is the same (queue and its chain,
priority and tier, the clusters they may use, and per size option the pods of each shape, quota
usage and value units) differ only in how long they have waited. They become one ``JobModel``
with ``count`` members: ``y[t,s]`` counts the members that end at size s, ``w[t,k]`` those in
cluster k, and every rule, being a sum over jobs of the same coefficients, keeps its meaning.
The waiting term is the one that tells members apart: it is carried by bucket counts
``r[t,h] <= members that waited h hours`` with ``sum_h r[t,h] <= run_t``, so the model values the
longest-waiting members first, as the plan then picks them (``members`` is in that order).

Exact where it is used: with one cluster, and with several for types of one positive size (a
rigid gang's pods in cluster k are then ``new * w[t,k]``). Elastic pending gangs of a fleet stay
one per job: split over clusters at different sizes, counts would relax the model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.problem import JobModel, Problem


def oldest_first(snapshot: ClusterSnapshot) -> Callable[[str], tuple[bool, float]]:
    """``aggregate``'s ``age``: oldest first among jobs of one waiting hour, a job without a
    creation time last."""

    def age(job: str) -> tuple[bool, float]:
        created = snapshot.jobs[job].created
        return (created is None, created.timestamp() if created is not None else 0.0)

    return age


def _key(jm: JobModel, clusters: int) -> tuple[Any, ...] | None:
    if not jm.starting or jm.current or jm.running_ok or jm.break_needs or jm.count != 1:
        return None
    if clusters > 1 and sum(1 for o in jm.options if o.size) > 1:
        return None
    options = []
    for o in jm.options:
        if o.released or o.evicted:
            return None
        options.append(
            (
                o.size,
                tuple(sorted(o.new.items())),
                tuple(sorted(o.usage.items())),
                o.guaranteed_units,
                o.guaranteed_gpus,
                o.elastic_units,
            )
        )
    return (
        jm.queue,
        jm.queue_chain,
        jm.priority,
        jm.tier_weight,
        jm.clusters,
        jm.tie,
        jm.preempts,
        tuple(options),
    )


def aggregate(problem: Problem, age: Callable[[str], Any] = str) -> Problem:
    """The problem with interchangeable jobs merged into counted types (the same problem when
    no two jobs are alike). ``age`` orders members of one waiting hour: oldest first."""
    groups: dict[Any, list[int]] = {}
    for j, jm in enumerate(problem.jobs):
        # a gang with a topology request picks its own domain: it stays a job of its own
        key = None if jm.name in problem.asks else _key(jm, len(problem.clusters))
        groups.setdefault(("job", j) if key is None else key, []).append(j)
    if len(groups) == len(problem.jobs):
        return problem
    jobs: list[JobModel] = []
    index: dict[int, int] = {}
    for members in groups.values():
        for j in members:
            index[j] = len(jobs)
        if len(members) == 1:
            jobs.append(problem.jobs[members[0]])
            continue
        ranked = sorted(
            (problem.jobs[j] for j in members),
            key=lambda m: (-m.waiting_hours, age(m.name), m.name),
        )
        buckets: dict[int, int] = {}
        for m in ranked:
            if m.waiting_hours:
                buckets[m.waiting_hours] = buckets.get(m.waiting_hours, 0) + 1
        first = ranked[0]
        jobs.append(
            replace(
                first,
                name=f"{first.name}(x{len(ranked)})",
                count=len(ranked),
                members=tuple(m.name for m in ranked),
                waiting_hours=0,
                waiting_buckets=tuple(buckets.items()),
            )
        )
    return replace(
        problem,
        jobs=tuple(jobs),
        quotas=tuple(
            replace(
                row,
                jobs=_remap(row.jobs, index),
                breakable=_remap(row.breakable, index),  # never merged (break_needs)
                licensed=frozenset(_remap(tuple(row.licensed), index)),  # same queue, priority
            )
            for row in problem.quotas
        ),
        triggers={k: _remap(v, index) for k, v in problem.triggers.items()},
    )


def _remap(jobs: tuple[int, ...], index: Mapping[int, int]) -> tuple[int, ...]:
    return tuple(sorted({index[j] for j in jobs}))


def member_sizes(
    jm: JobModel, counts: Mapping[int, int], waited: Mapping[int, int]
) -> dict[str, int]:
    """A type's counts back to its members: ``counts`` option index -> members at that size,
    ``waited`` hours -> members of that waiting hour that run. The members who run are taken
    per waiting hour as ``waited`` says (oldest first within it), then the rest in order; the
    largest sizes go to the first of them."""
    sizes = sorted(
        (jm.options[k].size for k, n in counts.items() if jm.options[k].size for _ in range(n)),
        reverse=True,
    )
    chosen: list[str] = []
    start = 0
    for h, n in jm.waiting_buckets:  # the members are in bucket order, hours descending
        chosen += jm.members[start : start + min(waited.get(h, 0), n)]
        start += n
    taken = set(chosen)
    chosen += [m for m in jm.members if m not in taken]
    return dict(zip(chosen, sizes, strict=False))
