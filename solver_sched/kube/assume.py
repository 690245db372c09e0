"""Assume/forget: what this scheduler has done that the watch has not shown yet.

A bind is assumed from the moment its POST succeeds until the watch shows the pod bound (or gone);
an eviction from the moment it is accepted until the pod disappears. Planning sees the cluster
*with* its own in-flight actions, so a pod is never bound twice and a victim is never evicted for a
second preemptor; actuation checks the *real* node room before binding into freed space.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


@dataclass
class Assumed:
    bind_ttl: float = 60.0  # an unconfirmed bind is forgotten after this (then re-planned)
    evict_ttl: float = 300.0
    binds: dict[str, tuple[str, float]] = field(default_factory=dict)  # pod -> (node, when)
    evictions: dict[str, float] = field(default_factory=dict)  # pod -> when
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def bound(self, pod: str, node: str) -> None:
        with self._lock:
            self.binds[pod] = (node, time.monotonic())

    def evicted(self, pod: str) -> None:
        with self._lock:
            self.evictions[pod] = time.monotonic()

    def reconcile(self, live: dict[str, str | None]) -> None:
        """Forget what the watch now shows (``live``: pod key -> nodeName, absent = deleted)."""
        now = time.monotonic()
        with self._lock:
            for pod, (_node, when) in list(self.binds.items()):
                if pod not in live or live[pod] is not None or now - when > self.bind_ttl:
                    del self.binds[pod]
            for pod, when in list(self.evictions.items()):
                if pod not in live or now - when > self.evict_ttl:
                    del self.evictions[pod]

    def snapshot(self) -> tuple[dict[str, str], set[str]]:
        with self._lock:
            return {p: n for p, (n, _) in self.binds.items()}, set(self.evictions)
