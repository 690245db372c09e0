"""List + watch one resource into the store: resourceVersion tracked (bookmarks too), a 410 Gone or
any broken stream leads to a fresh list, errors back off."""

from __future__ import annotations

import logging
import threading
import time

from solver_sched.kube.api import ApiError, KubeApi
from solver_sched.kube.resources import Resource
from solver_sched.kube.store import ObjectStore

log = logging.getLogger(__name__)


class Informer:
    def __init__(
        self,
        api: KubeApi,
        resource: Resource,
        store: ObjectStore,
        stop: threading.Event,
        namespace: str | None = None,
        field_selector: str | None = None,
        watch_timeout: int = 300,
    ) -> None:
        self.api, self.resource, self.store, self.stop = api, resource, store, stop
        self.namespace, self.field_selector = namespace, field_selector
        self.watch_timeout = watch_timeout
        self.relists = 0
        self.thread = threading.Thread(
            target=self._run, name=f"informer-{resource.key}", daemon=True
        )

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        backoff = 0.5
        while not self.stop.is_set():
            try:
                version = self._list()
                backoff = 0.5
                while not self.stop.is_set():  # a normal close resumes without re-listing
                    version = self._watch(version)
            except ApiError as exc:
                if self.stop.is_set():
                    return
                if exc.status == 404 and self.resource.optional:
                    log.info("%s: API not served any more", self.resource.key)
                    self.store.forget(self.resource.key)
                    return
                if exc.status != 410:
                    log.warning("%s: %s; retrying in %.1fs", self.resource.key, exc, backoff)
                    self.stop.wait(backoff)
                    backoff = min(backoff * 2, 30.0)
            except Exception as exc:  # a broken connection must never kill the informer
                if self.stop.is_set():
                    return
                log.warning("%s: watch failed (%s); re-listing", self.resource.key, exc)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 30.0)

    def _list(self) -> str:
        self.relists += 1
        body = self.api.get(self.resource.path(self.namespace), fieldSelector=self.field_selector)
        items = body.get("items") or []
        for obj in items:  # list items carry neither kind nor apiVersion
            obj.setdefault("kind", self.resource.kind)
            obj.setdefault("apiVersion", self.resource.api_version)
        self.store.replace(self.resource.key, items)
        return str((body.get("metadata") or {}).get("resourceVersion", ""))

    def _watch(self, version: str) -> str:
        query = {
            "resourceVersion": version,
            "allowWatchBookmarks": True,
            "timeoutSeconds": self.watch_timeout,
            "fieldSelector": self.field_selector,
        }
        started = time.monotonic()
        for event in self.api.watch(
            self.resource.path(self.namespace), query, timeout=self.watch_timeout + 30
        ):
            if self.stop.is_set():
                return version
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                code = obj.get("code")
                raise ApiError(int(code or 500), str(obj.get("reason") or obj.get("message")))
            version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
            if kind == "BOOKMARK":
                continue
            obj.setdefault("kind", self.resource.kind)
            obj.setdefault("apiVersion", self.resource.api_version)
            self.store.apply(self.resource.key, str(kind), obj)
        if time.monotonic() - started < 1:
            self.stop.wait(1.0)  # a stream that closes at once: do not spin
        return version
