"""The binding cycle: gangs handed over by the scheduling cycle are bound on worker threads, in
priority order, while the scheduling thread already plans the next cycle (kube-scheduler splits
its scheduling and binding cycles the same way).

- Every bind of a submitted gang is *reserved* in ``Assumed`` at once, so the next snapshot holds
  the room. A bind that fails, or is abandoned, forgets its reservation and the pod is planned
  again.
- Binds are taken highest priority first, then in submission order, then in the gang's pod order,
  at the moment a rate-limiter token is available: a high-priority gang decided in a later cycle
  overtakes the queued binds of a lower one.
- Each Binding names the pod's UID, a precondition the API server enforces: a decision about a pod
  is never applied to another pod that took its name.
- Writes go through the fenced ``KubeApi``: once the fence is down (leadership lost, shutdown) no
  bind is sent, and everything still queued is dropped.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from solver_sched.domain.plan import BindPod
from solver_sched.kube.api import ApiError, Fenced, KubeApi
from solver_sched.kube.assume import Assumed

log = logging.getLogger(__name__)
ABANDONED = "abandoned: leadership lost or shutting down"
CANCELLED = "cancelled: the job was re-planned"
FENCED = "fenced"
ALREADY_BOUND = "already bound"  # by us before a restart, or by someone else
REPLACED = "pod replaced (UID precondition)"
# failures no API server refused: dropped here, or explained by the pod's own change
NOT_REFUSED = frozenset({ABANDONED, CANCELLED, FENCED, ALREADY_BOUND, REPLACED})


@dataclass
class GangResult:
    job: str
    bound: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # pod -> why

    @property
    def complete(self) -> bool:
        return not self.failed


@dataclass
class _Gang:
    result: GangResult
    remaining: int
    done: Callable[[GangResult], None] | None


@dataclass(order=True)
class _Item:
    key: tuple[int, int, int]
    bind: BindPod = field(compare=False)
    uid: str = field(compare=False)
    gang: _Gang = field(compare=False)


class Binder:
    def __init__(
        self,
        api: KubeApi,
        assumed: Assumed,
        workers: int = 16,
        fault: Callable[[str], None] | None = None,
    ) -> None:
        self.api, self.assumed, self.fault = api, assumed, fault
        self._heap: list[_Item] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._busy = 0  # binds being sent right now
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"bind-{i}", daemon=True)
            for i in range(workers)
        ]
        for t in self._threads:
            t.start()

    # -- the scheduling thread's side ------------------------------------------------------
    def submit(
        self,
        binds: list[BindPod],
        uids: dict[str, str],
        priority: int,
        done: Callable[[GangResult], None] | None = None,
    ) -> None:
        """Reserve and queue one gang's binds; ``done`` gets the result once each bind is sent
        or dropped."""
        gang = _Gang(GangResult(binds[0].job), len(binds), done)
        seq = next(self._seq)
        with self._cond:
            for i, b in enumerate(binds):
                uid = uids.get(b.pod, "")
                self.assumed.reserve(b.pod, uid, b.node)
                heapq.heappush(self._heap, _Item((-priority, seq, i), b, uid, gang))
            self._cond.notify_all()

    def cancel(self, job: str) -> set[str]:
        """Drop the queued binds of ``job`` (its plan changed): the pods that were dropped."""
        return self._drop(lambda item: item.bind.job == job, CANCELLED)

    def abandon(self) -> int:
        """Drop everything queued (leadership lost): how many binds were dropped."""
        return len(self._drop(lambda _item: True, ABANDONED))

    def queued_jobs(self) -> set[str]:
        with self._cond:
            return {item.bind.job for item in self._heap}

    def wait_idle(self, timeout: float) -> bool:
        """True once nothing is queued or being sent (tests, shutdown)."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._heap and not self._busy, timeout)

    def close(self, timeout: float = 10.0) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self.abandon()
        for t in self._threads:
            t.join(timeout=timeout)

    def _drop(self, which: Callable[[_Item], bool], why: str) -> set[str]:
        with self._cond:
            dropped = [item for item in self._heap if which(item)]
            if not dropped:
                return set()
            self._heap = [item for item in self._heap if not which(item)]
            heapq.heapify(self._heap)
            self._cond.notify_all()
        for item in dropped:
            self._finish(item, False, why)
        return {item.bind.pod for item in dropped}

    # -- the workers -----------------------------------------------------------------------
    def _work(self) -> None:
        limiter, fence = self.api.limiter, self.api.fence
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._heap or self._closed)
                if not self._heap:
                    return  # closed and drained
            # the token first, then the item: whoever gets a token sends the most urgent bind
            if limiter is not None and not limiter.acquire(fence):
                self.abandon()  # the fence went down while we waited
                continue
            with self._cond:
                if not self._heap:
                    continue
                item = heapq.heappop(self._heap)
                self._busy += 1
            try:
                ok, why = self._bind(item.bind, item.uid)
                if why == FENCED:
                    self.abandon()  # the fence is down for every queued bind too
                self._finish(item, ok, why)
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def _bind(self, b: BindPod, uid: str) -> tuple[bool, str]:
        ns, name = b.pod.split("/", 1)
        meta = {"name": name, "namespace": ns, **({"uid": uid} if uid else {})}
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": b.node},
        }
        try:
            if self.fault:
                self.fault(f"bind {b.pod}")
            path = f"/api/v1/namespaces/{ns}/pods/{name}/binding"
            self.api.request("POST", path, body=body, limited=False, fenced=True)
        except Fenced:
            return False, FENCED
        except ApiError as exc:
            if exc.status == 409:
                message = str(exc.body.get("message", ""))
                if "recondition" in message:  # "Precondition failed: UID in precondition..."
                    return False, REPLACED
                if "schedulingGates" in message:  # gated after the snapshot was taken
                    return False, "scheduling gates set"
                return False, ALREADY_BOUND
            return False, str(exc)
        except Exception as exc:  # the test fault hook, or anything unforeseen: re-planned
            return False, str(exc)
        return True, ""

    def _finish(self, item: _Item, ok: bool, why: str) -> None:
        b, gang = item.bind, item.gang
        if ok:
            self.assumed.bound(b.pod, item.uid, b.node)
        else:
            self.assumed.forget_bind(b.pod, item.uid)
        with self._cond:
            if ok:
                gang.result.bound.append(b.pod)
            else:
                gang.result.failed[b.pod] = why
            gang.remaining -= 1
            last = gang.remaining == 0
        if last and gang.done is not None:
            try:
                gang.done(gang.result)
            except Exception:  # a reporting bug must not kill a bind worker
                log.exception("after binding %s", gang.result.job)
