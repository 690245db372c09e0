"""Node classes and pod shapes: identical nodes grouped by what pending pods can tell apart,
pending pods grouped by requests and node constraints, and how many pods of each shape a class
could hold."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping

from solver_sched.domain import resources as res
from solver_sched.domain.claims import is_claim
from solver_sched.domain.cluster import Node, Pod
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.jobs import JobState
from solver_sched.formulation.problem import NodeClass, Shape


def pod_shapes(
    active: Mapping[str, JobState],
) -> tuple[dict[str, int], list[tuple[dict[str, int], Pod]]]:
    """Group pending pods by (requests, node constraints); returns pod -> shape id and examples."""
    ids: dict[object, int] = {}
    shapes_of: dict[str, int] = {}
    examples: list[tuple[dict[str, int], Pod]] = []
    for name in sorted(active):
        for pod in active[name].waiting:
            key = (res.key(pod.requests), pod.constraints)
            if key not in ids:
                ids[key] = len(examples)
                examples.append((dict(pod.requests), pod))
            shapes_of[pod.name] = ids[key]
    return shapes_of, examples


def node_classes(
    snapshot: ClusterSnapshot,
    free: Mapping[str, Mapping[str, int]],
    shape_reqs: list[tuple[dict[str, int], Pod]],
    relevant: tuple[str, ...],
    releasing: Collection[str] = (),
    domain_of: Callable[[Node], object] | None = None,
) -> tuple[tuple[NodeClass, ...], dict[str, int]]:
    """Nodes grouped by what pending pods can tell apart. A node in ``releasing`` (it runs pods
    the plan may evict) is a class of its own: what an eviction frees is then credited to the
    node it frees, not to a class, so the model's node fit is exact there (docs/formulation.md,
    rule 2). ``domain_of``: the node's topology domains, so that no class straddles one."""
    label_keys: set[str] = set()
    by_name = False
    for _, pod in shape_reqs:
        c = pod.constraints
        label_keys.update(k for k, _ in c.node_selector)
        for term in c.required_terms:
            for req in term:
                if req.field:
                    by_name = True
                else:
                    label_keys.add(req.key)
    groups: dict[object, list[Node]] = defaultdict(list)
    for name in sorted(snapshot.nodes):
        node = snapshot.nodes[name]
        if not node.schedulable:
            continue
        labels = tuple(sorted((k, node.labels[k]) for k in label_keys if k in node.labels))
        taints = tuple(
            sorted(
                (t.key, t.value, t.effect)
                for t in node.taints
                if t.effect in ("NoSchedule", "NoExecute")
            )
        )
        vec = tuple(max(0, free[name].get(r, 0)) for r in relevant)
        own = by_name or name in releasing
        where = domain_of(node) if domain_of is not None else ()
        groups[(node.cluster, labels, taints, vec, name if own else "", where)].append(node)
    classes = []
    class_of: dict[str, int] = {}
    for cid, key in enumerate(sorted(groups, key=repr)):
        nodes = groups[key]
        vec = key[3]  # type: ignore[index]
        free_vec = dict(zip(relevant, vec, strict=True))
        classes.append(
            NodeClass(
                cid,
                nodes[0].cluster,
                tuple(n.name for n in nodes),
                free_vec,
                free_vec.get(res.GPU, 0),
            )
        )
        for n in nodes:
            class_of[n.name] = cid
    return tuple(classes), class_of


def shape_fit(
    snapshot: ClusterSnapshot,
    classes: tuple[NodeClass, ...],
    shape_reqs: list[tuple[dict[str, int], Pod]],
    free: Mapping[str, Mapping[str, int]],
    active: Mapping[str, JobState],
) -> tuple[Shape, ...]:
    """Per shape and class: how many pods could fit if every evictable pod were gone (a bound)."""
    evictable: dict[str, dict[str, int]] = defaultdict(dict)
    for st in active.values():
        for pod in st.running:
            if pod.node_name:
                res.add_into(evictable[pod.node_name], pod.requests)
    room_of = {n: res.add(free[n], vec) for n, vec in evictable.items()}  # once, not per shape
    shapes = []
    for sid, (req, pod) in enumerate(shape_reqs):
        fit: dict[int, int] = {}
        for c in classes:
            rep = snapshot.nodes[c.nodes[0]]
            if not pod.constraints.allows(rep.labels, rep.taints, rep.name):
                continue
            total_fit = 0
            for n in c.nodes:
                total_fit += res.how_many_fit(req, room_of[n] if n in room_of else free[n])
            if total_fit > 0:
                fit[c.id] = total_fit
        shapes.append(Shape(sid, req, pod.constraints, fit))
    return tuple(shapes)


def note_unplaceable(
    snapshot: ClusterSnapshot,
    active: Mapping[str, JobState],
    shapes: tuple[Shape, ...],
    shapes_of: Mapping[str, int],
    reasons: dict[str, str],
    shielded: Mapping[str, str],
) -> None:
    """A reason for each job none of whose waiting pods fits any node class (and, from
    ``shielded``, the victims its budgets keep)."""
    for name, st in active.items():
        if st.waiting and not any(shapes[shapes_of[p.name]].fit for p in st.waiting):
            why = no_node_reason(snapshot, st.waiting[0]) + shielded.get(name, "")
            reasons.setdefault(name, why)


def no_node_reason(snapshot: ClusterSnapshot, pod: Pod) -> str:
    why: dict[str, int] = defaultdict(int)
    claims = [(r, q) for r, q in sorted(pod.requests.items()) if is_claim(r)]
    for node in snapshot.nodes.values():
        if node.unschedulable:
            why["cordoned"] += 1
        elif node.invalid:
            why["invalid"] += 1
        elif (unmet := pod.constraints.unmet(node.labels, node.taints, node.name)) is not None:
            why[unmet] += 1
        elif not res.fits(pod.requests, node.allocatable):
            why["too small"] += 1
        else:  # a claim another pod holds there (rule 2c) says more than "full"
            free = snapshot.free_per_node[node.name] if claims else {}
            held = [r for r, q in claims if free.get(r, 0) < q]
            why[f"{held[0]} taken" if held else "full"] += 1
    detail = ", ".join(f"{n} {w}" for w, n in sorted(why.items()))
    return f"no node can hold {pod.name} ({res.fmt(pod.requests)}): {detail or 'no nodes'}"
