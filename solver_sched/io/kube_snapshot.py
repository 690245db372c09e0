"""Kubernetes objects -> ClusterSnapshot, validated at the edge.

Bad objects do not stop the cycle: a node, job or queue that fails validation is kept out of
planning (or marked invalid) with an InputError naming the object and the field; the rest of the
cluster is still planned.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from solver_sched.config.schema import parse_duration
from solver_sched.domain import resources as res
from solver_sched.domain.affinity import NodeConstraints, Requirement, Taint, Toleration
from solver_sched.domain.cluster import (
    DEFAULT_CLUSTER,
    Job,
    Node,
    Pod,
    PodPhase,
    SizePolicy,
    is_power_of_two,
)
from solver_sched.domain.quota import MAX_JOBS, Queue, QuotaTree
from solver_sched.domain.snapshot import ClusterSnapshot, InputError
from solver_sched.io.objects import (
    Container,
    ElasticQuotaTreeObj,
    NodeObj,
    PodGroupObj,
    PodObj,
    PriorityClassObj,
    PyTorchJobObj,
    QuotaNodeModel,
)
from solver_sched.io.quantity import parse_quantity

ANN = "solver-sched.io/"
SP_GROUPS = ("scheduling.x-k8s.io", "scheduling.sigs.k8s.io")
SP_LABEL = "scheduling.x-k8s.io/pod-group"
SP_LABEL_OLD = "pod-group.scheduling.sigs.k8s.io"
VOLCANO_GROUP = "scheduling.volcano.sh"
VOLCANO_ANN = "scheduling.k8s.io/group-name"
K8S_GROUP = "scheduling.k8s.io"
KUBEFLOW_JOB_LABEL = "training.kubeflow.org/job-name"
CLUSTER_LABEL = "solver-sched.io/cluster"
_INDEX_LABELS = (
    "training.kubeflow.org/replica-index",
    "batch.kubernetes.io/job-completion-index",
    "apps.kubernetes.io/pod-index",
    "volcano.sh/task-index",
)


M = TypeVar("M", bound=BaseModel)


@dataclass
class _Build:
    scheduler_name: str
    cooldown: timedelta
    errors: list[InputError] = field(default_factory=list)
    priority_classes: dict[str, int] = field(default_factory=dict)
    default_priority: int = 0

    def error(self, obj: str, fld: str, msg: str) -> str:
        self.errors.append(InputError(obj, fld, msg))
        return f"{obj}: {fld}: {msg}"


def snapshot_from_objects(
    objects: Iterable[dict[str, Any]],
    scheduler_name: str = "solver-sched",
    default_cooldown: timedelta = timedelta(minutes=10),
) -> ClusterSnapshot:
    b = _Build(scheduler_name, default_cooldown)
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for obj in objects:
        by_kind[str(obj.get("kind", ""))].append(obj)
    for raw in by_kind["PriorityClass"]:
        pc = _parse(b, PriorityClassObj, raw)
        if pc:
            b.priority_classes[pc.metadata.name] = pc.value
            if pc.global_default:
                b.default_priority = pc.value
    nodes = {n.name: n for raw in by_kind["Node"] if (n := _node(b, raw)) is not None}
    pods = {p.name: p for raw in by_kind["Pod"] if (p := _pod(b, raw, nodes)) is not None}
    quota = _quota_tree(b, by_kind["ElasticQuotaTree"])
    groups = {}
    for raw in by_kind["PodGroup"]:
        pg = _parse(b, PodGroupObj, raw)
        if pg:
            ns = pg.metadata.namespace or "default"
            groups[(_api_group(pg.api_version), ns, pg.metadata.name)] = pg
    pytorch = {}
    for raw in by_kind["PyTorchJob"]:
        pj = _parse(b, PyTorchJobObj, raw)
        if pj:
            pytorch[(pj.metadata.namespace or "default", pj.metadata.name)] = pj
    jobs = _jobs(b, pods, groups, pytorch)
    job_of = {p: name for name, job in jobs.items() for p in job.pods}
    pods = {
        n: replace(p, job=job_of[n]) if job_of.get(n, p.job) != p.job else p
        for n, p in pods.items()
    }
    return ClusterSnapshot(
        nodes=nodes,
        pods=pods,
        jobs=jobs,
        quota=quota,
        scheduler_name=scheduler_name,
        errors=tuple(b.errors),
    )


def _parse(b: _Build, model: type[M], raw: dict[str, Any]) -> M | None:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        meta = raw.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        name = "/".join(str(x) for x in (meta.get("namespace"), meta.get("name")) if x)
        for err in exc.errors()[:3]:
            loc = ".".join(str(p) for p in err["loc"])
            b.error(f"{raw.get('kind', 'object')} {name or '(unnamed)'}", loc, err["msg"])
        return None


def _api_group(api_version: str) -> str:
    return api_version.split("/")[0] if "/" in api_version else ""


def _resources(b: _Build, obj: str, fld: str, values: dict[str, Any]) -> dict[str, int] | str:
    out = {}
    for name, value in values.items():
        try:
            out[name] = parse_quantity(value, name)
        except ValueError as exc:
            return b.error(obj, f"{fld}.{name}", str(exc))
    return out


# -- nodes -----------------------------------------------------------------------------------


def _node(b: _Build, raw: dict[str, Any]) -> Node | None:
    n = _parse(b, NodeObj, raw)
    if n is None:
        return None
    obj = f"Node {n.metadata.name}"
    source = "status.allocatable" if n.status.allocatable else "status.capacity"
    alloc = _resources(b, obj, source, n.status.allocatable or n.status.capacity)
    invalid = alloc if isinstance(alloc, str) else None
    taints = tuple(Taint(t.key, t.value, t.effect) for t in n.spec.taints)
    return Node(
        name=n.metadata.name,
        allocatable=alloc if isinstance(alloc, dict) else {},
        labels=dict(n.metadata.labels),
        taints=taints,
        unschedulable=n.spec.unschedulable,
        cluster=n.metadata.labels.get(CLUSTER_LABEL, "default"),
        invalid=invalid,
    )


# -- pods ------------------------------------------------------------------------------------


def _container_requests(b: _Build, obj: str, fld: str, c: Container) -> dict[str, int] | str:
    limits = _resources(b, obj, f"{fld}.limits", c.resources.limits)
    requests = _resources(b, obj, f"{fld}.requests", c.resources.requests)
    if isinstance(limits, str):
        return limits
    if isinstance(requests, str):
        return requests
    return {**limits, **requests}  # a request defaults to its limit


def _pod_requests(b: _Build, obj: str, p: PodObj) -> dict[str, int] | str:
    """Sum of containers; init containers as the kubelet accounts them (sidecars run alongside)."""
    main: dict[str, int] = {}
    for i, c in enumerate(p.spec.containers):
        r = _container_requests(b, obj, f"spec.containers[{i}].resources", c)
        if isinstance(r, str):
            return r
        main = res.add(main, r)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, c in enumerate(p.spec.init_containers):
        r = _container_requests(b, obj, f"spec.initContainers[{i}].resources", c)
        if isinstance(r, str):
            return r
        if c.restart_policy == "Always":
            sidecars = res.add(sidecars, r)
            during = sidecars
        else:
            during = res.add(sidecars, r)
        init_peak = {k: max(init_peak.get(k, 0), during.get(k, 0)) for k in {*init_peak, *during}}
    total = res.add(main, sidecars)
    total = {k: max(total.get(k, 0), init_peak.get(k, 0)) for k in {*total, *init_peak}}
    overhead = _resources(b, obj, "spec.overhead", p.spec.overhead)
    if isinstance(overhead, str):
        return overhead
    total = res.add(total, overhead)
    total[res.PODS] = 1
    return {k: v for k, v in total.items() if v}


def _constraints(p: PodObj) -> NodeConstraints:
    terms: list[tuple[Requirement, ...]] = []
    aff = p.spec.affinity
    if aff and aff.node_affinity and aff.node_affinity.required:
        for t in aff.node_affinity.required.node_selector_terms:
            reqs = [Requirement(e.key, e.operator, tuple(e.values)) for e in t.match_expressions]
            reqs += [
                Requirement(e.key, e.operator, tuple(e.values), field=True) for e in t.match_fields
            ]
            terms.append(tuple(reqs))
    return NodeConstraints(
        node_selector=tuple(sorted(p.spec.node_selector.items())),
        required_terms=tuple(terms),
        tolerations=tuple(
            Toleration(t.key, t.operator, t.value, t.effect) for t in p.spec.tolerations
        ),
    )


def _order(p: PodObj) -> tuple[int, int, str]:
    labels = p.metadata.labels
    rank = (
        0
        if labels.get("training.kubeflow.org/replica-type", "").lower()
        in ("", "master", "launcher")
        else 1
    )
    for key in _INDEX_LABELS:
        if labels.get(key, "").isdigit():
            return rank, int(labels[key]), p.metadata.name
    m = re.search(r"(\d+)$", p.metadata.name)
    return rank, int(m.group(1)) if m else 0, p.metadata.name


def _pod(b: _Build, raw: dict[str, Any], nodes: dict[str, Node]) -> Pod | None:
    p = _parse(b, PodObj, raw)
    if p is None:
        return None
    ns = p.metadata.namespace or "default"
    name = f"{ns}/{p.metadata.name}"
    requests = _pod_requests(b, f"Pod {name}", p)
    try:
        phase = PodPhase(p.status.phase)
    except ValueError:
        phase = PodPhase.UNKNOWN
    priority = p.spec.priority
    if priority is None:
        priority = b.priority_classes.get(p.spec.priority_class_name or "", b.default_priority)
    return Pod(
        name=name,
        namespace=ns,
        requests=requests if isinstance(requests, dict) else {res.PODS: 1},
        job=_group_key(p) or name,
        scheduler_name=p.spec.scheduler_name,
        node_name=p.spec.node_name,
        cluster=node.cluster if (node := nodes.get(p.spec.node_name or "")) else DEFAULT_CLUSTER,
        phase=phase,
        priority=priority,
        constraints=_constraints(p),
        order=_order(p),
        created=p.metadata.creation_timestamp,
        invalid=requests if isinstance(requests, str) else None,
        terminating=p.metadata.deletion_timestamp is not None,
        uid=p.metadata.uid,
    )


def _group_key(p: PodObj) -> str | None:
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


# -- jobs ------------------------------------------------------------------------------------


def _jobs(
    b: _Build,
    pods: dict[str, Pod],
    groups: dict[tuple[str, str, str], PodGroupObj],
    pytorch: dict[tuple[str, str], PyTorchJobObj],
) -> dict[str, Job]:
    members: dict[str, list[Pod]] = defaultdict(list)
    succeeded: dict[str, int] = defaultdict(int)
    for pod in pods.values():
        if not pod.terminated and not pod.terminating:
            members[pod.job].append(pod)
        elif pod.phase is PodPhase.SUCCEEDED:
            succeeded[pod.job] += 1
    jobs: dict[str, Job] = {}
    for key, plist in sorted(members.items()):
        if not any(p.scheduler_name == b.scheduler_name for p in plist):
            continue  # another scheduler's gang: its pods only consume capacity
        plist.sort(key=lambda p: p.order)
        job = _job(b, key, plist, groups, pytorch)
        if succeeded.get(key):
            job = replace(job, succeeded=succeeded[key])
        if job.name in jobs:
            job = replace(job, name=f"{job.name}#{key.split(':')[0]}")
        jobs[job.name] = job
    return jobs


def _job(
    b: _Build,
    key: str,
    plist: list[Pod],
    groups: dict[tuple[str, str, str], PodGroupObj],
    pytorch: dict[tuple[str, str], PyTorchJobObj],
) -> Job:
    first = plist[0]
    created = min((p.created for p in plist if p.created), default=None)
    base: dict[str, Any] = dict(
        namespace=first.namespace,
        pods=tuple(p.name for p in plist),
        priority=max(p.priority for p in plist),
        cooldown=b.cooldown,
        created=created,
        cluster=None,
    )
    job = _job_definition(b, key, plist, groups, pytorch, base)
    bad_pod = next((p.invalid for p in plist if p.invalid), None)
    if bad_pod and not job.invalid:
        return replace(job, invalid=bad_pod)
    return job


def _job_definition(
    b: _Build,
    key: str,
    plist: list[Pod],
    groups: dict[tuple[str, str, str], PodGroupObj],
    pytorch: dict[tuple[str, str], PyTorchJobObj],
    base: dict[str, Any],
) -> Job:
    first = plist[0]
    if ":" not in key:
        return Job(name=key, source=f"Pod {key}", **base)
    kind, _, ref = key.partition(":")
    ns, _, group = ref.partition("/")
    name = f"{ns}/{group}"
    if kind == "kubeflow":  # no PodGroup: the PyTorchJob carries the annotations, if there is one
        pj = pytorch.get((ns, group))
        lo, hi, src = _pytorch_range(pj, len(plist))
        invalid = None
        if pj is not None:
            # min counts the non-Worker replicas too: the field is the policy, not minReplicas
            fld = "spec.elasticPolicy" if pj.spec.elastic_policy else "spec.pytorchReplicaSpecs"
            invalid = _no_guaranteed_pod(b, pj, src, lo)
            scaling, invalid = _scaling(b, src, pj.metadata.annotations, lo, fld, invalid)
            base = {**base, **scaling}
        return _finish(
            b, Job(name=name, min_pods=lo, max_pods=hi, source=src, invalid=invalid, **base)
        )
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
    return _from_podgroup(b, kind, pg, name, base, pytorch)


def _pytorch_range(pj: PyTorchJobObj | None, pods: int) -> tuple[int, int, str]:
    if pj is None:
        return pods, pods, "pods with training.kubeflow.org/job-name"
    src = f"PyTorchJob {pj.metadata.namespace}/{pj.metadata.name}"
    others = sum(
        r.replicas for t, r in pj.spec.pytorch_replica_specs.items() if t.lower() != "worker"
    )
    workers = sum(
        r.replicas for t, r in pj.spec.pytorch_replica_specs.items() if t.lower() == "worker"
    )
    ep = pj.spec.elastic_policy
    if ep and ep.min_replicas is not None:
        hi = ep.max_replicas if ep.max_replicas is not None else workers
        return others + ep.min_replicas, others + hi, src
    return others + workers, others + workers, src


def _no_guaranteed_pod(b: _Build, pj: PyTorchJobObj, src: str, lo: int) -> str | None:
    """The error for a PyTorchJob whose min leaves the gang without a pod (workers only with
    minReplicas below 1, or no replicas at all): it is reported, not planned with a min of 0."""
    if lo >= 1:
        return None
    ep = pj.spec.elastic_policy
    if ep is not None and ep.min_replicas is not None:
        return b.error(
            src, "spec.elasticPolicy.minReplicas", f"leaves the gang no pod: {ep.min_replicas}"
        )
    return b.error(src, "spec.pytorchReplicaSpecs", "no replicas: the gang has no pod")


def _from_podgroup(
    b: _Build,
    kind: str,
    pg: PodGroupObj,
    name: str,
    base: dict[str, Any],
    pytorch: dict[tuple[str, str], PyTorchJobObj],
) -> Job:
    obj = f"PodGroup {name}"
    if kind == "k8s":
        gang = (pg.spec.scheduling_policy or {}).get("gang") or {}
        min_member, fld = gang.get("minCount"), "spec.schedulingPolicy.gang.minCount"
    else:
        min_member, fld = pg.spec.min_member, "spec.minMember"
    if not isinstance(min_member, int) or min_member < 1:
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
    if f"{ANN}max-member" not in anns and pj and pj.spec.elastic_policy:
        min_member, max_member, src = _pytorch_range(pj, min_member)
        invalid = _no_guaranteed_pod(b, pj, src, min_member)
        if max_member < min_member and invalid is None:
            invalid = b.error(
                src, "spec.elasticPolicy", f"maxReplicas {max_member} < minReplicas {min_member}"
            )
    if f"{ANN}max-member" in anns:
        text = anns[f"{ANN}max-member"]
        if not text.strip().isdigit():
            invalid = b.error(
                obj, f"metadata.annotations[{ANN}max-member]", f"not an integer: {text!r}"
            )
        else:
            max_member = int(text)
            if max_member < min_member:
                invalid = b.error(
                    obj,
                    f"metadata.annotations[{ANN}max-member]",
                    f"{ANN}max-member {max_member} < {fld} {min_member}",
                )
    scaling, invalid = _scaling(b, obj, anns, min_member, fld, invalid)
    fields = {**base, **scaling}
    if pg.spec.priority_class_name and pg.spec.priority_class_name in b.priority_classes:
        fields["priority"] = b.priority_classes[pg.spec.priority_class_name]
    if pg.metadata.creation_timestamp:
        fields["created"] = pg.metadata.creation_timestamp
    if pg.spec.schedule_timeout_seconds is not None and pg.spec.schedule_timeout_seconds > 0:
        fields["schedule_timeout"] = timedelta(seconds=pg.spec.schedule_timeout_seconds)
    return Job(
        name=name,
        min_pods=min_member,
        max_pods=max_member,
        source=obj,
        invalid=invalid,
        **fields,
    )


def _scaling(
    b: _Build, obj: str, anns: dict[str, str], min_member: int, fld: str, invalid: str | None
) -> tuple[dict[str, Any], str | None]:
    """size_policy, cooldown and last_scale_time from the solver-sched.io annotations of the
    object that defines the job (a PodGroup, or a PyTorchJob that has none), and the first error."""
    policy = SizePolicy.ANY
    text = anns.get(f"{ANN}size-policy", "any")
    try:
        policy = SizePolicy(text)
    except ValueError:
        invalid = invalid or b.error(
            obj,
            f"metadata.annotations[{ANN}size-policy]",
            f"{text!r} is not one of power-of-two, any",
        )
    if policy is SizePolicy.POWER_OF_TWO and not is_power_of_two(min_member) and not invalid:
        invalid = b.error(
            obj, fld, f"{min_member} is not a power of two ({ANN}size-policy: power-of-two)"
        )
    cooldown = b.cooldown
    if f"{ANN}cooldown" in anns:
        try:
            cooldown = parse_duration(anns[f"{ANN}cooldown"])
        except ValueError as exc:
            invalid = invalid or b.error(obj, f"metadata.annotations[{ANN}cooldown]", str(exc))
    last = None
    if f"{ANN}last-scale-time" in anns:
        try:
            last = datetime.fromisoformat(anns[f"{ANN}last-scale-time"].replace("Z", "+00:00"))
            if last.tzinfo is None:
                raise ValueError("no time zone")
        except ValueError:
            invalid = invalid or b.error(
                obj,
                f"metadata.annotations[{ANN}last-scale-time]",
                f"not RFC 3339: {anns[f'{ANN}last-scale-time']!r}",
            )
    return {"size_policy": policy, "cooldown": cooldown, "last_scale_time": last}, invalid


def _finish(b: _Build, job: Job) -> Job:
    if job.max_pods < job.min_pods and job.invalid is None:  # keep the first error
        return replace(
            job,
            invalid=b.error(
                job.source,
                "spec.elasticPolicy",
                f"maxReplicas {job.max_pods} < minReplicas {job.min_pods}",
            ),
        )
    return job


# -- quota tree ------------------------------------------------------------------------------


def _quota_tree(b: _Build, raws: list[dict[str, Any]]) -> QuotaTree:
    trees = [t for raw in raws if (t := _parse(b, ElasticQuotaTreeObj, raw)) is not None]
    if not trees:
        return QuotaTree()
    if len(trees) > 1:
        names = ", ".join(f"{t.metadata.namespace}/{t.metadata.name}" for t in trees)
        b.error("ElasticQuotaTree", "metadata.name", f"several trees ({names}); using the first")
    tree = trees[0]
    obj = f"ElasticQuotaTree {tree.metadata.namespace}/{tree.metadata.name}"
    queues: dict[str, Queue] = {}
    owner: dict[str, str] = {}

    def walk(node: QuotaNodeModel, parent: str | None, path: str) -> None:
        invalid = None
        lo = _resources(b, obj, f"{path}.min", node.min)
        hi = _resources(b, obj, f"{path}.max", node.max)
        if isinstance(lo, str) or isinstance(hi, str):
            invalid = lo if isinstance(lo, str) else str(hi)
            lo, hi = {}, {}
        for r, m in sorted(lo.items()):
            if r in hi and m > hi[r] and invalid is None:
                invalid = b.error(obj, f"{path}.min.{r}", f"{m} > max {hi[r]} (queue {node.name})")
        if node.name in queues:
            invalid = b.error(obj, f"{path}.name", f"duplicate queue name {node.name!r}")
        for ns in node.namespaces:
            if ns in owner:
                b.error(obj, f"{path}.namespaces", f"namespace {ns} already in queue {owner[ns]}")
            else:
                owner[ns] = node.name
        max_jobs = hi.pop(MAX_JOBS, None)
        lo.pop(MAX_JOBS, None)
        queues[node.name] = Queue(
            node.name, parent, tuple(node.namespaces), lo, hi, max_jobs, invalid
        )
        for i, child in enumerate(node.children):
            walk(child, node.name, f"{path}.children[{i}]")

    walk(tree.spec.root, None, "spec.root")
    return QuotaTree(queues)
