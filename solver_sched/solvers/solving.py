"""A backend's solve under way on a worker thread, beside the cycle's own Python work.

The cycle translates the model on its thread and lets the search run on the other core while it
makes and checks greedy's candidates; it stops the search at its deadline, or cancels it when
the cycle fails meanwhile (cycle.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial

from solver_sched.config.schema import Settings
from solver_sched.formulation.aggregate import member_sizes
from solver_sched.formulation.build import Built
from solver_sched.formulation.problem import Problem
from solver_sched.placement.topology import OUTSIDE
from solver_sched.solvers.cpsat import Outcome, Search
from solver_sched.solvers.milp import solve_milp
from solver_sched.solvers.result import Assignment, SolveStats, SolveStatus

BACKENDS = ("cpsat", "milp", "greedy")
POLL = 0.005  # seconds between looks at two searches under way together (Solving.stop_at)


class Solving:
    """The backend's solve, under way on a worker thread from construction to ``result``.

    CP-SAT is translated on the calling thread (Python); its search, which holds no GIL, runs on
    the worker, so the caller checks greedy's plan meanwhile on the other core. MILP builds its
    PuLP model on the worker too: correct, but it shares the GIL with the caller."""

    def __init__(
        self,
        backend: str,
        problem: Problem,
        built: Built,
        hint: list[int] | None,
        limit: float,
        s: Settings,
        skip: str | None = None,  # why no search runs (e.g. the budget is spent)
    ) -> None:
        self.backend = backend
        self.search: Search | None = None
        self.outcome: Outcome | None = None
        self.failure: SolveStats | None = None
        self.thread: threading.Thread | None = None
        self.crash: BaseException | None = None
        if backend == "greedy":
            self.failure = SolveStats("greedy", SolveStatus.HEURISTIC)
            return
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
        if problem.too_large or skip:
            detail = problem.too_large or skip or ""
            self.failure = SolveStats(backend, SolveStatus.NO_SOLUTION, detail=detail)
            return
        run: Callable[[], Outcome]
        try:
            if backend == "cpsat":
                self.search = Search(
                    built.model, hint, limit, s.workers, s.random_seed, s.linearization_level
                )
                run = self.search.run
            else:
                run = partial(solve_milp, built.model, limit, s.workers)
        except _SOLVER_ERRORS as exc:
            self.failure = _error(backend, exc)
            return
        self.thread = threading.Thread(target=self._run, args=(run,), name="solver", daemon=True)
        self.thread.start()

    def _run(self, run: Callable[[], Outcome]) -> None:
        try:
            self.outcome = run()
        except _SOLVER_ERRORS as exc:
            self.failure = _error(self.backend, exc)
        except BaseException as exc:  # re-raised on the caller's thread by result()
            self.crash = exc

    def stop_at(self, deadline: float, beside: Solving | None = None) -> None:
        """Stops the search at ``deadline`` (a perf_counter time) if it still runs then. With
        ``beside``, another search of the same model, both stop then, or as soon as either has
        proved its optimum (the other can find nothing better)."""
        searches = [self] if beside is None else [self, beside]
        while (left := deadline - time.perf_counter()) > 0:
            alive = [s.thread for s in searches if s.thread is not None and s.thread.is_alive()]
            if not alive or any(s.proved() for s in searches):
                break
            alive[0].join(timeout=left if len(alive) == 1 else min(POLL, left))
        for s in searches:
            s.cancel()

    def proved(self) -> bool:
        """The search is over and proved its solution optimal (or the model infeasible)."""
        if self.thread is None or self.thread.is_alive() or self.outcome is None:
            return False
        return self.outcome[0] in (SolveStatus.OPTIMAL, SolveStatus.INFEASIBLE)

    def cancel(self) -> None:
        """Stops a search still under way (the cycle failed meanwhile) and waits for it. CP-SAT
        drops a stop that comes before its solve has begun, so the stop is repeated until the
        worker is done."""
        while self.thread is not None and self.thread.is_alive():
            if self.search is not None:
                self.search.stop()
            self.thread.join(timeout=0.05)

    def result(self) -> tuple[SolveStats, list[int] | None]:
        """The solve's statistics and its solution (model values), once the search is over."""
        if self.thread is not None:
            self.thread.join()
        if self.crash is not None:
            raise self.crash
        if self.failure is not None:
            return self.failure, None
        assert self.outcome is not None
        status, values, obj, bound, secs, detail = self.outcome
        search = self.search.search_seconds if self.search is not None else secs
        stats = SolveStats(self.backend, status, obj, bound, secs, detail, search_seconds=search)
        return stats, values


_SOLVER_ERRORS = (RuntimeError, ValueError, OverflowError, IndexError)  # solver library failures


def _error(backend: str, exc: Exception) -> SolveStats:
    return SolveStats(backend, SolveStatus.NO_SOLUTION, detail=f"solver error: {exc}")


def solution_assignment(problem: Problem, built: Built, values: list[int]) -> Assignment:
    """Model values -> per-job sizes (a counted type's counts go to its members) and counts."""
    v = built.vars
    sizes = {}
    for j, jm in enumerate(problem.jobs):
        if jm.members:
            counts_of_type = {k: values[y] for k, y in enumerate(v.y[j]) if values[y]}
            waited = {h: values[v.r[(j, h)]] for h, _ in jm.waiting_buckets if (j, h) in v.r}
            sizes.update(member_sizes(jm, counts_of_type, waited))
            continue
        for k, o in enumerate(jm.options):
            if values[v.y[j][k]]:
                sizes[jm.name] = o.size
    counts = {
        ("", sid, cid): values[var] for (sid, cid), var in built.vars.x.items() if values[var]
    }
    pods_in: dict[str, dict[tuple[str, ...], int]] = {}
    for (j, _sid, d), var in v.zt.items():
        if values[var]:
            per = pods_in.setdefault(problem.jobs[j].name, {})
            per[d] = per.get(d, 0) + values[var]
    for (j, _sid), var in v.zo.items():  # outside every domain: packed there too
        if values[var]:
            per = pods_in.setdefault(problem.jobs[j].name, {})
            per[OUTSIDE] = per.get(OUTSIDE, 0) + values[var]
    domains = {
        name: tuple(sorted(per, key=lambda d, per=per: (-per[d], d)))  # type: ignore[misc]
        for name, per in pods_in.items()
    }
    return Assignment(sizes, counts, domains)
