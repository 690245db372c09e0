"""Pod objects -> ``Pod``: requests as the kubelet accounts them, node constraints, priority, keep
order, and the gang the pod joins."""

from __future__ import annotations

import re
from typing import Any

from solver_sched.domain import resources as res
from solver_sched.domain.affinity import NodeConstraints, Requirement, Toleration
from solver_sched.domain.claims import HOSTNAME, host_port_claim
from solver_sched.domain.cluster import DEFAULT_CLUSTER, Node, Pod, PodPhase
from solver_sched.io.context import WHOLE, LoadContext, parse, quantities
from solver_sched.io.gangs import group_key
from solver_sched.io.objects import Container, PodObj
from solver_sched.io.topology import pod_request

_INDEX_LABELS = (
    "training.kubeflow.org/replica-index",
    "batch.kubernetes.io/job-completion-index",
    "apps.kubernetes.io/pod-index",
    "volcano.sh/task-index",
)


def _container_requests(b: LoadContext, obj: str, fld: str, c: Container) -> dict[str, int] | str:
    limits = quantities(b, obj, f"{fld}.limits", c.resources.limits)
    requests = quantities(b, obj, f"{fld}.requests", c.resources.requests)
    if isinstance(limits, str):
        return limits
    if isinstance(requests, str):
        return requests
    return {**limits, **requests}  # a request defaults to its limit


def _pod_requests(b: LoadContext, obj: str, p: PodObj) -> dict[str, int] | str:
    """Sum of containers; init containers as the kubelet accounts them (sidecars run alongside)."""
    main: dict[str, int] = {}
    for i, c in enumerate(p.spec.containers):
        r = _container_requests(b, obj, f"spec.containers[{i}].resources", c)
        if isinstance(r, str):
            return r
        res.add_into(main, r)
    if not p.spec.init_containers and not p.spec.overhead:  # the common case, at a dump's scale
        main[res.PODS] = 1
        return {k: v for k, v in main.items() if v}
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
    overhead = quantities(b, obj, "spec.overhead", p.spec.overhead)
    if isinstance(overhead, str):
        return overhead
    total = res.add(total, overhead)
    total[res.PODS] = 1
    return {k: v for k, v in total.items() if v}


def _constraints(b: LoadContext, p: PodObj) -> NodeConstraints:
    """Interned per load: the pods of a dump share a few constraint sets, and shapes and node
    checks compare them often."""
    aff = p.spec.affinity
    if aff is None or aff.node_affinity is None or aff.node_affinity.required is None:
        key = (
            tuple(sorted(p.spec.node_selector.items())),
            tuple((t.key, t.operator, t.value, t.effect) for t in p.spec.tolerations),
        )
        found = b.constraints.get(key)
        if found is None:
            found = b.constraints[key] = _build_constraints(p)
        return found
    return _build_constraints(p)


def _build_constraints(p: PodObj) -> NodeConstraints:
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


def _host_ports(p: PodObj) -> tuple[str, ...]:
    """The host ports the pod's containers claim on their node (NodePorts' view: with
    hostNetwork a port's hostPort defaults to its containerPort)."""
    ports = set()
    sidecars = [c for c in p.spec.init_containers if c.restart_policy == "Always"]
    for c in (*p.spec.containers, *sidecars):  # (as GetHostPorts: sidecars run alongside)
        for port in c.ports:
            host = port.host_port or (port.container_port if p.spec.host_network else 0)
            if host > 0:
                ports.add(host_port_claim(port.protocol or "TCP", host))
    return tuple(sorted(ports))


def _unsupported(b: LoadContext, p: PodObj) -> tuple[str, str] | None:
    """(field, what) of the first required inter-pod constraint the model cannot hold on a
    waiting pod of this scheduler: the plan would ignore it, so the pod's gang waits, saying so.
    A required anti-affinity to pods on the same node is modelled (io/claims.py). Others' pods
    and bound ones are not ours to hold."""
    if p.spec.node_name or p.spec.scheduler_name != b.scheduler_name:
        return None
    aff = p.spec.affinity
    if aff is not None and aff.pod_affinity is not None and aff.pod_affinity.required:
        return (
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            "required inter-pod affinity",
        )
    if aff is not None and aff.pod_anti_affinity is not None:
        at = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        for i, term in enumerate(aff.pod_anti_affinity.required):
            if term.topology_key != HOSTNAME:
                return (
                    f"{at}[{i}].topologyKey",
                    f"anti-affinity over {term.topology_key!r} (only {HOSTNAME} is)",
                )
            ns = term.namespace_selector
            if ns is not None and (ns.match_labels or ns.match_expressions):
                return f"{at}[{i}].namespaceSelector", "anti-affinity by namespace labels"
    for i, spread in enumerate(p.spec.topology_spread_constraints):
        if spread.when_unsatisfiable != "ScheduleAnyway":
            return (
                f"spec.topologySpreadConstraints[{i}]",
                "a topology spread constraint with whenUnsatisfiable DoNotSchedule",
            )
    return None


def _order(p: PodObj) -> tuple[int, int, str]:
    labels = p.metadata.labels
    rank = (
        0
        if labels.get("training.kubeflow.org/replica-type", "").lower()
        in ("", "master", "launcher")
        else 1
    )
    for key in _INDEX_LABELS:
        if WHOLE.fullmatch(labels.get(key, "")):
            return rank, int(labels[key]), p.metadata.name
    m = re.search(r"([0-9]{1,18})$", p.metadata.name)
    return rank, int(m.group(1)) if m else 0, p.metadata.name


def pod_from(b: LoadContext, raw: dict[str, Any], nodes: dict[str, Node]) -> Pod | None:
    p = parse(b, PodObj, raw)
    if p is None:
        return None
    ns = p.metadata.namespace or "default"
    name = f"{ns}/{p.metadata.name}"
    requests = _pod_requests(b, f"Pod {name}", p)
    if isinstance(requests, dict):  # interned per load: a gang's pods share one request
        requests = b.requests.setdefault(res.key(requests), requests)
    try:
        phase = PodPhase(p.status.phase)
    except ValueError:
        phase = PodPhase.UNKNOWN
    topology = pod_request(b, name, p.metadata.annotations)
    bad_topology = topology if isinstance(topology, str) else None
    priority = p.spec.priority
    if priority is None:
        priority = b.priority_classes.get(p.spec.priority_class_name or "", b.default_priority)
    invalid = requests if isinstance(requests, str) else bad_topology
    if invalid is None and (unsupported := _unsupported(b, p)):
        fld, what = unsupported
        invalid = b.error(
            f"Pod {name}",
            fld,
            f"{what} is not supported by solver-sched; its gang is held (drop the constraint, "
            "or schedule the pod with kube-scheduler)",
        )
    node = nodes.get(p.spec.node_name or "")
    if p.spec.node_name and node is None and invalid is None:
        # a deleted node's pods stay bound until the pod GC removes them; a node left out as
        # unreadable is reported itself: the pod's gang is left as it is meanwhile
        invalid = (
            f"Pod {name}: spec.nodeName: bound to node {p.spec.node_name}, which is not in the "
            "cluster (deleted, or rejected as unreadable); its gang is left as it is"
        )
    return Pod(
        name=name,
        namespace=ns,
        requests=requests if isinstance(requests, dict) else {res.PODS: 1},
        job=group_key(p) or name,
        scheduler_name=p.spec.scheduler_name,
        node_name=p.spec.node_name or None,  # "" is how some clients write "unscheduled"
        cluster=node.cluster if node is not None else DEFAULT_CLUSTER,
        phase=phase,
        priority=priority,
        constraints=_constraints(b, p),
        order=_order(p),
        created=p.metadata.creation_timestamp,
        invalid=invalid,
        topology=topology if not isinstance(topology, str) else None,
        terminating=p.metadata.deletion_timestamp is not None,
        uid=p.metadata.uid,
        nominated=p.status.nominated_node_name or None,
        unread=isinstance(requests, str),
        gated=tuple(g.name for g in p.spec.scheduling_gates),
        claims=_host_ports(p),
        ready=any(c.type == "Ready" and c.status == "True" for c in p.status.conditions),
        preempts=p.spec.preemption_policy != "Never"
        and (
            p.spec.preemption_policy is not None
            or p.spec.priority_class_name not in b.never_preempting
        ),
    )
