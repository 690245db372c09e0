"""Node constraints a pod carries: taints/tolerations, nodeSelector, required node affinity.

Semantics follow the Kubernetes API reference: a node is feasible when every NoSchedule/NoExecute
taint is tolerated, every nodeSelector label matches, and at least one required nodeSelectorTerm
matches (all expressions of a term must hold).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # empty matches every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


@dataclass(frozen=True, slots=True)
class Requirement:
    """One nodeSelectorRequirement (matchExpressions) or a matchFields entry (field=True)."""

    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: tuple[str, ...] = ()
    field: bool = False

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if self.field:
            present, value = self.key == "metadata.name", node_name
        else:
            present, value = self.key in labels, labels.get(self.key, "")
        op = self.operator
        if op == "In":
            return present and value in self.values
        if op == "NotIn":
            return not present or value not in self.values
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if op in ("Gt", "Lt") and present and self.values:
            try:
                left, right = int(value), int(self.values[0])
            except ValueError:
                return False
            return left > right if op == "Gt" else left < right
        return False


@dataclass(frozen=True, slots=True)
class NodeConstraints:
    """Everything about a pod that restricts which nodes it may use."""

    node_selector: tuple[tuple[str, str], ...] = ()
    required_terms: tuple[tuple[Requirement, ...], ...] = ()  # OR of ANDs; empty = no affinity
    tolerations: tuple[Toleration, ...] = ()

    def allows(self, labels: Mapping[str, str], taints: tuple[Taint, ...], node_name: str) -> bool:
        return self.unmet(labels, taints, node_name) is None

    def unmet(
        self, labels: Mapping[str, str], taints: tuple[Taint, ...], node_name: str
    ) -> str | None:
        """None when the node is acceptable, else a short reason (used in explanations)."""
        for taint in taints:
            if taint.effect in ("NoSchedule", "NoExecute") and not any(
                t.tolerates(taint) for t in self.tolerations
            ):
                return f"untolerated taint {taint.key}={taint.value}:{taint.effect}"
        for k, v in self.node_selector:
            if labels.get(k) != v:
                return f"nodeSelector {k}={v}"
        if self.required_terms and not any(
            all(req.matches(labels, node_name) for req in term) for term in self.required_terms
        ):
            return "required node affinity"
        return None
