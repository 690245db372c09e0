"""Per-node claims (domain/claims.py) into the snapshot: each claim a waiting pod of this
scheduler makes becomes a resource of 1 on every node and a request of 1 on every pod that
makes it (running pods of any scheduler included). Nothing changes when no waiting pod makes
one, so clusters without host ports or anti-affinity pay a scan of their waiting pods."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from solver_sched.domain.claims import HOSTNAME, anti_affinity_claim
from solver_sched.domain.cluster import Node, Pod
from solver_sched.io.context import raw_key
from solver_sched.io.objects import LabelSelectorModel, PodAffinityModel


@dataclass(frozen=True)
class _Term:
    namespaces: frozenset[str] | None  # None: every namespace
    selector: LabelSelectorModel | None  # None selects no pod

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        in_scope = self.namespaces is None or namespace in self.namespaces
        return in_scope and self.selector is not None and self.selector.matches(labels)


def with_claims(
    raws: Iterable[dict[str, Any]],
    pods: dict[str, Pod],
    nodes: dict[str, Node],
    scheduler_name: str,
) -> tuple[dict[str, Pod], dict[str, Node]]:
    waiting = {
        n
        for n, p in pods.items()
        if p.scheduler_name == scheduler_name
        and p.node_name is None
        and not p.terminated
        and not p.terminating
        and p.invalid is None
    }
    if not waiting:
        return pods, nodes
    claims: dict[str, set[str]] = {}  # pod -> its claims
    for n, p in pods.items():
        if p.claims and (n in waiting or p.bound):
            claims[n] = set(p.claims)
    _anti_affinity(raws, pods, waiting, claims)
    needed = {c for n in waiting for c in claims.get(n, ())}
    if not needed:
        return pods, nodes
    out = dict(pods)
    for n, held in claims.items():
        mine = held & needed
        if mine:
            p = pods[n]
            out[n] = replace(
                p,
                requests={**p.requests, **dict.fromkeys(sorted(mine), 1)},
                claims=tuple(sorted(held)),
            )
    extra = dict.fromkeys(sorted(needed), 1)
    return out, {k: replace(v, allocatable={**v.allocatable, **extra}) for k, v in nodes.items()}


def _anti_affinity(
    raws: Iterable[dict[str, Any]],
    pods: Mapping[str, Pod],
    waiting: set[str],
    claims: dict[str, set[str]],
) -> None:
    """Each required same-node anti-affinity term: a claim made by the pods that carry it and by
    the pods it selects (running or waiting), when one of them waits."""
    terms: dict[str, _Term] = {}
    carriers: dict[str, set[str]] = {}
    by_name = {}
    for raw in raws:
        key = raw_key(raw)
        name = "/".join(key) if key else ""
        p = pods.get(name)
        if p is None or not (name in waiting or p.bound):
            continue
        by_name[name] = raw
        spec = raw.get("spec")
        if isinstance(spec, dict) and spec.get("affinity"):
            for claim, term in _terms(spec["affinity"], p.namespace):
                terms.setdefault(claim, term)
                carriers.setdefault(claim, set()).add(name)
    if not terms:
        return
    labels = {n: (pods[n].namespace, _labels(raw)) for n, raw in by_name.items()}
    for claim, term in terms.items():
        members = carriers[claim] | {n for n, (ns, lab) in labels.items() if term.selects(ns, lab)}
        if members & waiting:
            for n in members:
                claims.setdefault(n, set()).add(claim)


def _labels(raw: dict[str, Any]) -> dict[str, str]:
    meta = raw.get("metadata")
    found = meta.get("labels") if isinstance(meta, dict) else None
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _terms(affinity: Any, namespace: str) -> list[tuple[str, _Term]]:
    anti = affinity.get("podAntiAffinity") if isinstance(affinity, dict) else None
    if not isinstance(anti, dict):
        return []
    try:
        model = PodAffinityModel.model_validate(anti)
    except ValidationError:  # (the pod's own read reported it)
        return []
    out = []
    for t in model.required:
        ns = t.namespace_selector
        if t.topology_key != HOSTNAME or (ns and (ns.match_labels or ns.match_expressions)):
            continue  # not modelled: a waiting pod with it is held (io/pods.py)
        scope = None if ns is not None else frozenset(t.namespaces or (namespace,))  # {}: all
        names = "*" if scope is None else ",".join(sorted(scope))
        claim = anti_affinity_claim(names, _text(t.label_selector))
        out.append((claim, _Term(scope, t.label_selector)))
    return out


def _text(sel: LabelSelectorModel | None) -> str:
    """The selector as ``kubectl`` writes one; ``<none>`` selects no pod."""
    if sel is None:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted(sel.match_labels.items())]
    for r in sel.match_expressions:
        if r.operator == "Exists":
            parts.append(r.key)
        elif r.operator == "DoesNotExist":
            parts.append(f"!{r.key}")
        else:
            op = "in" if r.operator == "In" else "notin"
            parts.append(f"{r.key} {op} ({','.join(sorted(r.values))})")
    return ",".join(sorted(parts))
