"""Nominations: the room made by evictions goes to the jobs it was made for.

A job is nominated while one of its waiting pods carries ``status.nominatedNodeName`` (set by the
controller on the pods of the jobs an eviction makes room for, as kube-scheduler does). To every
other rule a nominated job and an identical job that waits beside it are interchangeable, so
without a preference the solver could pick either, and pick differently in the cycle that evicts
and the one that binds. Each nominated job weighs 1 in the objective's tie band
(rules/nomination.py), below all real value: it keeps its room unless something of higher value
arrives. Among identical jobs of one kind (nominated or not) the order is fixed by
``formulation/aggregate.py``: longest waiting, then earliest created, then name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from solver_sched.formulation.jobs import JobState


def nominated(st: JobState) -> bool:
    return any(p.nominated for p in st.waiting)


def tie_weights(names: Sequence[str], states: Mapping[str, JobState]) -> dict[str, int]:
    """Job name -> its weight in the tie band: 1 for a nominated job, else 0."""
    return {n: int(nominated(states[n])) for n in names}
