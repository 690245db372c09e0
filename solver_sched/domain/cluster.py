"""Nodes, pods and jobs (gangs) as the core sees them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from solver_sched.domain.affinity import NodeConstraints, Taint
from solver_sched.domain.resources import Resources
from solver_sched.domain.topology import TopologyRequest

DEFAULT_CLUSTER = "default"


class SizePolicy(StrEnum):
    ANY = "any"
    POWER_OF_TWO = "power-of-two"


class PodPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    allocatable: Resources
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    cluster: str = DEFAULT_CLUSTER
    invalid: str | None = None  # why the node takes nothing (e.g. unparsable allocatable)

    @property
    def schedulable(self) -> bool:
        return not self.unschedulable and self.invalid is None


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod (``name`` is ``namespace/name``); ``order`` ranks it in its job, lower kept longer."""

    name: str
    namespace: str
    requests: Resources
    job: str
    scheduler_name: str = "solver-sched"
    node_name: str | None = None
    phase: PodPhase = PodPhase.PENDING
    priority: int = 0
    constraints: NodeConstraints = field(default_factory=NodeConstraints)
    order: tuple[int, int, str] = (0, 0, "")
    created: datetime | None = None
    cluster: str = DEFAULT_CLUSTER
    invalid: str | None = None  # e.g. unparsable requests: its job is not planned
    terminating: bool = False  # deletionTimestamp set: still holds its node, no longer a member
    uid: str = ""  # tells a pod from a later one of the same name
    # status.nominatedNodeName: room was made for this pod by evictions (its job is nominated:
    # it keeps the room next cycle unless something of higher value arrives)
    nominated: str | None = None
    topology: TopologyRequest | None = None  # from Kueue's pod-set annotations
    unread: bool = False  # its requests could not be read: what its node has free is unknown
    # spec.schedulingGates (e.g. Kueue's admission gate): no scheduler may bind it until they are
    # removed (the API server refuses the binding), so it waits outside the plan
    gated: tuple[str, ...] = ()
    preempts: bool = True  # spec.preemptionPolicy is not Never
    ready: bool = False  # condition Ready: a PodDisruptionBudget counts it healthy
    # what the pod holds on its node that no other pod may hold there too (domain/claims.py)
    claims: tuple[str, ...] = ()

    @property
    def terminated(self) -> bool:
        return self.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED)

    @property
    def bound(self) -> bool:
        """Holds node capacity: assigned to a node and not finished."""
        return self.node_name is not None and not self.terminated

    @property
    def waiting(self) -> bool:
        return self.node_name is None and not self.terminated and not self.terminating


@dataclass(frozen=True, slots=True)
class Job:
    """The gang: the unit of all-or-nothing placement and of eviction.

    ``pods`` lists its live pods (not Succeeded/Failed) in keep order: the first ``min_pods`` are
    the guaranteed part, the rest elastic; scale-in evicts from the end.
    """

    name: str  # namespace/group
    namespace: str
    pods: tuple[str, ...]
    min_pods: int = 1
    max_pods: int = 1
    size_policy: SizePolicy = SizePolicy.ANY
    priority: int = 0
    # preemptionPolicy Never (its pods', or its PodGroup's PriorityClass): as in Kubernetes it
    # never breaks running gangs for its priority (it still waits ahead of lower priorities)
    preempts: bool = True
    queue: str = ""
    cooldown: timedelta = timedelta(minutes=10)
    last_scale_time: datetime | None = None
    created: datetime | None = None
    source: str = ""  # the object that defined the gang, e.g. "PodGroup default/x"
    cluster: str | None = None  # pinned cluster (fleet); None = any
    invalid: str | None = None  # why the job cannot be planned (names object and field)
    schedule_timeout: timedelta = timedelta(seconds=60)  # a partial gang is rolled back after it
    succeeded: int = 0  # members that finished: the gang is completing and is left alone
    topology: TopologyRequest | None = None  # where its pods must (or should) sit together
    # how many of its running pods its PodDisruptionBudgets let go at once (None: no budget
    # limits it); the plan never shrinks it by more, as the Eviction API would refuse
    disruptions: int | None = None

    def kept_whole(self, running: int) -> bool:
        """Whether its PodDisruptionBudgets refuse evicting all of its ``running`` pods: no plan
        breaks it (formulation rule 6b)."""
        return self.disruptions is not None and self.disruptions < running

    @property
    def elastic(self) -> bool:
        return self.max_pods > self.min_pods

    def allowed_sizes(self) -> tuple[int, ...]:
        """Sizes the job may run at: [min, min(max, pods that exist)], powers of two if asked."""
        top = min(self.max_pods, len(self.pods))
        sizes = range(self.min_pods, top + 1)
        if self.size_policy is SizePolicy.POWER_OF_TWO:
            return tuple(s for s in sizes if s & (s - 1) == 0)
        return tuple(sizes)

    def cooldown_until(self) -> datetime | None:
        if self.last_scale_time is None:
            return None
        try:
            return self.last_scale_time + self.cooldown
        except OverflowError:  # past year 9999: for as long as anyone will run this
            return datetime.max.replace(tzinfo=self.last_scale_time.tzinfo)


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0
