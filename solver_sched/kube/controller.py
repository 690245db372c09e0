"""The secondary scheduler: watch -> snapshot -> run_cycle -> actuate -> report, a cycle at a time.

A cycle runs every ``cycle_interval`` seconds and soon after any watched change (debounced); the
loop is a single thread, so two cycles never overlap. Only the leader acts; ``--dry-run`` plans and
reports without writing.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer

from solver_sched.config.schema import SchedulerConfig
from solver_sched.cycle import CycleResult, run_cycle
from solver_sched.domain.plan import Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.kube.actuator import Actuator, Outcome
from solver_sched.kube.api import ApiError, KubeApi, RateLimiter, load_client
from solver_sched.kube.assume import Assumed
from solver_sched.kube.configsource import ConfigSource
from solver_sched.kube.informer import Informer
from solver_sched.kube.leader import LeaderElector
from solver_sched.kube.resources import CONFIG_MAPS, WATCHED, Resource
from solver_sched.kube.snapshotter import live_pods, take_snapshots
from solver_sched.kube.status import StatusWriter
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
    qps: float = 50.0
    burst: int = 100
    bind_workers: int = 16
    eviction_grace_seconds: int | None = None
    discovery_interval: float = 30.0


class GangTracker:
    """Partial gangs and when they were first seen partial; expired ones are rolled back."""

    def __init__(self) -> None:
        self.since: dict[str, float] = {}

    def expired(self, snap: ClusterSnapshot) -> dict[str, tuple[str, ...]]:
        now = time.monotonic()
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
        self.status = StatusWriter(self.api, self.store, "solver-sched", self.may_act)
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
        self.tracker = GangTracker()
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

    def shutdown(self) -> None:
        self.stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        if self.leader is not None:
            self.leader.release()
        self.actuator.close()
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
        self.status.event(
            {"kind": "ConfigMap", "apiVersion": "v1", "namespace": ns, "name": name},
            "InvalidConfig",
            message,
            warning=True,
        )

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
            except Exception:  # a failed cycle must not kill the scheduler
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
        self.assumed.reconcile(live_pods(self.store))
        name = self.opts.scheduler_name or config.settings.scheduler_name
        snap, real = take_snapshots(self.store, self.assumed, config, name)
        self.metrics.phase_seconds.labels("snapshot").observe(time.perf_counter() - t)
        result = run_cycle(snap, config, now)
        for phase, secs in result.phases.items():
            self.metrics.phase_seconds.labels(phase).observe(secs)
        rollback = self.tracker.expired(snap)
        plan = _without(result.plan, set(rollback))
        if rollback:  # evictions made room for the whole plan, rolled-back gangs included:
            plan = Plan(binds=plan.binds, jobs=plan.jobs, notes=plan.notes)  # re-plan them
        t = time.perf_counter()
        outcome = Outcome()
        if self.may_act():
            outcome = self.actuator.apply(plan, real)
            for job, pods in rollback.items():
                if outcome.fenced or not self.may_act():
                    break
                log.warning("gang %s still partial after its timeout: rolling back", job)
                self.metrics.rollbacks.inc()
                done = self.actuator.evict_pods(job, pods, "gang incomplete: rolled back")
                outcome.evicted += done.evicted
                ref = self.status.group_ref(job) or self.status.pod_ref(pods[0])
                self.status.event(
                    ref,
                    "RolledBack",
                    f"gang still partial after "
                    f"{snap.jobs[job].schedule_timeout.total_seconds():.0f}s: "
                    f"{len(pods)} bound pods evicted, retried later",
                    warning=True,
                )
        self.metrics.phase_seconds.labels("actuate").observe(time.perf_counter() - t)
        for job, why in outcome.evict_blocked.items():
            ref = self.status.group_ref(job) or self.status.pod_ref(snap.jobs[job].pods[0])
            self.status.event(ref, "EvictionBlocked", f"{why}; retried next cycle", warning=True)
        t = time.perf_counter()
        if self.may_act():
            self._report(result, plan, snap, outcome, now)
        self.metrics.phase_seconds.labels("status").observe(time.perf_counter() - t)
        self._record(result, outcome, snap, time.perf_counter() - started)
        self.last_result = result
        return result

    def _report(
        self, result: CycleResult, plan: Plan, snap: ClusterSnapshot, out: Outcome, now: datetime
    ) -> None:
        bound, evicted = set(out.bound), set(out.evicted)
        self.status.input_errors(snap.errors)
        self.status.report(plan, snap, bound, evicted, out.deferred, now)
        binds_of: dict[str, list[str]] = defaultdict(list)
        evicts_of: dict[str, list[str]] = defaultdict(list)
        for b in plan.binds:
            binds_of[b.job].append(b.pod)
        for e in plan.evictions:
            evicts_of[e.job].extend(e.pods)
        for row in plan.jobs:
            job_binds, job_evicts = binds_of.get(row.name, []), evicts_of.get(row.name, [])
            if not job_binds and not job_evicts:
                continue
            done = all(p in bound for p in job_binds) and all(p in evicted for p in job_evicts)
            if not done:
                continue
            ref = self.status.group_ref(row.name) or self.status.pod_ref(
                (job_binds or job_evicts)[0]
            )
            if job_binds:
                self.status.event(
                    ref,
                    "Scheduled",
                    f"bound {len(job_binds)} pod(s): {row.current} -> {row.planned} workers",
                )
            if row.current >= row.min_workers and row.planned and row.planned != row.current:
                job = snap.jobs.get(row.name)
                source = job.source if job else ""
                self.status.last_scale_time(row.name, source, now)  # starts its cooldown
                if job_binds:  # scale-ins were reported with their evictions
                    self.status.event(ref, "Resized", f"{row.current} -> {row.planned} workers")

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
        m.binds.inc(len(out.bound))
        m.evictions.inc(len(out.evicted))
        m.evictions_blocked.inc(len(out.evict_blocked))
        for why in out.bind_failed.values():
            m.bind_failures.labels(why.split(":")[0][:40]).inc()
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
            "cycle %d: %d binds (%d deferred jobs), %d evictions, %d blocked, %s %s in %.2fs",
            self.cycles,
            len(out.bound),
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
