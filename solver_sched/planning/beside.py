"""Work run beside the cycle in a forked child: the second core for Python passes.

Python threads share one interpreter lock, so greedy's candidate passes run one after another on
one core while the other idles wherever no search runs (docs/benchmarks.md section 1, eighteenth
and nineteenth passes). A child forked once the model is built shares the snapshot and the problem
copy-on-write, runs passes the parent reaches only later or never, and sends each result back as it
finishes. The parent reads what has arrived while it has work of its own, waits only once it has
none left (up to a deadline), and kills the child when it no longer wants it (a search takes that
core, or the candidates are ranked). Where ``os.fork`` does not exist nothing runs beside.

The child runs only the given function: no other thread of the parent exists in it, so it must
take no lock another thread may have held at the fork (it runs pure Python over the cycle's own
objects), and it leaves with ``os._exit``, running none of the parent's exit handlers.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection, Pipe
from typing import Any

Send = Callable[[Any], None]


class Beside:
    """``work(send)`` in a forked child; what it sends (picklable) arrives through ``arrived``."""

    def __init__(self, work: Callable[[Send], None]) -> None:
        self.pid: int | None = None
        self._conn: Connection | None = None
        if not hasattr(os, "fork"):
            return
        receiver, sender = Pipe(duplex=False)
        pid = os.fork()
        if pid == 0:  # the child: work, then leave at once, whatever happened
            code = 0
            try:
                receiver.close()
                os.nice(19)  # idle CPU only: never slow the cycle where the cores are busy
                work(sender.send)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        sender.close()
        self.pid, self._conn = pid, receiver

    def __enter__(self) -> Beside:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def arrived(self, wait: float = 0.0) -> list[Any]:
        """What the child has sent and was not read yet, waiting up to ``wait`` seconds for the
        first of it (the cycle waits only with nothing else to run)."""
        out: list[Any] = []
        conn = self._conn
        try:
            while conn is not None and conn.poll(0 if out else wait):
                out.append(conn.recv())
        except (EOFError, OSError, pickle.UnpicklingError):
            self._close()  # the child is gone, or died while sending: what came before was read
        return out

    def stop(self) -> None:
        """Kill the child (if it still runs) and reap it; what it sent is no longer read."""
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):  # reaped already (SIGCHLD ignored)
                os.waitpid(self.pid, 0)
            self.pid = None
        self._close()

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
