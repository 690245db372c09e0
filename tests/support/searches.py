"""Stand-ins for CP-SAT's search (``cpsat.Search.run``) that find no solution: the cycle's rules
for a search that returns nothing, without a model CP-SAT really fails on."""

from __future__ import annotations

import threading
import time

import pytest

from solver_sched.solvers import cpsat
from solver_sched.solvers.result import SolveStatus


def finds_nothing(
    monkeypatch: pytest.MonkeyPatch, *, hinted_too: bool = True, waits: bool = True
) -> list[bool]:
    """Searches find no solution: every one, or only the unhinted ones (``hinted_too`` False:
    hinted ones are CP-SAT's own). ``waits``: until stopped or their limit passes, as a search
    that runs its whole window (rackXL's); else at once, as if stopped before their first.
    Records whether each search was hinted."""
    hinted: list[bool] = []
    real_run = cpsat.Search.run
    halts: dict[int, threading.Event] = {}

    def run(self: cpsat.Search) -> cpsat.Outcome:
        hinted.append(len(self.cp.solution_hint.vars) > 0)
        if hinted[-1] and not hinted_too:
            return real_run(self)
        start = time.perf_counter()
        if waits:
            halts.setdefault(id(self), threading.Event()).wait(self.parameters.max_time_in_seconds)
        seconds = self.translation + time.perf_counter() - start
        return SolveStatus.NO_SOLUTION, None, None, None, seconds, "nothing"

    def stop(self: cpsat.Search) -> None:
        halts.setdefault(id(self), threading.Event()).set()

    monkeypatch.setattr(cpsat.Search, "run", run)
    monkeypatch.setattr(cpsat.Search, "stop", stop)
    return hinted
