"""Pydantic models of the hub objects the fleet reads: PropagationPolicy (ACK One's
``policy.one.alibabacloud.com`` and Karmada's ``policy.karmada.io``, the same shape), Karmada's
``cluster.karmada.io`` Cluster, and the PyTorchJob with its replica templates. Only the fields the
fleet honours are modelled; the validation of values that need a message naming the field is done
by the fleet loader (``io.fleet_snapshot``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StrictBool

from solver_sched.io.objects import Int32, LabelSelectorModel, Meta

POLICY_GROUPS = ("policy.one.alibabacloud.com", "policy.karmada.io")
CLUSTER_GROUP = "cluster.karmada.io"
PURGE_MODES = ("Immediately", "Directly", "Gracefully", "Never")
DEFAULT_TOLERATION_SECONDS = 300  # Karmada's default for decisionConditions.tolerationSeconds
DEFAULT_GRACE_SECONDS = 600  # Karmada's default gracePeriodSeconds for Gracefully


class _Obj(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class ResourceSelectorModel(_Obj):
    api_version: str = Field(alias="apiVersion")
    kind: str
    name: str = ""
    namespace: str = ""
    label_selector: LabelSelectorModel | None = Field(default=None, alias="labelSelector")


class ReplicaSchedulingModel(_Obj):
    replica_scheduling_type: str = Field(default="Divided", alias="replicaSchedulingType")
    custom_scheduling_type: str | None = Field(default=None, alias="customSchedulingType")


class ClusterAffinityModel(_Obj):
    cluster_names: list[str] = Field(default_factory=list, alias="clusterNames")
    exclude: list[str] = Field(default_factory=list)
    # read only to refuse them: the fleet cannot honour them (policy_view holds the job)
    label_selector: Any = Field(default=None, alias="labelSelector")
    field_selector: Any = Field(default=None, alias="fieldSelector")


class PlacementModel(_Obj):
    cluster_affinity: ClusterAffinityModel | None = Field(default=None, alias="clusterAffinity")
    cluster_affinities: Any = Field(default=None, alias="clusterAffinities")  # refused too
    replica_scheduling: ReplicaSchedulingModel | None = Field(
        default=None, alias="replicaScheduling"
    )


class SuspensionModel(_Obj):
    scheduling: StrictBool = False


class DecisionConditionsModel(_Obj):
    toleration_seconds: Int32 | None = Field(default=None, alias="tolerationSeconds")


class ApplicationFailoverModel(_Obj):
    decision_conditions: DecisionConditionsModel = Field(
        default_factory=DecisionConditionsModel, alias="decisionConditions"
    )
    purge_mode: str = Field(default="Gracefully", alias="purgeMode")
    grace_period_seconds: Int32 | None = Field(default=None, alias="gracePeriodSeconds")


class FailoverModel(_Obj):
    application: ApplicationFailoverModel | None = None


class PolicySpec(_Obj):
    resource_selectors: list[ResourceSelectorModel] = Field(
        default_factory=list, alias="resourceSelectors"
    )
    placement: PlacementModel = Field(default_factory=PlacementModel)
    suspension: SuspensionModel | None = None
    failover: FailoverModel | None = None
    priority: Int32 = 0


class PropagationPolicyObj(_Obj):
    api_version: str = Field(alias="apiVersion")
    metadata: Meta
    spec: PolicySpec
    # set by the loader when only the selectors could be read: the jobs they select are held
    _unreadable: str | None = PrivateAttr(default=None)

    @property
    def unreadable(self) -> str | None:
        return self._unreadable


class SecretRefModel(_Obj):
    namespace: str = ""
    name: str


class ClusterSpec(_Obj):
    api_endpoint: str = Field(default="", alias="apiEndpoint")
    secret_ref: SecretRefModel | None = Field(default=None, alias="secretRef")
    insecure_skip_tls_verification: StrictBool = Field(
        default=False, alias="insecureSkipTLSVerification"
    )


class ClusterObj(_Obj):
    metadata: Meta
    spec: ClusterSpec = Field(default_factory=ClusterSpec)


class PodTemplateModel(_Obj):
    """Read whole from the raw object when pods are derived: only its shape is checked here."""

    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: dict[str, Any] = Field(default_factory=dict)


class ReplicaTemplate(_Obj):
    replicas: Int32 = 1
    template: PodTemplateModel = Field(default_factory=PodTemplateModel)


class HubElasticPolicy(_Obj):
    min_replicas: Int32 | None = Field(default=None, alias="minReplicas")
    max_replicas: Int32 | None = Field(default=None, alias="maxReplicas")


class HubPyTorchJobSpec(_Obj):
    pytorch_replica_specs: dict[str, ReplicaTemplate] = Field(
        default_factory=dict, alias="pytorchReplicaSpecs"
    )
    elastic_policy: HubElasticPolicy | None = Field(default=None, alias="elasticPolicy")


class HubPyTorchJobObj(_Obj):
    metadata: Meta
    spec: HubPyTorchJobSpec = Field(default_factory=HubPyTorchJobSpec)
