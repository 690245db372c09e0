"""The kinds the scheduler watches. CRD-backed kinds are optional: absent APIs are skipped and
looked for again later, so installing a CRD while the scheduler runs just works."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resource:
    kind: str
    api_version: str  # "v1" or "group/version"
    plural: str
    optional: bool = False  # served only when its CRD / API group is installed

    @property
    def base(self) -> str:
        return (
            f"/api/{self.api_version}"
            if "/" not in self.api_version
            else (f"/apis/{self.api_version}")
        )

    def path(self, namespace: str | None = None) -> str:
        if namespace:
            return f"{self.base}/namespaces/{namespace}/{self.plural}"
        return f"{self.base}/{self.plural}"

    @property
    def key(self) -> str:
        return f"{self.kind}.{self.api_version}"


LAST_SCALE = "solver-sched.io/last-scale-time"  # a job's cooldown stamp, on its PodGroup/PyTorchJob

NODES = Resource("Node", "v1", "nodes")
PODS = Resource("Pod", "v1", "pods")
PRIORITY_CLASSES = Resource("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses")
CONFIG_MAPS = Resource("ConfigMap", "v1", "configmaps")
PYTORCH_JOBS = Resource("PyTorchJob", "kubeflow.org/v1", "pytorchjobs", optional=True)

WATCHED: tuple[Resource, ...] = (
    NODES,
    PODS,
    PRIORITY_CLASSES,
    Resource("PodGroup", "scheduling.x-k8s.io/v1alpha1", "podgroups", optional=True),
    Resource("PodGroup", "scheduling.sigs.k8s.io/v1alpha1", "podgroups", optional=True),
    Resource("PodGroup", "scheduling.volcano.sh/v1beta1", "podgroups", optional=True),
    Resource("PodGroup", "scheduling.k8s.io/v1beta1", "podgroups", optional=True),
    Resource(
        "ElasticQuotaTree", "scheduling.sigs.k8s.io/v1beta1", "elasticquotatrees", optional=True
    ),
    PYTORCH_JOBS,
    Resource("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets"),
    Resource("Topology", "kueue.x-k8s.io/v1beta2", "topologies", optional=True),
)

POD_GROUP_APIS = {r.api_version.split("/")[0]: r for r in WATCHED if r.kind == "PodGroup"}
