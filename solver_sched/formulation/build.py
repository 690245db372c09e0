"""Problem -> LinearModel: the rules, in the order docs/formulation.md presents them."""

from __future__ import annotations

from dataclasses import dataclass

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
    gang.add(problem, model, v)
    capacity.add(problem, model, v)
    clusters.add(problem, model, v)
    quota.add(problem, model, v)
    topology.add(problem, model, v)
    triggers = preemption.add(problem, model, v)
    objective.add(problem, model, v)
    nomination.add(problem, model, v)
    return Built(model, v, triggers)
