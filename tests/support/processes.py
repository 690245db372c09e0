"""Processes a test started, seen from outside."""

from __future__ import annotations

import os


def gone(pid: int) -> bool:
    """No process ``pid`` exists any more (it ended and was reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
