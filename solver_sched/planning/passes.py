"""Greedy's passes after its first, each another candidate of the cycle: a start order (queue
order, smallest gangs first, the LP relaxation's) with greedy's or value-aware victims
(PASSES), made in the cycle (``variant``) or in the child beside it (``passes_beside``, read
back by ``arrivals``; planning/beside.py)."""

from __future__ import annotations

import time

from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.build import Built
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.values import to_values
from solver_sched.placement.state import PlanState, restore
from solver_sched.planning.beside import Send
from solver_sched.planning.candidates import (
    DENSE,
    DENSE_VALUE,
    GUIDED,
    GUIDED_VALUE,
    VALUE_AWARE,
    Candidate,
    score,
)
from solver_sched.planning.clock import TAIL, Timer
from solver_sched.planning.pack import minimize_evictions
from solver_sched.solvers.greedy import assignment_of, greedy_plan, queue_order, start_order

# label -> (start order: None is queue order, value-aware victims)
PASSES = {
    DENSE: (DENSE, False),
    GUIDED: (GUIDED, False),
    VALUE_AWARE: (None, True),
    DENSE_VALUE: (DENSE, True),
    GUIDED_VALUE: (GUIDED, True),
}
# what the child beside sends per pass: sizes, pending pods' nodes, notes, model values
Sent = tuple[dict[str, int], dict[str, str], list[str], list[int] | None]


def variant(
    snapshot: ClusterSnapshot,
    problem: Problem,
    model: Problem,
    built: Built,
    timer: Timer,
    label: str,
    deadline: float | None,
    shares: dict[str, float] | None = None,
) -> Candidate | None:
    """Greedy's pass ``label`` (``greedy_pass``) as another candidate."""
    with timer("greedy"):
        st = greedy_pass(snapshot, problem, label, deadline, shares)
        if st is None:
            return None
        a = assignment_of(st)
        values = to_values(model, built, a.sizes, a.counts)
    with timer("plan"):
        return score(model, built, label, st, [], values)


def greedy_pass(
    snapshot: ClusterSnapshot,
    problem: Problem,
    label: str,
    deadline: float | None,
    shares: dict[str, float] | None = None,
) -> PlanState | None:
    """Another greedy pass: starting gangs in the order of the LP relaxation's shares or
    smallest first (None when that is queue order: the same plan as greedy's, or as
    value-greedy's), with value-aware victims or not; past ``deadline`` its starts take no
    victims."""
    ordering, value_aware = PASSES[label]
    order = starts = None
    if ordering is not None:
        order = queue_order(problem)
        starts = start_order(problem, order, shares, dense=ordering == DENSE)
        if starts == order:
            return None
    return greedy_plan(snapshot, problem, starts, value_aware, order=order, deadline=deadline)


def passes_beside(
    snapshot: ClusterSnapshot,
    problem: Problem,
    model: Problem,
    built: Built,
    labels: tuple[str, ...],
    end: float,
    estimate: float,
    send: Send,
) -> None:
    """In the child (planning/beside.py): greedy's passes ``labels`` one after another, each
    sent as soon as it ends, as (label, sizes, pending pods' nodes, notes, model values), or
    (label, None) where the pass is another's plan. Each pass's victim search stops at ``end``
    less TAIL of ``estimate``, a pass's length: the previous pass's here, and for the first the
    model phase's (0.6-0.8 of greedy's first pass at 512 nodes, 1.2-1.4 at 2,000)."""
    for label in labels:
        at = time.perf_counter()
        if at + TAIL * estimate > end:
            return
        st = greedy_pass(snapshot, problem, label, end - TAIL * estimate)
        if st is None:
            send((label, None))
            continue
        notes = minimize_evictions(st)  # as score() would; the parent does not again
        a = assignment_of(st)
        send(
            (
                label,
                (dict(st.size), dict(st.placed), notes, to_values(model, built, a.sizes, a.counts)),
            )
        )
        estimate = time.perf_counter() - at


def arrivals(
    snapshot: ClusterSnapshot,
    problem: Problem,
    built: Built,
    received: dict[str, Sent | None],
    others: list[Candidate | None],
) -> list[Candidate]:
    """The child's passes as candidates, each plan state restored (placement/state.py) only where
    the model values it above every candidate already made: another would never be emitted
    before them, and restoring one costs about a sixth of a pass (0.05 s at 512 nodes)."""
    best = max((c.value for c in others if c is not None and c.value is not None), default=None)
    out: list[Candidate] = []
    for label, sent in received.items():
        if sent is None:
            continue
        size, placed, notes, values = sent
        if values is None:
            continue
        terms = built.model.evaluate(values)
        value = built.model.objective_of(terms)
        if best is not None and value <= best:
            continue
        try:
            st = restore(snapshot, problem, size, placed)
        except ValueError:  # never seen (tests/placement/test_state.py); the cycle goes on
            continue
        out.append(Candidate(label, st, notes, terms, value, values))  # minimized in the child
        best = value
    return out
