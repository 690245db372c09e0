"""Apply a Plan: job-level evictions first, then hand each gang to the binder.

- Evictions go through the policy/v1 Eviction API, with the pod's UID as a precondition. A job's
  eviction goes ahead only when the PodDisruptionBudgets that select its running pods allow all
  of them at once (budgets.py: the API charges them one at a time, a dry run not at all) and a
  dryRun of each pod passes; otherwise nothing of the job is touched and it is retried in a later
  cycle, never reported as done. Pods of the job whose binds are still queued are then taken out
  of the binder instead of being evicted.
- A gang goes to the binder (kube/binder.py) only when every target node has real room now, i.e.
  the victims the plan evicted for it have terminated; otherwise the gang waits. The binder binds
  it asynchronously, highest priority first, while the next cycle is planned.
- Each accepted action is assumed (see assume.py) so the next plan neither re-binds nor re-evicts.
- Every write goes through the fenced API: a replica without the lease sends nothing, even a
  write that was already waiting for a rate-limiter token.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import PodPhase
from solver_sched.domain.plan import BindPod, EvictJob, Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.kube import budgets
from solver_sched.kube.api import ApiError, Fenced, KubeApi
from solver_sched.kube.assume import Assumed
from solver_sched.kube.binder import Binder, GangResult

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    binding: list[str] = field(default_factory=list)  # pods handed to the binder (reserved)
    deferred: dict[str, str] = field(default_factory=dict)  # job -> why it waits
    evicted: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)  # queued binds taken back instead
    evict_blocked: dict[str, str] = field(default_factory=dict)  # job -> reason (PDB...)
    # pod -> node: the binds of the jobs this cycle's evictions make room for (their pods get
    # status.nominatedNodeName)
    nominated: dict[str, str] = field(default_factory=dict)
    fenced: bool = False


OnGang = Callable[[str], Callable[[GangResult], None] | None]  # job -> its done callback


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
        self.binder = Binder(api, assumed, workers, fault)
        self.grace_seconds = grace_seconds
        self.fault = fault  # test hook: called before each write, may raise to simulate a crash
        self._uids: dict[str, str] = {}
        self._healthy: set[str] = set()  # running and Ready: what a PodDisruptionBudget charges
        self._unhealthy: set[str] = set()  # running, not Ready

    def apply(
        self,
        plan: Plan,
        real: ClusterSnapshot,
        on_gang: OnGang = lambda _job: None,
    ) -> Outcome:
        out = Outcome()
        self._uids = {name: p.uid for name, p in real.pods.items()}
        running = [
            (name, p)
            for name, p in real.pods.items()
            if p.phase is PodPhase.RUNNING and not p.terminating
        ]
        self._healthy = {name for name, p in running if p.ready}
        self._unhealthy = {name for name, p in running if not p.ready}
        for ev in plan.evictions:
            if not self.may_act():
                out.fenced = True
                return out
            self._evict_job(ev, out)
            if out.fenced:
                return out
        free = _real_free(real, self.assumed)
        by_job: dict[str, list[BindPod]] = defaultdict(list)
        for b in plan.binds:
            by_job[b.job].append(b)
        freed = {p.node_name for name in out.evicted if (p := real.pods.get(name)) is not None}
        for binds in by_job.values():  # the jobs this cycle's evictions make room for
            if not out.evict_blocked and any(b.node in freed for b in binds):
                out.nominated.update((b.pod, b.node) for b in binds)
        priority = {row.name: row.priority for row in plan.jobs}
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
            self.binder.submit(binds, self._uids, priority.get(job, 0), on_gang(job))
            out.binding.extend(b.pod for b in binds)
        return out

    # -- evictions ---------------------------------------------------------------------------
    def evict_pods(self, job: str, pods: tuple[str, ...], reason: str) -> Outcome:
        """Evict pods outside a plan (rollbacks), after ``apply`` has seen the same snapshot."""
        out = Outcome()
        self._evict_job(EvictJob(job, pods, reason), out)
        return out

    def _evict_job(self, ev: EvictJob, out: Outcome) -> None:
        """All of the job's pods or none: the budgets that select them must allow them all at
        once (kube/budgets.py), and every dry run must pass, before its queued binds are taken
        back and any pod is evicted."""
        refused = budgets.refusal(self.api, ev.pods, self._healthy, self._unhealthy)
        if refused:
            out.evict_blocked[ev.job] = refused
            return
        for pod in ev.pods:  # dry runs: admission and what the budgets above cannot see
            status = self._evict(pod, dry_run=True)
            if status == 0:
                out.fenced = True
                return
            if status == 429:
                out.evict_blocked[ev.job] = f"eviction of {pod} refused (PodDisruptionBudget)"
                return
            if status not in (200, 201, 404):  # e.g. 500: two budgets select the pod
                out.evict_blocked[ev.job] = f"eviction of {pod} refused: HTTP {status}"
                return
        cancelled = self.binder.cancel(ev.job)  # not bound yet: take the binds back instead
        out.cancelled.extend(sorted(cancelled))
        pods = [p for p in ev.pods if p not in cancelled]
        for pod in pods:
            status = self._evict(pod, dry_run=False)
            if status in (200, 201):
                self.assumed.evicted(pod, self._uids.get(pod, ""))
                out.evicted.append(pod)
            elif status == 404:
                out.evicted.append(pod)  # already gone
            elif status == 0:
                out.fenced = True
                return
            else:
                out.evict_blocked[ev.job] = f"eviction of {pod}: HTTP {status}"

    def _evict(self, pod: str, dry_run: bool) -> int:
        """HTTP status of one eviction; 0 when fenced or the server cannot be reached."""
        ns, name = pod.split("/", 1)
        options: dict[str, Any] = {}
        uid = self._uids.get(pod)
        if uid:  # the pod we decided about, not a successor under the same name
            options["preconditions"] = {"uid": uid}
        if self.grace_seconds is not None:
            options["gracePeriodSeconds"] = self.grace_seconds
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": ns},
            **({"deleteOptions": options} if options else {}),
        }
        try:
            if self.fault and not dry_run:
                self.fault(f"evict {pod}")
            self.api.request(
                "POST",
                f"/api/v1/namespaces/{ns}/pods/{name}/eviction",
                query={"dryRun": "All"} if dry_run else None,
                body=body,
            )
        except Fenced:
            return 0
        except ApiError as exc:
            if exc.status == 409 and "recondition" in str(exc.body.get("message", "")):
                return 404  # the UID precondition: the pod was replaced, ours is gone
            if exc.status not in (404, 429):
                log.warning("evict %s: %s", pod, exc)
            return exc.status
        return 201

    def close(self) -> None:
        self.binder.close()


def _real_free(real: ClusterSnapshot, assumed: Assumed) -> dict[str, dict[str, int]]:
    """Free capacity per node right now: terminating pods still count, reserved and in-flight
    binds too."""
    free = {name: dict(f) for name, f in real.free_per_node.items()}
    for pod_name, (_uid, target) in assumed.snapshot().binds.items():
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
