"""Per-node claims (domain/claims.py) into the snapshot. Each claim a waiting pod of this scheduler
makes becomes a resource on every node, requested by every pod that makes it (running pods of any
scheduler included):

- a host port: capacity 1, each pod asking for it requests 1 (one per node);
- a required same-node anti-affinity term: capacity ``APART``; a pod the term selects requests 1
  and a pod that carries the term requests ``APART``, so selected pods may share a node, and a
  carrier shares its node with none of them (nor with another carrier of the term).

Nothing changes when no waiting pod makes a claim, so clusters without host ports or anti-affinity
pay a scan of their waiting pods."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from solver_sched.domain.claims import APART, HOSTNAME, anti_affinity_claim, is_port
from solver_sched.domain.cluster import Node, Pod
from solver_sched.io.context import raw_key
from solver_sched.io.objects import LabelSelectorModel, PodAffinityModel


@dataclass(frozen=True)
class _Term:
    namespaces: frozenset[str] | None  # None: every namespace
    selector: LabelSelectorModel

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        in_scope = self.namespaces is None or namespace in self.namespaces
        return in_scope and self.selector.matches(labels)


def with_claims(
    raws: Iterable[dict[str, Any]],
    pods: dict[str, Pod],
    nodes: dict[str, Node],
    scheduler_name: str,
    labels: Callable[[], Mapping[str, Mapping[str, str]]],
) -> tuple[dict[str, Pod], dict[str, Node]]:
    """``labels``: pod name -> labels, read when a term needs them (the loader's, shared with
    the budgets)."""
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
    asks: dict[str, dict[str, int]] = {}  # pod -> claim -> what it requests of it
    for n, p in pods.items():
        if p.claims and (n in waiting or p.bound):
            asks[n] = dict.fromkeys(p.claims, 1)  # (host ports, read with the pod)
    _anti_affinity(raws, pods, waiting, asks, labels)
    needed = {c for n in waiting for c in asks.get(n, ())}
    if not needed:
        return pods, nodes
    out = dict(pods)
    for n, held in asks.items():
        mine = {c: q for c, q in held.items() if c in needed}
        if mine:
            p = pods[n]
            out[n] = replace(p, requests={**p.requests, **mine}, claims=tuple(sorted(held)))
    extra = {c: 1 if is_port(c) else APART for c in sorted(needed)}
    return out, {k: replace(v, allocatable={**v.allocatable, **extra}) for k, v in nodes.items()}


def _anti_affinity(
    raws: Iterable[dict[str, Any]],
    pods: Mapping[str, Pod],
    waiting: set[str],
    asks: dict[str, dict[str, int]],
    labels: Callable[[], Mapping[str, Mapping[str, str]]],
) -> None:
    """Each required same-node anti-affinity term: a claim of the pods that carry it (APART) and
    of the pods it selects (1), running or waiting, when one of them waits."""
    terms: dict[str, _Term] = {}
    carriers: dict[str, set[str]] = {}

    def live(raw: dict[str, Any]) -> str | None:
        key = raw_key(raw)
        name = "/".join(key) if key else ""
        p = pods.get(name)
        return name if p is not None and (name in waiting or p.bound) else None

    for raw in raws:  # the few pods with an affinity first: most clusters stop here
        spec = raw.get("spec")
        if isinstance(spec, dict) and spec.get("affinity") and (name := live(raw)):
            for claim, term in _terms(spec["affinity"], pods[name].namespace):
                terms.setdefault(claim, term)
                carriers.setdefault(claim, set()).add(name)
    if not terms:
        return
    of = labels()
    live_labels = {
        n: (p.namespace, of.get(n, {})) for n, p in pods.items() if n in waiting or p.bound
    }
    for claim, term in terms.items():
        selected = {n for n, (ns, lab) in live_labels.items() if term.selects(ns, lab)}
        if (selected | carriers[claim]) & waiting:
            for n in selected:
                asks.setdefault(n, {})[claim] = 1
            for n in carriers[claim]:
                asks.setdefault(n, {})[claim] = APART


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
        if t.label_selector is None:
            continue  # selects no pod: no constraint
        scope = None if ns is not None else frozenset(t.namespaces or (namespace,))  # {}: all
        names = "*" if scope is None else ",".join(sorted(scope))
        claim = anti_affinity_claim(names, _text(t.label_selector))
        out.append((claim, _Term(scope, t.label_selector)))
    return out


def _text(sel: LabelSelectorModel) -> str:
    """The selector as ``kubectl`` writes one."""
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
