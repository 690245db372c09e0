"""The model with a plan's placement value held as a row and another objective: the second stage
of a lexicographic solve. The topology study (benchmarks/topology.py ``--bounds``) uses it for the
fewest rack crossings any plan of a given value can have; the property test of
tests/solvers/test_topology_baselines.py for what "equal value" means.

A second stage inside the cycle (the first search cut at half its time, then this model with the
topology terms as its objective until the deadline) was measured and is not built: on the
reported seeds it moved crossings by no more than runs differ, and on one instance the shorter
first search gave up 18% of the GPU value (docs/benchmarks.md, section 5).
"""

from __future__ import annotations

from solver_sched.formulation.linear import LinearModel, Terms
from solver_sched.formulation.variables import Vars

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


def held_value(model: LinearModel, values: list[int], objective: Terms) -> LinearModel:
    """``model`` with ``value >= value(values)`` as a row (``value_terms``) and ``objective``
    (maximised) instead of its own; the same variables, so ``values`` is a hint."""
    value = value_terms(model)
    out = LinearModel(
        names=model.names,
        lb=model.lb,
        ub=model.ub,
        reach=model.reach,
        fitted=list(model.constraints),
        elastic={"objective": list(objective)},
    )
    out.add("value_floor", value, sum(c * values[v] for v, c in value), None)
    return out


def crossings(v: Vars) -> Terms:
    """Minus the domain crossings of the gangs that ask for topology (domains of their level
    used - 1, for each gang that runs), as terms to maximise: ``sum_j (run_j - sum_D d[j,D])``."""
    out: dict[int, int] = {}
    for var in v.d.values():
        out[var] = out.get(var, 0) - 1
    for j in sorted({j for (j, _d) in v.d}):
        for y in v.y[j][1:]:
            out[y] = out.get(y, 0) + 1
    return sorted(out.items())
