"""Status writes on their own thread (and, in the controller, their own rate-limit budget), so they
never delay a bind or the next scheduling cycle.

Tasks run one at a time in the order posted. A task posted with a ``coalesce`` key replaces a
queued, not yet started task of the same key: a cycle's report describes the current state
(conditions, PodGroup status), so only the newest one matters. Tasks without a key (Events about
evictions, rollbacks, the cooldown stamp) are never dropped. Every task's writes go through the
fenced API, so a replica that lost its lease writes nothing. An unreachable API server is logged as
a warning, never as a traceback.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

from solver_sched.kube.api import ApiError

log = logging.getLogger(__name__)
Task = Callable[[], None]


class Reporter:
    def __init__(self, max_queued: int = 10_000) -> None:
        self._queue: deque[tuple[str | None, Task]] = deque()
        self._cond = threading.Condition()
        self._running = False
        self._closed = False
        self.max_queued = max_queued
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="status", daemon=True)
        self._thread.start()

    def post(self, task: Task, coalesce: str | None = None) -> None:
        with self._cond:
            if self._closed:
                return
            if coalesce is not None:
                for i, (key, _old) in enumerate(self._queue):
                    if key == coalesce:
                        self._queue[i] = (coalesce, task)
                        return
            if len(self._queue) >= self.max_queued:  # the API server is away for long
                self._queue.popleft()
                self.dropped += 1
            self._queue.append((coalesce, task))
            self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: not self._queue and not self._running, timeout)

    def close(self, timeout: float = 10.0) -> None:
        with self._cond:
            self._closed = True
            self._queue.clear()
            self._cond.notify_all()
        self._thread.join(timeout=timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._closed)
                if self._closed:
                    return
                _key, task = self._queue.popleft()
                self._running = True
            try:
                task()
            except ApiError as exc:  # unreachable or refusing: the next report tries again
                log.warning("status: %s", exc)
            except Exception:  # a bug in a report must not stop later reports
                log.exception("status report failed")
            finally:
                with self._cond:
                    self._running = False
                    self._cond.notify_all()
