"""Problem -> LinearModel: the rules, in the order docs/formulation.md presents them.

The model's rows are written and fitted when a solver first reads them (``LinearModel.later``):
valuing a plan needs the variables and the objective's terms alone."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from solver_sched.formulation.linear import LinearModel
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.rules import (
    capacity,
    clusters,
    gang,
    nomination,
    objective,
    preemption,
    quota,
    topology,
)
from solver_sched.formulation.variables import Vars, create


@dataclass
class Built:
    model: LinearModel
    vars: Vars
    triggers: dict[str, int]


def build(problem: Problem) -> Built:
    model = LinearModel()
    v = create(problem, model)
    for rows in (gang, capacity, clusters):  # rows only: written when a solver reads them
        model.later(partial(rows.add, problem, model, v))
    quota.add(problem, model, v)
    topology.add(problem, model, v)
    triggers = preemption.add(problem, model, v)
    objective.add(problem, model, v)
    nomination.add(problem, model, v)
    return Built(model, v, triggers)
