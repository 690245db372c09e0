"""The PodDisruptionBudgets a job-level eviction would run into, checked before any pod goes.

The Eviction API charges each running pod to the budget that selects it, one pod at a time, and a
dry run charges nothing. Dry runs alone therefore pass pod by pod; the real evictions then use the
budget up part way and leave the job half evicted (maxUnavailable 1 over a 4-pod gang: one pod
went, three were refused). So a job's eviction goes ahead only when each budget allows all of the
job's healthy pods it selects at once. The API refuses a pod that two budgets select, and any pod
while its budget's status is older than its spec, so both refuse the job here too. Pods that are
not running are evicted whatever the budgets say; which running ones a budget is charged for,
and when its status is too old, follow the same rules as the plan's (``io/budgets.py``:
``charges``, ``stale``)."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from solver_sched.io.budgets import charges, stale
from solver_sched.io.objects import PodDisruptionBudgetObj
from solver_sched.kube.api import ApiError, KubeApi

log = logging.getLogger(__name__)


def refusal(
    api: KubeApi, pods: Sequence[str], healthy: Collection[str], unhealthy: Collection[str]
) -> str | None:
    """Why the budgets refuse evicting all of ``pods`` (``namespace/name``) together, or None.
    ``healthy``: running and Ready, the pods the API charges; ``unhealthy``: running, not Ready.
    A budget that cannot be read refuses nothing (the dry runs that follow still catch a
    refusal; the last line of defence, not the first)."""
    running: dict[str, list[str]] = defaultdict(list)  # namespace -> pod names
    for pod in pods:
        if pod in healthy or pod in unhealthy:
            ns, name = pod.split("/", 1)
            running[ns].append(name)
    for ns, names in sorted(running.items()):
        charged = {n for n in names if f"{ns}/{n}" in healthy}
        try:
            why = _refusal_in(api, ns, names, charged)
        except ApiError as exc:
            log.warning("PodDisruptionBudgets of namespace %s not read: %s", ns, exc)
            continue
        if why:
            return why
    return None


def _refusal_in(api: KubeApi, ns: str, names: list[str], charged: set[str]) -> str | None:
    budgets = api.get(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets").get("items") or []
    selected_by: dict[str, list[str]] = defaultdict(list)
    for pdb in sorted(budgets, key=lambda b: str((b.get("metadata") or {}).get("name"))):
        meta, spec = pdb.get("metadata") or {}, pdb.get("spec") or {}
        name = f"PodDisruptionBudget {ns}/{meta.get('name')}"
        selector = spec.get("selector")
        if selector is None:  # policy/v1: a null selector selects no pod
            continue
        query = selector_query(selector)
        if query is None:
            return f"{name}: its selector cannot be read"
        listed = api.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=query).get("items") or []
        members = {(p.get("metadata") or {}).get("name") for p in listed}
        covered = [n for n in names if n in members]
        if not covered:
            continue
        for n in covered:
            selected_by[n].append(str(meta.get("name")))
        try:
            budget = PodDisruptionBudgetObj.model_validate(pdb)
        except ValidationError:
            return f"{name}: its spec or status cannot be read"
        if stale(budget):
            return f"{name}: its status is not yet current (the disruption controller is behind)"
        allowed = budget.status.disruptions_allowed
        taken = [n for n in covered if charges(budget, n in charged)]  # what the API charges
        if allowed < len(taken):
            return (
                f"{name} allows {allowed} disruption(s); the job-level eviction takes "
                f"{len(taken)} of its pods at once"
            )
    for pod, pdbs in sorted(selected_by.items()):
        if len(pdbs) > 1:
            return (
                f"pod {ns}/{pod} is selected by more than one PodDisruptionBudget "
                f"({', '.join(pdbs)}): the Eviction API refuses it"
            )
    return None


def selector_query(selector: Mapping[str, Any]) -> str | None:
    """A LabelSelector as the API's labelSelector query ("" selects every pod), or None when it
    is not one Kubernetes would accept."""
    parts = []
    labels = selector.get("matchLabels") or {}
    if not isinstance(labels, Mapping):
        return None
    parts += [f"{k}={v}" for k, v in sorted(labels.items())]
    for r in selector.get("matchExpressions") or []:
        if not isinstance(r, Mapping) or not isinstance(r.get("key"), str):
            return None
        key, op, values = r["key"], r.get("operator"), r.get("values") or []
        if op in ("In", "NotIn") and values:
            parts.append(f"{key} {op.lower()} ({','.join(map(str, values))})")
        elif op == "Exists" and not values:
            parts.append(key)
        elif op == "DoesNotExist" and not values:
            parts.append(f"!{key}")
        else:
            return None
    return ",".join(parts)
