"""A member's side of a fleet: its copies of hub jobs, and its nodes and bound pods in the fleet
view (nodes renamed ``member/node`` and labelled with their member; pods of current copies join
their hub job, the rest only take capacity)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from solver_sched.domain.snapshot import InputError
from solver_sched.io.context import WHOLE
from solver_sched.io.fleet_hub import (
    IN_MEMBER,
    LABEL_GENERATION,
    LABEL_UID,
    REPLICA_INDEX,
    REPLICA_TYPE,
    HubJob,
    conditions,
)
from solver_sched.io.kube_snapshot import Parsed
from solver_sched.io.kubeflow import KUBEFLOW_JOB_LABEL
from solver_sched.io.nodes import CLUSTER_LABEL


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


READ_KINDS = ("Node", "Pod", "PyTorchJob")


def readable(
    m: MemberState, errors: list[InputError], cache: FleetCache
) -> tuple[MemberState, set[str]]:
    """The member's objects the fleet can derive from (a what-if file is not validated by an
    API server), each other one reported; and the nodes whose room is unknown because a pod
    bound there could not be read (no new pods go there). Checked once per object version."""
    kept: list[Mapping[str, Any]] = []
    unknown: set[str] = set()
    for raw in m.objects:
        kind = raw.get("kind") if isinstance(raw, dict) else None
        if isinstance(raw, dict) and kind not in READ_KINDS:
            continue
        why = cache.get(raw, ("shape", m.name, id(raw)), partial(_unreadable, raw))
        if why is None:
            kept.append(raw)
            continue
        meta = raw.get("metadata") if isinstance(raw, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        obj = f"{kind or 'object'} {m.name}/{name if isinstance(name, str) else '(unnamed)'}"
        errors.append(InputError(obj, why[0], why[1]))
        spec = raw.get("spec") if isinstance(raw, dict) else None
        node = spec.get("nodeName") if isinstance(spec, dict) else None
        if kind == "Pod" and isinstance(node, str) and node:
            unknown.add(node)
    return replace(m, objects=kept), unknown


def _unreadable(raw: object) -> tuple[str, str] | None:
    """(field, problem) where the object's shape is not a Kubernetes object's."""
    if not isinstance(raw, dict):
        return ("(object)", f"not an object: {type(raw).__name__}")
    meta = raw.get("metadata")
    if not isinstance(meta, dict):
        return ("metadata", "not an object")
    if not isinstance(meta.get("name"), str) or not meta["name"]:
        return ("metadata.name", "missing")
    for f in ("labels", "annotations"):
        v = meta.get(f)
        if v is not None and not (
            isinstance(v, dict) and all(isinstance(x, str) for x in (*v, *v.values()))
        ):
            return (f"metadata.{f}", "not a map of strings")
    for f in ("spec", "status"):
        if raw.get(f) is not None and not isinstance(raw.get(f), dict):
            return (f, "not an object")
    return None


def member_copies(m: MemberState) -> list[Copy]:
    out = []
    for raw in m.objects:
        if raw.get("kind") != "PyTorchJob":
            continue
        meta = raw.get("metadata") or {}
        labels = meta.get("labels") or {}
        uid = labels.get(LABEL_UID)
        gen = str(labels.get(LABEL_GENERATION, ""))
        if not uid or not WHOLE.fullmatch(gen):
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


def is_current(c: Copy, by_uid: Mapping[str, HubJob]) -> bool:
    job = by_uid.get(c.uid)
    p = job.placement if job else None
    return p is not None and p.cluster == c.member and p.generation == c.generation


def kept(c: Copy, job: HubJob | None) -> bool:
    """A copy that is not current but must stay: the old one of a graceful failover (until the
    new copy runs), and any copy of a hub job the fleet cannot judge (invalid policy or job)."""
    if job is None:
        return False
    return bool(job.invalid) or job.graceful_from == c.key


def member_objects(
    m: MemberState,
    current: Mapping[str, HubJob],
    blocked: bool,
    node_member: dict[str, tuple[str, str]],
    copy_pods: dict[str, dict[str, dict[str, Any]]],
    cache: FleetCache,
    scheduler_name: str,
    unknown: set[str] | None = None,
) -> list[dict[str, Any]]:
    """A member's nodes (renamed ``member/node``, labelled with the member; unschedulable while a
    stale copy is still being removed there, and each of ``unknown``, a node whose room an
    unreadable pod leaves unknown) and its bound pods: those of current copies join
    their hub job (as pods of ``scheduler_name``, whatever bound them in the member), the rest
    only take capacity."""
    out: list[dict[str, Any]] = []
    for raw in m.objects:
        kind = raw.get("kind")
        if kind == "Node":
            name = str((raw.get("metadata") or {}).get("name"))
            node_member[f"{m.name}/{name}"] = (m.name, name)
            shut = blocked or name in (unknown or ())
            out.append(
                cache.get(raw, ("node", m.name, id(raw), shut), partial(_node, m.name, raw, shut))
            )
        elif kind == "Pod":
            spec = raw.get("spec") or {}
            phase = (raw.get("status") or {}).get("phase")
            if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
                continue  # pending pods of a member take nothing; finished ones free it
            labels = (raw.get("metadata") or {}).get("labels") or {}
            owner = current.get(labels.get(KUBEFLOW_JOB_LABEL, ""))
            key = ("pod", m.name, id(raw), owner.key if owner else None, scheduler_name)
            make = partial(_member_pod, m.name, raw, owner, scheduler_name)
            pod, suffix = cache.get(raw, key, make)
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
    member: str, raw: Mapping[str, Any], owner: HubJob | None, scheduler_name: str
) -> tuple[dict[str, Any], str]:
    """The pod in the fleet view, and its replica suffix when it is a copy's (of ``owner``)."""
    meta = raw.get("metadata") or {}
    labels = dict(meta.get("labels") or {})
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{member}{IN_MEMBER}{meta.get('name')}",
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
    pod["spec"]["schedulerName"] = scheduler_name  # a member of the hub's gang
    pod["metadata"]["labels"] = {
        KUBEFLOW_JOB_LABEL: owner.name,
        **{k: v for k, v in labels.items() if k in (REPLICA_TYPE, REPLICA_INDEX)},
    }
    return pod, suffix
