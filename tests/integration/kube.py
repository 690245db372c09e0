"""Re-exports of the sandbox helpers for the integration tests."""

from pathlib import Path

from solver_sched.config.schema import SchedulerConfig
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.kube.api import ApiError, KubeApi
from solver_sched.kube.sandbox import Kube, path_of, wait_for
from solver_sched.kube.snapshotter import cluster_objects
from solver_sched.kube.store import ObjectStore

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["ROOT", "Kube", "path_of", "priority_classes", "real_snapshot", "wait_for"]


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


def real_snapshot(admin_api: KubeApi) -> ClusterSnapshot:
    """The nodes and default-namespace pods as the actuator's ``real`` snapshot reads them."""
    store = ObjectStore()
    for kind, path in (("Node", "/api/v1/nodes"), ("Pod", "/api/v1/namespaces/default/pods")):
        items = admin_api.get(path)["items"]
        for obj in items:
            obj.update(kind=kind, apiVersion="v1")
        store.replace(f"{kind}.v1", items)
    return snapshot_from_objects(
        cluster_objects(store), "solver-sched", SchedulerConfig().settings.cooldown
    )
