"""Re-exports of the sandbox helpers for the integration tests."""

from pathlib import Path

from solver_sched.kube.api import ApiError
from solver_sched.kube.sandbox import Kube, path_of, wait_for

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["ROOT", "Kube", "path_of", "priority_classes", "wait_for"]


def priority_classes(kube: Kube) -> None:
    """PriorityClasses `low` (0) and `high` (1000): a real API server admits pod priorities only
    through them."""
    for name, value in (("low", 0), ("high", 1000)):
        try:
            kube.create(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                }
            )
        except ApiError as exc:
            if exc.status != 409:
                raise
