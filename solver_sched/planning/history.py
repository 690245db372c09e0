"""What earlier cycles' searches found, kept by the controller from one cycle to the next.

A budgeted search that found no solution at all, for a model of V variables in a window of W
seconds, says that a model at least as large will not find one in a window no longer: CP-SAT's
translation, presolve and first solution only grow with the model. With topology at 2,000 and
10,000 nodes (rackL, rackXL) no search the budget allows returns a solution (none in 2.4-5.6 s
for 9,000-105,000 variables: docs/benchmarks.md section 5), yet each cycle spent its second core
and the translation on one. The build's window rule (planning/clock.py) cannot tell: CP-SAT's
time to a first solution grows faster than the build. The search's own history can, after one
cycle. A failed search is kept with the seconds it had (translation to stop), a later one is
judged by its window as the cycle estimates it before the translation.

The failures kept are those no other kept one covers (fewest variables for the longest
window), at most KEPT of them. After PROBE_EVERY searches ruled out in a row the next one runs
anyway, in case the cluster changed; a search that finds a solution forgets them all, and so
does a change of the solver or its settings.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

PROBE_EVERY = 10  # searches ruled out in a row before one runs anyway
KEPT = 16  # failures kept, the oldest dropped first


@dataclass
class SearchHistory:
    """Budgeted searches that found no solution: (model variables, window it had)."""

    failed: list[tuple[int, float]] = field(default_factory=list)
    ruled_out: int = 0  # in a row, since the last search that ran
    context: Hashable = None  # the solver and its settings the failures were found with

    def under(self, context: Hashable) -> None:
        """The solver and settings of this cycle's search: failures of others are forgotten."""
        if context != self.context:
            self.failed.clear()  # ruled_out counts again from the next search that runs
            self.context = context

    def hopeless(self, variables: int, window: float) -> tuple[int, float] | None:
        """The kept failure that rules out a search of ``variables`` in ``window`` seconds (a
        smaller model that found nothing in a longer window), unless it is time for a probe.
        Counts the search as ruled out: ask once per search."""
        for v, w in self.failed:
            if variables >= v and window <= w:
                if self.ruled_out >= PROBE_EVERY:
                    return None
                self.ruled_out += 1
                return v, w
        return None

    def record(self, variables: int, seconds: float, found: bool) -> None:
        """A budgeted search that ran to its stop, in a window of ``seconds``."""
        self.ruled_out = 0
        if found:
            self.failed.clear()
            return
        if any(v <= variables and w >= seconds for v, w in self.failed):
            return  # covered: it says nothing new
        self.failed = [(v, w) for v, w in self.failed if not (v >= variables and w <= seconds)]
        self.failed.append((variables, seconds))
        del self.failed[:-KEPT]
