"""Apply a Plan: job-level evictions first, then binds gang by gang.

- Evictions go through the policy/v1 Eviction API. A job's pods are first evicted with dryRun so a
  PodDisruptionBudget that refuses one of them (429) stops the whole job-level eviction; it is
  retried in a later cycle, never reported as done.
- A gang's binds go out together (bounded pool, token-bucket QPS) only when every target node has
  real room now, i.e. the victims the plan evicted for it have terminated; otherwise the gang waits.
- Each accepted action is assumed (see assume.py) so the next plan neither re-binds nor re-evicts.
- Before each job's evictions and each gang's binds, ``may_act`` is checked (leader fencing): a
  replica without the lease stops at once.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from solver_sched.domain import resources as res
from solver_sched.domain.plan import BindPod, EvictJob, Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.kube.api import ApiError, KubeApi
from solver_sched.kube.assume import Assumed

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    bound: list[str] = field(default_factory=list)
    bind_failed: dict[str, str] = field(default_factory=dict)  # pod -> reason
    deferred: dict[str, str] = field(default_factory=dict)  # job -> why it waits
    evicted: list[str] = field(default_factory=list)
    evict_blocked: dict[str, str] = field(default_factory=dict)  # job -> reason (PDB...)
    fenced: bool = False


class Actuator:
    def __init__(
        self,
        api: KubeApi,
        assumed: Assumed,
        may_act: Callable[[], bool],
        workers: int = 16,
        grace_seconds: int | None = None,
        fault: Callable[[str], None] | None = None,
    ) -> None:
        self.api, self.assumed, self.may_act = api, assumed, may_act
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bind")
        self.grace_seconds = grace_seconds
        self.fault = fault  # test hook: called before each write, may raise to simulate a crash
        self._uids: dict[str, str] = {}

    def apply(self, plan: Plan, real: ClusterSnapshot) -> Outcome:
        out = Outcome()
        self._uids = {name: p.uid for name, p in real.pods.items()}
        for ev in plan.evictions:
            if not self.may_act():
                out.fenced = True
                return out
            self._evict_job(ev, out)
        free = _real_free(real, self.assumed)
        by_job: dict[str, list[BindPod]] = defaultdict(list)
        for b in plan.binds:
            by_job[b.job].append(b)
        for job, binds in by_job.items():
            if not self.may_act():
                out.fenced = True
                return out
            if any(b.pod not in real.pods for b in binds):
                out.deferred[job] = "a pod of the gang is gone"
                continue
            short = _lacks_room(real, free, binds)
            if short:
                why = (
                    "evictions it needs are refused (PodDisruptionBudget)"
                    if out.evict_blocked
                    else "preempted pods terminating"
                )
                out.deferred[job] = f"waiting for room on {short} ({why})"
                continue
            for b in binds:  # reserve now, so the next gang sees the room taken
                free[b.node] = res.sub(free[b.node], real.pods[b.pod].requests)
            self._bind_gang(binds, out)
        return out

    # -- evictions ---------------------------------------------------------------------------
    def evict_pods(self, job: str, pods: tuple[str, ...], reason: str) -> Outcome:
        """Evict pods outside a plan (rollbacks), after ``apply`` has seen the same snapshot."""
        out = Outcome()
        self._evict_job(EvictJob(job, pods, reason), out)
        return out

    def _evict_job(self, ev: EvictJob, out: Outcome) -> None:
        for pod in ev.pods:  # dry run first: a PDB refusing any pod keeps the whole job
            status = self._evict(pod, dry_run=True)
            if status == 0:
                out.fenced = True
                return
            if status == 429:
                out.evict_blocked[ev.job] = f"eviction of {pod} refused (PodDisruptionBudget)"
                return
        for pod in ev.pods:
            status = self._evict(pod, dry_run=False)
            if status in (200, 201):
                self.assumed.evicted(pod, self._uids.get(pod, ""))
                out.evicted.append(pod)
            elif status == 404:
                out.evicted.append(pod)  # already gone
            else:
                out.evict_blocked[ev.job] = f"eviction of {pod}: HTTP {status}"

    def _evict(self, pod: str, dry_run: bool) -> int:
        if not self.may_act():  # fenced between two writes of one job
            return 0
        ns, name = pod.split("/", 1)
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": ns},
        }
        if self.grace_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": self.grace_seconds}
        if self.fault and not dry_run:
            self.fault(f"evict {pod}")
        try:
            self.api.request(
                "POST",
                f"/api/v1/namespaces/{ns}/pods/{name}/eviction",
                query={"dryRun": "All"} if dry_run else None,
                body=body,
            )
        except ApiError as exc:
            if exc.status not in (404, 429):
                log.warning("evict %s: %s", pod, exc)
            return exc.status
        return 201

    # -- binds -------------------------------------------------------------------------------
    def _bind_gang(self, binds: list[BindPod], out: Outcome) -> None:
        results = list(self.pool.map(self._bind, binds))
        for b, (ok, why) in zip(binds, results, strict=True):
            if ok:
                out.bound.append(b.pod)
            else:
                out.bind_failed[b.pod] = why

    def _bind(self, b: BindPod) -> tuple[bool, str]:
        if not self.may_act():  # fenced between two binds of one gang
            return False, "fenced"
        ns, name = b.pod.split("/", 1)
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": ns},
            "target": {"apiVersion": "v1", "kind": "Node", "name": b.node},
        }
        try:
            if self.fault:
                self.fault(f"bind {b.pod}")
            self.api.request("POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", body=body)
        except ApiError as exc:
            if exc.status == 409:  # already bound (by us before a restart, or by someone else)
                return False, "already bound"
            return False, f"HTTP {exc.status}: {exc.reason}"
        except Exception as exc:  # connection errors: retried by a later cycle
            return False, str(exc)
        self.assumed.bound(b.pod, self._uids.get(b.pod, ""), b.node)
        return True, ""

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


def _real_free(real: ClusterSnapshot, assumed: Assumed) -> dict[str, dict[str, int]]:
    """Free capacity per node right now: terminating pods still count, in-flight binds too."""
    binds, _ = assumed.snapshot()
    free = {name: dict(f) for name, f in real.free_per_node.items()}
    for pod_name, (_uid, target) in binds.items():
        p = real.pods.get(pod_name)
        if p is not None and p.node_name is None and target in free:
            free[target] = res.sub(free[target], p.requests)
    return free


def _lacks_room(
    real: ClusterSnapshot, free: dict[str, dict[str, int]], binds: list[BindPod]
) -> str | None:
    need: dict[str, dict[str, int]] = defaultdict(dict)
    for b in binds:
        need[b.node] = res.add(need[b.node], real.pods[b.pod].requests)
    for node, req in sorted(need.items()):
        if node not in free or not res.fits(req, free[node]):
            return node
    return None
