"""The simulated cluster: nodes, jobs and their pods, progress, checkpoints and the accounting.

Semantics (documented in benchmarks/README.md):

- a job makes progress only while its gang is complete: it runs at an allowed size (rigid: its
  requested pods; elastic: a power of two in [min, max]); a partial gang holds GPUs for nothing;
- progress accrues at ``Speedup.rate(GPUs)``; a job checkpoints every ``checkpoint_interval``
  seconds of progress since its last (re)start;
- losing pods from a complete gang (preemption, or scale-in) rolls the job back to its last
  checkpoint and counts one restart; the next run pays ``restart_overhead`` seconds of no progress;
- a scale-out is graceful (checkpoint, then restart bigger): no work lost, the overhead is paid;
- a resize of a running gang (it ran at an allowed size before and runs at another non-zero size
  after) starts the job's cooldown, as the controller's last-scale-time annotation does; resizes
  that happen while the cooldown is on are counted (scale-outs and scale-ins apart).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from solver_sched.domain.cluster import is_power_of_two
from solver_sched.sim.model import SimParams, TraceJob

NAMESPACE = "sim"  # the namespace of every simulated pod and job

EPS = 1e-9


class SimError(RuntimeError):
    """A policy asked for something impossible (bind onto a full node, evict a pending pod)."""


@dataclass
class JobRun:
    """A job's state during one simulation run. Sizes in pods."""

    spec: TraceJob
    min_pods: int  # effective for this run: rigid policies use the requested size for both
    max_pods: int
    pods: tuple[str, ...]  # pod names, keep order (scale-in evicts from the end)
    node_of: list[str | None] = field(default_factory=list)
    visible: bool = False
    done: float = 0.0  # work done (GPU-speed x seconds)
    saved: float = 0.0  # work at the last checkpoint
    since_checkpoint: float = 0.0  # seconds of progress since the last checkpoint
    overhead_left: float = 0.0
    first_start: float | None = None
    finish: float | None = None
    last_scale: float | None = None
    partial_since: float | None = None
    restarts: int = 0
    preemptions: int = 0
    scale_ins: int = 0
    scale_outs: int = 0
    outs_in_cooldown: int = 0
    ins_in_cooldown: int = 0
    partial_releases: int = 0
    lost_work: float = 0.0
    max_racks: int = 0  # the most racks its pods spanned at once (0 without racks)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def elastic(self) -> bool:
        return self.max_pods > self.min_pods

    @property
    def running(self) -> int:
        return sum(1 for n in self.node_of if n is not None)

    @property
    def active(self) -> bool:
        return self.visible and self.finish is None

    def allowed(self, size: int) -> bool:
        if not self.elastic:
            return size == self.min_pods
        return self.min_pods <= size <= self.max_pods and is_power_of_two(size)

    def allowed_sizes(self) -> tuple[int, ...]:
        return tuple(s for s in range(self.min_pods, self.max_pods + 1) if self.allowed(s))

    @property
    def progressing(self) -> bool:
        return self.allowed(self.running)

    def in_cooldown(self, now: float, cooldown: float) -> bool:
        return self.last_scale is not None and now < self.last_scale + cooldown

    def bound_pods(self) -> list[tuple[int, str]]:
        return [(i, n) for i, n in enumerate(self.node_of) if n is not None]


@dataclass
class Sample:
    """One cycle interval [t, t + interval): GPU averages and job counts."""

    t: float
    allocated: float
    useful: float
    running: int
    waiting: int


class SimState:
    """Everything a policy may read. Policies must not mutate it: they return decisions."""

    def __init__(self, jobs: Iterable[TraceJob], params: SimParams, elastic: bool) -> None:
        self.params = params
        self.nodes = tuple(f"node-{i:03d}" for i in range(params.nodes))
        self.capacity = {n: params.gpus_per_node for n in self.nodes}
        per = params.rack_nodes
        self.rack = {n: f"r{i // per:02d}" for i, n in enumerate(self.nodes)} if per else {}
        self.free = dict(self.capacity)
        self.jobs: dict[str, JobRun] = {}
        self.pod_job: dict[str, tuple[JobRun, int]] = {}
        for spec in jobs:
            if elastic and spec.elastic:
                lo, hi = spec.min_pods, spec.max_pods
            else:
                lo = hi = spec.pods
            names = tuple(f"{NAMESPACE}/{spec.name}-{i}" for i in range(hi))
            run = JobRun(spec, lo, hi, names, [None] * hi)
            self.jobs[spec.name] = run
            for i, p in enumerate(names):
                self.pod_job[p] = (run, i)
        self.samples: list[Sample] = []

    @property
    def cooldown(self) -> float:
        return self.params.cooldown.total_seconds()

    def active(self) -> Iterator[JobRun]:
        """Visible, unfinished jobs, by arrival then name."""
        return (j for j in self.jobs.values() if j.active)

    def waiting(self) -> Iterator[JobRun]:
        return (j for j in self.active() if j.running == 0)

    # -- decisions ------------------------------------------------------------------------------

    def apply(self, binds: Iterable[tuple[str, str]], evictions: Iterable[str], now: float) -> bool:
        """Evictions first, then binds, then the per-job consequences; True if anything changed."""
        before = {name: j.running for name, j in self.jobs.items() if j.active}
        touched: set[str] = set()
        for pod in evictions:
            job, i = self._pod(pod)
            node = job.node_of[i]
            if node is None:
                raise SimError(f"evict {pod}: not running")
            job.node_of[i] = None
            self.free[node] += job.spec.gpus_per_pod
            touched.add(job.name)
        for pod, node in binds:
            job, i = self._pod(pod)
            if not job.active or job.node_of[i] is not None:
                raise SimError(f"bind {pod}: not a pending pod of a live job")
            if node not in self.free or self.free[node] < job.spec.gpus_per_pod:
                raise SimError(f"bind {pod} -> {node}: not enough free GPUs")
            job.node_of[i] = node
            self.free[node] -= job.spec.gpus_per_pod
            touched.add(job.name)
        for name in sorted(touched):
            self._changed(self.jobs[name], before.get(name, 0), now)
            self.jobs[name].max_racks = max(self.jobs[name].max_racks, self.racks(self.jobs[name]))
        return bool(touched)

    def _pod(self, pod: str) -> tuple[JobRun, int]:
        if pod not in self.pod_job:
            raise SimError(f"unknown pod {pod}")
        return self.pod_job[pod]

    def _changed(self, job: JobRun, before: int, now: float) -> None:
        after = job.running
        was_ok, is_ok = job.allowed(before), job.allowed(after)
        if after > 0 and not is_ok:
            job.partial_since = job.partial_since if job.partial_since is not None else now
        else:
            job.partial_since = None
        if was_ok and after != before and after > 0:  # a resize of a running gang
            if job.in_cooldown(now, self.cooldown):
                if after > before:
                    job.outs_in_cooldown += 1
                else:
                    job.ins_in_cooldown += 1
            job.last_scale = now
        if after < before:
            if was_ok:  # the gang loses pods: back to its last checkpoint
                job.lost_work += job.done - job.saved
                job.done = job.saved
                job.since_checkpoint = 0.0
                job.restarts += 1
                job.overhead_left = self.params.restart_overhead
                if is_ok:
                    job.scale_ins += 1
                else:
                    job.preemptions += 1
            else:
                job.partial_releases += 1
        elif after > before and is_ok:
            if was_ok:  # graceful scale-out
                job.saved = job.done
                job.since_checkpoint = 0.0
                job.overhead_left = self.params.restart_overhead
                job.scale_outs += 1
            elif job.first_start is None:
                job.first_start = now
                job.since_checkpoint = 0.0

    # -- time -----------------------------------------------------------------------------------

    def advance(self, t0: float, t1: float) -> list[JobRun]:
        """Run every job from t0 to t1; returns the jobs that finished (at their exact time)."""
        finished = []
        alloc = useful = 0.0
        running = waiting = 0
        for job in list(self.active()):
            n = job.running
            if n == 0:
                waiting += 1
                continue
            running += 1
            gpus = n * job.spec.gpus_per_pod
            end = t1
            if job.progressing:
                end = self._progress(job, t0, t1, gpus)
                useful += gpus * (end - t0)
            alloc += gpus * (end - t0)
            if job.finish is not None:
                finished.append(job)
                for i, node in job.bound_pods():
                    self.free[node] += job.spec.gpus_per_pod
                    job.node_of[i] = None
        span = max(EPS, t1 - t0)
        self.samples.append(Sample(t0, alloc / span, useful / span, running, waiting))
        return finished

    def _progress(self, job: JobRun, t0: float, t1: float, gpus: int) -> float:
        """Progress from t0 to t1 (overhead first, checkpoints on the way); returns the end time
        (the finish time when the job completes inside the interval)."""
        p = self.params
        rate = p.speedup.rate(gpus, job.spec.gpus) / p.slowdown(self.racks(job))
        t = t0
        wait = min(job.overhead_left, t1 - t)
        job.overhead_left -= wait
        t += wait
        work = job.spec.work
        if rate > 0 and job.done + rate * (t1 - t) >= work - EPS:
            job.finish = t + max(0.0, work - job.done) / rate
            job.done = work
            return job.finish
        while t < t1 - EPS and rate > 0:
            step = min(t1 - t, p.checkpoint_interval - job.since_checkpoint)
            job.done += rate * step
            job.since_checkpoint += step
            t += step
            if job.since_checkpoint >= p.checkpoint_interval - EPS:
                job.saved = job.done
                job.since_checkpoint = 0.0
        return t1

    def racks(self, job: JobRun) -> int:
        """Racks the job's bound pods span (0 without racks)."""
        return len({self.rack[node] for _, node in job.bound_pods()}) if self.rack else 0

    # -- wake-ups -------------------------------------------------------------------------------

    def next_wake(self, after: float) -> float | None:
        """The earliest time after ``after`` at which a policy might act without any event: a
        cooldown that ends, or a partial gang that reaches its timeout."""
        times = []
        for job in self.active():
            if job.elastic and job.last_scale is not None and job.running:
                end = job.last_scale + self.cooldown
                if end > after:
                    times.append(end)
            if job.partial_since is not None:
                end = job.partial_since + self.params.partial_timeout
                if end > after:
                    times.append(end)
        return min(times, default=None)
