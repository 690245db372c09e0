"""Assume/forget: what this scheduler has decided or done that the watch has not shown yet.

- A bind is *reserved* when the scheduling cycle hands it to the binder, and *assumed* from the
  moment its POST succeeds until the watch shows the pod bound (or gone). A reservation never
  expires by itself: the binder forgets it when the bind fails or is abandoned.
- An eviction is assumed from the moment it is accepted until the pod disappears.
- A resize's cooldown stamp (the last-scale-time annotation) is assumed from the decision until
  the watch shows the annotation, so the cycles that run while the gang is still binding see the
  cooldown already running.

Planning sees the cluster *with* all of these, so a pod is never bound twice, a victim is never
evicted for a second preemptor and a job is not resized twice within its cooldown; actuation checks
the *real* node room (minus reservations) before it binds into freed space.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

Live = dict[str, tuple[str, str | None]]  # pod key -> (uid, nodeName or None)
RESERVED = float("inf")  # the "when" of a bind that is queued or in flight


@dataclass(frozen=True)
class InFlight:
    """What planning counts as done: binds (pod -> (uid, node)), evictions (pod -> uid) and
    cooldown stamps (the job's source object, e.g. "PodGroup ns/name" -> RFC 3339 time)."""

    binds: dict[str, tuple[str, str]] = field(default_factory=dict)
    evictions: dict[str, str] = field(default_factory=dict)
    stamps: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.binds or self.evictions or self.stamps)


@dataclass
class Assumed:
    """Keyed by pod name, but each entry remembers the pod's UID: a pod recreated under the same
    name (Kubeflow, StatefulSets, Indexed Jobs do that) is a new pod and is never hidden."""

    bind_ttl: float = 60.0  # an unconfirmed bind is forgotten after this (then re-planned)
    evict_ttl: float = 300.0
    stamp_ttl: float = 120.0
    binds: dict[str, tuple[str, str, float]] = field(default_factory=dict)  # pod -> (uid, node, t)
    evictions: dict[str, tuple[str, float]] = field(default_factory=dict)  # pod -> (uid, t)
    stamps: dict[str, tuple[str, float]] = field(default_factory=dict)  # source -> (stamp, t)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reserve(self, pod: str, uid: str, node: str) -> None:
        with self._lock:
            self.binds[pod] = (uid, node, RESERVED)

    def bound(self, pod: str, uid: str, node: str) -> None:
        with self._lock:
            self.binds[pod] = (uid, node, time.monotonic())

    def forget_bind(self, pod: str, uid: str) -> None:
        """The bind failed or was abandoned: plan the pod again."""
        with self._lock:
            held = self.binds.get(pod)
            if held is not None and held[0] == uid:
                del self.binds[pod]

    def evicted(self, pod: str, uid: str) -> None:
        with self._lock:
            self.evictions[pod] = (uid, time.monotonic())

    def stamp(self, source: str, stamp: str) -> None:
        with self._lock:
            self.stamps[source] = (stamp, time.monotonic())

    def forget_stamp(self, source: str, stamp: str) -> None:
        with self._lock:
            held = self.stamps.get(source)
            if held is not None and held[0] == stamp:
                del self.stamps[source]

    def reconcile(self, live: Live, stamps_seen: dict[str, str] | None = None) -> None:
        """Forget what the watch now shows: the pod bound, gone, or replaced by another UID;
        a stamp once the object carries it (``stamps_seen``: source -> annotation value)."""
        now = time.monotonic()
        seen_stamps = stamps_seen or {}
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
            for source, (stamp, when) in list(self.stamps.items()):
                if seen_stamps.get(source) == stamp or now - when > self.stamp_ttl:
                    del self.stamps[source]

    def snapshot(self) -> InFlight:
        with self._lock:
            return InFlight(
                {p: (u, n) for p, (u, n, _) in self.binds.items()},
                {p: u for p, (u, _) in self.evictions.items()},
                {s: v for s, (v, _) in self.stamps.items()},
            )
