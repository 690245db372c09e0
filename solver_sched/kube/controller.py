"""The secondary scheduler: watch -> snapshot -> run_cycle -> actuate -> report, a cycle at a time.

The loop, leader election with fencing, the live config, metrics and probes are kube/loop.py's
(shared with the fleet); one cycle runs at a time. It decides and evicts; the
binds go to the binding cycle (kube/binder.py) and the status writes to the reporter
(kube/reporter.py), each on its own threads and rate-limit budget, so neither holds up the next
decision. Only the leader acts, and every write is fenced on its lease; ``--dry-run`` plans and
reports without writing.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial

from solver_sched.config.schema import SchedulerConfig
from solver_sched.cycle import CycleResult, run_cycle
from solver_sched.domain.plan import EvictJob, JobOutcome, Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.io.kube_snapshot import Parsed
from solver_sched.kube.actuator import Actuator, Outcome
from solver_sched.kube.api import KubeApi, RateLimiter
from solver_sched.kube.assume import Assumed
from solver_sched.kube.binder import NOT_REFUSED, GangResult
from solver_sched.kube.loop import ControlLoop, LoopOptions, run_until_signalled
from solver_sched.kube.reporter import Reporter
from solver_sched.kube.resources import WATCHED
from solver_sched.kube.snapshotter import live_pods, stamps_seen, take_snapshots
from solver_sched.kube.status import StatusWriter, rfc3339
from solver_sched.metrics import Metrics, reason_class
from solver_sched.planning.history import SearchHistory

log = logging.getLogger(__name__)


@dataclass
class RunOptions(LoopOptions):
    status_qps: float = 20.0  # conditions, Events, PodGroup status: a budget of their own
    status_burst: int = 50
    bind_workers: int = 16
    eviction_grace_seconds: int | None = None


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
        # partial gangs still within their timeout: the plan may complete them, not evict them
        # (a pod deleted and recreated by its controller, a min raised before the new pods
        # exist: the plan, which must decide a partial gang, evicted it at once)
        self.young: set[str] = set()

    def expired(self, snap: ClusterSnapshot, now: float) -> dict[str, tuple[str, ...]]:
        partial = {}
        for name, job in snap.jobs.items():
            running = snap.running_pods(job)
            if job.invalid is None and not job.succeeded and 0 < len(running) < job.min_pods:
                partial[name] = tuple(p.name for p in running)
        self.since = {n: self.since.get(n, now) for n in partial}
        out = {
            n: pods
            for n, pods in partial.items()
            if now - self.since[n] > snap.jobs[n].schedule_timeout.total_seconds()
        }
        self.young = set(partial) - set(out)
        return out


class Controller(ControlLoop):
    watched = WATCHED
    thread_name = "scheduler"

    def __init__(
        self,
        opts: RunOptions,
        api: KubeApi | None = None,
        fault: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(opts, api, Metrics(), opts.bind_workers + 16)
        self.opts: RunOptions = opts
        self.assumed = Assumed()
        self.parsed = Parsed()  # nodes and pods parsed by earlier cycles (take_snapshots)
        self.status = StatusWriter(
            self.api.with_budget(RateLimiter(opts.status_qps, opts.status_burst)),
            self.store,
            "solver-sched",
            self.may_act,
            lambda pod: pod in self.assumed.snapshot().binds,
            stamp_api=self.api,
        )
        self.reporter = Reporter()
        self.actuator = Actuator(
            self.api,
            self.assumed,
            self.may_act,
            opts.bind_workers,
            opts.eviction_grace_seconds,
            fault,
        )
        self.tracker = GangTracker()
        self._started = time.monotonic()
        self.acting = ActingClock(
            self.api,
            lambda: self._started if self.leader is None else self.leader.leading_since,
        )
        self.last_result: CycleResult | None = None
        self.search_history = SearchHistory()  # what earlier cycles' searches found

    def lost_leadership(self) -> None:
        """Abandon in-flight actuation: queued binds are dropped and their reservations
        forgotten (in-flight writes are stopped by the fence itself)."""
        dropped = self.actuator.binder.abandon()
        if dropped:
            log.warning("abandoned %d queued binds", dropped)

    def close(self) -> None:
        self.actuator.close()
        self.reporter.close()

    def post(self, action: Callable[[], None]) -> None:
        self.reporter.post(action)

    def event(self, ref: dict[str, object], reason: str, message: str) -> None:
        self.status.event(ref, reason, message, warning=True)

    def cycle(self) -> CycleResult | None:
        started = time.perf_counter()
        now = datetime.now(UTC)
        config = self.refresh_config()
        if not self.leading():
            return None  # standby: keep the cache warm, do nothing
        t = time.perf_counter()
        stamps = list(self.assumed.snapshot().stamps)
        self.assumed.reconcile(live_pods(self.store), stamps_seen(self.store, stamps))
        name = self.opts.scheduler_name or config.settings.scheduler_name
        snap, real = take_snapshots(self.store, self.assumed, config, name, self.parsed)
        self.metrics.phase_seconds.labels("snapshot").observe(time.perf_counter() - t)
        result = run_cycle(snap, config, now, history=self.search_history)
        for phase, secs in result.phases.items():
            self.metrics.phase_seconds.labels(phase).observe(secs)
        rollback = self.tracker.expired(snap, self.acting.read())
        plan = _keep_waiting(_without(result.plan, set(rollback)), snap, self.tracker.young)
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
        outcome.cancelled += done.cancelled
        outcome.fenced = outcome.fenced or done.fenced
        seconds = snap.jobs[job].schedule_timeout.total_seconds()
        gone = len(done.evicted) + len(done.cancelled)
        message = (
            f"gang still partial after {seconds:.0f}s: {gone} of {len(pods)} bound pods evicted"
        )
        if job in done.evict_blocked:  # reported as EvictionBlocked by the cycle
            outcome.evict_blocked[job] = done.evict_blocked[job]
            message += f" ({done.evict_blocked[job]}), the rest retried next cycle"
        else:
            message += ", retried later"

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
                    if refused := _refused(result):
                        self.reporter.post(lambda: self._report_refused(name, row, refused))
                    return
                pods = result.bound
                self.reporter.post(lambda: self._report_bound(row, pods, source, resize, stamp))

            return done

        return for_job

    def _report_refused(self, job: str, row: JobOutcome, refused: dict[str, str]) -> None:
        """Binds the API server refused (the job is re-planned next cycle): logged and sent as
        an Event, so a gang kept short of its plan by a webhook or a quota says why."""
        shown = "; ".join(f"{pod}: {why}" for pod, why in sorted(refused.items())[:3])
        more = f" (and {len(refused) - 3} more)" if len(refused) > 3 else ""
        message = (
            f"Binding rejected for {len(refused)} of {row.planned - row.current} pod(s): "
            f"{shown}{more}; re-planned next cycle"
        )
        log.warning("job %s: %s", job, message)
        ref = self.status.group_ref(job) or self.status.pod_ref(min(refused))
        self.status.event(ref, "FailedScheduling", message, warning=True)

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
        """A job shrunk by evictions (all of them done) starts its cooldown now. Written here,
        on the cycle's thread, not queued with the cycle's report: a clean shutdown right after
        the evictions dropped the queue, and the job grew back as soon as a new replica led."""
        evicted = set(outcome.evicted) | set(outcome.cancelled)
        stamp = rfc3339(now)
        for ev in plan.evictions:
            row = next((r for r in plan.jobs if r.name == ev.job), None)
            job = snap.jobs.get(ev.job)
            if row is None or job is None or not all(p in evicted for p in ev.pods):
                continue
            if row.current >= row.min_workers and row.planned and row.planned != row.current:
                self.assumed.stamp(job.source, stamp)
                self.status.last_scale_time(row.name, job.source, stamp)

    def _report(self, plan: Plan, snap: ClusterSnapshot, out: Outcome, now: datetime) -> None:
        """The cycle's report, on the reporter's thread: input errors, conditions, PodGroup
        status and eviction Events."""
        t = time.perf_counter()
        self.status.input_errors(snap.errors)
        self.status.nominate(out.nominated)
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
                "dry-run cycle %d: would bind %d pods and evict %d pods of %d jobs (%s %s, "
                "plan from %s)",
                self.cycles,
                len(plan.binds),
                sum(len(e.pods) for e in plan.evictions),
                len(plan.evictions),
                st.backend,
                st.status.value,
                result.chosen or "none",
            )
            for row in plan.jobs:
                if row.planned != row.current or row.reason:
                    log.info(
                        "dry-run   %s: %d -> %d %s", row.name, row.current, row.planned, row.reason
                    )
            return
        log.info(
            "cycle %d: %d binds queued (%d deferred jobs), %d evictions, %d blocked, %s %s "
            "(plan from %s) in %.2fs",
            self.cycles,
            len(out.binding),
            len(out.deferred),
            len(out.evicted),
            len(out.evict_blocked),
            st.backend,
            st.status.value,
            result.chosen or "none",
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


def _refused(result: GangResult) -> dict[str, str]:
    """The failed binds the API server refused, not those this scheduler dropped itself (a
    re-planned job, leadership lost) nor those the pod's own change explains (bound already,
    perhaps by this scheduler before a restart; replaced under its name)."""
    return {pod: why for pod, why in result.failed.items() if why not in NOT_REFUSED}


def _keep_waiting(plan: Plan, snap: ClusterSnapshot, young: set[str]) -> Plan:
    """The plan without its evictions of partial gangs still within scheduleTimeoutSeconds
    (the tracker rolls them back once it has passed), unless a gang of higher priority or of
    another queue (a reclaim) is bound in their room: a preemption does not wait. Their rows say
    so. Binds the plan made in their room wait for it (the actuator binds only where there is
    room now)."""
    binds_on: dict[str, set[str]] = defaultdict(set)
    for b in plan.binds:
        binds_on[b.node].add(b.job)

    def waits(ev: EvictJob) -> bool:
        if ev.job not in young:
            return False
        job = snap.jobs[ev.job]
        nodes = {snap.pods[p].node_name for p in ev.pods if p in snap.pods}
        for other in {j for n in nodes if n for j in binds_on.get(n, ())}:
            them = snap.jobs[other]
            if them.priority > job.priority or snap.queue_of(them) != snap.queue_of(job):
                return False
        return True

    kept = {e.job for e in plan.evictions if waits(e)}
    if not kept:
        return plan
    rows = []
    for row in plan.jobs:
        if row.name in kept:
            seconds = snap.jobs[row.name].schedule_timeout.total_seconds()
            reason = (
                f"gang incomplete ({row.current} of {row.min_workers} pods bound): kept up to "
                f"{seconds:.0f}s (scheduleTimeoutSeconds) for its pods, then rolled back"
            )
            row = replace(row, planned=row.current, reason=reason)
        rows.append(row)
    return Plan(
        binds=plan.binds,
        evictions=tuple(e for e in plan.evictions if e.job not in kept),
        jobs=tuple(rows),
        notes=plan.notes,
    )


def run_forever(opts: RunOptions, config: SchedulerConfig | None = None) -> None:
    """Blocking entry point for `solver-sched run`; SIGTERM/SIGINT stop it cleanly."""
    controller = Controller(opts)
    if config is not None:
        controller.configs.current = config
    run_until_signalled(controller)
