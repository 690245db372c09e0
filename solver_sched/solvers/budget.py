"""How long a cycle may take, and so how long the solver may search.

A cycle's wall time is its Python phases (model, greedy, translation, packing and checking the
plans) plus the search; greedy's plan is checked while the solver searches. With a cycle budget,
the search runs until the budget less what is still to come after it (packing and checking the
solver's plan, estimated from greedy's, measured in the same cycle), or until it proves its
optimum. An explicit time limit (what-if's ``--time-limit``) is the search's own, whatever the
budget (cycle.run_cycle).

The default budget grows with the cluster through the per-cycle targets of issue 14, measured on
this project's benchmark (docs/benchmarks.md, section 1): 64 nodes 0.5 s, 512 nodes 1 s, 2,000
nodes 3 s, 10,000 nodes 8 s, linear in between and past the last point.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

AUTO_BUDGET: Sequence[tuple[int, float]] = ((64, 0.5), (512, 1.0), (2000, 3.0), (10000, 8.0))
AFTER_FACTOR = 1.5  # the solver's plan may need packing as well as greedy's plan's check
AFTER_SLACK = 0.02  # seconds: joining the solver thread, scoring
MARGIN = 0.95  # of the budget: run-to-run noise of the Python phases


def auto_budget(nodes: int) -> float:
    """Seconds per cycle for a cluster of ``nodes`` schedulable nodes."""
    points = AUTO_BUDGET
    if nodes <= points[0][0]:
        return points[0][1]
    for (n0, t0), (n1, t1) in itertools.pairwise(points):
        if nodes <= n1:
            return t0 + (t1 - t0) * (nodes - n0) / (n1 - n0)
    (n0, t0), (n1, t1) = points[-2], points[-1]
    return t1 + (t1 - t0) * (nodes - n1) / (n1 - n0)


def search_deadline(start: float, budget: float, after_greedy: float) -> float:
    """When the search must stop (perf_counter seconds), given when the cycle started and how
    long packing and checking greedy's plan took: the solver's plan still needs about as much."""
    return start + MARGIN * budget - AFTER_FACTOR * after_greedy - AFTER_SLACK
