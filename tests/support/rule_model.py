"""One rule's rows alone on a LinearModel, and assignments fixed by variable name, so a rule test
checks the model itself: greedy, packing and the checker cannot hide a broken row."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from solver_sched.config.schema import SchedulerConfig
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.linear import LinearModel
from solver_sched.formulation.prepare import prepare
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.variables import Vars, create
from tests.support.builders import NOW, config

Rule = Callable[[Problem, LinearModel, Vars], Any]


@dataclass
class RuleModel:
    problem: Problem
    model: LinearModel
    vars: Vars
    triggers: dict[str, int]

    def x(self, pod: str, node: str) -> str:
        """The name of x for a pending pod's shape and a node's class."""
        return f"x[{self.problem.shape_of[pod]},{self.problem.class_of[node]}]"

    def values(self, assign: dict[str, int]) -> list[int]:
        """Every variable 0 but those named; a name the model lacks is an error."""
        values = [0] * len(self.model.names)
        index = {n: i for i, n in enumerate(self.model.names)}
        for name, value in assign.items():
            values[index[name]] = value
        return values

    def violated(self, assign: dict[str, int]) -> list[str]:
        return self.model.violated(self.values(assign))

    def terms(self, assign: dict[str, int]) -> dict[str, int]:
        return self.model.evaluate(self.values(assign))

    def objective(self, assign: dict[str, int]) -> int:
        return self.model.objective_value(self.values(assign))

    def rows(self, prefix: str) -> list[str]:
        return [c.name for c in self.model.constraints if c.name.startswith(prefix)]


def rule_model(
    snap: ClusterSnapshot,
    *rules: Rule,
    cfg: SchedulerConfig | None = None,
    now: datetime = NOW,
) -> RuleModel:
    cfg = cfg or config()
    problem = prepare(snap, cfg.weights, cfg.settings, now)
    model = LinearModel()
    v = create(problem, model)
    triggers: dict[str, int] = {}
    for rule in rules:
        out = rule(problem, model, v)
        if isinstance(out, dict):
            triggers.update(out)
    return RuleModel(problem, model, v, triggers)
