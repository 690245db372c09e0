"""Gangs: which pods form a job, and the job's min, max, priority and scaling from the PodGroup
that defines it (scheduler-plugins, Volcano or ``scheduling.k8s.io``), a Kubeflow job, or a
lone pod."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import replace
from datetime import timedelta
from typing import Any

from solver_sched.domain.cluster import Job, Pod, PodPhase
from solver_sched.io.context import TWICE, LoadContext, parse_or_why, raw_key
from solver_sched.io.job_annotations import ANN, job_scaling
from solver_sched.io.kubeflow import (
    KUBEFLOW_JOB_LABEL,
    inverted_range,
    kubeflow_job,
    no_guaranteed_pod,
    pytorch_range,
)
from solver_sched.io.objects import PodGroupObj, PodObj, PyTorchJobObj
from solver_sched.io.topology import gang_request, podgroup_request

SP_GROUPS = ("scheduling.x-k8s.io", "scheduling.sigs.k8s.io")
SP_LABEL = "scheduling.x-k8s.io/pod-group"
SP_LABEL_OLD = "pod-group.scheduling.sigs.k8s.io"
VOLCANO_GROUP = "scheduling.volcano.sh"
VOLCANO_ANN = "scheduling.k8s.io/group-name"
K8S_GROUP = "scheduling.k8s.io"
_DIGITS = re.compile(r"[0-9]{1,9}")  # ASCII and bounded: str.isdigit() takes "²", int() not


def pod_groups(
    b: LoadContext, raws: list[dict[str, Any]]
) -> dict[tuple[str, str, str], PodGroupObj | str]:
    """PodGroups of every API by (API group, namespace, name); one that failed validation as why,
    so the reason its gang is held names the field, not a missing PodGroup."""
    groups: dict[tuple[str, str, str], PodGroupObj | str] = {}
    for raw in raws:
        key = raw_key(raw)
        api = raw.get("apiVersion")
        pg = parse_or_why(b, PodGroupObj, raw)
        if key is not None:
            full = (_api_group(api if isinstance(api, str) else ""), *key)
            if full in groups:
                b.error(f"PodGroup {'/'.join(key)}", "metadata.name", TWICE)
            groups[full] = pg
    return groups


def _api_group(api_version: str) -> str:
    return api_version.split("/")[0] if "/" in api_version else ""


def group_key(p: PodObj) -> str | None:
    """`kind:ns/group` the pod joins, from the three PodGroup APIs or a Kubeflow job label."""
    ns = p.metadata.namespace or "default"
    labels, anns = p.metadata.labels, p.metadata.annotations
    if SP_LABEL in labels:
        return f"sp:{ns}/{labels[SP_LABEL]}"
    if SP_LABEL_OLD in labels:
        return f"sp:{ns}/{labels[SP_LABEL_OLD]}"
    if VOLCANO_ANN in anns:
        return f"volcano:{ns}/{anns[VOLCANO_ANN]}"
    if p.spec.scheduling_group is not None:
        return f"k8s:{ns}/{p.spec.scheduling_group.pod_group_name}"
    if KUBEFLOW_JOB_LABEL in labels:
        return f"kubeflow:{ns}/{labels[KUBEFLOW_JOB_LABEL]}"
    return None


def jobs_from(
    b: LoadContext,
    pods: dict[str, Pod],
    groups: dict[tuple[str, str, str], PodGroupObj | str],
    pytorch: dict[tuple[str, str], PyTorchJobObj | str],
    unread: dict[str, str] | None = None,
) -> dict[str, Job]:
    """``unread``: gang key -> why a member pod could not be read (its gang is held)."""
    members: dict[str, list[Pod]] = defaultdict(list)
    succeeded: dict[str, int] = defaultdict(int)
    for pod in pods.values():
        if not pod.terminated and not pod.terminating:
            members[pod.job].append(pod)
        elif pod.phase is PodPhase.SUCCEEDED:
            succeeded[pod.job] += 1
    for key in [k for k in members if _basic(k, groups)]:
        for pod in members.pop(key):  # standard scheduling: each pod on its own
            members[pod.name].append(pod)
    jobs: dict[str, Job] = {}
    # gangs first: a job is named after its group (``ns/name``), so that its PodGroup is found
    # by that name (status, the cooldown's stamp); a pod of no gang that happens to share the
    # name is the one renamed (``ns/name#pod``; it took the name, and the gang lost its cooldown)
    for key, plist in sorted(members.items(), key=lambda kv: (":" not in kv[0], kv[0])):
        if not any(p.scheduler_name == b.scheduler_name for p in plist):
            continue  # another scheduler's gang: its pods only consume capacity
        plist.sort(key=lambda p: p.order)
        job = _job(b, key, plist, groups, pytorch)
        if unread and key in unread and not job.invalid:
            job = replace(job, invalid=unread[key])
        if succeeded.get(key):
            job = replace(job, succeeded=succeeded[key])
        if job.name in jobs:
            kind = key.split(":")[0] if ":" in key else "pod"
            job = replace(job, name=f"{job.name}#{kind}")
        jobs[job.name] = job
    return jobs


def _basic(key: str, groups: dict[tuple[str, str, str], PodGroupObj | str]) -> bool:
    """A ``scheduling.k8s.io`` PodGroup whose policy is ``basic``, not ``gang``: its pods are
    scheduled one by one, as the default scheduler does."""
    kind, _, ref = key.partition(":")
    if kind != "k8s":
        return False
    ns, _, group = ref.partition("/")
    pg = groups.get((K8S_GROUP, ns, group))
    policy = pg.spec.scheduling_policy if isinstance(pg, PodGroupObj) else None
    return isinstance(policy, dict) and "basic" in policy and "gang" not in policy


def _job(
    b: LoadContext,
    key: str,
    plist: list[Pod],
    groups: dict[tuple[str, str, str], PodGroupObj | str],
    pytorch: dict[tuple[str, str], PyTorchJobObj | str],
) -> Job:
    first = plist[0]
    created = min((p.created for p in plist if p.created), default=None)
    base: dict[str, Any] = dict(
        namespace=first.namespace,
        pods=tuple(p.name for p in plist),
        priority=max(p.priority for p in plist),
        preempts=all(p.preempts for p in plist),
        cooldown=b.cooldown,
        created=created,
        cluster=None,
    )
    job = _job_definition(b, key, plist, groups, pytorch, base)
    bad_pod = next((p.invalid for p in plist if p.invalid), None)
    if bad_pod and not job.invalid:
        return replace(job, invalid=bad_pod)
    if job.topology is None and not job.invalid:  # Kueue's pod-set annotations
        asked = gang_request(b, plist, job.name)
        if isinstance(asked, str):
            return replace(job, invalid=asked)
        if asked is not None:
            return replace(job, topology=asked)
    return job


def _job_definition(
    b: LoadContext,
    key: str,
    plist: list[Pod],
    groups: dict[tuple[str, str, str], PodGroupObj | str],
    pytorch: dict[tuple[str, str], PyTorchJobObj | str],
    base: dict[str, Any],
) -> Job:
    first = plist[0]
    if ":" not in key:
        return Job(name=key, source=f"Pod {key}", **base)
    kind, _, ref = key.partition(":")
    ns, _, group = ref.partition("/")
    name = f"{ns}/{group}"
    if kind == "kubeflow":  # no PodGroup
        pj = pytorch.get((ns, group))
        if isinstance(pj, str):
            return Job(name=name, source=f"PyTorchJob {name}", invalid=pj, **base)
        return kubeflow_job(b, name, pj, len(plist), base)
    api = {"sp": SP_GROUPS, "volcano": (VOLCANO_GROUP,), "k8s": (K8S_GROUP,)}[kind]
    pg = next((groups[(g, ns, group)] for g in api if (g, ns, group) in groups), None)
    if pg is None:
        return Job(
            name=name,
            source=f"pods of PodGroup {name}",
            min_pods=len(plist),
            max_pods=len(plist),
            invalid=b.error(
                f"PodGroup {name}", "metadata.name", f"not found (referenced by pod {first.name})"
            ),
            **base,
        )
    if isinstance(pg, str):
        return Job(name=name, source=f"PodGroup {name}", invalid=pg, **base)
    return _from_podgroup(b, kind, pg, name, base, pytorch)


def _from_podgroup(
    b: LoadContext,
    kind: str,
    pg: PodGroupObj,
    name: str,
    base: dict[str, Any],
    pytorch: dict[tuple[str, str], PyTorchJobObj | str],
) -> Job:
    obj = f"PodGroup {name}"
    if kind == "k8s":
        gang = (pg.spec.scheduling_policy or {}).get("gang") or {}
        if not isinstance(gang, dict):
            return Job(
                name=name,
                source=obj,
                invalid=b.error(obj, "spec.schedulingPolicy.gang", f"not an object: {gang!r}"),
                **base,
            )
        min_member, fld = gang.get("minCount"), "spec.schedulingPolicy.gang.minCount"
    else:
        min_member, fld = pg.spec.min_member, "spec.minMember"
    if isinstance(min_member, bool) or not isinstance(min_member, int) or min_member < 1:
        return Job(
            name=name,
            source=obj,
            invalid=b.error(obj, fld, f"must be an integer >= 1, got {min_member!r}"),
            **base,
        )
    anns = pg.metadata.annotations
    max_member: int = min_member
    pj = pytorch.get((pg.metadata.namespace or "default", pg.metadata.name))
    invalid = None
    if isinstance(pj, str):
        invalid, pj = pj, None
    if f"{ANN}max-member" not in anns and pj and pj.spec.elastic_policy:
        min_member, max_member, src = pytorch_range(pj, min_member)
        invalid = no_guaranteed_pod(b, pj, src, min_member) or inverted_range(b, pj, src)
    if f"{ANN}max-member" in anns:
        text = anns[f"{ANN}max-member"]
        if not _DIGITS.fullmatch(text.strip()):
            invalid = b.error(
                obj,
                f"metadata.annotations[{ANN}max-member]",
                f"not a whole number of at most 9 digits: {text!r}",
            )
        else:
            max_member = int(text)
            if max_member < min_member:
                invalid = b.error(
                    obj,
                    f"metadata.annotations[{ANN}max-member]",
                    f"{ANN}max-member {max_member} < {fld} {min_member}",
                )
    scaling, invalid = job_scaling(b, obj, anns, min_member, fld, invalid)
    fields = {**base, **scaling}
    asked = podgroup_request(b, kind, pg, obj)
    if isinstance(asked, str):
        invalid = invalid or asked
    elif asked is not None:
        fields["topology"] = asked
    wanted = pg.spec.priority_class_name
    if wanted and wanted in b.priority_classes:
        fields["priority"] = b.priority_classes[wanted]
        if wanted in b.never_preempting:
            fields["preempts"] = False
    elif wanted and b.priority_classes:  # (a dump without PriorityClasses: no way to tell)
        b.error(  # reported, not held: as Volcano, the pods' own priority stands
            obj,
            "spec.priorityClassName",
            f"no PriorityClass {wanted!r}: the job has its pods' priority ({base['priority']})",
        )
    if pg.metadata.creation_timestamp:
        fields["created"] = pg.metadata.creation_timestamp
    if pg.spec.schedule_timeout_seconds is not None and pg.spec.schedule_timeout_seconds > 0:
        # an int32 (the API server refuses more), so the sum with a timestamp stays a date
        fields["schedule_timeout"] = timedelta(seconds=pg.spec.schedule_timeout_seconds)
    return Job(
        name=name,
        min_pods=min_member,
        max_pods=max_member,
        source=obj,
        invalid=invalid,
        **fields,
    )
