"""`solver-sched fleet`: hub + members -> one fleet snapshot -> run_cycle -> dispatch, a cycle at a
time on one thread.

Each cycle: stale copies go first (a member holding one takes no new job until it is gone), then
failovers, copies that should exist but do not, new placements from the plan, and the hub jobs'
conditions mirrored from their copies. Only the leader writes; ``--dry-run`` plans and logs.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from typing import Any

from prometheus_client import Counter, Gauge

from solver_sched.config.schema import SchedulerConfig
from solver_sched.cycle import CycleResult, run_cycle
from solver_sched.domain.snapshot import InputError
from solver_sched.fleet.dispatch import (
    SCHEDULED,
    HubView,
    HubWriter,
    MemberWriter,
    copy_body,
    placement_changes,
    requeue_changes,
)
from solver_sched.fleet.failover import FailoverTimers, copy_pods, trouble
from solver_sched.fleet.members import MemberRegistry
from solver_sched.io.fleet_objects import CLUSTER_GROUP, POLICY_GROUPS
from solver_sched.io.fleet_snapshot import (
    ANN_FAILOVER,
    WITHDRAWING,
    FleetSnapshot,
    HubJob,
    MemberState,
    build_fleet,
    copy_name,
    read_plan,
)
from solver_sched.kube.api import ApiError, KubeApi, RateLimiter, load_client
from solver_sched.kube.configsource import ConfigSource
from solver_sched.kube.informer import Informer
from solver_sched.kube.leader import LeaderElector
from solver_sched.kube.resources import CONFIG_MAPS, PRIORITY_CLASSES, PYTORCH_JOBS, Resource
from solver_sched.kube.status import StatusWriter
from solver_sched.kube.store import ObjectStore
from solver_sched.metrics import Metrics, serve

log = logging.getLogger(__name__)
JsonObj = dict[str, Any]
CLUSTERS = Resource("Cluster", f"{CLUSTER_GROUP}/v1alpha1", "clusters", optional=True)
HUB_WATCHED: tuple[Resource, ...] = (
    PRIORITY_CLASSES,
    PYTORCH_JOBS,
    CLUSTERS,
    Resource(
        "ElasticQuotaTree", "scheduling.sigs.k8s.io/v1beta1", "elasticquotatrees", optional=True
    ),
    *(
        Resource("PropagationPolicy", f"{g}/v1alpha1", "propagationpolicies", optional=True)
        for g in POLICY_GROUPS
    ),
)
COMPONENT = "solver-sched-fleet"


@dataclass
class FleetOptions:
    kubeconfig: str | None = None  # the hub
    scheduler_name: str | None = None
    namespace: str = "solver-sched"
    config_map: str = "solver-sched-config"
    cycle_interval: float = 10.0
    debounce: float = 0.5
    leader_elect: bool = False
    lease_name: str = "solver-sched-fleet"
    identity: str = field(default_factory=socket.gethostname)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    metrics_addr: str | None = None
    dry_run: bool = False
    qps: float = 50.0
    burst: int = 100
    probe_interval: float = 2.0
    delete_grace_seconds: int | None = None
    discovery_interval: float = 30.0
    secret_cache_seconds: float = 5.0


class FleetMetrics:
    """The scheduler's metrics plus the fleet's own, in one registry."""

    def __init__(self) -> None:
        self.base = Metrics()
        r = self.base.registry
        self.dispatches = Counter(
            "solver_sched_fleet_dispatches_total", "Jobs placed in a member", registry=r
        )
        self.rejected = Counter(
            "solver_sched_fleet_dispatch_rejections_total", "Copies a member refused", registry=r
        )
        self.failovers = Counter(
            "solver_sched_fleet_failovers_total", "Jobs placed again", ["mode"], registry=r
        )
        self.stale = Counter(
            "solver_sched_fleet_stale_copies_deleted_total", "Stale copies deleted", registry=r
        )
        self.members = Gauge(
            "solver_sched_fleet_members", "Members by state", ["state"], registry=r
        )
        self.queued = Gauge("solver_sched_fleet_queued_jobs", "Hub jobs not placed", registry=r)


class FleetController:
    def __init__(self, opts: FleetOptions, api: KubeApi | None = None) -> None:
        self.opts = opts
        self.api = api or KubeApi(load_client(opts.kubeconfig), RateLimiter(opts.qps, opts.burst))
        self.store = ObjectStore()
        self.stop = threading.Event()
        self.metrics = FleetMetrics()
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
            if opts.leader_elect and not opts.dry_run
            else None
        )
        self.status = StatusWriter(self.api, self.store, COMPONENT, self.may_act)
        self.view = HubView()
        self.hub = HubWriter(self.api, self.status, self.view, self.may_act)
        self.configs = ConfigSource(
            self.store,
            opts.namespace,
            opts.config_map,
            self._bad_config,
            self.metrics.base.config_reloads.inc,
        )
        self.registry = MemberRegistry(opts.probe_interval, opts.qps, opts.burst)
        self.timers = FailoverTimers()
        self._graceful_since: dict[str, float] = {}
        self._secrets: dict[tuple[str, str], tuple[float, JsonObj | None]] = {}
        self.informers: dict[str, Informer] = {}
        self.cycles = 0
        self.last_result: CycleResult | None = None
        self.last_fleet: FleetSnapshot | None = None
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
            self._server = serve(
                self.opts.metrics_addr, self.metrics.base, self.healthy, self.ready
            )
        self._thread = threading.Thread(target=self._loop, name="fleet", daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        self.stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        if self.leader is not None:
            self.leader.release()
        self.registry.close()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def healthy(self) -> bool:
        if self._thread is not None and not self._thread.is_alive() and not self.stop.is_set():
            return False
        return time.monotonic() - self._alive < max(120.0, 3 * self.opts.cycle_interval)

    def ready(self) -> bool:
        live = [k for k, inf in list(self.informers.items()) if inf.thread.is_alive()]
        return bool(live) and self.store.synced(live)

    def _discover(self) -> None:
        for resource in HUB_WATCHED:
            if resource.key in self.informers and self.informers[resource.key].thread.is_alive():
                continue
            self.informers.pop(resource.key, None)
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
        self.metrics.base.config_errors.inc()
        ns, _, name = key.partition("/")
        ref = {"kind": "ConfigMap", "apiVersion": "v1", "namespace": ns, "name": name}
        self.status.event(ref, "InvalidConfig", message, warning=True)

    def _secret(self, namespace: str, name: str) -> JsonObj | None:
        now = time.monotonic()
        cached = self._secrets.get((namespace, name))
        if cached is not None and now - cached[0] < self.opts.secret_cache_seconds:
            return cached[1]
        try:
            secret: JsonObj | None = self.api.get(f"/api/v1/namespaces/{namespace}/secrets/{name}")
        except ApiError as exc:
            if exc.status != 404:
                return cached[1] if cached else None  # keep the last good on a hiccup
            secret = None
        self._secrets[(namespace, name)] = (now, secret)
        return secret

    # -- the loop ----------------------------------------------------------------------------
    def _loop(self) -> None:
        next_discovery = time.monotonic() + self.opts.discovery_interval
        while not self.stop.is_set():
            self._alive = time.monotonic()
            if time.monotonic() > next_discovery:
                next_discovery = time.monotonic() + self.opts.discovery_interval
                try:
                    self._discover()
                except Exception as exc:
                    log.warning("discovery: %s", exc)
            if not self.ready():
                self.stop.wait(0.1)
                continue
            try:
                self.cycle()
            except Exception:
                log.exception("fleet cycle failed")
                self.metrics.base.cycles.labels("error").inc()
            generation = self.store.generation
            deadline = time.monotonic() + self.opts.cycle_interval
            while not self.stop.is_set() and time.monotonic() < deadline:
                changed = self.store.wait_for_change(generation, deadline - time.monotonic())
                if changed != generation:
                    self.stop.wait(self.opts.debounce)
                    break

    def member_states(self, referenced: set[str]) -> list[MemberState]:
        out = []
        for name in sorted(self.registry.sessions):
            s = self.registry.sessions[name]
            ready = s.ready()
            out.append(MemberState(name, s.objects() if ready else (), ready))
        # a member a job is placed in that no Cluster names any more: unreachable
        out += [MemberState(n, (), False) for n in sorted(referenced - set(self.registry.sessions))]
        return out

    def cycle(self) -> CycleResult | None:
        started = time.perf_counter()
        now = datetime.now(UTC)
        m = self.metrics.base
        m.leader.set(1 if self.may_act() else 0)
        config = self.configs.refresh()
        if not (self.leader is None or self.leader.is_leader()) and not self.opts.dry_run:
            return None
        self.registry.sync(self.store.items(CLUSTERS.key), self._secret)
        hub = self.hub_objects()
        referenced = {
            str(anns.get("solver-sched.io/cluster"))
            for o in hub
            if o.get("kind") == "PyTorchJob"
            and (anns := (o.get("metadata") or {}).get("annotations") or {}).get(
                "solver-sched.io/cluster"
            )
        }
        members = self.member_states(referenced)
        name = self.opts.scheduler_name or config.settings.scheduler_name
        t = time.perf_counter()
        fleet = build_fleet(hub, members, name, config.settings.cooldown)
        m.phase_seconds.labels("snapshot").observe(time.perf_counter() - t)
        result = run_cycle(fleet.snapshot, fleet_config(config), now)
        for phase, secs in result.phases.items():
            m.phase_seconds.labels(phase).observe(secs)
        reading = read_plan(fleet, result.plan.binds, result.plan.jobs)
        objects = {ms.name: ms.objects for ms in members}
        t = time.perf_counter()
        if self.may_act():
            self.act(fleet, reading.dispatches, reading.placements, objects)
        else:
            for key, d in reading.dispatches.items():
                log.info("dry-run: would place %s in %s", key, d.cluster)
        m.phase_seconds.labels("actuate").observe(time.perf_counter() - t)
        self.cycles += 1
        m.cycles.labels("rejected" if result.violations else "ok").inc()
        m.cycle_seconds.observe(time.perf_counter() - started)
        m.input_errors.set(len(fleet.snapshot.errors) + len(self.registry.errors))
        self.metrics.members.labels("reachable").set(len(fleet.reachable))
        self.metrics.members.labels("unreachable").set(len(fleet.unreachable))
        self.metrics.queued.set(sum(1 for p in reading.placements if p["cluster"] is None))
        self.last_result, self.last_fleet = result, fleet
        log.info(
            "fleet cycle %d: %d placed, %d members (%d unreachable), %s %s in %.2fs",
            self.cycles,
            len(reading.dispatches),
            len(members),
            len(fleet.unreachable),
            result.stats.backend,
            result.stats.status.value,
            time.perf_counter() - started,
        )
        return result

    def hub_objects(self) -> list[JsonObj]:
        out: list[JsonObj] = []
        for r in HUB_WATCHED:
            items = self.store.items(r.key)
            out += self.view.overlay(items) if r is PYTORCH_JOBS else items
        return out

    # -- acting ------------------------------------------------------------------------------
    def act(
        self,
        fleet: FleetSnapshot,
        dispatches: Mapping[str, Any],
        placements: list[dict[str, Any]],
        objects: Mapping[str, Sequence[Mapping[str, Any]]],
    ) -> None:
        by_uid = {j.uid: j for j in fleet.jobs.values()}
        for member, stale in fleet.stale.items():
            writer = self._writer(member)
            for c in stale:  # before anything else happens in that member
                if writer is not None and writer.delete(c):
                    self.metrics.stale.inc()
                    job = by_uid.get(c.uid)
                    if job is not None:
                        self.hub.event(job, "StaleCopyDeleted", f"deleted copy {c.key}")
                    log.info("member %s: stale copy %s deleted", member, c.name)
        troubled = {}
        for job in fleet.jobs.values():
            if job.placement is not None and not job.invalid and not job.finished:
                why = trouble(job, fleet, objects)
                if why:
                    troubled[(job.key, job.placement.generation)] = why
        self.timers.update(troubled)
        for job in sorted(fleet.jobs.values(), key=lambda j: j.key):
            if job.invalid or job.finished:
                continue
            if job.placement is None:
                if job.graceful_from:  # not placed again yet: the old copy stays its grace
                    self._graceful(job, fleet, None)
                continue
            try:
                self._placed(job, fleet, objects, troubled)
            except Exception:
                log.exception("hub job %s", job.key)
        for key, d in dispatches.items():
            try:
                self._dispatch(fleet.jobs[key], d.cluster, d.nodes)
            except Exception:
                log.exception("dispatching %s", key)
        for row in placements:
            job = fleet.jobs[row["job"]]
            if row["cluster"] is None and not job.finished and row["job"] not in dispatches:
                reason = "InvalidSpec" if job.invalid else "Queued"
                cond = _cond(SCHEDULED, "False", reason, row["reason"])
                self.hub.conditions(job, [cond], None)
        self._input_errors(fleet)

    def _writer(self, member: str) -> MemberWriter | None:
        s = self.registry.sessions.get(member)
        return MemberWriter(s.api, self.opts.delete_grace_seconds) if s is not None else None

    def _placed(
        self,
        job: HubJob,
        fleet: FleetSnapshot,
        objects: Mapping[str, Sequence[Mapping[str, Any]]],
        troubled: Mapping[tuple[str, int], str],
    ) -> None:
        p = job.placement
        assert p is not None and job.policy is not None
        reachable = p.cluster in fleet.reachable
        current = fleet.current_copy(job)
        name = copy_name(job, p.generation)
        if p.withdrawing:  # Directly: the old copy goes before the job is placed again
            gone = current is None and not copy_pods(objects.get(p.cluster, ()), name)
            if not reachable or gone:
                if self.hub.annotate(job, requeue_changes(job, p.cluster, None)):
                    self.hub.event(job, "FailedOver", f"copy {p.cluster}/{name} gone: queued")
            elif current is not None:
                self._writer(p.cluster).delete(current)  # type: ignore[union-attr]
            return
        if job.graceful_from:
            self._graceful(job, fleet, current)
        key = (job.key, p.generation)
        why = troubled.get(key)
        mode = job.policy.purge_mode
        if (
            why
            and mode not in (None, "Never")
            and self.timers.due(key, job.policy.toleration_seconds)
        ):
            self._fail_over(job, fleet, current, why)
            return
        if current is None and reachable:
            writer = self._writer(p.cluster)
            err = writer.create(copy_body(job, p.generation)) if writer else "no session"
            if err:
                log.info("hub job %s: copy in %s not created yet: %s", job.key, p.cluster, err)
            return
        wanted = [_cond(SCHEDULED, "True", "ScheduleBindingSucceed", _bound_text(job, p.cluster))]
        extra = None
        if current is not None:
            status = current.raw.get("status") or {}
            wanted += [
                {k: c[k] for k in ("type", "status", "reason", "message") if k in c}
                for c in status.get("conditions") or []
                if c.get("type") != SCHEDULED
            ]
            extra = {k: status[k] for k in ("replicaStatuses", "startTime") if k in status}
        if why:
            wanted[0] = {**wanted[0], "message": f"{wanted[0]['message']}; {why}"}
        self.hub.conditions(job, wanted, extra)

    def _graceful(self, job: HubJob, fleet: FleetSnapshot, current: Any) -> None:
        """Gracefully: the old copy goes once the new one runs (or after gracePeriodSeconds)."""
        assert job.policy is not None
        old = job.graceful_from
        first = self._graceful_since.setdefault(old, time.monotonic())
        runs = current is not None and (
            current.conditions.get("Running") == "True"
            or current.conditions.get("Succeeded") == "True"
        )
        if not runs and time.monotonic() - first < job.policy.grace_seconds:
            return
        member, _, name = old.partition("/")
        found = next((c for c in fleet.copies.get(member, ()) if c.name == name), None)
        writer = self._writer(member)
        if found is not None and writer is not None and not writer.delete(found):
            return
        if self.hub.annotate(job, {ANN_FAILOVER: None}):
            self._graceful_since.pop(old, None)
            self.hub.event(job, "FailedOver", f"old copy {old} removed; the new copy runs")

    def _fail_over(self, job: HubJob, fleet: FleetSnapshot, current: Any, why: str) -> None:
        assert job.placement is not None and job.policy is not None
        p, mode = job.placement, job.policy.purge_mode or ""
        reachable = p.cluster in fleet.reachable
        self.metrics.failovers.labels(mode).inc()
        message = f"{why} for {job.policy.toleration_seconds}s ({mode})"
        if mode in ("Immediately", "Directly"):
            if reachable and current is not None:
                if self.hub.annotate(job, {ANN_FAILOVER: WITHDRAWING}):
                    self._writer(p.cluster).delete(current)  # type: ignore[union-attr]
                    self.hub.event(
                        job, "ApplicationFailover", f"{message}: deleting the copy first", True
                    )
            elif self.hub.annotate(job, requeue_changes(job, p.cluster, None)):
                self.hub.event(job, "ApplicationFailover", f"{message}: placed again", True)
            return
        old = f"{p.cluster}/{current.name if current else copy_name(job, p.generation)}"
        if self.hub.annotate(job, requeue_changes(job, p.cluster, f"graceful:{old}")):
            self.hub.event(
                job, "ApplicationFailover", f"{message}: new copy first, then {old} goes", True
            )

    def _dispatch(self, job: HubJob, cluster: str, nodes: Mapping[str, str]) -> None:
        writer = self._writer(cluster)
        if writer is None:
            return
        generation = job.generation + 1
        if not self.hub.annotate(job, placement_changes(job, cluster, nodes)):
            return
        err = writer.create(copy_body(job, generation))
        latest = self._latest(job)
        if err and err.startswith("rejected"):
            self.metrics.rejected.inc()
            self.hub.event(
                latest, "DispatchRejected", f"member {cluster} {err}; queued again", True
            )
            self.hub.annotate(latest, requeue_changes(latest, cluster, None))
            return
        if err:
            log.info("hub job %s: copy in %s: %s (retried)", job.key, cluster, err)
        self.metrics.dispatches.inc()
        text = _bound_text(job, cluster)
        self.hub.event(latest, "ScheduleBindingSucceed", text)
        self.hub.conditions(
            latest, [_cond(SCHEDULED, "True", "ScheduleBindingSucceed", text)], None
        )

    def _latest(self, job: HubJob) -> HubJob:
        """The job with the object this process last wrote (its resourceVersion)."""
        items = self.view.overlay(
            [
                o
                for o in self.store.items(PYTORCH_JOBS.key)
                if o.get("metadata", {}).get("uid") == job.uid
            ]
        )
        return replace(job, raw=items[0]) if items else job

    def _input_errors(self, fleet: FleetSnapshot) -> None:
        errors: list[InputError] = [*fleet.snapshot.errors, *self.registry.errors.values()]
        refs: dict[str, dict[str, Any]] = {}
        for r in HUB_WATCHED:
            for o in self.store.items(r.key):
                meta = o.get("metadata") or {}
                ns = meta.get("namespace")
                text = f"{r.kind} {ns}/{meta.get('name')}" if ns else f"{r.kind} {meta.get('name')}"
                refs[text] = {
                    "kind": r.kind,
                    "apiVersion": r.api_version,
                    "namespace": ns or "default",
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                }
        for e in errors:
            ref = refs.get(e.obj)
            if ref is not None:
                self.status.event(ref, "InvalidSpec", f"{e.field}: {e.message}", warning=True)


def fleet_config(config: SchedulerConfig) -> SchedulerConfig:
    """The fleet places queued jobs; it never plans evictions in members (their schedulers
    preempt there), so the model must not count on room that preemption would free."""
    settings = config.settings.model_copy(
        update={"priority_preemption": False, "queue_reclaim": False}
    )
    return config.model_copy(update={"settings": settings})


def _cond(kind: str, status: str, reason: str, message: str) -> JsonObj:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def _bound_text(job: HubJob, cluster: str) -> str:
    return f"Binding has been scheduled successfully. Result: {job.result_text(cluster)}"


def run_forever(opts: FleetOptions, config: SchedulerConfig | None = None) -> None:
    import signal

    controller = FleetController(opts)
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
