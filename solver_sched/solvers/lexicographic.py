"""A second, lexicographic stage for topology (docs/formulation.md, Topology): the model with its
placement value held at a first solution's as a row, and only the topology terms (then the tie
band) left to optimise. The first stage's optimum is already value first, topology second (the
topology terms sit in the elastic band below any placement); the second stage spends what the
cycle has left on topology alone, where the first stopped at FEASIBLE.
"""

from __future__ import annotations

import time

from solver_sched.config.schema import Settings
from solver_sched.formulation.linear import LinearModel, Terms
from solver_sched.solvers.cpsat import Search

TOPOLOGY_TERMS = ("topology_spread", "fragmentation")


def value_terms(model: LinearModel) -> Terms:
    """The objective without the topology terms, each coefficient as ``objective()`` has it."""
    out: dict[int, int] = {}
    bands = ((model.guaranteed, model.tie_band * model.band), (model.elastic, model.tie_band))
    for band, weight in bands:
        for name, terms in band.items():
            if name in TOPOLOGY_TERMS:
                continue
            for v, c in terms:
                out[v] = out.get(v, 0) + weight * c
    return [(v, c) for v, c in sorted(out.items()) if c]


def topology_stage(model: LinearModel, values: list[int]) -> LinearModel:
    """``model`` with ``value >= value(values)`` as a row (``value_terms``) and an objective of
    the topology terms and the tie band alone, the same variables (``values`` is a hint).
    Every solution is at least as good as ``values`` by the first model's objective when its
    topology and tie terms are."""
    value = value_terms(model)
    floor = sum(c * values[v] for v, c in value)
    out = LinearModel(
        names=model.names,
        lb=model.lb,
        ub=model.ub,
        constraints=list(model.constraints),
        elastic={n: t for n, t in model.elastic.items() if n in TOPOLOGY_TERMS},
        tie=dict(model.tie),
        band=1,
        tie_band=model.tie_band,
    )
    out.add("value_floor", value, floor, None)
    return out


def improve_topology(
    model: LinearModel, values: list[int], deadline: float, s: Settings
) -> tuple[list[int], str]:
    """The second stage's solution (CP-SAT, hinted with ``values``, searching until ``deadline``,
    a perf_counter time, after its translation), or ``values`` when it finds nothing better by
    the second stage's objective; and a detail for the solve's statistics."""
    stage = topology_stage(model, values)
    search = Search(stage, values, 1.0, s.workers, s.random_seed, s.linearization_level)
    search.solver.parameters.max_time_in_seconds = max(0.01, deadline - time.perf_counter())
    status, found, _obj, _bound, secs, _detail = search.run()
    gain = 0 if found is None else stage.objective_value(found) - stage.objective_value(values)
    if found is None or gain <= 0:
        return values, f"second stage: {status}, no gain ({secs:.3f}s)"
    return found, f"second stage: {status}, topology +{gain} ({secs:.3f}s)"
