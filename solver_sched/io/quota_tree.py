"""The ElasticQuotaTree -> ``QuotaTree``: min, max and max-jobs per queue, the namespaces each leaf
owns.

Each queue is validated on its own, so a bad queue is marked invalid with an InputError and blocks
only the jobs that depend on it (its own and its descendants'); the rest of the tree keeps its
limits. A queue too broken to read still claims the namespaces it lists, so their jobs are held
(with the reason) rather than planned as if no quota applied. A duplicate name is kept apart under
``name@path`` and is invalid; the first queue of that name keeps it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from solver_sched.domain.quota import MAX_JOBS, Queue, QuotaTree
from solver_sched.io.context import LoadContext, parse, quantities
from solver_sched.io.objects import ElasticQuotaTreeObj, QuotaNodeModel


def _created(tree: ElasticQuotaTreeObj) -> datetime:
    """When the tree was created; one without a time (a hand-written file) counts as oldest."""
    t = tree.metadata.creation_timestamp
    if t is None:
        return datetime.min.replace(tzinfo=UTC)
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def quota_tree(b: LoadContext, raws: list[dict[str, Any]]) -> QuotaTree:
    trees = [t for raw in raws if (t := parse(b, ElasticQuotaTreeObj, raw)) is not None]
    if not trees:
        return QuotaTree()
    # The oldest tree rules, whatever order they were listed in (a store lists in the order it
    # heard of them: a restart re-lists, and a tree created later took over the queues)
    trees.sort(key=lambda t: (_created(t), t.metadata.namespace or "", t.metadata.name))
    tree = trees[0]
    if len(trees) > 1:
        names = ", ".join(f"{t.metadata.namespace}/{t.metadata.name}" for t in trees[1:])
        b.error(
            "ElasticQuotaTree",
            "metadata.name",
            f"several trees: {tree.metadata.namespace}/{tree.metadata.name}, the oldest, is in "
            f"force; ignored {names}",
        )
    obj = f"ElasticQuotaTree {tree.metadata.namespace}/{tree.metadata.name}"
    queues: dict[str, Queue] = {}
    owner: dict[str, str] = {}

    def claim(key: str, namespaces: list[str], path: str) -> None:
        for ns in namespaces:
            if ns in owner:
                b.error(obj, f"{path}.namespaces", f"namespace {ns} already in queue {owner[ns]}")
            else:
                owner[ns] = key

    inside: set[int] = set()  # the raw queues on the walk's path: a YAML alias can loop

    def walk(raw: Any, parent: str | None, path: str) -> None:
        if id(raw) in inside:
            b.error(obj, path, "a queue inside itself (a YAML alias to an ancestor): left out")
            return
        inside.add(id(raw))
        try:
            visit(raw, parent, path)
        finally:
            inside.discard(id(raw))

    def visit(raw: Any, parent: str | None, path: str) -> None:
        found = len(b.errors)
        if isinstance(raw, dict):
            node = parse(b, QuotaNodeModel, raw, obj, path)
        else:
            node = None
            b.error(obj, path, f"expected a queue (an object), found a {type(raw).__name__}")
        if node is None:  # unreadable: its namespaces and children still depend on it
            key = _unique(queues, _raw_name(raw) or path, path)
            namespaces = _raw_strings(raw, "namespaces")
            reason = "; ".join(str(e) for e in b.errors[found:])
            claim(key, namespaces, path)
            queues[key] = Queue(key, parent, tuple(namespaces), invalid=reason)
            children = raw.get("children") if isinstance(raw, dict) else None
            for i, child in enumerate(children if isinstance(children, list) else []):
                walk(child, key, f"{path}.children[{i}]")
            return
        invalid = None
        lo = quantities(b, obj, f"{path}.min", node.min)
        hi = quantities(b, obj, f"{path}.max", node.max)
        if isinstance(lo, str) or isinstance(hi, str):
            invalid = lo if isinstance(lo, str) else str(hi)
            lo, hi = {}, {}
        for part, limits in (("min", lo), ("max", hi)):  # (a misspelt max-jobs was no cap)
            for r in sorted(r for r in limits if r.startswith("kube-queue/") and r != MAX_JOBS):
                invalid = invalid or b.error(
                    obj, f"{path}.{part}.{r}", f"unknown kube-queue key (the one read: {MAX_JOBS})"
                )
        for r, m in sorted(lo.items()):
            if r in hi and m > hi[r] and invalid is None:
                invalid = b.error(obj, f"{path}.min.{r}", f"{m} > max {hi[r]} (queue {node.name})")
        key = node.name
        if key in queues:
            key = _unique(queues, node.name, path)
            invalid = b.error(obj, f"{path}.name", f"duplicate queue name {node.name!r}")
        claim(key, node.namespaces, path)
        max_jobs = hi.pop(MAX_JOBS, None)
        lo.pop(MAX_JOBS, None)
        queues[key] = Queue(key, parent, tuple(node.namespaces), lo, hi, max_jobs, invalid)
        for i, child in enumerate(node.children):
            walk(child, key, f"{path}.children[{i}]")

    walk(tree.spec.root, None, "spec.root")
    return QuotaTree(queues)


def _unique(queues: dict[str, Queue], name: str, path: str) -> str:
    return name if name not in queues else f"{name}@{path}"


def _raw_name(raw: Any) -> str | None:
    name = raw.get("name") if isinstance(raw, dict) else None
    return name if isinstance(name, str) and name else None


def _raw_strings(raw: Any, key: str) -> list[str]:
    value = raw.get(key) if isinstance(raw, dict) else None
    if isinstance(value, str):  # one namespace written as a string: still this queue's
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
