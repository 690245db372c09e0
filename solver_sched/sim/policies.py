"""Scheduling policies inside the simulator. Each one reads the ``SimState`` at a cycle boundary and
returns ``Decisions`` (binds and evictions of pods); the simulator applies them.

- ``per-pod``: what the default kube-scheduler does. Pods are queued by (priority, creation time)
  and placed one by one on the feasible node with the most free GPUs (LeastAllocated). No gangs: a
  job whose pods do not all fit holds the GPUs it got without progress. Its pods give up after
  ``partial_timeout`` (a rendezvous timeout): they are deleted and recreated at the back of the
  queue, and not placed again in the same cycle (crash back-off). Elastic jobs run rigid.
- ``fifo``: greedy gang FIFO with backfill (Volcano-like). Waiting jobs in (priority, arrival)
  order; a job starts when its whole gang fits (best fit: the node with the fewest free GPUs that
  fits, keeping whole nodes free); later jobs backfill when they fit; nothing running is ever
  preempted; elastic jobs run at their requested size.
- ``elastic``: greedy elastic. Waiting jobs in (priority, arrival) order start at their min
  (rigid jobs at their size); if the min does not fit, running elastic jobs are shrunk one
  power-of-two step at a time, the largest first, until it fits (else nothing changes). Then every
  running elastic job out of its cooldown grows to the largest power of two up to its max that
  fits, in arrival order.
- ``solver-sched``: the real core, ``cycle.run_cycle``, on a ``ClusterSnapshot`` built directly
  from domain objects each cycle (no YAML, no pydantic).
- ``kueue-bestfit``, ``volcano-tiers`` (with racks, ``SimParams.rack_nodes``): the topology
  baselines of solvers/topology_baselines.py on the same snapshot, rigid, preempting nothing.

With racks, the snapshot's nodes carry a rack label (and a Kueue ``Topology`` of rack and
hostname), and every multi-pod gang prefers one rack (Kueue's preferred annotation), so
solver-sched and the baselines place by topology; the simulator slows spread gangs down
(sim/model.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from solver_sched.config.schema import SchedulerConfig
from solver_sched.cycle import BACKENDS, run_cycle
from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Job, Node, Pod, PodPhase, SizePolicy
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.domain.topology import HOSTNAME, Mode, Topology, TopologyRequest
from solver_sched.sim.state import NAMESPACE, JobRun, SimState
from solver_sched.solvers.topology_baselines import BASELINES

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
POLICIES = ("per-pod", "fifo", "elastic", "solver-sched")
REFERENCE_POLICIES = ("sjf-oracle",)  # knows the future; not part of ``all``
TOPOLOGY_POLICIES = tuple(BASELINES)  # with racks only; not part of ``all``
RACK_LABEL = "topology.solver-sched.io/rack"
RACKS = Topology((RACK_LABEL, HOSTNAME), "simulator")
PREFER_RACK = TopologyRequest(Mode.PREFERRED, key=RACK_LABEL, source="simulator")


@dataclass
class Decisions:
    binds: list[tuple[str, str]] = field(default_factory=list)  # (pod, node)
    evictions: list[str] = field(default_factory=list)
    solver_seconds: float | None = None  # the solver's own time, where there is a solver
    rejected: bool = False  # solver-sched: no candidate plan passed the checker

    @property
    def empty(self) -> bool:
        return not self.binds and not self.evictions


class Policy(Protocol):
    name: str
    elastic: bool  # False: every job runs rigid at its requested size

    def plan(self, state: SimState, now: float) -> Decisions: ...


def _order(jobs: Iterable[JobRun]) -> list[JobRun]:
    return sorted(jobs, key=lambda j: (-j.spec.priority, j.spec.arrival, j.name))


class _Free:
    """A working copy of free GPUs per node, with best-fit placement."""

    def __init__(self, free: dict[str, int]) -> None:
        self.free = dict(free)

    def count(self, per_pod: int) -> int:
        return sum(f // per_pod for f in self.free.values())

    def best_fit(self, pods: list[str], per_pod: int) -> list[tuple[str, str]] | None:
        """Each pod onto the node with the fewest free GPUs that holds it; None if not all fit
        (then nothing is taken)."""
        if self.count(per_pod) < len(pods):
            return None
        out = []
        for pod in pods:
            node = min(
                (n for n, f in self.free.items() if f >= per_pod),
                key=lambda n: (self.free[n], n),
            )
            self.free[node] -= per_pod
            out.append((pod, node))
        return out


def _pending(job: JobRun, size: int) -> list[str]:
    """The pods a job binds to grow from its current size to ``size`` (keep order)."""
    need = size - job.running
    return [p for p, n in zip(job.pods, job.node_of, strict=True) if n is None][:need]


class PerPodPolicy:
    name = "per-pod"
    elastic = False

    def __init__(self) -> None:
        self.queued_at: dict[str, float] = {}

    def plan(self, state: SimState, now: float) -> Decisions:
        d = Decisions()
        free = dict(state.free)
        backoff: set[str] = set()
        timeout = state.params.partial_timeout
        for job in state.active():
            if job.partial_since is not None and now - job.partial_since >= timeout:
                for i, node in job.bound_pods():
                    d.evictions.append(job.pods[i])
                    free[node] += job.spec.gpus_per_pod
                backoff.add(job.name)
                self.queued_at[job.name] = now
        jobs = sorted(
            (j for j in state.active() if j.name not in backoff),
            key=lambda j: (-j.spec.priority, self.queued_at.get(j.name, j.spec.arrival), j.name),
        )
        for job in jobs:
            per = job.spec.gpus_per_pod
            for pod, at in zip(job.pods, job.node_of, strict=True):
                if at is not None:
                    continue
                fits = [n for n, f in free.items() if f >= per]
                if not fits:
                    break
                target = max(fits, key=lambda n: (free[n], n))
                free[target] -= per
                d.binds.append((pod, target))
        return d


class GangFifoPolicy:
    name = "fifo"
    elastic = False

    def plan(self, state: SimState, now: float) -> Decisions:
        d = Decisions()
        free = _Free(state.free)
        for job in self.order(state.waiting()):
            placed = free.best_fit(_pending(job, job.min_pods), job.spec.gpus_per_pod)
            if placed:
                d.binds += placed
        return d

    def order(self, waiting: Iterable[JobRun]) -> list[JobRun]:
        return _order(waiting)


class OracleSjfPolicy(GangFifoPolicy):
    """A reference, not a peer: gang FIFO's backfill in order of each job's work (GPUs x
    duration), smallest first, which no real scheduler knows. It tells how much of a JCT target
    knowing every duration would buy a gang scheduler that never preempts (the trace study's
    ``sjf-oracle``); ``sim/bounds.py`` bounds what any scheduler could do."""

    name = "sjf-oracle"

    def order(self, waiting: Iterable[JobRun]) -> list[JobRun]:
        return sorted(waiting, key=lambda j: (-j.spec.priority, j.spec.work, j.spec.arrival))


class GreedyElasticPolicy:
    name = "elastic"
    elastic = True

    def plan(self, state: SimState, now: float) -> Decisions:
        d = Decisions()
        free = _Free(state.free)
        size = {j.name: j.running for j in state.active()}
        evicted: dict[str, list[str]] = {}  # job -> pods evicted this cycle
        shrunk: set[str] = set()
        for job in _order(state.waiting()):
            per = job.spec.gpus_per_pod
            want = _pending(job, job.min_pods)
            placed = free.best_fit(want, per)
            if placed is None:
                placed = self._shrink_for(state, job, free, size, evicted, shrunk)
            if placed is not None:
                d.binds += placed
                size[job.name] = job.min_pods
        binding = {pod for pod, _ in d.binds}
        for job in _order(state.active()):
            if not job.elastic or size[job.name] == 0 or job.name in shrunk:
                continue
            if job.running and job.in_cooldown(now, state.cooldown):
                continue
            pods = [
                p
                for p, n in zip(job.pods, job.node_of, strict=True)
                if n is None and p not in binding
            ]
            for s in sorted(job.allowed_sizes(), reverse=True):
                if s <= size[job.name]:
                    break
                placed = free.best_fit(pods[: s - size[job.name]], job.spec.gpus_per_pod)
                if placed:
                    d.binds += placed
                    size[job.name] = s
                    break
        d.evictions = [p for pods in evicted.values() for p in pods]
        return d

    def _shrink_for(
        self,
        state: SimState,
        job: JobRun,
        free: _Free,
        size: dict[str, int],
        evicted: dict[str, list[str]],
        shrunk: set[str],
    ) -> list[tuple[str, str]] | None:
        """Halve running elastic jobs (largest first) until ``job``'s min fits. Works on a trial
        copy and commits it only when the min fits; otherwise nothing changes."""
        trial = _Free(free.free)
        cut: dict[str, int] = {}  # victim -> its size in the trial
        gone: dict[str, list[str]] = {}  # victim -> pods the trial evicts
        want = _pending(job, job.min_pods)
        candidates = [v for v in state.active() if v.elastic and v.running and v.name != job.name]

        def trial_size(v: JobRun) -> int:
            return cut.get(v.name, size[v.name])

        while True:
            victims = [v for v in candidates if trial_size(v) > v.min_pods]
            if not victims:
                return None
            v = max(victims, key=lambda v: (trial_size(v) * v.spec.gpus_per_pod, v.spec.arrival))
            now_size = trial_size(v)
            smaller = max(s for s in v.allowed_sizes() if s < now_size)
            for i in range(smaller, now_size):
                node = v.node_of[i]
                if node is not None:
                    trial.free[node] += v.spec.gpus_per_pod
                    gone.setdefault(v.name, []).append(v.pods[i])
            cut[v.name] = smaller
            placed = trial.best_fit(want, job.spec.gpus_per_pod)
            if placed is not None:
                free.free = trial.free
                size.update(cut)
                shrunk.update(cut)
                for name, pods in gone.items():
                    evicted.setdefault(name, []).extend(pods)
                return placed


class SnapshotBuilder:
    """SimState -> ClusterSnapshot from domain objects, caching pods and jobs between cycles."""

    def __init__(self, state: SimState) -> None:
        self.racks = bool(state.rack)
        self.nodes = {
            n: Node(
                name=n,
                allocatable={res.GPU: state.capacity[n]},
                labels={RACK_LABEL: state.rack[n], HOSTNAME: n} if self.racks else {},
            )
            for n in state.nodes
        }
        self.cooldown = state.params.cooldown
        self._pods: dict[tuple[str, str | None], Pod] = {}
        self._jobs: dict[tuple[str, float | None], Job] = {}

    def snapshot(self, state: SimState) -> ClusterSnapshot:
        pods: dict[str, Pod] = {}
        jobs: dict[str, Job] = {}
        old_pods, old_jobs = self._pods, self._jobs
        self._pods, self._jobs = {}, {}  # keep only what this cycle uses: finished jobs drop out
        for job in state.active():
            for i, (name, node) in enumerate(zip(job.pods, job.node_of, strict=True)):
                pods[name] = self._pod(job, i, name, node, old_pods)
            key = f"{NAMESPACE}/{job.name}"
            jobs[key] = self._job(job, key, old_jobs)
        topologies = {"default": RACKS} if self.racks else {}
        return ClusterSnapshot(nodes=self.nodes, pods=pods, jobs=jobs, topologies=topologies)

    def _pod(
        self,
        job: JobRun,
        i: int,
        name: str,
        node: str | None,
        cache: dict[tuple[str, str | None], Pod],
    ) -> Pod:
        pod = cache.get((name, node))
        if pod is None:
            pod = Pod(
                name=name,
                namespace=NAMESPACE,
                requests={res.GPU: job.spec.gpus_per_pod},
                job=f"{NAMESPACE}/{job.name}",
                node_name=node,
                phase=PodPhase.RUNNING if node else PodPhase.PENDING,
                priority=job.spec.priority,
                order=(0, i, name),
                created=EPOCH + timedelta(seconds=job.spec.arrival),
            )
        self._pods[(name, node)] = pod
        return pod

    def _job(self, job: JobRun, key: str, cache: dict[tuple[str, float | None], Job]) -> Job:
        cached = cache.get((job.name, job.last_scale))
        if cached is None:
            cached = Job(
                name=key,
                namespace=NAMESPACE,
                pods=job.pods,
                min_pods=job.min_pods,
                max_pods=job.max_pods,
                size_policy=SizePolicy.POWER_OF_TWO if job.elastic else SizePolicy.ANY,
                priority=job.spec.priority,
                queue=job.spec.queue,
                cooldown=self.cooldown,
                last_scale_time=(
                    EPOCH + timedelta(seconds=job.last_scale)
                    if job.last_scale is not None
                    else None
                ),
                created=EPOCH + timedelta(seconds=job.spec.arrival),
                source=f"trace job {job.name}",
                topology=PREFER_RACK if self.racks and len(job.pods) > 1 else None,
            )
        self._jobs[(job.name, job.last_scale)] = cached
        return cached


class _OnSnapshot:
    """A policy that plans on the ``ClusterSnapshot`` of the state (built once, then updated)."""

    _builder: SnapshotBuilder | None = None

    def _snapshot(self, state: SimState) -> ClusterSnapshot:
        if self._builder is None:
            self._builder = SnapshotBuilder(state)
        return self._builder.snapshot(state)


class SolverSchedPolicy(_OnSnapshot):
    """The real core: one ``run_cycle`` per simulated cycle."""

    elastic = True

    def __init__(
        self,
        config: SchedulerConfig | None = None,
        backend: str = "cpsat",
        time_limit: float = 2.0,
        name: str = "solver-sched",
    ) -> None:
        self.config = config or SchedulerConfig()
        self.backend = backend
        self.time_limit = time_limit
        self.name = name

    def plan(self, state: SimState, now: float) -> Decisions:
        snap = self._snapshot(state)
        result = run_cycle(
            snap, self.config, EPOCH + timedelta(seconds=now), self.backend, self.time_limit
        )
        binds = [(b.pod, b.node) for b in result.plan.binds]
        evictions = [p for e in result.plan.evictions for p in e.pods]
        solver = result.stats.seconds if self.backend != "greedy" else 0.0
        return Decisions(binds, evictions, solver, bool(result.violations))


class TopologyBaselinePolicy(_OnSnapshot):
    """A topology baseline (Kueue TAS BestFit, Volcano tiers) on the cycle's snapshot: pending
    gangs one at a time, rigid, nothing preempted."""

    elastic = False

    def __init__(self, name: str) -> None:
        self.name = name

    def plan(self, state: SimState, now: float) -> Decisions:
        plan = BASELINES[self.name](self._snapshot(state), RACKS)
        return Decisions([(b.pod, b.node) for b in plan.binds], [])


def parse_policies(text: str) -> list[str]:
    """A comma-separated list of policy names (``solver-sched:<backend>`` allowed), where ``all``
    stands for every standard policy (``all,solver-sched:greedy`` adds greedy's); duplicates are
    kept once, in order."""
    names: list[str] = []
    for p in (p.strip() for p in text.split(",")):
        for n in POLICIES if p == "all" else (p,) if p else ():
            if n not in names:
                names.append(n)
    for n in names:
        if n not in (*POLICIES, *REFERENCE_POLICIES, *TOPOLOGY_POLICIES) and not (
            n.startswith("solver-sched:") and n.split(":", 1)[1] in BACKENDS
        ):
            raise ValueError(f"unknown policy {n!r}; choose from {', '.join(POLICIES)}")
    return names


def make_policy(
    name: str,
    config: SchedulerConfig | None = None,
    backend: str = "cpsat",
    time_limit: float = 2.0,
) -> Policy:
    if name == "per-pod":
        return PerPodPolicy()
    if name == "fifo":
        return GangFifoPolicy()
    if name == "elastic":
        return GreedyElasticPolicy()
    if name == "sjf-oracle":
        return OracleSjfPolicy()
    if name == "solver-sched":
        return SolverSchedPolicy(config, backend, time_limit)
    if name in TOPOLOGY_POLICIES:
        return TopologyBaselinePolicy(name)
    if name.startswith("solver-sched:"):  # e.g. solver-sched:greedy, solver-sched:milp
        backend = name.split(":", 1)[1]
        return SolverSchedPolicy(config, backend, time_limit, name=name)
    raise ValueError(f"unknown policy {name!r}; choose from {', '.join(POLICIES)}")
