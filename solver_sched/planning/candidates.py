"""Candidate plans: a plan state valued with the model, then checked; the best checked one is the
cycle's plan.

The labels name where a candidate came from: greedy's passes (its start order and victim rule,
solvers/greedy.py and victims.py), the solver's solution packed (the backend's name), a topology
baseline, or the best one's sizes compacted. Equal values go to the solver, then to greedy in
queue order: its plan is the one a user of the greedy backend would get.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from solver_sched.config.schema import Settings
from solver_sched.domain.plan import Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.build import Built
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.values import to_values
from solver_sched.placement.state import PlanState
from solver_sched.planning.check import check
from solver_sched.planning.diff import diff
from solver_sched.planning.pack import minimize_evictions
from solver_sched.solvers.greedy import counts_of
from solver_sched.solvers.topology_baselines import BASELINES

GREEDY = "greedy"  # greedy's first pass: queue order, greedy's victims
GUIDED = "lp-greedy"  # greedy starting gangs in the order of the LP relaxation (solvers/lp.py)
VALUE_AWARE = "value-greedy"  # greedy taking no victim worth as much as the start (victims.py)
DENSE = "dense-greedy"  # with a start bonus: gangs of one priority smallest first (greedy.py)
DENSE_VALUE = "dense-value-greedy"  # dense-greedy's order, value-greedy's victims
GUIDED_VALUE = "lp-value-greedy"  # lp-greedy's order, value-greedy's victims
COMPACT = "compact"  # the best candidate's sizes packed again, largest topology gang first
# ties: the solver's plan and the compacted one first (rank 6), then greedy's passes in this
# order, then the topology baselines (-1)
TIES = (GREEDY, DENSE, GUIDED, VALUE_AWARE, DENSE_VALUE, GUIDED_VALUE)
_TIE_RANK = {label: len(TIES) - 1 - k for k, label in enumerate(TIES)}


def may_rank_first(built: Built, values: list[int], best: list[int] | None, c: Candidate) -> bool:
    """The solver's solution, packed, may rank above candidate ``c`` (whose model values are
    ``best``): it differs from it and the model values it no lower."""
    if values == best:
        return False
    return c.value is None or built.model.objective_value(values) >= c.value


@dataclass
class Candidate:
    """A plan state with its model objective (None: it does not map onto the model) and, once
    checked, its plan and the checker's violations."""

    label: str
    state: PlanState
    notes: list[str]
    terms: dict[str, int]
    value: int | None
    values: list[int] | None = None  # the model's variables
    plan: Plan | None = None
    violations: list[str] = field(default_factory=list)

    @property
    def rank(self) -> tuple[bool, int, int]:
        """A candidate that does not map onto the model ranks last but stays eligible; ties go
        to the solver, then to greedy in queue order."""
        tie = _TIE_RANK.get(self.label, -1 if self.label in BASELINES else len(TIES))
        return (self.value is not None, self.value or 0, tie)


def score(
    model: Problem,
    built: Built,
    label: str,
    st: PlanState,
    notes: list[str],
    values: list[int] | None,
) -> Candidate:
    """Gives back the evictions the state does not need, then values it with the model (built
    from ``model``, the problem as the solver sees it)."""
    undone = minimize_evictions(st)  # a note per eviction undone: none, st unchanged
    notes += undone
    if undone or values is None:
        values = to_values(model, built, st.size, counts_of(st.snapshot, st.problem, st.placed))
    if values is None:
        return Candidate(label, st, notes, {}, None)
    terms = built.model.evaluate(values)
    return Candidate(label, st, notes, terms, built.model.objective_of(terms), values)


def verdict(snapshot: ClusterSnapshot, c: Candidate, now: datetime, s: Settings) -> None:
    """The candidate's plan (the diff against the snapshot, with its reasons) and what the
    independent checker finds wrong with it: a plan with violations is never emitted."""
    problem = c.state.problem
    note = problem.topology_note
    c.plan = diff(snapshot, c.state, now, [*c.notes, *([note] if note else [])])
    c.violations = check(
        snapshot, c.plan, now, s.priority_preemption, s.queue_reclaim, problem.topology
    )
