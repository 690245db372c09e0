"""Loading pauses Python's cyclic garbage collector.

Decoding a dump and building its snapshot allocate millions of containers that all stay alive, so
every collection pass finds nothing to free, and the passes over an ever larger heap cost half the
load's CPU at 2,000 nodes (docs/benchmarks.md). Nothing the loader builds forms a cycle; garbage
it leaves is freed by reference counting or the next automatic collection. The switch is
process-wide, as in ``cycle.run_cycle``.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
