"""Node objects -> ``Node``: allocatable, labels, taints, cordon and cluster."""

from __future__ import annotations

from typing import Any

from solver_sched.domain.affinity import Taint
from solver_sched.domain.cluster import Node
from solver_sched.io.context import LoadContext, parse, quantities
from solver_sched.io.objects import NodeObj

CLUSTER_LABEL = "solver-sched.io/cluster"


def node_from(b: LoadContext, raw: dict[str, Any]) -> Node | None:
    n = parse(b, NodeObj, raw)
    if n is None:
        return None
    obj = f"Node {n.metadata.name}"
    source = "status.allocatable" if n.status.allocatable else "status.capacity"
    alloc = quantities(b, obj, source, n.status.allocatable or n.status.capacity)
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
