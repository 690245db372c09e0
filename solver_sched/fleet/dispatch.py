"""Writes to the hub and the members: placements, copies, deletions, status and Events.

Every hub write that changes a placement is a merge patch carrying the resourceVersion the cycle
read, so a cycle that planned on an out-of-date view is refused (409) instead of placing a job
twice; the patched object is kept as the fleet's view until the watch shows it. Member copies
have deterministic names, so a create retried after a crash is refused (409) instead of making a
second copy.
"""

from __future__ import annotations

import copy
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from solver_sched.io.fleet_hub import (
    ANN_CLUSTER,
    ANN_FAILED,
    ANN_FAILOVER,
    ANN_FAILOVER_SINCE,
    ANN_GENERATION,
    ANN_HUB_JOB,
    ANN_NODES,
    ANN_TROUBLE,
    KUBEFLOW_API,
    LABEL_GENERATION,
    LABEL_UID,
    HubJob,
)
from solver_sched.io.fleet_members import Copy
from solver_sched.io.fleet_snapshot import copy_name
from solver_sched.io.kubeflow import KUBEFLOW_JOB_LABEL
from solver_sched.kube.api import ApiError, KubeApi
from solver_sched.kube.status import StatusWriter, rfc3339

log = logging.getLogger(__name__)
JsonObj = dict[str, Any]
SCHEDULED = "Scheduled"  # the hub job's condition type for its placement
PATCH = "application/merge-patch+json"
ASSUME_SECONDS = 60.0
PLACEMENT_ANNOTATIONS = (ANN_CLUSTER, ANN_GENERATION, ANN_NODES, ANN_FAILOVER)


def job_path(namespace: str, name: str = "") -> str:
    base = f"/apis/{KUBEFLOW_API}/namespaces/{namespace}/pytorchjobs"
    return f"{base}/{name}" if name else base


class HubView:
    """Hub jobs as this process last wrote them, until the watch shows that write (or 60 s):
    a cycle must never plan on a job as it was before its own dispatch."""

    def __init__(self) -> None:
        self._mine: dict[str, tuple[JsonObj, float]] = {}

    def clear(self) -> None:
        self._mine.clear()

    def remember(self, obj: JsonObj) -> None:
        meta = obj.get("metadata") or {}
        self._mine[f"{meta.get('namespace')}/{meta.get('name')}"] = (obj, time.monotonic())

    def overlay(self, jobs: list[JsonObj]) -> list[JsonObj]:
        now = time.monotonic()
        out = []
        for obj in jobs:
            meta = obj.get("metadata") or {}
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            mine = self._mine.get(key)
            if mine is not None:
                ours, when = mine
                seen = _placement_anns(obj) == _placement_anns(ours)
                if seen or now - when > ASSUME_SECONDS or _uid(obj) != _uid(ours):
                    del self._mine[key]
                else:
                    obj = ours
            out.append(obj)
        return out


def _uid(obj: JsonObj) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))


def _placement_anns(obj: JsonObj) -> tuple[str, ...]:
    anns = (obj.get("metadata") or {}).get("annotations") or {}
    return tuple(
        str(anns.get(k, "")) for k in (*PLACEMENT_ANNOTATIONS, ANN_TROUBLE, ANN_FAILOVER_SINCE)
    )


class HubWriter:
    def __init__(
        self, api: KubeApi, status: StatusWriter, view: HubView, may_act: Callable[[], bool]
    ) -> None:
        self.api, self.status, self.view, self.may_act = api, status, view, may_act

    def annotate(self, job: HubJob, changes: Mapping[str, str | None]) -> bool:
        """Patch the placement annotations (None deletes), guarded by the resourceVersion the
        cycle read. False: refused (the job changed meanwhile) or failed; retried next cycle."""
        if not self.may_act():
            return False
        meta = job.raw.get("metadata") or {}
        body = {
            "metadata": {
                "resourceVersion": meta.get("resourceVersion"),
                "annotations": dict(changes),
            }
        }
        try:
            obj = self.api.request(
                "PATCH", job_path(job.namespace, job.name), body=body, content_type=PATCH
            )
        except ApiError as exc:
            log.info("hub job %s: annotations not written (%s); next cycle", job.key, exc)
            return False
        self.view.remember(obj)
        return True

    def conditions(self, job: HubJob, wanted: list[JsonObj], extra: JsonObj | None) -> None:
        """The hub job's status: its Scheduled condition plus the member copy's, if changed."""
        status = job.raw.get("status") if isinstance(job.raw.get("status"), dict) else {}
        assert isinstance(status, dict)
        old = status.get("conditions") or []
        strip = ("lastTransitionTime", "lastUpdateTime")
        same = [{k: v for k, v in c.items() if k not in strip} for c in old] == [
            {k: v for k, v in c.items() if k not in strip} for c in wanted
        ]
        new_extra = {k: v for k, v in (extra or {}).items() if status.get(k) != v}
        if (same and not new_extra) or not self.may_act():
            return
        stamp = rfc3339(datetime.now(UTC))
        before = {c.get("type"): c for c in old}
        conds = []
        for c in wanted:
            prev = before.get(c["type"])
            keep = prev is not None and prev.get("status") == c["status"]
            t = prev.get("lastTransitionTime", stamp) if keep and prev else stamp
            conds.append({**c, "lastTransitionTime": c.get("lastTransitionTime") or t})
        body = {"status": {"conditions": conds, **(extra or {})}}
        try:
            self.api.request(
                "PATCH",
                job_path(job.namespace, job.name) + "/status",
                body=body,
                content_type=PATCH,
            )
        except ApiError as exc:
            log.info("hub job %s: status not written (%s)", job.key, exc)

    def event(self, job: HubJob, reason: str, message: str, warning: bool = False) -> None:
        self.status.event(job.ref, reason, message, warning)


def copy_body(job: HubJob, generation: int, replicas: Sequence[tuple[str, int]] = ()) -> JsonObj:
    """The hub job as the member gets it: same spec (unsuspended) with the replicas it was
    placed with (an elastic job at the size the fleet chose; its elasticPolicy stays, so the
    member may scale it), a deterministic name, and labels that tie it to the hub job's UID and
    placement generation."""
    spec = copy.deepcopy(dict(job.raw.get("spec") or {}))
    specs = spec.get("pytorchReplicaSpecs")
    if isinstance(specs, dict):
        for rtype, n in replicas or job.replicas:
            if isinstance(specs.get(rtype), dict):
                specs[rtype]["replicas"] = n
    run = spec.get("runPolicy")
    if isinstance(run, dict):
        run.pop("suspend", None)
    meta = job.raw.get("metadata") or {}
    labels = {
        k: v
        for k, v in (meta.get("labels") or {}).items()
        if not str(k).startswith("solver-sched.io/")
    }
    return {
        "apiVersion": KUBEFLOW_API,
        "kind": "PyTorchJob",
        "metadata": {
            "name": copy_name(job, generation),
            "namespace": job.namespace,
            "labels": {**labels, LABEL_UID: job.uid, LABEL_GENERATION: str(generation)},
            "annotations": {ANN_HUB_JOB: job.key},
        },
        "spec": spec,
    }


class MemberWriter:
    """Creates and deletes copies in one member."""

    def __init__(self, api: KubeApi, delete_grace: int | None) -> None:
        self.api, self.delete_grace = api, delete_grace

    def create(self, body: JsonObj) -> str | None:
        """None when the copy exists now (created, or already there); else why it failed:
        ``rejected: ...`` when the member refuses the object, or a transient error."""
        ns = body["metadata"]["namespace"]
        try:
            self.api.request(
                "POST",
                "/api/v1/namespaces",
                body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            )
        except ApiError as exc:
            if exc.status not in (409, 403):
                return f"namespace {ns}: {exc}"
        try:
            self.api.request("POST", job_path(ns), body=body)
        except ApiError as exc:
            if exc.status == 409:
                return None  # created before (a retry after a crash): the same copy
            message = str(exc.body.get("message") or exc.reason)
            if 400 <= exc.status < 500 and exc.status != 429:
                return f"rejected: {message}"
            return f"HTTP {exc.status}: {message}"
        except Exception as exc:  # unreachable member
            return f"unreachable: {exc}"
        return None

    def delete(self, c: Copy) -> bool:
        """Delete the copy, then its pods (a cluster's garbage collector would too; the training
        operator recreates pods of a job that still exists, hence this order)."""
        grace = {"gracePeriodSeconds": self.delete_grace} if self.delete_grace is not None else {}
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": "Background",
            **grace,
        }
        try:
            try:
                self.api.request("DELETE", job_path(c.namespace, c.name), body=options)
            except ApiError as exc:
                if exc.status != 404:
                    raise
            selector = f"{KUBEFLOW_JOB_LABEL}={c.name}"
            self.api.request(
                "DELETE",
                f"/api/v1/namespaces/{c.namespace}/pods",
                query={"labelSelector": selector},
                body={"apiVersion": "v1", "kind": "DeleteOptions", **grace},
            )
            try:
                self.api.request(
                    "DELETE",
                    f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{c.namespace}/podgroups/"
                    f"{c.name}",
                    body=options,
                )
            except ApiError as exc:
                if exc.status not in (404, 403):
                    raise
        except Exception as exc:
            log.warning("member %s: deleting copy %s: %s", c.member, c.name, exc)
            return False
        return True


def reserved(nodes: Mapping[str, str]) -> str:
    return json.dumps(dict(sorted(nodes.items())), separators=(",", ":"))


def failed_text(job: HubJob, member: str) -> str:
    return ",".join(sorted({*job.failed_clusters, member}))


def placement_changes(job: HubJob, cluster: str, nodes: Mapping[str, str]) -> dict[str, str | None]:
    """A new placement: its member, generation and reserved nodes; its failover timer starts
    afresh (a graceful failover's old copy and start time stay until the new copy runs)."""
    return {
        ANN_CLUSTER: cluster,
        ANN_GENERATION: str(job.generation + 1),
        ANN_NODES: reserved(nodes),
        ANN_TROUBLE: None,
    }


def requeue_changes(
    job: HubJob, failed: str | None, keep: str | None, now: datetime | None = None
) -> dict[str, str | None]:
    """Back to the queue: no member, no reservation, no timer; ``failed`` joins the members it
    avoids, ``keep`` is the old copy a graceful failover keeps until the new one runs (its grace
    period counted from ``now``)."""
    out: dict[str, str | None] = {
        ANN_CLUSTER: None,
        ANN_NODES: None,
        ANN_FAILOVER: keep,
        ANN_TROUBLE: None,
        ANN_FAILOVER_SINCE: rfc3339(now or datetime.now(UTC)) if keep else None,
    }
    if failed:
        out[ANN_FAILED] = failed_text(job, failed)
    return out
