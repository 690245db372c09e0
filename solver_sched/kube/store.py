"""An in-memory cache of watched objects (raw dicts), shared by informers and the controller.

Every change bumps a generation and wakes waiters, which is how a cycle runs soon after relevant
changes (debounced by the controller).
"""

from __future__ import annotations

import threading
from typing import Any

JsonObj = dict[str, Any]


def object_key(obj: JsonObj) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


class ObjectStore:
    def __init__(self) -> None:
        self._objects: dict[str, dict[str, JsonObj]] = {}  # resource key -> object key -> obj
        self._synced: set[str] = set()
        self._cond = threading.Condition()
        self.generation = 0

    def replace(self, resource: str, items: list[JsonObj]) -> None:
        """A fresh list: the resource's whole content."""
        with self._cond:
            self._objects[resource] = {object_key(o): o for o in items}
            self._synced.add(resource)
            self._bump()

    def apply(self, resource: str, event_type: str, obj: JsonObj) -> None:
        with self._cond:
            bucket = self._objects.setdefault(resource, {})
            if event_type == "DELETED":
                bucket.pop(object_key(obj), None)
            else:
                bucket[object_key(obj)] = obj
            self._bump()

    def forget(self, resource: str) -> None:
        """The API went away (CRD deleted): drop its objects."""
        with self._cond:
            self._objects.pop(resource, None)
            self._synced.discard(resource)
            self._bump()

    def _bump(self) -> None:
        self.generation += 1
        self._cond.notify_all()

    def wait_for_change(self, since: int, timeout: float) -> int:
        with self._cond:
            self._cond.wait_for(lambda: self.generation != since, timeout=timeout)
            return self.generation

    def synced(self, resources: list[str]) -> bool:
        with self._cond:
            return all(r in self._synced for r in resources)

    def get(self, resource: str, key: str) -> JsonObj | None:
        """One cached object (a shared reference, like items(): callers must not mutate it)."""
        with self._cond:
            return self._objects.get(resource, {}).get(key)

    def items(self, resource: str) -> list[JsonObj]:
        with self._cond:
            return list(self._objects.get(resource, {}).values())

    def all_objects(self) -> list[JsonObj]:
        """Every cached object (shared references: callers must not mutate them)."""
        with self._cond:
            return [o for bucket in self._objects.values() for o in bucket.values()]
