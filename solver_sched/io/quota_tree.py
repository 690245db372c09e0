"""The ElasticQuotaTree -> ``QuotaTree``: min, max and max-jobs per queue, the namespaces each leaf
owns; a bad queue is marked invalid, with an InputError."""

from __future__ import annotations

from typing import Any

from solver_sched.domain.quota import MAX_JOBS, Queue, QuotaTree
from solver_sched.io.context import LoadContext, parse, quantities
from solver_sched.io.objects import ElasticQuotaTreeObj, QuotaNodeModel


def quota_tree(b: LoadContext, raws: list[dict[str, Any]]) -> QuotaTree:
    trees = [t for raw in raws if (t := parse(b, ElasticQuotaTreeObj, raw)) is not None]
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
        lo = quantities(b, obj, f"{path}.min", node.min)
        hi = quantities(b, obj, f"{path}.max", node.max)
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
