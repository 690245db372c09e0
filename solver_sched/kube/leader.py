"""Leader election on a coordination.k8s.io/v1 Lease.

Expiry is judged by *observed* time, as client-go does: a lease whose record has not changed for
lease_duration seconds (by our monotonic clock) may be taken over, whatever the holder's clock says.
``is_leader`` is true only while our last successful renew is younger than renew_deadline, so a
replica that cannot renew stops acting before anyone else may take over: the renewal is timed from
*before* its GET, and others wait lease_duration after they last saw the record change, so every
write checked by ``is_leader`` has at least lease_duration - renew_deadline to reach the server.
Writes need more: ``may_write`` also wants a renewal that started after the API server last could
not be reached. A restarted server listens before it serves, so a write sent into its backlog may be
read long after the check; a renewal answered after the outage proves that it reads requests again.
A lapse is noticed by whichever thread asks first (a renew may hang, a paused process may wake up
long after): it logs "lost leadership" once and calls the ``on_lost`` callbacks, which abandon
in-flight actuation.
"""

from __future__ import annotations

import logging
import math
import socket
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from solver_sched.kube.api import ApiError, KubeApi

log = logging.getLogger(__name__)


def default_identity() -> str:
    """The host name and a random suffix, as client-go makes it: two replicas on one host (no
    $POD_NAME, host networking) must not both read as the holder."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def _micro(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _seconds(value: Any) -> float | None:
    """A record's leaseDurationSeconds, if it is a positive number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return float(value)


class LeaderElector:
    def __init__(
        self,
        api: KubeApi,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        self.api, self.identity = api, identity
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        self.name = name
        self.lease_duration, self.renew_deadline, self.retry = (
            lease_duration,
            renew_deadline,
            retry_period,
        )
        self._renewed_at = -1e18
        self._observed: tuple[str, float] | None = None  # (record, when first seen)
        self._thread: threading.Thread | None = None
        self._leading = False  # what we last told the log and the callbacks
        self._lock = threading.Lock()
        self.leading_since: float | None = None  # monotonic start of the current term
        self.on_lost: list[Callable[[], None]] = []
        self._released = False  # given up on shutdown: not a loss

    def is_leader(self) -> bool:
        now = time.monotonic() - self._renewed_at < self.renew_deadline
        if now != self._leading:
            self._transition(now)
        return now

    def may_write(self) -> bool:
        """Leads, and has renewed since the API server last could not be reached (the module says
        why). Such a gap costs writes at most one retry period and calls no callback."""
        lost = self.api.health.unreachable_at
        return self.is_leader() and (lost is None or self._renewed_at > lost)

    def _transition(self, leading: bool) -> None:
        with self._lock:
            if leading == self._leading:
                return
            self._leading = leading
            self.leading_since = time.monotonic() if leading else None
        if leading:
            log.info("%s acquired leadership of lease %s", self.identity, self.name)
            return
        age = time.monotonic() - self._renewed_at
        if self._released:
            log.info("%s released lease %s", self.identity, self.name)
        else:
            log.warning(
                "%s lost leadership of lease %s (last renewal %s ago)",
                self.identity,
                self.name,
                f"{age:.1f}s" if age < 1e9 else "never",
            )
        for callback in self.on_lost:
            callback()

    def _drop(self) -> None:
        """Somebody else holds a valid lease: stop at once, not at the renew deadline."""
        self._renewed_at = -1e18
        self.is_leader()

    def start(self, stop: threading.Event) -> None:
        self._thread = threading.Thread(target=self._loop, args=(stop,), name="leader", daemon=True)
        self._thread.start()

    def _loop(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.try_acquire_or_renew()
            except Exception as exc:  # network trouble: is_leader lapses on its own
                log.warning("lease %s: %s", self.name, exc)
            self.is_leader()  # logs and calls back on a transition
            stop.wait(self.retry)

    def try_acquire_or_renew(self) -> bool:
        start = time.monotonic()
        stamp = _micro(datetime.now(UTC))
        timeout = self.renew_deadline / 2  # a renewal answered later than this is worthless
        try:
            lease = self.api.request("GET", f"{self.path}/{self.name}", timeout=timeout)
        except ApiError as exc:
            if exc.status != 404:
                raise
            body = self._lease_body(None, stamp, stamp, 0)
            try:
                self.api.request("POST", self.path, body=body, timeout=timeout, limited=False)
            except ApiError as err:
                if err.status == 409:
                    return False
                raise
            self._renewed_at = start
            return True
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        record = f"{holder}|{spec.get('renewTime')}"
        seen = time.monotonic()  # after the GET: a slow read must not age the record early
        if self._observed is None or self._observed[0] != record:
            self._observed = (record, seen)
        # the holder's duration, as client-go judges it: a standby started with a shorter one
        # must not take over while the holder may still write (within its renew deadline)
        duration = _seconds(spec.get("leaseDurationSeconds")) or self.lease_duration
        expired = seen - self._observed[1] > duration
        if holder not in (None, "", self.identity) and not expired:
            self._drop()
            return False
        transitions = int(spec.get("leaseTransitions") or 0) + (holder != self.identity)
        acquire = spec.get("acquireTime") if holder == self.identity else stamp
        body = self._lease_body(lease, acquire or stamp, stamp, transitions)
        try:
            self.api.request(
                "PUT", f"{self.path}/{self.name}", body=body, timeout=timeout, limited=False
            )
        except ApiError as exc:
            if exc.status == 409:  # somebody else renewed or took it first
                self._drop()
                return False
            raise
        self._renewed_at = start
        return True

    def _lease_body(
        self, lease: dict[str, Any] | None, acquire: str, renew: str, transitions: int
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.name}
        if lease is not None:
            meta["resourceVersion"] = lease["metadata"]["resourceVersion"]
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": meta,
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": math.ceil(self.lease_duration),  # never shorter
                "acquireTime": acquire,
                "renewTime": renew,
                "leaseTransitions": transitions,
            },
        }

    def release(self) -> None:
        """Give the lease up on a clean shutdown so a standby takes over at once."""
        if not self.is_leader():
            return
        self._released = True
        self._drop()
        try:
            lease = self.api.get(f"{self.path}/{self.name}")
            if (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = ""
                lease["spec"]["leaseDurationSeconds"] = 1
                self.api.request("PUT", f"{self.path}/{self.name}", body=lease, limited=False)
        except ApiError as exc:
            log.warning("releasing lease: %s", exc)
