"""When a cycle's later work must end (cycle.py decides what runs): the budget's shares, and
what the cycle measured so far: the model's build, greedy's first pass, the plan phase."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from solver_sched.solvers.budget import MARGIN, search_deadline

# No search where its window would be shorter than SEARCH_NEEDS times this cycle's model build
# (Python writing the same rows the translation writes, so a measure of the model's size on this
# machine, now): translation, presolve and a first solution take 1.5-3 times the build from 64 to
# 2,000 nodes, so a shorter window returns at best the hint, and its translation (0.13 s at 512
# nodes) only delays the plan. The window is estimated as search_deadline will set it, with the
# check of greedy's plan, still to come, as long as the build (docs/benchmarks.md section 1).
SEARCH_NEEDS = 2.5
# A build with the model's rows over one without (formulation/build.py writes them when first
# read): 1.9-2.9 from 512 to 10,000 nodes on every preset (docs/benchmarks.md section 1).
WITH_ROWS = 2.0
# Of greedy's first pass: what another pass still takes once its victim search has stopped at its
# deadline (starts where they fit, elastic growth, valuing its plan): 0.1-0.5 at L on dev seeds.
# The deadline keeps the budget where a pass costs more than the first (value-greedy: 1.4-1.9x
# at L), keeping the victims taken so far (docs/benchmarks.md section 1).
TAIL = 0.5
# Of the model's build (without its rows): what greedy's first pass still takes once its victim
# search has stopped at its deadline (starts where they fit, the retry, elastic growth). Measured
# on dev seeds 1-2 of M, L and XL, cut at a quarter, half and three quarters of the pass: 0.3-2.3
# builds, median 0.7 (docs/benchmarks.md section 1, thirty-first pass).
FIRST_TAIL = 2.0


class Timer:
    """Seconds per phase of a cycle, summed over each time the phase is entered."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.phases[phase] = self.phases.get(phase, 0.0) + time.perf_counter() - start


@dataclass
class Clock:
    """When a cycle's later work must end, from what the cycle measured so far: the model's
    build (``building``, times WITH_ROWS once it is known that no rows will be written),
    greedy's first pass (``one_pass``) and the plan phase. Without a budget nothing ends."""

    start: float
    budget: float | None  # bounds everything but an explicit search
    search_budget: float | None  # the budget that bounds the search too
    searching: bool  # a search may follow the candidates (not the greedy backend)
    timer: Timer
    building: float
    share: float  # of the budget: greedy's other candidates end by then
    one_pass: float = 0.0  # greedy's first pass, once made
    no_search: bool = False  # none follows after all: an earlier cycle's history ruled it out

    def window(self, at: float, bound: float) -> float:
        """The search's window if it were translated at ``at`` in a budget of ``bound``, as
        search_deadline will set it: the check of greedy's plan, still to come, as the build."""
        plan = self.timer.phases["plan"]
        return search_deadline(self.start, bound, plan + self.building) - at

    def latest(
        self, share: float | None = None, past_share: bool = True, rows: float = 1.0
    ) -> float | None:
        """When another greedy pass (about as long as the first) must end: in ``share`` (else
        the candidates' share) of the budget; without a budget, never. A pass after which no
        search could run anyway (its window shorter than SEARCH_NEEDS builds, or the search ruled
        out by an earlier cycle's history: ``no_search``) may use the budget
        up to the check's estimate (the build, times ``rows`` where it does not count the rows
        yet), unless ``past_share`` is False (the LP relaxation, whose own window is its
        share)."""
        if self.budget is None:
            return None
        end = time.perf_counter() + self.one_pass
        if (
            past_share
            and self.search_budget is not None
            and self.searching
            and (self.no_search or self.window(end, self.search_budget) < self.needed())
        ):
            return self.before_check(rows)
        return self.start + (self.share if share is None else share) * self.budget

    def needed(self, rows: float = 1.0) -> float:
        """The shortest window worth a search: SEARCH_NEEDS builds (times ``rows`` where the
        build does not count the model's rows yet)."""
        return SEARCH_NEEDS * rows * self.building

    def before_check(self, rows: float) -> float:
        """MARGIN of the budget less the check's estimate (the build, times ``rows`` where it
        does not count the rows yet): where greedy's passes end when no search follows."""
        assert self.budget is not None
        return self.start + MARGIN * self.budget - rows * self.building

    def first_cutoff(self) -> float | None:
        """When greedy's first pass stops its victim search: the check's estimate (the build
        with its rows) and FIRST_TAIL builds before the budget's end, so that the rest of the
        pass and its check still end about with the budget. A net, not a share: MARGIN is not
        kept (the pass's plan is every cycle's floor, and where it is cut depends on the
        machine's speed), so only a pass that would end that close to the budget's end or past
        it is cut (XL on a slow machine, now and then on a quick one); elsewhere greedy's plan
        is what it was. Without a budget (the simulator, best-known solves) never: the plan
        does not depend on the machine's speed there."""
        if self.budget is None:
            return None
        return self.start + self.budget - (WITH_ROWS + FIRST_TAIL) * self.building

    def fits(self, end: float | None, of_pass: float = 1.0) -> bool:
        """``of_pass`` of another pass (about as long as the first) ends by ``end`` (None: no
        budget); TAIL of one: the part after its victim search, cut for ``end``."""
        return end is None or time.perf_counter() + of_pass * self.one_pass <= end

    def room_for_another(self, share: float | None = None, past_share: bool = True) -> bool:
        return self.fits(self.latest(share, past_share))

    def cutoff(self, end: float | None) -> float | None:
        """When a pass that must end by ``end`` stops its victim search (greedy_plan's
        deadline): a pass may cost twice the first (value-greedy at L), and what follows the
        search still takes TAIL of a pass."""
        return None if end is None else end - TAIL * self.one_pass
