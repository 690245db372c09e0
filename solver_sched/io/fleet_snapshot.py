"""Hub objects + each member's nodes and pods -> one ClusterSnapshot of the whole fleet.

The core already keeps a gang in one cluster (``solver-sched.io/cluster`` on nodes), so a fleet
is planned as one cluster whose nodes are the members' nodes, labelled with their member. Each hub
PyTorchJob that a valid PropagationPolicy selects becomes a gang through the same loader as a
single cluster's objects:

- queued: pending pods derived from its replica templates (requests, nodeSelector, affinity,
  tolerations, priorityClassName), restricted to the members its policy and past failovers allow;
- dispatched: the real pods of its copy in the member, and, for replicas whose pod is not bound
  there yet, the nodes reserved when it was dispatched (so the next cycle does not give that room
  away); in an unreachable member only the reservation counts, for quota.

The hub's quota tree and PriorityClasses apply fleet-wide. Pods of a member that belong to no
current copy only take node capacity. The planner's binds of a queued job name its member.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from pydantic import BaseModel, ValidationError

from solver_sched.domain.quota import IMPLICIT_QUEUE
from solver_sched.domain.snapshot import ClusterSnapshot, InputError
from solver_sched.io.fleet_objects import (
    DEFAULT_GRACE_SECONDS,
    DEFAULT_TOLERATION_SECONDS,
    POLICY_GROUPS,
    PURGE_MODES,
    HubPyTorchJobObj,
    PropagationPolicyObj,
    ResourceSelectorModel,
)
from solver_sched.io.kube_snapshot import Parsed, snapshot_from_objects
from solver_sched.io.kubeflow import KUBEFLOW_JOB_LABEL
from solver_sched.io.nodes import CLUSTER_LABEL

ANN = "solver-sched.io/"
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


@dataclass(frozen=True, slots=True)
class Copy:
    """A hub job's PyTorchJob in a member."""

    member: str
    namespace: str
    name: str
    uid: str  # the hub job's UID
    generation: int
    conditions: Mapping[str, str]  # type -> status
    raw: Mapping[str, Any]

    @property
    def key(self) -> str:
        return f"{self.member}/{self.name}"


@dataclass(frozen=True)
class MemberState:
    """What the fleet sees of one member this cycle (objects from its watch cache)."""

    name: str
    objects: Sequence[Mapping[str, Any]] = ()
    reachable: bool = True


@dataclass(frozen=True)
class FleetSnapshot:
    snapshot: ClusterSnapshot
    jobs: Mapping[str, HubJob]  # every hub PyTorchJob a policy selects, by ns/name
    copies: Mapping[str, tuple[Copy, ...]]  # reachable member -> its copies of hub jobs
    stale: Mapping[str, tuple[Copy, ...]]  # reachable member -> copies to delete
    node_member: Mapping[str, tuple[str, str]]  # fleet node -> (member, node)
    synthetic: Mapping[str, tuple[str, str]]  # queued job's pod key -> (hub job, suffix)
    reachable: tuple[str, ...]
    unreachable: tuple[str, ...]
    errors: tuple[InputError, ...] = ()

    def current_copy(self, job: HubJob) -> Copy | None:
        if job.placement is None:
            return None
        for c in self.copies.get(job.placement.cluster, ()):
            if c.uid == job.uid and c.generation == job.placement.generation:
                return c
        return None


@dataclass
class FleetCache:
    """What one build of the fleet snapshot derived, for the next: the fleet form of each
    member node and pod, each queued job's pods, and their parse, by the identity of the raw
    object they came from (a watch cache keeps an object's dict until it changes, so only new
    or changed objects are derived and parsed again). Each entry keeps its raw dict alive, so
    the identity stays its own; entries a build did not use are dropped after it."""

    parsed: Parsed = field(default_factory=Parsed)
    entries: dict[tuple[Any, ...], tuple[Any, Any]] = field(default_factory=dict)
    used: set[tuple[Any, ...]] = field(default_factory=set)

    def get(self, raw: Any, key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        self.used.add(key)
        hit = self.entries.get(key)
        if hit is not None and hit[0] is raw:
            return hit[1]
        value = make()
        self.entries[key] = (raw, value)
        return value

    def prune(self) -> None:
        self.entries = {k: v for k, v in self.entries.items() if k in self.used}
        self.used = set()
        self.parsed.prune()


def copy_name(job: HubJob, generation: int) -> str:
    """Deterministic: the same hub job and generation always name the same copy, so a retried
    create is refused (409) instead of making a second copy. Short enough for the operator's
    Service names (``<copy>-worker-NN`` within 63 characters)."""
    return f"{job.name[:36].rstrip('-.')}-{job.uid[:8]}-g{generation}"


def build_fleet(
    hub_objects: Iterable[Mapping[str, Any]],
    members: Sequence[MemberState],
    scheduler_name: str = "solver-sched",
    default_cooldown: timedelta = timedelta(minutes=10),
    cache: FleetCache | None = None,
) -> FleetSnapshot:
    """``cache``: what the previous build of mostly the same objects derived (a controller
    keeps one across cycles); a fresh one by default."""
    cache = cache or FleetCache()
    errors: list[InputError] = []
    by_kind: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for obj in hub_objects:
        by_kind[str(obj.get("kind", ""))].append(obj)
    policies = [p for raw in by_kind["PropagationPolicy"] if (p := _policy(raw, errors))]
    jobs = _hub_jobs(by_kind["PyTorchJob"], policies, errors)
    by_uid = {j.uid: j for j in jobs.values()}
    objects: list[dict[str, Any]] = [
        dict(o) for kind in ("PriorityClass", "ElasticQuotaTree") for o in by_kind[kind]
    ]
    copies: dict[str, tuple[Copy, ...]] = {}
    stale: dict[str, tuple[Copy, ...]] = {}
    node_member: dict[str, tuple[str, str]] = {}
    copy_pods: dict[str, dict[str, dict[str, Any]]] = {}  # hub job -> suffix -> bound pod
    reachable = [m for m in members if m.reachable]
    for m in reachable:
        mine = _copies(m)
        copies[m.name] = tuple(mine)
        current = {c.name: by_uid[c.uid] for c in mine if _is_current(c, by_uid)}
        stale[m.name] = tuple(
            c for c in mine if c.name not in current and not _kept(c, by_uid.get(c.uid))
        )
        # pods of a finished job (workers still up after the master succeeded) or of one the
        # fleet cannot judge take capacity only: they are no job of the queue any more
        active = {n: j for n, j in current.items() if not j.finished and not j.invalid}
        objects += _member_objects(m, active, bool(stale[m.name]), node_member, copy_pods, cache)
    synthetic: dict[str, tuple[str, str]] = {}
    for job in jobs.values():
        if job.invalid or job.finished:
            continue
        objects.append(cache.get(job.raw, ("job", job.key), partial(_fleet_pytorchjob, job)))
        real = copy_pods.get(job.key, {})
        if job.placement is None:  # the bulk of a queue: derived once per version of the job
            key = ("pods", job.key, _allowed_key(job), scheduler_name)
            pods, mine = cache.get(job.raw, key, partial(_queued_pods, job, scheduler_name))
            objects += pods
            synthetic.update(mine)
        else:
            objects += _job_pods(job, scheduler_name, real, synthetic)
    snap = snapshot_from_objects(objects, scheduler_name, default_cooldown, cache.parsed)
    cache.prune()
    snap = _finish(snap, jobs, synthetic, errors)
    return FleetSnapshot(
        snapshot=snap,
        jobs=jobs,
        copies=copies,
        stale=stale,
        node_member=node_member,
        synthetic=synthetic,
        reachable=tuple(m.name for m in reachable),
        unreachable=tuple(m.name for m in members if not m.reachable),
        errors=tuple(errors),
    )


# -- policies --------------------------------------------------------------------------------


def _parse(model: type[BaseModel], raw: Mapping[str, Any], errors: list[InputError]) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
        assert isinstance(meta, dict)
        name = "/".join(str(x) for x in (meta.get("namespace"), meta.get("name")) if x)
        for err in exc.errors()[:3]:
            loc = ".".join(str(p) for p in err["loc"])
            errors.append(InputError(f"{raw.get('kind')} {name or '(unnamed)'}", loc, err["msg"]))
        return None


def _policy(raw: Mapping[str, Any], errors: list[InputError]) -> PropagationPolicyObj | None:
    if str(raw.get("apiVersion", "")).split("/")[0] not in POLICY_GROUPS:
        return None
    return _parse(PropagationPolicyObj, raw, errors)  # type: ignore[no-any-return]


def policy_view(p: PropagationPolicyObj, errors: list[InputError]) -> Policy:
    """The fields the fleet honours, with the first invalid one named."""
    obj = f"PropagationPolicy {p.metadata.namespace or 'default'}/{p.metadata.name}"
    invalid: str | None = None

    def bad(fld: str, msg: str) -> None:
        nonlocal invalid
        errors.append(InputError(obj, fld, msg))
        invalid = invalid or f"{obj}: {fld}: {msg}"

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


def _selects(sel: ResourceSelectorModel, meta_name: str, labels: Mapping[str, str]) -> int:
    """0: no match; else how specific the match is (name 3, labels 2, kind 1)."""
    if sel.api_version != KUBEFLOW_API or sel.kind != "PyTorchJob":
        return 0
    if sel.name:
        return 3 if sel.name == meta_name else 0
    if sel.label_selector is not None:
        ok = all(labels.get(k) == v for k, v in sel.label_selector.match_labels.items())
        return 2 if ok else 0
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
        score = max((_selects(s, name, labels) for s in p.spec.resource_selectors), default=0)
        if score:
            ranked.append(((-score, -p.spec.priority, p.metadata.name), p))
    return min(ranked, key=lambda r: r[0])[1] if ranked else None


# -- hub jobs --------------------------------------------------------------------------------


def _hub_jobs(
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
    generation, placement = 0, None
    text = anns.get(ANN_GENERATION, "0")
    if text.isdigit():
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
        replicas = _placed_replicas(replicas, placement.nodes)
    elastic = None
    ep = pj.spec.elastic_policy
    if placement is None and ep is not None and ep.min_replicas is not None:
        others = sum(n for t, n in replicas if t.lower() != "worker")
        top = ep.max_replicas if ep.max_replicas is not None else dict(replicas).get("Worker", 0)
        elastic = (others + ep.min_replicas, others + top)
        replicas = tuple((t, top if t.lower() == "worker" else n) for t, n in replicas)
        if not any(t.lower() == "worker" for t, _ in replicas) and top:
            replicas = (*replicas, ("Worker", top))
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


def _placed_replicas(
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
    return value.astimezone(UTC)


def _err(errors: list[InputError], obj: str, fld: str, msg: str) -> str:
    errors.append(InputError(obj, fld, msg))
    return f"{obj}: {fld}: {msg}"


def conditions(raw: Mapping[str, Any]) -> dict[str, str]:
    status = raw.get("status") if isinstance(raw.get("status"), dict) else {}
    assert isinstance(status, dict)
    return {
        str(c.get("type")): str(c.get("status"))
        for c in status.get("conditions") or []
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


def _fleet_pytorchjob(job: HubJob) -> dict[str, Any]:
    """The job as the loader's gang: rigid at its replicas (placed: as placed), or, elastic and
    not placed yet, from min to max pods at the sizes its ``size-policy`` allows (power-of-two
    unless the hub job says otherwise)."""
    meta = job.raw.get("metadata") or {}
    spec: dict[str, Any] = {"pytorchReplicaSpecs": {t: {"replicas": n} for t, n in job.replicas}}
    anns: dict[str, str] = {}
    if job.elastic is not None:
        lo, hi = job.elastic
        others = sum(n for t, n in job.replicas if t.lower() != "worker")
        spec["elasticPolicy"] = {"minReplicas": lo - others, "maxReplicas": hi - others}
        given = (meta.get("annotations") or {}).get(ANN_SIZE_POLICY)
        anns[ANN_SIZE_POLICY] = str(given or "power-of-two")
    return {
        "apiVersion": KUBEFLOW_API,
        "kind": "PyTorchJob",
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "uid": job.uid,
            "creationTimestamp": meta.get("creationTimestamp"),
            "annotations": anns,
        },
        "spec": spec,
    }


def _allowed_clusters(job: HubJob) -> list[dict[str, Any]]:
    """Node-affinity expressions that keep the job on the members it may use."""
    assert job.policy is not None
    exprs: list[dict[str, Any]] = []
    if job.policy.clusters:
        exprs.append({"key": CLUSTER_LABEL, "operator": "In", "values": list(job.policy.clusters)})
    avoid = sorted({*job.policy.exclude, *job.failed_clusters})
    if avoid:
        exprs.append({"key": CLUSTER_LABEL, "operator": "NotIn", "values": avoid})
    return exprs


def _allowed_key(job: HubJob) -> str:
    return json.dumps(_allowed_clusters(job), sort_keys=True)


def _queued_pods(
    job: HubJob, scheduler_name: str
) -> tuple[list[dict[str, Any]], dict[str, tuple[str, str]]]:
    synthetic: dict[str, tuple[str, str]] = {}
    return _job_pods(job, scheduler_name, {}, synthetic), synthetic


def _job_pods(
    job: HubJob,
    scheduler_name: str,
    real: Mapping[str, dict[str, Any]],
    synthetic: dict[str, tuple[str, str]],
) -> list[dict[str, Any]]:
    """Pods of the job in the fleet view: pending ones while queued; once placed, the copy's
    bound pods and the reserved node for each replica not bound yet."""
    specs = (job.raw.get("spec") or {}).get("pytorchReplicaSpecs") or {}
    meta = job.raw.get("metadata") or {}
    p = job.placement
    out = []
    for rtype, count in job.replicas:
        template = (specs.get(rtype) or {}).get("template") or {}
        for i in range(count):
            suffix = f"{rtype.lower()}-{i}"
            if p is not None and suffix in real:
                out.append(real[suffix])
                continue
            spec = dict(template.get("spec") or {})  # shallow: only top-level keys change
            spec["schedulerName"] = scheduler_name
            spec.pop("nodeName", None)
            spec.pop("priority", None)
            name = f"{job.name}-{suffix}"
            if p is None:
                _add_affinity(spec, _allowed_clusters(job))
                synthetic[f"{job.namespace}/{name}"] = (job.key, suffix)
            else:  # reserved where it was dispatched: counts for quota, and for capacity
                name = f"{p.cluster}.{name}"
                spec["nodeName"] = f"{p.cluster}/{p.nodes.get(suffix, '(unknown)')}"
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": name,
                        "namespace": job.namespace,
                        "uid": f"{job.uid}/{suffix}",
                        "creationTimestamp": meta.get("creationTimestamp"),
                        "labels": {
                            KUBEFLOW_JOB_LABEL: job.name,
                            REPLICA_TYPE: rtype.lower(),
                            REPLICA_INDEX: str(i),
                        },
                    },
                    "spec": spec,
                    "status": {"phase": "Pending"},
                }
            )
    return out


def _add_affinity(spec: dict[str, Any], exprs: list[dict[str, Any]]) -> None:
    """ANDs the expressions into every required nodeSelectorTerm (terms are ORed). The
    template's own objects are copied on the way, never changed."""
    if not exprs:
        return
    aff = dict(spec.get("affinity") or {})
    node_aff = dict(aff.get("nodeAffinity") or {})
    key = "requiredDuringSchedulingIgnoredDuringExecution"
    req = dict(node_aff.get(key) or {})
    terms = req.get("nodeSelectorTerms") or [{}]
    req["nodeSelectorTerms"] = [
        {**t, "matchExpressions": [*(t.get("matchExpressions") or []), *exprs]} for t in terms
    ]
    node_aff[key] = req
    aff["nodeAffinity"] = node_aff
    spec["affinity"] = aff


# -- members ---------------------------------------------------------------------------------


def _copies(m: MemberState) -> list[Copy]:
    out = []
    for raw in m.objects:
        if raw.get("kind") != "PyTorchJob":
            continue
        meta = raw.get("metadata") or {}
        labels = meta.get("labels") or {}
        uid = labels.get(LABEL_UID)
        gen = str(labels.get(LABEL_GENERATION, ""))
        if not uid or not gen.isdigit():
            continue
        out.append(
            Copy(
                member=m.name,
                namespace=str(meta.get("namespace") or "default"),
                name=str(meta.get("name")),
                uid=str(uid),
                generation=int(gen),
                conditions=conditions(raw),
                raw=raw,
            )
        )
    return sorted(out, key=lambda c: c.name)


def _is_current(c: Copy, by_uid: Mapping[str, HubJob]) -> bool:
    job = by_uid.get(c.uid)
    p = job.placement if job else None
    return p is not None and p.cluster == c.member and p.generation == c.generation


def _kept(c: Copy, job: HubJob | None) -> bool:
    """A copy that is not current but must stay: the old one of a graceful failover (until the
    new copy runs), and any copy of a hub job the fleet cannot judge (invalid policy or job)."""
    if job is None:
        return False
    return bool(job.invalid) or job.graceful_from == c.key


def _member_objects(
    m: MemberState,
    current: Mapping[str, HubJob],
    blocked: bool,
    node_member: dict[str, tuple[str, str]],
    copy_pods: dict[str, dict[str, dict[str, Any]]],
    cache: FleetCache,
) -> list[dict[str, Any]]:
    """A member's nodes (renamed ``member/node``, labelled with the member; unschedulable while a
    stale copy is still being removed there) and its bound pods: those of current copies join
    their hub job, the rest only take capacity."""
    out: list[dict[str, Any]] = []
    for raw in m.objects:
        kind = raw.get("kind")
        if kind == "Node":
            name = str((raw.get("metadata") or {}).get("name"))
            node_member[f"{m.name}/{name}"] = (m.name, name)
            out.append(
                cache.get(
                    raw, ("node", m.name, id(raw), blocked), partial(_node, m.name, raw, blocked)
                )
            )
        elif kind == "Pod":
            spec = raw.get("spec") or {}
            phase = (raw.get("status") or {}).get("phase")
            if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
                continue  # pending pods of a member take nothing; finished ones free it
            labels = (raw.get("metadata") or {}).get("labels") or {}
            owner = current.get(labels.get(KUBEFLOW_JOB_LABEL, ""))
            key = ("pod", m.name, id(raw), owner.key if owner else None)
            pod, suffix = cache.get(raw, key, partial(_member_pod, m.name, raw, owner))
            if owner is not None:
                copy_pods.setdefault(owner.key, {})[suffix] = pod
            out.append(pod)
    return out


def _node(member: str, raw: Mapping[str, Any], blocked: bool) -> dict[str, Any]:
    meta = raw.get("metadata") or {}
    spec = dict(raw.get("spec") or {})
    if blocked:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f"{member}/{meta.get('name')}",
            "labels": {**(meta.get("labels") or {}), CLUSTER_LABEL: member},
        },
        "spec": spec,
        "status": raw.get("status") or {},
    }


def _member_pod(
    member: str, raw: Mapping[str, Any], owner: HubJob | None
) -> tuple[dict[str, Any], str]:
    """The pod in the fleet view, and its replica suffix when it is a copy's (of ``owner``)."""
    meta = raw.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{member}.{meta.get('name')}",
            "namespace": meta.get("namespace") or "default",
            "uid": meta.get("uid", ""),
            "creationTimestamp": meta.get("creationTimestamp"),
            "deletionTimestamp": meta.get("deletionTimestamp"),
            "labels": {},
        },
        "spec": dict(raw.get("spec") or {}),  # shallow: only top-level keys change
        "status": {"phase": (raw.get("status") or {}).get("phase", "Pending")},
    }
    pod["spec"]["nodeName"] = f"{member}/{pod['spec']['nodeName']}"
    pod["spec"].pop("schedulingGroup", None)
    if owner is None:  # not the fleet's: capacity only, in a namespace no hub queue lists
        pod["metadata"]["namespace"] = f"{member}.{pod['metadata']['namespace']}"
        pod["spec"]["schedulerName"] = f"member:{member}"
        return pod, ""
    copy_name_ = str(labels.get(KUBEFLOW_JOB_LABEL))
    suffix = str(meta.get("name", ""))[len(copy_name_) + 1 :]
    pod["metadata"]["labels"] = {
        KUBEFLOW_JOB_LABEL: owner.name,
        **{k: v for k, v in labels.items() if k in (REPLICA_TYPE, REPLICA_INDEX)},
    }
    return pod, suffix


# -- the snapshot ----------------------------------------------------------------------------


def _finish(
    snap: ClusterSnapshot,
    jobs: Mapping[str, HubJob],
    synthetic: Mapping[str, tuple[str, str]],
    errors: list[InputError],
) -> ClusterSnapshot:
    """Jobs whose policy does not queue them skip the hub's quota tree; errors about derived
    pods name the hub job's replica template."""
    changed = {}
    for name, job in snap.jobs.items():
        hub = jobs.get(name)
        if hub is not None and hub.policy is not None and not hub.policy.queued:
            changed[name] = replace(job, queue=IMPLICIT_QUEUE)
    remapped = []
    for e in snap.errors:
        key = e.obj.removeprefix("Pod ")
        if e.obj.startswith("Pod ") and key in synthetic:
            hub = jobs[synthetic[key][0]]
            rtype = synthetic[key][1].rsplit("-", 1)[0]
            real = next((t for t, _ in hub.replicas if t.lower() == rtype), rtype)
            fld = f"spec.pytorchReplicaSpecs.{real}.template.{e.field}"
            e = InputError(f"PyTorchJob {hub.key}", fld, e.message)
        if e not in remapped:
            remapped.append(e)
    return replace(
        snap,
        jobs={**snap.jobs, **changed},
        errors=(*errors, *remapped),
    )


# -- reading a plan --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dispatch:
    job: str  # hub job ns/name
    cluster: str
    nodes: Mapping[str, str]  # replica pod suffix -> member node
    replicas: tuple[tuple[str, int], ...] = ()  # (type, count) placed; an elastic job's size


@dataclass
class PlanReading:
    dispatches: dict[str, Dispatch] = field(default_factory=dict)
    withdrawals: dict[str, str] = field(default_factory=dict)  # placed hub job -> why
    blocked: list[str] = field(default_factory=list)  # evictions the fleet cannot carry out
    placements: list[dict[str, Any]] = field(default_factory=list)  # the what-if contract


def read_plan(
    fleet: FleetSnapshot, binds: Iterable[Any], rows: Iterable[Any], evictions: Iterable[Any] = ()
) -> PlanReading:
    """Which member each queued job goes to (all of its pods bound in one member, at the size
    the plan gives it), which placed jobs are withdrawn to make room (the plan's job-level
    evictions), and a placement row per hub job: its member, or null with the reason it stays
    queued."""
    per_job: dict[str, dict[str, str]] = defaultdict(dict)
    clusters: dict[str, set[str]] = defaultdict(set)
    for b in binds:
        if b.pod in fleet.synthetic:
            owner, suffix = fleet.synthetic[b.pod]
            member, node = fleet.node_member[b.node]
            per_job[owner][suffix] = node
            clusters[owner].add(member)
    rows = list(rows)
    reasons = {r.name: r.reason for r in rows}
    planned = {r.name: r.planned for r in rows}
    out = PlanReading()
    for ev in evictions:
        job = fleet.jobs.get(ev.job)
        p = job.placement if job is not None else None
        if job is None or p is None or p.cluster not in fleet.reachable:
            out.blocked.append(ev.job)  # not a copy the fleet can withdraw
        elif not p.withdrawing:  # a job already being withdrawn is going anyway
            out.withdrawals[ev.job] = ev.reason
    for key in sorted(fleet.jobs):
        job = fleet.jobs[key]
        cluster: str | None = None
        reason = ""
        size = planned.get(key, 0)
        if job.invalid:
            reason = job.invalid
        elif job.finished:
            reason = f"finished: {job.finished}"
        elif job.placement is not None:
            cluster = job.placement.cluster
            reason = "dispatched"
            if key in out.withdrawals or job.placement.preempted:
                reason = "withdrawing (preempted)"
            elif job.placement.withdrawing:
                reason = "withdrawing (failover)"
        elif len(clusters.get(key, ())) == 1 and size > 0 and len(per_job[key]) == size:
            cluster = next(iter(clusters[key]))
            placed = _placed_replicas(job.replicas, per_job[key])
            out.dispatches[key] = Dispatch(key, cluster, dict(per_job[key]), placed)
        else:
            reason = reasons.get(key) or "queued"
        out.placements.append({"job": key, "cluster": cluster, "reason": reason})
    return out
