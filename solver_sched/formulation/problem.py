"""Problem: what the solver sees. Pure data derived from one snapshot for one cycle.

Identical nodes are grouped into classes and identical pods into shapes, so the model's size grows
with the number of *distinct* node states and jobs, not with the node count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from solver_sched.domain.affinity import NodeConstraints
from solver_sched.domain.cluster import Pod
from solver_sched.domain.resources import Resources
from solver_sched.domain.topology import Ask, Topology


@dataclass(frozen=True, slots=True)
class NodeClass:
    """Nodes that look alike to every pending pod: cluster, relevant labels, taints, free."""

    id: int
    cluster: str
    nodes: tuple[str, ...]
    free: Resources  # per node, at the start of the cycle
    gpus_free: int  # per node; drives the packing term


@dataclass(frozen=True, slots=True)
class Shape:
    """Pending pods with the same requests and node constraints."""

    id: int
    requests: Resources
    constraints: NodeConstraints
    fit: Mapping[int, int]  # class id -> upper bound on pods of this shape the class can hold


@dataclass(frozen=True, slots=True)
class SizeOption:
    """Running the job at ``size`` pods (0 = not at all), and what that takes."""

    size: int
    new: Mapping[int, int]  # shape id -> pending pods to bind
    released: Mapping[int, Resources]  # class id -> resources freed by evicting running pods
    usage: Resources  # the job's quota usage at this size
    guaranteed_units: int  # value units of the guaranteed part placed (0 or all of them)
    guaranteed_gpus: int  # GPUs of the guaranteed part placed (for the queue-min term)
    elastic_units: int  # value units above the minimum
    evicted: int  # running pods evicted to reach this size


@dataclass(frozen=True, slots=True)
class JobModel:
    name: str
    queue: str
    queue_chain: tuple[str, ...]
    priority: int
    tier_weight: int
    waiting_hours: int
    current: int  # bound pods now
    options: tuple[SizeOption, ...]  # options[0] is always size 0
    starting: bool  # placing it starts a guaranteed gang (it is not running at an allowed size)
    running_ok: bool  # running at an allowed size now
    clusters: tuple[str, ...]  # clusters it may use
    break_needs: tuple[str, ...] = ()  # trigger keys: breaking it needs one of these to start
    shrink_needs_start: bool = True  # scaling in needs some guaranteed gang to start
    # start bonuses of its tier that breaking it withholds (formulation/start_bonus.py)
    withholds: int = 0
    preempts: bool = True  # may fire priority preemption (its preemptionPolicy is not Never)
    tie: int = 0  # weight in the objective's tie band: 1 when nominated (formulation/ties.py)
    created: float | None = None  # creation time (POSIX seconds): orders identical jobs
    # a counted type of interchangeable pending jobs (formulation/aggregate.py): its members,
    # longest waiting first, and (hours, members) per waiting hour, hours descending
    count: int = 1
    members: tuple[str, ...] = ()
    waiting_buckets: tuple[tuple[int, int], ...] = ()
    # size -> option index, built on first use: greedy and the packer look sizes up hundreds of
    # thousands of times, for a fraction of the jobs
    _index: dict[int, int] | None = field(default=None, init=False, repr=False, compare=False)

    def option_index(self, size: int) -> int | None:
        """Index of the option for this size (None: not an option, e.g. a partial size now)."""
        index = self._index
        if index is None:
            index = {}
            for k, o in enumerate(self.options):
                index.setdefault(o.size, k)  # the first option of a size, as a scan finds it
            object.__setattr__(self, "_index", index)
        return index.get(size)

    def option(self, size: int) -> SizeOption | None:
        k = self.option_index(size)
        return None if k is None else self.options[k]

    def held_at(self, size: int) -> SizeOption | None:
        """The option whose usage the job holds, at size, for the members of a quota row that
        may not break it (rule 3b): broken (size 0), it still holds its smallest size."""
        if size == 0 and self.break_needs and self.running_ok:
            return min(self.options[1:], key=lambda o: o.size, default=self.options[0])
        return self.option(size)

    def guaranteed_gpus_at(self, size: int) -> int:
        """GPUs of the guaranteed part at size (0 below the min or at a size that is no option)."""
        o = self.option(size)
        return o.guaranteed_gpus if o is not None else 0


@dataclass(frozen=True, slots=True)
class QuotaRow:
    """One queue of the tree (leaf or ancestor) with the limits this cycle must keep."""

    queue: str
    jobs: tuple[int, ...]  # indices into Problem.jobs
    cap: Resources  # usage of the member jobs must stay <= cap (max minus fixed usage)
    floor: Resources  # and >= floor (reclaim never pushes a borrowing queue below its min)
    jobs_cap: int | None  # running member jobs <= jobs_cap
    fixed: Resources = field(default_factory=dict)  # usage held by pods outside the model
    min_gpus: int = 0  # GPUs of the queue's min that member jobs can still cover (leaves only)
    # Rule 3b (rules/quota.py): member gangs a start may break, and the member starts that may
    # break one of them. What such a break frees in this row is theirs: every other member sees
    # a broken one at its smallest size. Empty where no other member could grow into it.
    breakable: tuple[int, ...] = ()
    licensed: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Problem:
    classes: tuple[NodeClass, ...]
    shapes: tuple[Shape, ...]
    jobs: tuple[JobModel, ...]
    quotas: tuple[QuotaRow, ...]
    resources: tuple[str, ...]  # resources that pending pods request
    class_capacity: Mapping[int, Resources]  # free summed over the class's nodes
    triggers: Mapping[str, tuple[int, ...]]  # trigger key -> starting jobs that fire it
    clusters: tuple[str, ...]
    band: int  # multiplier of the guaranteed band (> largest elastic band)
    gang_break: int
    gang_start: int  # extra guaranteed units per gang started (times its tier weight)
    elastic_weight: int
    eviction_weight: int
    packing_weight: int
    waiting_weight: int
    quota_min_weight: int
    shape_of: Mapping[str, int] = field(default_factory=dict)  # pending pod -> shape id
    class_of: Mapping[str, int] = field(default_factory=dict)  # schedulable node -> class id
    reasons: Mapping[str, str] = field(default_factory=dict)  # static reasons found while preparing
    shielded: Mapping[str, str] = field(default_factory=dict)  # job -> its victims' budgets note
    tie_band: int = 1  # multiplier of the real objective above the tie band (1: no ties)
    too_large: str | None = None  # set when the objective would overflow: solvers are skipped
    # running pods in the order they are kept, for jobs whose scale-in order is not keep order
    running_order: Mapping[str, tuple[Pod, ...]] = field(default_factory=dict)
    topology: Topology = field(default_factory=Topology)  # the levels this cycle uses
    asks: Mapping[str, Ask] = field(default_factory=dict)  # job -> its resolved request
    topology_note: str | None = None  # why the config's topology could not be used
    # class id -> level key -> the class's domain there (classes never straddle a domain)
    class_domain: Mapping[int, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    held: Mapping[str, frozenset[tuple[str, ...] | None]] = field(default_factory=dict)  # job ->
    # the domains (at its level) its running pods are in, for jobs with a request
    # required gang whose running pods are not in one domain -> the sizes > 0 it may end at
    split: Mapping[str, frozenset[int]] = field(default_factory=dict)
    free_domains: tuple[tuple[str, tuple[str, ...], int], ...] = ()  # (level, domain, GPUs) free
    spread_weight: int = 0
    fragmentation_weight: int = 0
