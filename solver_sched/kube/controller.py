"""The secondary scheduler: watch -> snapshot -> run_cycle -> actuate -> report, a cycle at a time.

A scheduling cycle runs every ``cycle_interval`` seconds and soon after any watched change
(debounced); the loop is a single thread, so two cycles never overlap. It decides and evicts; the
binds go to the binding cycle (kube/binder.py) and the status writes to the reporter
(kube/reporter.py), each on its own threads and rate-limit budget, so neither holds up the next
decision. Only the leader acts, and every write is fenced on its lease; ``--dry-run`` plans and
reports without writing.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from http.server import ThreadingHTTPServer

from solver_sched.config.schema import SchedulerConfig
from solver_sched.cycle import CycleResult, run_cycle
from solver_sched.domain.plan import JobOutcome, Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.kube.actuator import Actuator, Outcome
from solver_sched.kube.api import ApiError, KubeApi, RateLimiter, load_client
from solver_sched.kube.assume import Assumed
from solver_sched.kube.binder import GangResult
from solver_sched.kube.configsource import ConfigSource
from solver_sched.kube.informer import Informer
from solver_sched.kube.leader import LeaderElector
from solver_sched.kube.reporter import Reporter
from solver_sched.kube.resources import CONFIG_MAPS, WATCHED, Resource
from solver_sched.kube.snapshotter import live_pods, stamps_seen, take_snapshots
from solver_sched.kube.status import StatusWriter, rfc3339
from solver_sched.kube.store import ObjectStore
from solver_sched.metrics import Metrics, reason_class, serve

log = logging.getLogger(__name__)


@dataclass
class RunOptions:
    kubeconfig: str | None = None
    scheduler_name: str | None = None  # None: the config's settings.schedulerName
    namespace: str = "solver-sched"
    config_map: str = "solver-sched-config"
    cycle_interval: float = 10.0
    debounce: float = 0.5
    leader_elect: bool = False
    lease_name: str = "solver-sched"
    identity: str = field(default_factory=socket.gethostname)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    metrics_addr: str | None = None
    dry_run: bool = False
    qps: float = 50.0  # binds and evictions
    burst: int = 100
    status_qps: float = 20.0  # conditions, Events, PodGroup status: a budget of their own
    status_burst: int = 50
    bind_workers: int = 16
    eviction_grace_seconds: int | None = None
    discovery_interval: float = 30.0


class ActingClock:
    """Seconds in which this replica could act: it led, and the API server answered. A gang's
    timeout is measured on this clock, so an outage or a standby stretch never ages a gang that
    could still have been completed (client-go's timers have no such notion)."""

    def __init__(self, api: KubeApi, leading_since: Callable[[], float | None]) -> None:
        self.api, self.leading_since = api, leading_since
        self.seconds = 0.0
        self._last = time.monotonic()

    def read(self) -> float:
        now = time.monotonic()
        up, lead = self.api.health.up_since(), self.leading_since()
        if up is not None and lead is not None:
            self.seconds += max(0.0, now - max(self._last, up, lead))
        self._last = now
        return self.seconds


class GangTracker:
    """Partial gangs and when (on the acting clock) they were first seen partial; expired ones
    are rolled back."""

    def __init__(self) -> None:
        self.since: dict[str, float] = {}

    def expired(self, snap: ClusterSnapshot, now: float) -> dict[str, tuple[str, ...]]:
        partial = {}
        for name, job in snap.jobs.items():
            running = snap.running_pods(job)
            if job.invalid is None and not job.succeeded and 0 < len(running) < job.min_pods:
                partial[name] = tuple(p.name for p in running)
        self.since = {n: self.since.get(n, now) for n in partial}
        return {
            n: pods
            for n, pods in partial.items()
            if now - self.since[n] > snap.jobs[n].schedule_timeout.total_seconds()
        }


class Controller:
    def __init__(
        self,
        opts: RunOptions,
        api: KubeApi | None = None,
        fault: Callable[[str], None] | None = None,
    ) -> None:
        self.opts = opts
        self.api = api or KubeApi(
            load_client(opts.kubeconfig, opts.bind_workers + 16), RateLimiter(opts.qps, opts.burst)
        )
        self.api.fence = self.may_act  # every write checks the lease right before it is sent
        self.store = ObjectStore()
        self.stop = threading.Event()
        self.assumed = Assumed()
        self.metrics = Metrics()
        self.leader = (
            LeaderElector(
                self.api,
                opts.namespace,
                opts.lease_name,
                opts.identity,
                opts.lease_duration,
                opts.renew_deadline,
                opts.retry_period,
            )
            if opts.leader_elect
            and not opts.dry_run  # a dry run observes: it never takes the Lease
            else None
        )
        self.status = StatusWriter(
            self.api.with_budget(RateLimiter(opts.status_qps, opts.status_burst)),
            self.store,
            "solver-sched",
            self.may_act,
            lambda pod: pod in self.assumed.snapshot().binds,
        )
        self.reporter = Reporter()
        self.configs = ConfigSource(
            self.store,
            opts.namespace,
            opts.config_map,
            self._bad_config,
            self.metrics.config_reloads.inc,
        )
        self.actuator = Actuator(
            self.api,
            self.assumed,
            self.may_act,
            opts.bind_workers,
            opts.eviction_grace_seconds,
            fault,
        )
        if self.leader is not None:
            self.leader.on_lost.append(self._lost_leadership)
        self.tracker = GangTracker()
        self._started = time.monotonic()
        self.acting = ActingClock(
            self.api,
            lambda: self._started if self.leader is None else self.leader.leading_since,
        )
        self.informers: dict[str, Informer] = {}
        self.cycles = 0
        self.last_result: CycleResult | None = None
        self._alive = time.monotonic()
        self._thread: threading.Thread | None = None
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def may_act(self) -> bool:
        if self.opts.dry_run or self.stop.is_set():
            return False
        return self.leader is None or self.leader.is_leader()

    def start(self) -> None:
        self._discover()
        cm = Informer(
            self.api,
            CONFIG_MAPS,
            self.store,
            self.stop,
            namespace=self.opts.namespace,
            field_selector=f"metadata.name={self.opts.config_map}",
        )
        self.informers[CONFIG_MAPS.key] = cm
        cm.start()
        if self.leader is not None:
            self.leader.start(self.stop)
        if self.opts.metrics_addr:
            self._server = serve(self.opts.metrics_addr, self.metrics, self.healthy, self.ready)
        self._thread = threading.Thread(target=self._loop, name="scheduler", daemon=True)
        self._thread.start()

    def _lost_leadership(self) -> None:
        """Abandon in-flight actuation: queued binds are dropped and their reservations
        forgotten (in-flight writes are stopped by the fence itself)."""
        dropped = self.actuator.binder.abandon()
        if dropped:
            log.warning("abandoned %d queued binds", dropped)

    def shutdown(self) -> None:
        self.stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        self.actuator.close()
        self.reporter.close()
        if self.leader is not None:
            self.leader.release()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def healthy(self) -> bool:
        if self._thread is not None and not self._thread.is_alive() and not self.stop.is_set():
            return False
        limit = max(120.0, 3 * self.opts.cycle_interval)
        return time.monotonic() - self._alive < limit

    def ready(self) -> bool:
        live = [k for k, inf in list(self.informers.items()) if inf.thread.is_alive()]
        return bool(live) and self.store.synced(live)

    def _discover(self) -> None:
        """Start informers for every watched kind the API server serves (CRDs may come later)."""
        for resource in WATCHED:
            if resource.key in self.informers and self.informers[resource.key].thread.is_alive():
                continue
            self.informers.pop(resource.key, None)  # its API went away: look for it again
            if resource.optional and not self._served(resource):
                continue
            informer = Informer(self.api, resource, self.store, self.stop)
            self.informers[resource.key] = informer
            informer.start()

    def _served(self, resource: Resource) -> bool:
        try:
            doc = self.api.get(resource.base)
        except ApiError as exc:
            if exc.status in (404, 403):
                return False
            raise
        return any(r.get("name") == resource.plural for r in doc.get("resources") or [])

    def _bad_config(self, key: str, message: str) -> None:
        self.metrics.config_errors.inc()
        ns, _, name = key.partition("/")
        ref = {"kind": "ConfigMap", "apiVersion": "v1", "namespace": ns, "name": name}
        self.reporter.post(lambda: self.status.event(ref, "InvalidConfig", message, warning=True))

    # -- the loop ----------------------------------------------------------------------------
    def _loop(self) -> None:
        generation = -1
        next_discovery = time.monotonic() + self.opts.discovery_interval
        while not self.stop.is_set():
            self._alive = time.monotonic()
            if time.monotonic() > next_discovery:
                next_discovery = time.monotonic() + self.opts.discovery_interval
                try:
                    self._discover()
                except Exception as exc:  # API server away: keep looping, try again later
                    log.warning("discovery: %s", exc)
            if not self.ready():
                self.stop.wait(0.1)
                continue
            try:
                self.cycle()
            except ApiError as exc:  # the API server is away or refusing: next cycle retries
                log.warning("cycle aborted: %s", exc)
                self.metrics.cycles.labels("error").inc()
            except Exception:  # a bug: must not kill the scheduler
                log.exception("cycle failed")
                self.metrics.cycles.labels("error").inc()
            generation = self.store.generation
            deadline = time.monotonic() + self.opts.cycle_interval
            while not self.stop.is_set() and time.monotonic() < deadline:
                changed = self.store.wait_for_change(generation, deadline - time.monotonic())
                if changed != generation:
                    self.stop.wait(self.opts.debounce)  # let a burst of events settle
                    break

    def cycle(self) -> CycleResult | None:
        started = time.perf_counter()
        now = datetime.now(UTC)
        self.metrics.leader.set(1 if self.may_act() else 0)
        config = self.configs.refresh()
        leading = self.leader is None or self.leader.is_leader()
        if not leading and not self.opts.dry_run:
            return None  # standby: keep the cache warm, do nothing
        t = time.perf_counter()
        stamps = list(self.assumed.snapshot().stamps)
        self.assumed.reconcile(live_pods(self.store), stamps_seen(self.store, stamps))
        name = self.opts.scheduler_name or config.settings.scheduler_name
        snap, real = take_snapshots(self.store, self.assumed, config, name)
        self.metrics.phase_seconds.labels("snapshot").observe(time.perf_counter() - t)
        result = run_cycle(snap, config, now)
        for phase, secs in result.phases.items():
            self.metrics.phase_seconds.labels(phase).observe(secs)
        rollback = self.tracker.expired(snap, self.acting.read())
        plan = _without(result.plan, set(rollback))
        if rollback:  # evictions made room for the whole plan, rolled-back gangs included:
            plan = Plan(binds=plan.binds, jobs=plan.jobs, notes=plan.notes)  # re-plan them
        t = time.perf_counter()
        outcome = Outcome()
        if self.may_act():
            outcome = self.actuator.apply(plan, real, self._gang_done(plan, snap, now))
            for job, pods in rollback.items():
                if outcome.fenced or not self.may_act():
                    break
                self._roll_back(job, pods, snap, outcome)
        self.metrics.phase_seconds.labels("actuate").observe(time.perf_counter() - t)
        for job, why in outcome.evict_blocked.items():
            ref = self.status.group_ref(job) or self.status.pod_ref(snap.jobs[job].pods[0])
            message = f"{why}; retried next cycle"
            self.reporter.post(
                partial(self.status.event, ref, "EvictionBlocked", message, warning=True)
            )
        if self.may_act():
            self._stamp_scale_ins(plan, snap, outcome, now)
            self.reporter.post(
                lambda: self._report(plan, snap, outcome, now), coalesce="cycle report"
            )
        self._record(result, outcome, snap, time.perf_counter() - started)
        self.last_result = result
        return result

    def _roll_back(
        self, job: str, pods: tuple[str, ...], snap: ClusterSnapshot, outcome: Outcome
    ) -> None:
        log.warning("gang %s still partial after its timeout: rolling back", job)
        self.metrics.rollbacks.inc()
        done = self.actuator.evict_pods(job, pods, "gang incomplete: rolled back")
        outcome.evicted += done.evicted
        seconds = snap.jobs[job].schedule_timeout.total_seconds()
        message = (
            f"gang still partial after {seconds:.0f}s: "
            f"{len(pods)} bound pods evicted, retried later"
        )

        def event() -> None:
            ref = self.status.group_ref(job) or self.status.pod_ref(pods[0])
            self.status.event(ref, "RolledBack", message, warning=True)

        self.reporter.post(event)

    # -- reporting -----------------------------------------------------------------------------
    def _gang_done(
        self, plan: Plan, snap: ClusterSnapshot, now: datetime
    ) -> Callable[[str], Callable[[GangResult], None] | None]:
        """Per gang handed to the binder: a resize starts its cooldown at once (assumed), and
        once every bind landed its Scheduled/Resized Events and last-scale-time are posted; a
        gang that did not fully bind forgets the assumed cooldown."""
        rows = {row.name: row for row in plan.jobs}
        stamp = rfc3339(now)

        def for_job(name: str) -> Callable[[GangResult], None] | None:
            row = rows.get(name)
            if row is None:
                return None
            job = snap.jobs.get(name)
            source = job.source if job else ""
            resize = row.current >= row.min_workers and row.planned != row.current
            if resize and source:
                self.assumed.stamp(source, stamp)

            def done(result: GangResult) -> None:
                self.metrics.binds.inc(len(result.bound))
                for why in result.failed.values():
                    self.metrics.bind_failures.labels(why.split(":")[0][:40]).inc()
                if not result.complete:
                    if resize and source:
                        self.assumed.forget_stamp(source, stamp)
                    return
                pods = result.bound
                self.reporter.post(lambda: self._report_bound(row, pods, source, resize, stamp))

            return done

        return for_job

    def _report_bound(
        self, row: JobOutcome, pods: list[str], source: str, resize: bool, stamp: str
    ) -> None:
        ref = self.status.group_ref(row.name) or self.status.pod_ref(pods[0])
        self.status.event(
            ref, "Scheduled", f"bound {len(pods)} pod(s): {row.current} -> {row.planned} workers"
        )
        if resize:
            self.status.last_scale_time(row.name, source, stamp)
            self.status.event(ref, "Resized", f"{row.current} -> {row.planned} workers")

    def _stamp_scale_ins(
        self, plan: Plan, snap: ClusterSnapshot, outcome: Outcome, now: datetime
    ) -> None:
        """A job shrunk by evictions (all of them done) starts its cooldown now."""
        evicted = set(outcome.evicted) | set(outcome.cancelled)
        stamp = rfc3339(now)
        for ev in plan.evictions:
            row = next((r for r in plan.jobs if r.name == ev.job), None)
            job = snap.jobs.get(ev.job)
            if row is None or job is None or not all(p in evicted for p in ev.pods):
                continue
            if row.current >= row.min_workers and row.planned and row.planned != row.current:
                self.assumed.stamp(job.source, stamp)
                self.reporter.post(
                    partial(self.status.last_scale_time, row.name, job.source, stamp)
                )

    def _report(self, plan: Plan, snap: ClusterSnapshot, out: Outcome, now: datetime) -> None:
        """The cycle's report, on the reporter's thread: input errors, conditions, PodGroup
        status and eviction Events."""
        t = time.perf_counter()
        self.status.input_errors(snap.errors)
        self.status.report(
            plan, snap, set(out.binding), set(out.evicted) | set(out.cancelled), out.deferred, now
        )
        self.metrics.phase_seconds.labels("status").observe(time.perf_counter() - t)

    def _record(
        self, result: CycleResult, out: Outcome, snap: ClusterSnapshot, seconds: float
    ) -> None:
        m, st = self.metrics, result.stats
        self.cycles += 1
        m.cycles.labels("rejected" if result.violations else "ok").inc()
        m.cycle_seconds.observe(seconds)
        m.solver_status.clear()
        m.solver_status.labels(st.status.value).set(1)
        for gauge, value in ((m.objective, st.objective), (m.bound, st.bound), (m.gap, st.gap)):
            if value is not None:
                gauge.set(value)
        m.evictions.inc(len(out.evicted))
        m.evictions_blocked.inc(len(out.evict_blocked))
        m.pending_jobs.clear()
        counts: dict[tuple[str, str], int] = {}
        for row in result.plan.jobs:
            if row.reason:
                key = (row.queue, reason_class(row.reason))
                counts[key] = counts.get(key, 0) + 1
        for (queue, reason), n in counts.items():
            m.pending_jobs.labels(queue, reason).set(n)
        m.input_errors.set(len(snap.errors))
        if self.opts.dry_run:
            plan = result.plan
            log.info(
                "dry-run cycle %d: would bind %d pods and evict %d pods of %d jobs (%s %s)",
                self.cycles,
                len(plan.binds),
                sum(len(e.pods) for e in plan.evictions),
                len(plan.evictions),
                st.backend,
                st.status.value,
            )
            for row in plan.jobs:
                if row.planned != row.current or row.reason:
                    log.info(
                        "dry-run   %s: %d -> %d %s", row.name, row.current, row.planned, row.reason
                    )
            return
        log.info(
            "cycle %d: %d binds queued (%d deferred jobs), %d evictions, %d blocked, %s %s "
            "in %.2fs",
            self.cycles,
            len(out.binding),
            len(out.deferred),
            len(out.evicted),
            len(out.evict_blocked),
            st.backend,
            st.status.value,
            seconds,
        )


def _without(plan: Plan, jobs: set[str]) -> Plan:
    if not jobs:
        return plan
    return Plan(
        binds=tuple(b for b in plan.binds if b.job not in jobs),
        evictions=tuple(e for e in plan.evictions if e.job not in jobs),
        jobs=plan.jobs,
        notes=plan.notes,
    )


def run_forever(opts: RunOptions, config: SchedulerConfig | None = None) -> None:
    """Blocking entry point for `solver-sched run`; SIGTERM/SIGINT stop it cleanly."""
    import signal

    controller = Controller(opts)
    if config is not None:
        controller.configs.current = config
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: controller.stop.set())
    controller.start()
    try:
        while not controller.stop.wait(1.0):
            pass
    finally:
        controller.shutdown()
