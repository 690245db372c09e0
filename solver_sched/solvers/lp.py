"""The model's LP relaxation (HiGHS), to guide greedy's choice of which gangs start.

Greedy starts gangs in queue order (priority, then waiting); when queue limits or capacity bind,
which gangs go out matters more than where they go, and queue order can fill ``max-jobs`` with
small gangs while the model values larger ones more. The relaxation (tens of milliseconds on a
fleet of 2,000 jobs, a model CP-SAT cannot improve in seconds) says how much of each job the
optimum runs; greedy started in that order is a second candidate, and the better of the two by
the model's objective hints CP-SAT. Neither is trusted: both go to the packer and the checker.
"""

from __future__ import annotations

import time

from solver_sched.formulation.build import Built
from solver_sched.formulation.problem import Problem

SCALE = 1e-6  # the objective's integers reach 2^62: scaled for the LP's doubles


def relaxation(model_problem: Problem, built: Built, time_limit: float) -> dict[str, float] | None:
    """Per job (each member of a counted type): the share of it the LP optimum runs, 0..1, or
    None when the LP is not solved to optimality within ``time_limit``."""
    m = built.model
    n = len(m.names)
    if n == 0:
        return None
    # imported on first use: with numpy, 0.07-0.1 s of every process start (the what-if CLI's
    # cycles with a search seldom run the relaxation); the first import comes out of the window,
    # as the model's rows do where no search wrote them (formulation/build.py)
    start = time.perf_counter()
    rows = m.constraints
    import highspy
    import numpy as np

    time_limit -= time.perf_counter() - start
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", max(0.01, time_limit))
    h.setOptionValue("threads", 1)
    cost = np.zeros(n)
    for v, c in m.objective():
        cost[v] -= c * SCALE  # HiGHS minimises
    h.addVars(n, np.array(m.lb, dtype=float), np.array(m.ub, dtype=float))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
    inf = highspy.kHighsInf
    starts: list[int] = []
    index: list[int] = []
    value: list[int] = []
    for con in rows:  # one addRows call: row by row cost 0.6-1 s of the LP's window at L
        starts.append(len(index))
        index.extend(v for v, _ in con.terms)
        value.extend(c for _, c in con.terms)
    h.addRows(
        len(rows),
        np.array([-inf if con.lo is None else float(con.lo) for con in rows]),
        np.array([inf if con.hi is None else float(con.hi) for con in rows]),
        len(index),
        np.array(starts, dtype=np.int32),
        np.array(index, dtype=np.int32),
        np.array(value, dtype=np.float64),
    )
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    x = h.getSolution().col_value
    out: dict[str, float] = {}
    for j, jm in enumerate(model_problem.jobs):
        running = sum(x[y] for y in built.vars.y[j][1:])
        members = jm.members or (jm.name,)
        for i, name in enumerate(members):  # longest waiting first, as the plan takes them
            out[name] = min(1.0, max(0.0, running - i))
    return out
