"""The hub's side of a fleet: the annotations and labels the fleet keeps on hub jobs and
member copies, and hub PyTorchJobs read with the PropagationPolicy that selects each (Karmada's
choice of policy; the fields the fleet honours, the first invalid one named)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ValidationError

from solver_sched.config.schema import field_path, plain
from solver_sched.domain.snapshot import InputError
from solver_sched.io.context import WHOLE
from solver_sched.io.fleet_objects import (
    DEFAULT_GRACE_SECONDS,
    DEFAULT_TOLERATION_SECONDS,
    POLICY_GROUPS,
    PURGE_MODES,
    HubPyTorchJobObj,
    PropagationPolicyObj,
    ResourceSelectorModel,
)
from solver_sched.io.objects import Meta

ANN = "solver-sched.io/"
# Between a member's name and a pod name in the fleet's view: no Kubernetes name holds it, so a
# hub job named "m1.x" derives no pod that takes the key of x's pods in m1 (with ".", it did)
IN_MEMBER = "~"
ANN_CLUSTER = ANN + "cluster"  # hub job: the member it is placed in
ANN_GENERATION = ANN + "placement-generation"  # hub job: bumped at every new placement
ANN_NODES = ANN + "reserved-nodes"  # hub job: JSON {replica pod suffix: member node}
ANN_FAILED = ANN + "failed-clusters"  # hub job: members it failed over from (comma-separated)
ANN_FAILOVER = ANN + "failover"  # hub job: "withdrawing", "preempted" or "graceful:<m>/<copy>"
ANN_TROUBLE = ANN + "trouble-since"  # hub job: RFC 3339, its placement first seen in trouble
ANN_FAILOVER_SINCE = ANN + "failover-since"  # hub job: RFC 3339, its graceful failover began
ANN_HUB_JOB = ANN + "fleet-job"  # member copy: the hub job, ns/name
LABEL_UID = ANN + "fleet-uid"  # member copy: the hub job's UID
LABEL_GENERATION = ANN + "fleet-generation"  # member copy: its placement generation
REPLICA_TYPE = "training.kubeflow.org/replica-type"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
SP_LABEL = "scheduling.x-k8s.io/pod-group"
KUBEFLOW_API = "kubeflow.org/v1"
WITHDRAWING = "withdrawing"
PREEMPTED = "preempted"  # withdrawn for a higher-priority job: back to the queue, no member avoided
ANN_SIZE_POLICY = ANN + "size-policy"


@dataclass(frozen=True, slots=True)
class Policy:
    name: str  # PropagationPolicy ns/name
    purge_mode: str | None  # None: no application failover
    toleration_seconds: int
    grace_seconds: int
    queued: bool  # suspension.scheduling: through the hub's quota tree
    clusters: tuple[str, ...]  # clusterAffinity.clusterNames (empty: any member)
    exclude: tuple[str, ...]
    invalid: str | None = None


@dataclass(frozen=True, slots=True)
class Placement:
    cluster: str
    generation: int
    nodes: Mapping[str, str]  # replica pod suffix -> member node reserved at dispatch
    withdrawing: bool = False  # Directly/Immediately or preempted: the copy is deleted first
    preempted: bool = False  # withdrawn to make room for a higher-priority job


@dataclass(frozen=True, slots=True)
class HubJob:
    key: str  # ns/name
    namespace: str
    name: str
    uid: str
    raw: Mapping[str, Any]
    policy: Policy | None
    generation: int  # the last placement generation (0: never placed)
    placement: Placement | None
    failed_clusters: tuple[str, ...]
    replicas: tuple[tuple[str, int], ...]  # (replica type, count), master first; as placed
    finished: str = ""  # "Succeeded" or "Failed" once the job is over for good
    invalid: str | None = None
    graceful_from: str = ""  # Gracefully: "member/copy" kept until the new copy runs
    trouble_since: datetime | None = None  # the failover timer, kept in the hub job
    failover_since: datetime | None = None  # when a graceful failover began
    elastic: tuple[int, int] | None = None  # (min, max) pods of an elastic job not placed yet

    @property
    def ref(self) -> dict[str, Any]:
        return {
            "kind": "PyTorchJob",
            "apiVersion": KUBEFLOW_API,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
        }

    def suffixes(self) -> list[str]:
        """Pod name suffixes of its replicas, as the training-operator names them."""
        return [f"{t.lower()}-{i}" for t, n in self.replicas for i in range(n)]

    def result_text(self, cluster: str, replicas: Sequence[tuple[str, int]] = ()) -> str:
        """Karmada's binding result, e.g. ``{m1:0,[{master 1} {worker 2}]}``."""
        parts = " ".join(f"{{{t.lower()} {n}}}" for t, n in replicas or self.replicas)
        return f"{{{cluster}:0,[{parts}]}}"


# -- policies --------------------------------------------------------------------------------


def _parse(model: type[BaseModel], raw: Mapping[str, Any], errors: list[InputError]) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
        assert isinstance(meta, dict)
        name = "/".join(str(x) for x in (meta.get("namespace"), meta.get("name")) if x)
        for err in exc.errors()[:3]:
            loc = field_path(err["loc"])
            errors.append(
                InputError(f"{raw.get('kind')} {name or '(unnamed)'}", loc, plain(err["msg"]))
            )
        return None


def parse_policy(raw: Mapping[str, Any], errors: list[InputError]) -> PropagationPolicyObj | None:
    """The policy; one that fails validation still selects its jobs, if its selectors can be
    read, and holds them (a wider policy must not place what a narrower one was written for)."""
    if str(raw.get("apiVersion", "")).split("/")[0] not in POLICY_GROUPS:
        return None
    seen = len(errors)
    p = _parse(PropagationPolicyObj, raw, errors)
    if p is not None:
        return p  # type: ignore[no-any-return]
    spec = raw.get("spec")
    selectors = spec.get("resourceSelectors") if isinstance(spec, dict) else None
    shell = {"apiVersion": raw.get("apiVersion"), "metadata": raw.get("metadata")}
    try:
        p = PropagationPolicyObj.model_validate(
            {**shell, "spec": {"resourceSelectors": selectors or []}}
        )
    except ValidationError:
        return None
    first = errors[seen] if len(errors) > seen else None
    why = f"{first.field}: {first.message}" if first else "could not be read"
    p._unreadable = why
    return p


def policy_view(p: PropagationPolicyObj, errors: list[InputError]) -> Policy:
    """The fields the fleet honours, with the first invalid one named."""
    obj = f"PropagationPolicy {p.metadata.namespace or 'default'}/{p.metadata.name}"
    invalid: str | None = None

    def bad(fld: str, msg: str) -> None:
        nonlocal invalid
        errors.append(InputError(obj, fld, msg))
        invalid = invalid or f"{obj}: {fld}: {msg}"

    if p.unreadable:  # reported when read: its jobs are held with the reason
        return Policy(
            name=obj,
            purge_mode=None,
            toleration_seconds=DEFAULT_TOLERATION_SECONDS,
            grace_seconds=DEFAULT_GRACE_SECONDS,
            queued=True,
            clusters=(),
            exclude=(),
            invalid=f"{obj}: {p.unreadable}",
        )
    rs = p.spec.placement.replica_scheduling
    base = "spec.placement.replicaScheduling"
    if rs is None:
        bad(base, "missing: the fleet places Divided/Gang jobs only")
    else:
        if rs.replica_scheduling_type != "Divided":
            bad(
                f"{base}.replicaSchedulingType",
                f"{rs.replica_scheduling_type!r} is not supported (only Divided)",
            )
        if rs.custom_scheduling_type != "Gang":
            bad(
                f"{base}.customSchedulingType",
                f"{rs.custom_scheduling_type!r} is not one of Gang",
            )
    purge, toleration, grace = None, DEFAULT_TOLERATION_SECONDS, DEFAULT_GRACE_SECONDS
    app = p.spec.failover.application if p.spec.failover else None
    if app is not None:
        purge = app.purge_mode
        if purge not in PURGE_MODES:
            bad(
                "spec.failover.application.purgeMode",
                f"{purge!r} is not one of {', '.join(PURGE_MODES)}",
            )
        t = app.decision_conditions.toleration_seconds
        if t is not None:
            if t < 0:
                bad(
                    "spec.failover.application.decisionConditions.tolerationSeconds",
                    f"must be >= 0, got {t}",
                )
            toleration = t
        if app.grace_period_seconds is not None:
            grace = app.grace_period_seconds
    aff = p.spec.placement.cluster_affinity
    refused = {
        "spec.placement.clusterAffinities": p.spec.placement.cluster_affinities,
        "spec.placement.clusterAffinity.labelSelector": aff and aff.label_selector,
        "spec.placement.clusterAffinity.fieldSelector": aff and aff.field_selector,
    }
    for fld, value in refused.items():
        if value:  # held, not placed where the policy may not allow it
            bad(fld, "not supported: the fleet places by clusterNames and exclude only")
    return Policy(
        name=obj,
        purge_mode=purge,
        toleration_seconds=toleration,
        grace_seconds=grace,
        queued=bool(p.spec.suspension and p.spec.suspension.scheduling),
        clusters=tuple(aff.cluster_names) if aff else (),
        exclude=tuple(aff.exclude) if aff else (),
        invalid=invalid,
    )


def _selects(
    sel: ResourceSelectorModel, namespace: str, meta_name: str, labels: Mapping[str, str]
) -> int:
    """0: no match; else how specific the match is (name 3, labels 2, kind 1)."""
    if sel.api_version != KUBEFLOW_API or sel.kind != "PyTorchJob":
        return 0
    if sel.namespace and sel.namespace != namespace:
        return 0
    if sel.name:
        return 3 if sel.name == meta_name else 0
    if sel.label_selector is not None:
        return 2 if sel.label_selector.matches(labels) else 0
    return 1


def _best_policy(
    namespace: str, name: str, labels: Mapping[str, str], policies: list[PropagationPolicyObj]
) -> PropagationPolicyObj | None:
    """Karmada's choice: the most specific selector, then the higher spec.priority, then the
    policy name (alphabetical)."""
    ranked = []
    for p in policies:
        if (p.metadata.namespace or "default") != namespace:
            continue
        selectors = p.spec.resource_selectors
        score = max((_selects(s, namespace, name, labels) for s in selectors), default=0)
        if score:
            ranked.append(((-score, -p.spec.priority, p.metadata.name), p))
    return min(ranked, key=lambda r: r[0])[1] if ranked else None


# -- hub jobs --------------------------------------------------------------------------------


def hub_jobs(
    raws: list[Mapping[str, Any]],
    policies: list[PropagationPolicyObj],
    errors: list[InputError],
) -> dict[str, HubJob]:
    views: dict[str, Policy] = {}
    out: dict[str, HubJob] = {}
    for raw in raws:
        if raw.get("apiVersion") != KUBEFLOW_API:
            continue
        pj: HubPyTorchJobObj | None = _parse(HubPyTorchJobObj, raw, errors)
        if pj is None:
            if (held := _unreadable_job(raw, policies)) is not None:
                out[held.key] = held
            continue
        ns = pj.metadata.namespace or "default"
        chosen = _best_policy(ns, pj.metadata.name, pj.metadata.labels, policies)
        if chosen is None:
            continue  # no policy: the fleet leaves the job alone, as Karmada would
        pkey = f"{chosen.metadata.namespace}/{chosen.metadata.name}"
        if pkey not in views:
            views[pkey] = policy_view(chosen, errors)
        out[f"{ns}/{pj.metadata.name}"] = _hub_job(raw, pj, views[pkey], errors)
    return out


def _unreadable_job(raw: Mapping[str, Any], policies: list[PropagationPolicyObj]) -> HubJob | None:
    """A job that fails validation (reported) but that a policy selects by its metadata: held,
    so its copy stays and keeps its queue's share (without it, the copy's pods were capacity
    only and the job's slot went to another)."""
    try:
        meta = Meta.model_validate(raw.get("metadata"))
    except ValidationError:
        return None
    ns = meta.namespace or "default"
    if not meta.uid or _best_policy(ns, meta.name, meta.labels, policies) is None:
        return None
    key = f"{ns}/{meta.name}"
    return HubJob(
        key=key,
        namespace=ns,
        name=meta.name,
        uid=meta.uid,
        raw=raw,
        policy=None,
        generation=0,
        placement=None,
        failed_clusters=(),
        replicas=(),
        invalid=f"PyTorchJob {key}: could not be read (see its error)",
    )


def _hub_job(
    raw: Mapping[str, Any], pj: HubPyTorchJobObj, policy: Policy, errors: list[InputError]
) -> HubJob:
    ns, name = pj.metadata.namespace or "default", pj.metadata.name
    obj = f"PyTorchJob {ns}/{name}"
    anns = pj.metadata.annotations
    specs = pj.spec.pytorch_replica_specs
    replicas = tuple(
        (t, specs[t].replicas)
        for t in sorted(specs, key=lambda t: (t.lower() not in ("master", "launcher"), t))
    )
    invalid = policy.invalid
    if invalid is None and not any(n > 0 for _, n in replicas):
        invalid = _err(errors, obj, "spec.pytorchReplicaSpecs", "no replicas: nothing to place")
    if invalid is None and any(n < 0 for _, n in replicas):
        invalid = _err(errors, obj, "spec.pytorchReplicaSpecs", "negative replicas")
    for t, n in replicas:  # the operator creates no pod from a template without containers
        if invalid is None and n > 0 and not specs[t].template.spec.get("containers"):
            fld = f"spec.pytorchReplicaSpecs.{t}.template.spec.containers"
            invalid = _err(errors, obj, fld, "missing: no pod to create")
    ep = pj.spec.elastic_policy
    if invalid is None and ep is not None and not any(t.lower() == "worker" for t in specs):
        fld = "spec.pytorchReplicaSpecs.Worker"
        invalid = _err(errors, obj, fld, "missing: elasticPolicy scales the Worker replicas")
    lo, hi = (ep.min_replicas, ep.max_replicas) if ep is not None else (None, None)
    if invalid is None and lo is not None and hi is not None and lo > hi:
        invalid = _err(errors, obj, "spec.elasticPolicy", f"minReplicas {lo} > maxReplicas {hi}")
    generation, placement = 0, None
    text = anns.get(ANN_GENERATION, "0")
    if WHOLE.fullmatch(text):
        generation = int(text)
    elif invalid is None:
        invalid = _err(errors, obj, f"metadata.annotations[{ANN_GENERATION}]", f"{text!r}")
    cluster = anns.get(ANN_CLUSTER, "")
    if cluster:
        try:
            nodes = json.loads(anns.get(ANN_NODES, "{}"))
            if not isinstance(nodes, dict):
                raise ValueError("not a mapping")
        except ValueError as exc:
            nodes = {}
            invalid = invalid or _err(
                errors, obj, f"metadata.annotations[{ANN_NODES}]", f"not JSON: {exc}"
            )
        mode = anns.get(ANN_FAILOVER, "")
        placement = Placement(
            cluster=cluster,
            generation=generation,
            nodes={str(k): str(v) for k, v in nodes.items()},
            withdrawing=mode in (WITHDRAWING, PREEMPTED),
            preempted=mode == PREEMPTED,
        )
        replicas = placed_replicas(replicas, placement.nodes)
    elastic = None
    if placement is None and ep is not None and ep.min_replicas is not None:
        others = sum(n for t, n in replicas if t.lower() != "worker")
        top = ep.max_replicas if ep.max_replicas is not None else dict(replicas).get("Worker", 0)
        elastic = (others + ep.min_replicas, others + top)
        replicas = tuple((t, top if t.lower() == "worker" else n) for t, n in replicas)
    mode = anns.get(ANN_FAILOVER, "")
    failed = tuple(c for c in anns.get(ANN_FAILED, "").split(",") if c)
    since = {k: _time(anns.get(k, ""), obj, k, errors) for k in (ANN_TROUBLE, ANN_FAILOVER_SINCE)}
    return HubJob(
        key=f"{ns}/{name}",
        namespace=ns,
        name=name,
        uid=pj.metadata.uid,
        raw=raw,
        policy=policy,
        generation=generation,
        placement=placement,
        failed_clusters=failed,
        replicas=replicas,
        finished=_finished(raw, policy),
        invalid=invalid,
        graceful_from=mode.removeprefix("graceful:") if mode.startswith("graceful:") else "",
        trouble_since=since[ANN_TROUBLE] if placement is not None else None,
        failover_since=since[ANN_FAILOVER_SINCE],
        elastic=elastic,
    )


def placed_replicas(
    replicas: tuple[tuple[str, int], ...], nodes: Mapping[str, str]
) -> tuple[tuple[str, int], ...]:
    """A placed job has the replicas it was placed with (an elastic job at the size the fleet
    chose): those its reserved nodes name. Without reserved nodes, the spec's."""
    if not nodes:
        return replicas
    counts: dict[str, int] = {}
    for suffix in nodes:
        rtype = suffix.rsplit("-", 1)[0]
        counts[rtype] = counts.get(rtype, 0) + 1
    return tuple((t, counts.get(t.lower(), 0)) for t, _ in replicas if counts.get(t.lower()))


def _time(text: str, obj: str, key: str, errors: list[InputError]) -> datetime | None:
    """An RFC 3339 time the fleet wrote; a bad one is reported and taken as absent (the fleet
    writes it again), so a hand-edited annotation can only restart a timer, never skip it."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        value = None
    if value is None or value.tzinfo is None:
        errors.append(InputError(obj, f"metadata.annotations[{key}]", f"not RFC 3339: {text!r}"))
        return None
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 9999-12-31T20:00:00-05:00: year 10000 in UTC
        errors.append(InputError(obj, f"metadata.annotations[{key}]", f"out of range: {text!r}"))
        return None


def _err(errors: list[InputError], obj: str, fld: str, msg: str) -> str:
    errors.append(InputError(obj, fld, msg))
    return f"{obj}: {fld}: {msg}"


def conditions(raw: Mapping[str, Any]) -> dict[str, str]:
    status = raw.get("status") if isinstance(raw.get("status"), dict) else {}
    assert isinstance(status, dict)
    items = status.get("conditions")
    return {
        str(c.get("type")): str(c.get("status"))
        for c in (items if isinstance(items, list) else [])
        if isinstance(c, dict)
    }


def _finished(raw: Mapping[str, Any], policy: Policy) -> str:
    """Over for good: Succeeded, or Failed where no failover will place it again."""
    conds = conditions(raw)
    if conds.get("Succeeded") == "True":
        return "Succeeded"
    if conds.get("Failed") == "True" and policy.purge_mode in (None, "Never"):
        return "Failed"
    return ""
