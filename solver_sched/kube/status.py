"""Tell users why: pod conditions, Events, PodGroup status and the last-scale-time annotation.

Writes only what changed (compared with the cached object, or the last event sent), so a steady
cluster costs no API calls.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from solver_sched.domain.plan import Plan
from solver_sched.domain.snapshot import ClusterSnapshot, InputError
from solver_sched.kube.api import ApiError, Fenced, KubeApi
from solver_sched.kube.resources import LAST_SCALE, POD_GROUP_APIS, PYTORCH_JOBS, WATCHED
from solver_sched.kube.store import ObjectStore
from solver_sched.planning.explain import beyond_largest_size
from solver_sched.planning.explain import rfc3339 as rfc3339

K8S_GROUP = "scheduling.k8s.io"  # the in-tree gang API: conditions, not phase/running

log = logging.getLogger(__name__)
_API_OF: dict[str, str] = {}  # kind -> the API version its Events name (the first one watched)
for _r in WATCHED:
    _API_OF.setdefault(_r.kind, _r.api_version)
EVENT_REPEAT_SECONDS = 300.0


def waiting_reason(pod: dict[str, Any]) -> str:
    """The message of a pod's PodScheduled=False condition ('' when it has none)."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("message", ""))
    return ""


def _warn(what: str, exc: ApiError) -> None:
    if not isinstance(exc, Fenced):  # fenced: the lease is gone, nothing to report
        log.warning("%s: %s", what, exc)


class StatusWriter:
    """Runs on the Reporter's thread. ``binding(pod)`` tells whether a bind of the pod is
    reserved or in flight: such a pod is never marked unschedulable by a report that is older
    than the decision to bind it."""

    def __init__(
        self,
        api: KubeApi,
        store: ObjectStore,
        component: str,
        may_act: Callable[[], bool],
        binding: Callable[[str], bool] = lambda _pod: False,
        stamp_api: KubeApi | None = None,
    ) -> None:
        self.api, self.store, self.component, self.may_act = api, store, component, may_act
        self.binding = binding
        # the cooldown's stamp is part of a scale-in, not of its report: written with the
        # actuation's budget (the status budget waits behind a busy cluster's conditions)
        self.stamp_api = stamp_api or api
        self._sent: dict[tuple[str, str, str], float] = {}
        self._no_status: set[str] = set()  # PodGroup APIs without a status subresource

    # -- events ------------------------------------------------------------------------------
    def event(self, ref: dict[str, Any], reason: str, message: str, warning: bool = False) -> None:
        """A core/v1 Event on ``ref`` (kind, apiVersion, namespace, name[, uid])."""
        key = (f"{ref.get('kind')}/{ref.get('namespace')}/{ref.get('name')}", reason, message)
        now = time.monotonic()
        if now - self._sent.get(key, -1e9) < EVENT_REPEAT_SECONDS or not self.may_act():
            return
        if len(self._sent) > 10_000:  # forget what may be sent again anyway
            self._sent = {k: t for k, t in self._sent.items() if now - t < EVENT_REPEAT_SECONDS}
        ns = ref.get("namespace") or "default"  # events about cluster-scoped objects
        stamp = rfc3339(datetime.now(UTC))
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{ref.get('name')}.{uuid.uuid4().hex[:12]}", "namespace": ns},
            "involvedObject": ref,
            "reason": reason,
            "message": message[:1024],
            "type": "Warning" if warning else "Normal",
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        try:
            self.api.request("POST", f"/api/v1/namespaces/{ns}/events", body=body)
        except ApiError as exc:
            _warn(f"event {reason} on {key[0]}", exc)
            return
        self._sent[key] = now

    def pod_ref(self, pod: str) -> dict[str, Any]:
        ns, name = pod.split("/", 1)
        obj = self.store.get("Pod.v1", pod) or {}
        uid = (obj.get("metadata") or {}).get("uid")
        return {
            "kind": "Pod",
            "apiVersion": "v1",
            "namespace": ns,
            "name": name,
            **({"uid": uid} if uid else {}),
        }

    def group_ref(self, job: str) -> dict[str, Any] | None:
        """The PodGroup object behind a job, from whichever API defines it."""
        for resource in POD_GROUP_APIS.values():
            obj = self.store.get(resource.key, job)
            if obj is not None:
                meta = obj.get("metadata") or {}
                return {
                    "kind": "PodGroup",
                    "apiVersion": resource.api_version,
                    "namespace": meta.get("namespace"),
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                }
        return None

    @staticmethod
    def _group_path(ref: dict[str, Any]) -> str:
        resource = POD_GROUP_APIS[ref["apiVersion"].split("/")[0]]
        return f"{resource.path(ref['namespace'])}/{ref['name']}"

    def input_errors(self, errors: tuple[InputError, ...]) -> None:
        for err in errors:
            kind, _, ref = err.obj.partition(" ")
            ns, _, name = ref.rpartition("/")
            if not name or kind not in _API_OF:
                continue  # e.g. "ElasticQuotaTree" without a name: logged, no object to point at
            api = _API_OF[kind]
            if kind == "PodGroup":
                group = self.group_ref(ref)
                api = group["apiVersion"] if group else api
            target = {"kind": kind, "apiVersion": api, "name": name}
            if ns:
                target["namespace"] = ns
            self.event(target, "InvalidSpec", f"{err.field}: {err.message}", warning=True)

    # -- pods --------------------------------------------------------------------------------
    def unschedulable(self, pod: str, message: str, now: datetime) -> None:
        """PodScheduled=False/Unschedulable with the plan's reason, when it differs."""
        obj = self.store.get("Pod.v1", pod)
        if obj is None or (obj.get("spec") or {}).get("nodeName") or not self.may_act():
            return
        if self.binding(pod):
            return
        if waiting_reason(obj) == message:
            return
        ns, name = pod.split("/", 1)
        patch = {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": message,
                        "lastTransitionTime": rfc3339(now),
                    }
                ]
            }
        }
        try:
            self.api.request(
                "PATCH",
                f"/api/v1/namespaces/{ns}/pods/{name}/status",
                body=patch,
                content_type="application/strategic-merge-patch+json",
            )
        except ApiError as exc:
            if exc.status != 404:
                _warn(f"pod status {pod}", exc)

    def nominate(self, nominated: dict[str, str]) -> None:
        """``status.nominatedNodeName`` on pods whose binds wait for preempted pods to go, as
        kube-scheduler writes it: the next cycles keep the room for their jobs (the model's
        nomination rule), and `kubectl get pod -o wide` shows where they are headed."""
        for pod, node in sorted(nominated.items()):
            obj = self.store.get("Pod.v1", pod)
            if obj is None or (obj.get("spec") or {}).get("nodeName") or not self.may_act():
                continue
            if (obj.get("status") or {}).get("nominatedNodeName") == node:
                continue
            ns, name = pod.split("/", 1)
            try:
                self.api.request(
                    "PATCH",
                    f"/api/v1/namespaces/{ns}/pods/{name}/status",
                    body={"status": {"nominatedNodeName": node}},
                    content_type="application/strategic-merge-patch+json",
                )
            except ApiError as exc:
                if exc.status != 404:
                    _warn(f"nominate {pod}", exc)

    # -- pod groups --------------------------------------------------------------------------
    def group_status(
        self, job: str, phase: str, running: int, reason: str = "", now: datetime | None = None
    ) -> None:
        """``status.phase``/``running`` for the CRD PodGroups; for the in-tree 1.37 PodGroup
        (``scheduling.k8s.io/v1beta1``) its own condition, ``PodGroupInitiallyScheduled``."""
        ref = self.group_ref(job)
        if ref is None or not self.may_act() or ref["apiVersion"] in self._no_status:
            return
        group = ref["apiVersion"].split("/")[0]
        obj = self.store.get(POD_GROUP_APIS[group].key, job) or {}
        status = obj.get("status") or {}
        if group == K8S_GROUP:
            scheduled = phase == "Running"
            message = f"{running} pods bound" if scheduled else reason
            self.group_condition(
                ref,
                obj,
                "PodGroupInitiallyScheduled",
                scheduled,
                "Scheduled" if scheduled else "Unschedulable",
                message,
                now or datetime.now(UTC),
                terminal=True,
            )
            return
        if status.get("phase") == phase and status.get("running") == running:
            return
        path = self._group_path(ref)
        try:
            self.api.request(
                "PATCH",
                f"{path}/status",
                body={"status": {"phase": phase, "running": running}},
                content_type="application/merge-patch+json",
            )
        except ApiError as exc:
            if exc.status == 404 and ref["apiVersion"].startswith("scheduling.volcano.sh"):
                self._no_status.add(ref["apiVersion"])  # its CRD has no status subresource
            elif exc.status not in (404, 422):
                _warn(f"PodGroup status {job}", exc)

    def group_condition(
        self,
        ref: dict[str, Any],
        obj: dict[str, Any],
        kind: str,
        true: bool,
        reason: str,
        message: str,
        now: datetime,
        terminal: bool = False,
    ) -> None:
        """One ``metav1.Condition`` on an in-tree PodGroup, written when it changed; a
        ``terminal`` condition that is True already (PodGroupInitiallyScheduled) stays so."""
        old: dict[str, Any] = next(
            (c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind),
            {},
        )
        status = "True" if true else "False"
        if terminal and old.get("status") == "True":
            return
        if (
            old.get("status") == status
            and old.get("reason") == reason
            and (old.get("message") == message)
        ):
            return
        changed = old.get("status") != status
        condition = {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message[:1024],
            "lastTransitionTime": rfc3339(now) if changed else old.get("lastTransitionTime"),
            "observedGeneration": (obj.get("metadata") or {}).get("generation"),
        }
        try:
            self.api.request(
                "PATCH",
                f"{self._group_path(ref)}/status",
                body={"status": {"conditions": [condition]}},
                content_type="application/strategic-merge-patch+json",
            )
        except ApiError as exc:
            if exc.status != 404:
                _warn(f"PodGroup condition {ref.get('namespace')}/{ref.get('name')}", exc)

    def last_scale_time(self, job: str, source: str, stamp: str) -> None:
        """Stamp the object the snapshot read the job from (``Job.source``): a PyTorchJob that has
        no PodGroup, else the job's PodGroup. The snapshot reads the stamp back from there."""
        if not self.may_act():
            return
        kind, _, ref = source.partition(" ")
        group = self.group_ref(job)
        if kind == "PyTorchJob":
            ns, name = ref.split("/", 1)
            path = f"{PYTORCH_JOBS.path(ns)}/{name}"
        elif group is not None:
            path = self._group_path(group)
        else:
            log.warning("cooldown of %s: no PodGroup or PyTorchJob to record it on", job)
            return
        patch = {"metadata": {"annotations": {LAST_SCALE: stamp}}}
        try:
            self.stamp_api.request(
                "PATCH", path, body=patch, content_type="application/merge-patch+json"
            )
        except ApiError as exc:
            _warn(f"annotate {job}", exc)

    # -- one cycle's report ------------------------------------------------------------------
    def report(
        self,
        plan: Plan,
        snapshot: ClusterSnapshot,
        bound: set[str],
        evicted: set[str],
        deferred: dict[str, str],
        now: datetime,
    ) -> None:
        shrinking = {ev.job for ev in plan.evictions}
        for row in plan.jobs:
            job = snapshot.jobs.get(row.name)
            if job is None or row.name in shrinking:
                continue
            waiting = [p for p in snapshot.waiting_pods(job) if p.name not in bound]
            reason = deferred.get(row.name) or row.reason
            if waiting and not reason and row.planned:
                reason = beyond_largest_size(row.planned, len(job.pods), row.allowed_sizes)
            elif waiting and reason:
                ref = self.group_ref(row.name)
                if ref is not None and row.planned < row.current + len(waiting):
                    self.event(ref, "Unschedulable", reason, warning=True)
            for p in waiting if reason else ():
                self.unschedulable(p.name, reason, now)
            running = row.current + sum(1 for p in job.pods if p in bound)
            phase = "Running" if running >= row.min_workers and running else "Pending"
            self.group_status(row.name, phase, running, reason, now)
        for ev in plan.evictions:
            done = [p for p in ev.pods if p in evicted]
            if not done:
                continue
            ref = self.group_ref(ev.job)
            reason = "Preempted" if ev.reason.startswith("preempted") else "Resized"
            for pod_name in done:
                self.event(self.pod_ref(pod_name), reason, ev.reason, warning=reason == "Preempted")
            if ref is not None:
                self.event(ref, reason, ev.reason, warning=reason == "Preempted")
                if reason == "Preempted" and ref["apiVersion"].startswith(f"{K8S_GROUP}/"):
                    obj = self.store.get(POD_GROUP_APIS[K8S_GROUP].key, ev.job) or {}
                    self.group_condition(
                        ref, obj, "DisruptionTarget", True, "PreemptionByScheduler", ev.reason, now
                    )
