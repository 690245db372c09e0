"""PriorityClasses: a pod's priority when its spec has none, and a PodGroup's priorityClassName."""

from __future__ import annotations

from typing import Any

from solver_sched.io.context import LoadContext, parse
from solver_sched.io.objects import PriorityClassObj


def read_priority_classes(b: LoadContext, raws: list[dict[str, Any]]) -> None:
    """PriorityClass values by name, and the global default, into the load's context."""
    for raw in raws:
        pc = parse(b, PriorityClassObj, raw)
        if pc:
            b.priority_classes[pc.metadata.name] = pc.value
            if pc.preemption_policy == "Never":
                b.never_preempting.add(pc.metadata.name)
            if pc.global_default:
                b.default_priority = pc.value
