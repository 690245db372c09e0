"""The CLI's standard output carries its own output only. Native code writes to file descriptor 1
directly (HiGHS 1.12 prints "HighsMipSolverData::transformNewIntegerFeasibleSolution ..." lines
from C++ on some MIPs), which broke `whatif -o json`: while the CLI runs, descriptor 1 is standard
error and Python's ``sys.stdout`` writes to the real standard output."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def own_stdout() -> Iterator[None]:
    if sys.stdout is None:  # started with descriptor 1 closed: nothing to keep
        yield
        return
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no descriptor 1 to keep (an embedding that closed it)
        yield
        return
    encoding, errors = sys.stdout.encoding or "utf-8", sys.stdout.errors
    line = 1 if sys.stdout.isatty() else -1
    real = os.fdopen(os.dup(saved), "w", buffering=line, encoding=encoding, errors=errors)
    before, sys.stdout = sys.stdout, real
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout = before
        try:
            real.flush()
        finally:
            real.close()
            os.dup2(saved, 1)
            os.close(saved)
