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

Live = dict[str, tuple[str, str | None]]  # pod key -> (uid, nodeName or None)


@dataclass
class Assumed:
    """Keyed by pod name, but each entry remembers the pod's UID: a pod recreated under the same
    name (Kubeflow, StatefulSets, Indexed Jobs do that) is a new pod and is never hidden."""

    bind_ttl: float = 60.0  # an unconfirmed bind is forgotten after this (then re-planned)
    evict_ttl: float = 300.0
    binds: dict[str, tuple[str, str, float]] = field(default_factory=dict)  # pod -> (uid, node, t)
    evictions: dict[str, tuple[str, float]] = field(default_factory=dict)  # pod -> (uid, t)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def bound(self, pod: str, uid: str, node: str) -> None:
        with self._lock:
            self.binds[pod] = (uid, node, time.monotonic())

    def evicted(self, pod: str, uid: str) -> None:
        with self._lock:
            self.evictions[pod] = (uid, time.monotonic())

    def reconcile(self, live: Live) -> None:
        """Forget what the watch now shows: the pod bound, gone, or replaced by another UID."""
        now = time.monotonic()
        with self._lock:
            for pod, (uid, _node, when) in list(self.binds.items()):
                seen = live.get(pod)
                if (
                    seen is None
                    or seen[0] != uid
                    or seen[1] is not None
                    or now - when > self.bind_ttl
                ):
                    del self.binds[pod]
            for pod, (uid, when) in list(self.evictions.items()):
                seen = live.get(pod)
                if seen is None or seen[0] != uid or now - when > self.evict_ttl:
                    del self.evictions[pod]

    def snapshot(self) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
        """(pod -> (uid, node)) of in-flight binds and (pod -> uid) of in-flight evictions."""
        with self._lock:
            return (
                {p: (u, n) for p, (u, n, _) in self.binds.items()},
                {p: u for p, (u, _) in self.evictions.items()},
            )
