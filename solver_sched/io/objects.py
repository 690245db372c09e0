"""Pydantic models of the Kubernetes objects solver-sched reads, as `kubectl get -o yaml` writes
them. Only the fields the scheduler uses are modelled; everything else is ignored. Quantities stay
raw here and are parsed by the builder, which can then name the object and field in errors."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict

Quantity = str | int | float
# The API server's int32 fields: a JSON integer in range, never a string or a boolean (which
# pydantic's lax mode would turn into numbers the server never stores)
Int32 = Annotated[int, Strict(), Field(ge=-(2**31), le=2**31 - 1)]
Count32 = Annotated[int, Strict(), Field(ge=0, le=2**31 - 1)]


class _Obj(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class Meta(_Obj):
    name: str
    uid: str = ""
    namespace: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    creation_timestamp: datetime | None = Field(default=None, alias="creationTimestamp")
    deletion_timestamp: datetime | None = Field(default=None, alias="deletionTimestamp")
    generation: int = 0


class TaintModel(_Obj):
    key: str
    value: str = ""
    effect: str


class NodeSpec(_Obj):
    unschedulable: bool = False
    taints: list[TaintModel] = Field(default_factory=list)


class NodeStatus(_Obj):
    allocatable: dict[str, Quantity] = Field(default_factory=dict)
    capacity: dict[str, Quantity] = Field(default_factory=dict)


class NodeObj(_Obj):
    metadata: Meta
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()


class ResourceReqs(_Obj):
    requests: dict[str, Quantity] = Field(default_factory=dict)
    limits: dict[str, Quantity] = Field(default_factory=dict)


class RequirementModel(_Obj):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)


class LabelSelectorModel(_Obj):
    match_labels: dict[str, str] = Field(default_factory=dict, alias="matchLabels")
    match_expressions: list[RequirementModel] = Field(
        default_factory=list, alias="matchExpressions"
    )

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Kubernetes' label selector: every matchLabels pair and every requirement holds."""
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        for r in self.match_expressions:
            has = r.key in labels
            if r.operator == "In" and not (has and labels[r.key] in r.values):
                return False
            if r.operator == "NotIn" and has and labels[r.key] in r.values:
                return False
            if r.operator == "Exists" and not has:
                return False
            if r.operator == "DoesNotExist" and has:
                return False
        return True


class ContainerPort(_Obj):
    container_port: Int32 = Field(default=0, alias="containerPort")
    host_port: Int32 = Field(default=0, alias="hostPort")
    protocol: str = "TCP"


class Container(_Obj):
    name: str = ""
    resources: ResourceReqs = ResourceReqs()
    restart_policy: str | None = Field(default=None, alias="restartPolicy")
    ports: list[ContainerPort] = Field(default_factory=list)


class TolerationModel(_Obj):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


class NodeSelectorRequirementModel(_Obj):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)


class NodeSelectorTermModel(_Obj):
    match_expressions: list[NodeSelectorRequirementModel] = Field(
        default_factory=list, alias="matchExpressions"
    )
    match_fields: list[NodeSelectorRequirementModel] = Field(
        default_factory=list, alias="matchFields"
    )


class NodeSelectorModel(_Obj):
    node_selector_terms: list[NodeSelectorTermModel] = Field(
        default_factory=list, alias="nodeSelectorTerms"
    )


class NodeAffinityModel(_Obj):
    required: NodeSelectorModel | None = Field(
        default=None, alias="requiredDuringSchedulingIgnoredDuringExecution"
    )


class PodAffinityTermModel(_Obj):
    label_selector: LabelSelectorModel | None = Field(default=None, alias="labelSelector")
    namespaces: list[str] = Field(default_factory=list)
    namespace_selector: LabelSelectorModel | None = Field(default=None, alias="namespaceSelector")
    topology_key: str = Field(default="", alias="topologyKey")


class PodAffinityModel(_Obj):
    required: list[PodAffinityTermModel] = Field(
        default_factory=list, alias="requiredDuringSchedulingIgnoredDuringExecution"
    )


class AffinityModel(_Obj):
    node_affinity: NodeAffinityModel | None = Field(default=None, alias="nodeAffinity")
    pod_affinity: PodAffinityModel | None = Field(default=None, alias="podAffinity")
    pod_anti_affinity: PodAffinityModel | None = Field(default=None, alias="podAntiAffinity")


class TopologySpreadModel(_Obj):
    topology_key: str = Field(default="", alias="topologyKey")
    when_unsatisfiable: str = Field(default="DoNotSchedule", alias="whenUnsatisfiable")


class SchedulingGroup(_Obj):
    pod_group_name: str = Field(alias="podGroupName")


class SchedulingGate(_Obj):
    name: str


class PodSpec(_Obj):
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] = Field(default_factory=list, alias="initContainers")
    overhead: dict[str, Quantity] = Field(default_factory=dict)
    node_name: str | None = Field(default=None, alias="nodeName")
    scheduler_name: str = Field(default="default-scheduler", alias="schedulerName")
    priority: Int32 | None = None
    priority_class_name: str | None = Field(default=None, alias="priorityClassName")
    preemption_policy: str | None = Field(default=None, alias="preemptionPolicy")
    node_selector: dict[str, str] = Field(default_factory=dict, alias="nodeSelector")
    affinity: AffinityModel | None = None
    topology_spread_constraints: list[TopologySpreadModel] = Field(
        default_factory=list, alias="topologySpreadConstraints"
    )
    host_network: bool = Field(default=False, alias="hostNetwork")
    tolerations: list[TolerationModel] = Field(default_factory=list)
    scheduling_group: SchedulingGroup | None = Field(default=None, alias="schedulingGroup")
    scheduling_gates: list[SchedulingGate] = Field(default_factory=list, alias="schedulingGates")


class PodCondition(_Obj):
    type: str = ""
    status: str = ""


class PodStatus(_Obj):
    phase: str = "Pending"
    nominated_node_name: str | None = Field(default=None, alias="nominatedNodeName")
    conditions: list[PodCondition] = Field(default_factory=list)


class PodObj(_Obj):
    metadata: Meta
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()


class NetworkTopologyModel(_Obj):
    """Volcano's ``networkTopology`` (PodGroup and Job): hard or soft, up to a HyperNode tier."""

    mode: str = "hard"
    highest_tier_allowed: Int32 | None = Field(default=None, alias="highestTierAllowed")
    highest_tier_name: str | None = Field(default=None, alias="highestTierName")


class TopologyConstraintModel(_Obj):
    key: str


class SchedulingConstraintsModel(_Obj):
    """Kubernetes 1.37 ``PodGroup.spec.schedulingConstraints`` (at most one topology item)."""

    topology: list[TopologyConstraintModel] = Field(default_factory=list)


class PodGroupSpec(_Obj):
    min_member: Int32 | None = Field(default=None, alias="minMember")
    queue: str | None = None
    priority_class_name: str | None = Field(default=None, alias="priorityClassName")
    schedule_timeout_seconds: Int32 | None = Field(default=None, alias="scheduleTimeoutSeconds")
    scheduling_policy: dict[str, Any] | None = Field(default=None, alias="schedulingPolicy")
    scheduling_constraints: SchedulingConstraintsModel | None = Field(
        default=None, alias="schedulingConstraints"
    )
    network_topology: NetworkTopologyModel | None = Field(default=None, alias="networkTopology")


class PodGroupObj(_Obj):
    api_version: str = Field(alias="apiVersion")
    metadata: Meta
    spec: PodGroupSpec = PodGroupSpec()


class ElasticPolicy(_Obj):
    min_replicas: Int32 | None = Field(default=None, alias="minReplicas")
    max_replicas: Int32 | None = Field(default=None, alias="maxReplicas")


class ReplicaSpec(_Obj):
    replicas: Count32 = 1


class PyTorchJobSpec(_Obj):
    elastic_policy: ElasticPolicy | None = Field(default=None, alias="elasticPolicy")
    pytorch_replica_specs: dict[str, ReplicaSpec] = Field(
        default_factory=dict, alias="pytorchReplicaSpecs"
    )


class PyTorchJobObj(_Obj):
    metadata: Meta
    spec: PyTorchJobSpec = PyTorchJobSpec()


class QuotaNodeModel(_Obj):
    """One queue of the tree. Its children stay raw and are validated one by one, so a bad queue
    invalidates only itself and what depends on it, never the rest of the tree."""

    name: str
    namespaces: list[str] = Field(default_factory=list)
    min: dict[str, Quantity] = Field(default_factory=dict)
    max: dict[str, Quantity] = Field(default_factory=dict)
    children: list[Any] = Field(default_factory=list)


class ElasticQuotaTreeSpec(_Obj):
    root: dict[str, Any]


class ElasticQuotaTreeObj(_Obj):
    metadata: Meta
    spec: ElasticQuotaTreeSpec


class PriorityClassObj(_Obj):
    metadata: Meta
    value: Int32
    global_default: bool = Field(default=False, alias="globalDefault")
    preemption_policy: str | None = Field(default=None, alias="preemptionPolicy")


class TopologyLevelModel(_Obj):
    node_label: str = Field(alias="nodeLabel", min_length=1)


class KueueTopologySpec(_Obj):
    levels: list[TopologyLevelModel] = Field(min_length=1, max_length=16)


class KueueTopologyObj(_Obj):
    """Kueue's ``Topology`` (``kueue.x-k8s.io`` v1beta1 or v1beta2): node-label levels, broadest
    first, ``kubernetes.io/hostname`` only last."""

    api_version: str = Field(alias="apiVersion")
    metadata: Meta
    spec: KueueTopologySpec


MODEL_OF_KIND: dict[str, type[BaseModel]] = {
    "Node": NodeObj,
    "Pod": PodObj,
    "PodGroup": PodGroupObj,
    "PyTorchJob": PyTorchJobObj,
    "ElasticQuotaTree": ElasticQuotaTreeObj,
    "PriorityClass": PriorityClassObj,
    "Topology": KueueTopologyObj,
}


class PodDisruptionBudgetSpec(_Obj):
    selector: LabelSelectorModel | None = None  # policy/v1: null selects no pod
    unhealthy_pod_eviction_policy: Literal["IfHealthyBudget", "AlwaysAllow"] | None = Field(
        default=None, alias="unhealthyPodEvictionPolicy"
    )


class PodDisruptionBudgetStatus(_Obj):
    disruptions_allowed: Count32 = Field(default=0, alias="disruptionsAllowed")
    current_healthy: Count32 = Field(default=0, alias="currentHealthy")
    desired_healthy: Count32 = Field(default=0, alias="desiredHealthy")
    observed_generation: int = Field(default=0, alias="observedGeneration")


class PodDisruptionBudgetObj(_Obj):
    metadata: Meta
    spec: PodDisruptionBudgetSpec = PodDisruptionBudgetSpec()
    status: PodDisruptionBudgetStatus = PodDisruptionBudgetStatus()
