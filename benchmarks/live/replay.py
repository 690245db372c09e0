"""One stack on one fresh stage: a binding burst, then a time-compressed trace window replayed
as Jobs, measured from the API server's record of the pods.

The study plays what the jobs' processes would do (the stage has no containers):

- **rendezvous**: a job trains only while every pod of its gang runs. When the gang is complete
  the study writes ``finish-at`` = now + remaining work on all its pods, and KWOK makes them
  Succeed then. When a running gang loses a pod (a preemption), the job rolls back to its last
  checkpoint (every ``checkpoint`` trace seconds), counts a restart, and its surviving pods lose
  ``finish-at``; the next complete gang pays ``restart_overhead`` first.
- **rendezvous timeout**: pods bound while their gang is not complete hold GPUs without
  progress. After ``partial_timeout`` trace seconds they exit (the study deletes them; the Job
  controller makes new ones), as torchrun's rendezvous does. Kueue's ``waitForPodsReady`` gets
  the same timeout.

Trace time runs ``compress`` times faster than the wall clock (60: one trace hour per minute).
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.live.stage import FINISH_AT, KUEUE_QPS, Queue, Stage, StageSpec
from benchmarks.live.workload import JOB_LABEL, PODGROUP_API, elastic_manifests, job_manifest
from solver_sched.domain.cluster import is_power_of_two
from solver_sched.kube.api import ApiError, KubeApi, load_client
from solver_sched.kube.status import waiting_reason
from solver_sched.sim.bounds import alone
from solver_sched.sim.model import SimParams, Speedup, TraceJob

SPEEDUP = Speedup()  # the trace study's default model


@dataclass(frozen=True)
class ReplayParams:
    compress: float = 60.0  # trace seconds per wall second
    checkpoint: float = 900.0  # trace seconds between checkpoints
    restart_overhead: float = 30.0  # trace seconds before a restarted gang progresses
    partial_timeout: float = 600.0  # trace seconds a partial gang waits before its pods exit
    partial_grace: float = 5.0  # wall seconds of incompleteness not counted as a partial gang
    horizon: float = 1800.0  # wall seconds after the first arrival before giving up
    burst_gangs: int = 8  # the binding burst: this many 64-pod gangs of 1-GPU pods (0: none)
    tick: float = 0.25  # wall seconds between the driver's looks
    kube_scoring: str = ""  # kube-scheduler's NodeResourcesFit scoring ("": LeastAllocated)
    elastic: bool = False  # solver-sched gets the trace's elastic jobs (the peers: rigid Jobs)
    cooldown: float = 600.0  # trace seconds between resizes of an elastic job (the trace study's)
    # Kueue's waitForPodsReady timeout, wall seconds (None: partial_timeout compressed, the
    # rendezvous timeout the other stacks' partial gangs pay; a diagnostic: at 60x that is 10 s)
    kueue_ready_s: float | None = None
    # Kueue's client QPS, wall requests per second (None: 50 per trace second, i.e. 50 x
    # compress). Kueue writes ~20 requests per workload (status patches, events, queue status);
    # at 50 wall QPS and 10x compression that is 5 per trace second, and its admitted Jobs stayed
    # suspended past the PodsReady timeout (docs/benchmarks.md section 6): a compression
    # artifact, which scaling its budget with the clock removes
    kueue_qps: float | None = None


@dataclass
class PodView:
    job: str
    namespace: str
    name: str
    node: str | None
    phase: str
    deleting: bool
    gpus: int
    finish_at: str | None
    reason: str = ""  # the PodScheduled=False condition's message, as the scheduler wrote it


@dataclass
class JobRun:
    spec: TraceJob
    name: str
    namespace: str
    remaining: float  # trace seconds of work at the requested size
    submitted: float | None = None  # wall
    first_start: float | None = None
    finished: float | None = None
    running_since: float | None = None
    partial_since: float | None = None
    partial_counted: bool = False
    partial_episodes: int = 0
    restarts: int = 0
    timeouts: int = 0
    # where the queueing delay went (wall): pods first seen, first bind, whole gang bound
    pods_seen: float | None = None
    first_bind: float | None = None
    all_bound: float | None = None
    reasons: Counter[str] = field(default_factory=Counter)  # scheduler's message -> ticks seen
    # elastic jobs (solver-sched with --elastic): the size it trains at and on which pods
    elastic: bool = False
    size: int = 0
    max_size: int = 0
    members: set[str] = field(default_factory=set)
    overhead: float = 0.0  # trace seconds without progress at the start of this run
    scale_outs: int = 0

    @property
    def gpus(self) -> int:
        return self.spec.pods * self.spec.gpus_per_pod

    @property
    def gang(self) -> int:
        """Pods that make the gang: all (rigid) or its min (elastic)."""
        return self.spec.min_pods if self.elastic else self.spec.pods

    def allowed(self, pods: int) -> bool:
        return self.spec.min_pods <= pods <= self.spec.max_pods and is_power_of_two(pods)

    def speed(self, pods: int) -> float:
        """Trace seconds of work at the requested size done per trace second at ``pods``."""
        return SPEEDUP.rate(pods * self.spec.gpus_per_pod, self.gpus) / self.gpus


class PodWatch:
    """Every pod of the study's jobs, kept current by a watch; bind times and deletions by
    others (preemptions) recorded as they are seen."""

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.pods: dict[str, PodView] = {}
        self.bound_at: dict[str, float] = {}  # pod uid -> wall time its nodeName was first seen
        self.ours: set[str] = set()  # uids the study itself deleted
        self.preempted: set[str] = set()  # uids deleted by someone else before they succeeded
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _see(self, kind: str, obj: dict[str, Any]) -> None:
        meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
        uid = meta["uid"]
        gpus = sum(
            int((c.get("resources") or {}).get("limits", {}).get("nvidia.com/gpu", 0))
            for c in spec.get("containers") or []
        )
        why = waiting_reason(obj)
        view = PodView(
            (meta.get("labels") or {}).get(JOB_LABEL, ""),
            meta["namespace"],
            meta["name"],
            spec.get("nodeName"),
            status.get("phase", "Pending"),
            bool(meta.get("deletionTimestamp")) or kind == "DELETED",
            gpus,
            (meta.get("annotations") or {}).get(FINISH_AT),
            why[:160],
        )
        with self.lock:
            if view.node and uid not in self.bound_at:
                self.bound_at[uid] = time.monotonic()
            gone = view.deleting and view.phase not in ("Succeeded", "Failed")
            if gone and view.node and uid not in self.ours:
                self.preempted.add(uid)
            if kind == "DELETED":
                self.pods.pop(uid, None)
            else:
                self.pods[uid] = view

    def _run(self) -> None:
        path, selector = "/api/v1/pods", JOB_LABEL
        version = ""
        while not self.stop.is_set():
            try:
                if not version:
                    body = self.api.get(path, labelSelector=selector)
                    with self.lock:
                        self.pods.clear()
                    for item in body["items"]:
                        self._see("ADDED", item)
                    version = body["metadata"]["resourceVersion"]
                query = {
                    "labelSelector": selector,
                    "resourceVersion": version,
                    "allowWatchBookmarks": "true",
                    "timeoutSeconds": 30,
                }
                for event in self.api.watch(path, query, timeout=60):
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        version = ""  # 410 Gone: list again
                        break
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if event.get("type") != "BOOKMARK":
                        self._see(event["type"], obj)
            except ApiError:
                version = ""
                time.sleep(0.2)

    def snapshot(self) -> list[PodView]:
        with self.lock:
            return list(self.pods.values())


@dataclass
class Series:
    t: list[float] = field(default_factory=list)  # trace hours since the first arrival
    alloc: list[int] = field(default_factory=list)  # GPUs bound to live pods
    useful: list[int] = field(default_factory=list)  # GPUs in complete (training) gangs
    waiting: list[int] = field(default_factory=list)  # submitted jobs not yet started


def _stamp(wall_from_now: float) -> str:
    at = datetime.now(UTC) + timedelta(seconds=wall_from_now)
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Replay:
    def __init__(self, stage: Stage, jobs: list[TraceJob], params: ReplayParams) -> None:
        self.stage, self.params = stage, params
        assert stage.info is not None
        self.api = KubeApi(load_client(stage.info.kubeconfig, pool_size=16))
        self.watch = PodWatch(KubeApi(load_client(stage.info.kubeconfig, pool_size=4)))
        elastic = params.elastic and stage.spec.stack == "solver-sched"
        self.runs = [
            JobRun(j, f"j{i:04d}", _namespace(j.queue), j.duration, elastic=elastic and j.elastic)
            for i, j in enumerate(jobs)
        ]
        self.series = Series()
        self.capacity = stage.spec.nodes * stage.spec.gpus_per_node
        self.pool = ThreadPoolExecutor(8)  # the driver's writers (its client has 16 connections)

    # -- writes -----------------------------------------------------------------------------
    def _create(self, run: JobRun) -> None:
        self._post(run)
        run.submitted = time.monotonic()

    def _post(self, run: JobRun) -> None:
        prio = "high" if run.spec.priority > 0 else "low"
        if run.elastic:
            j, c = run.spec, max(1, round(self.params.cooldown / self.params.compress))
            group, job = elastic_manifests(
                run.name, run.namespace, j.min_pods, j.max_pods, j.gpus_per_pod, prio, f"{c}s"
            )
            self.api.request(
                "POST", f"/apis/{PODGROUP_API}/namespaces/{run.namespace}/podgroups", body=group
            )
            self.api.request("POST", f"/apis/batch/v1/namespaces/{run.namespace}/jobs", body=job)
            return
        manifest = job_manifest(
            self.stage.spec.stack,
            run.name,
            run.namespace,
            run.spec.pods,
            run.spec.gpus_per_pod,
            prio,
        )
        self.api.request("POST", f"/apis/batch/v1/namespaces/{run.namespace}/jobs", body=manifest)

    def _annotate(self, pods: list[PodView], value: str | None) -> None:
        body = {"metadata": {"annotations": {FINISH_AT: value}}}
        self._each_pod("PATCH", pods, body, "application/merge-patch+json")

    def _delete(self, pods: list[PodView], uids: list[str]) -> None:
        with self.watch.lock:
            self.watch.ours.update(uids)
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
        self._each_pod("DELETE", pods, body)

    def _each_pod(
        self, verb: str, pods: list[PodView], body: dict[str, Any], content_type: str = ""
    ) -> None:
        """One request per pod, by the driver's 8 writers; a pod already gone is no error."""

        def one(p: PodView) -> None:
            try:
                path = f"/api/v1/namespaces/{p.namespace}/pods/{p.name}"
                self.api.request(verb, path, body=body, content_type=content_type or None)
            except ApiError as exc:
                if exc.status != 404:
                    raise

        list(self.pool.map(one, pods))

    # -- the loop ----------------------------------------------------------------------------
    def run(self, progress: Any = None) -> dict[str, Any]:
        p = self.params
        self.watch.start()
        pending = sorted(self.runs, key=lambda r: r.spec.arrival)
        t0 = time.monotonic()
        last = t0
        alloc_s = useful_s = partial_gpu_s = 0.0
        done = 0
        ticks: list[float] = []  # wall seconds between the driver's looks (its own lag)
        while True:
            now = time.monotonic()
            due = []
            while pending and pending[0].spec.arrival / p.compress <= now - t0:
                due.append(pending.pop(0))
            if due:
                # at once, by 8 writers: a burst of arrivals written one by one held the driver
                # for seconds on the loaded machine (no starts or finishes seen meanwhile)
                list(self.pool.map(self._create, due))
                now = time.monotonic()  # a start seen in this tick is never before its submit
            self.stage.check_alive()
            by_job: dict[str, list[tuple[str, PodView]]] = {}
            with self.watch.lock:
                items = list(self.watch.pods.items())
            for uid, view in items:
                by_job.setdefault(view.job, []).append((uid, view))
            alloc = useful = partial = 0
            for run in self.runs:
                if run.submitted is None or run.finished is not None:
                    continue
                pods = by_job.get(run.name, [])
                live = [(u, v) for u, v in pods if not v.deleting and v.phase != "Failed"]
                succeeded = sum(1 for _, v in live if v.phase == "Succeeded")
                active = [(u, v) for u, v in live if v.phase != "Succeeded"]
                bound = [(u, v) for u, v in active if v.node]
                running = [(u, v) for u, v in active if v.phase == "Running"]
                alloc += sum(v.gpus for _, v in bound)
                if pods and run.pods_seen is None:
                    run.pods_seen = now
                if bound and run.first_bind is None:
                    run.first_bind = now
                if len(bound) + succeeded >= run.gang and run.all_bound is None:
                    run.all_bound = now
                if run.first_start is None and not bound:
                    why = next((v.reason for _, v in active if v.reason), "")
                    run.reasons[_reason_class(why)] += 1
                # rigid: every pod succeeds; elastic: one does, and the Job's success policy ends
                # the rest (KWOK completes a pod only at the finish-at of a training gang)
                if succeeded >= (1 if run.elastic else run.spec.pods):
                    run.finished = now
                    run.running_since = None
                    done += 1
                    if progress is not None:
                        progress(1)
                    continue
                if run.elastic:
                    training = self._elastic(run, now, active, running)
                else:
                    training = self._rigid(run, now, active, running, succeeded)
                if training is not None:
                    useful += training
                    continue
                if bound:
                    partial += sum(v.gpus for _, v in bound)
                    run.partial_since = run.partial_since or now
                    waited = now - run.partial_since
                    if waited > p.partial_grace and not run.partial_counted:
                        run.partial_counted = True
                        run.partial_episodes += 1
                    if waited > p.partial_timeout / p.compress:
                        run.timeouts += 1
                        run.partial_since = None
                        run.partial_counted = False
                        self._delete([v for _, v in bound], [u for u, _ in bound])
                else:
                    run.partial_since = None
                    run.partial_counted = False
            dt = now - last
            last = now
            ticks.append(dt)
            alloc_s += alloc * dt
            useful_s += useful * dt
            partial_gpu_s += partial * dt
            s = self.series
            s.t.append((now - t0) * p.compress / 3600)
            s.alloc.append(alloc)
            s.useful.append(useful)
            s.waiting.append(
                sum(1 for r in self.runs if r.submitted is not None and r.first_start is None)
            )
            if done == len(self.runs) or now - t0 > p.horizon:
                break
            time.sleep(p.tick)
        self.watch.stop.set()
        self.pool.shutdown()
        span = max(1e-9, (last - t0))
        out = self._summary(span, alloc_s, useful_s, partial_gpu_s)
        out["events"] = event_tally(self.api)
        # every start and finish is seen at a tick: a loaded machine makes them late for the
        # stack that ran then, which the paired ratio does not cancel
        out["driver_tick_s"] = {"mean": _mean(ticks), "p95": _pct(sorted(ticks), 0.95)}
        return out

    def _rigid(
        self,
        run: JobRun,
        now: float,
        active: list[tuple[str, PodView]],
        running: list[tuple[str, PodView]],
        succeeded: int,
    ) -> int | None:
        """A rigid job trains while every pod of its gang runs; the GPUs it trains on, or None."""
        p = self.params
        complete = len(running) + succeeded >= run.spec.pods and len(running) > 0
        if complete and run.running_since is None:
            run.running_since = now
            run.partial_since = None
            run.first_start = run.first_start or now
            work = run.remaining + (p.restart_overhead if run.restarts else 0.0)
            self._annotate([v for _, v in running], _stamp(work / p.compress))
        elif not complete and run.running_since is not None:
            progressed = (now - run.running_since) * p.compress
            kept = math.floor(progressed / p.checkpoint) * p.checkpoint
            run.remaining = max(1.0, run.remaining - kept)
            run.restarts += 1
            run.running_since = None
            self._annotate([v for _, v in active if v.finish_at], None)
        if run.running_since is None:
            return None
        # the GPUs its pods hold now: pods that already succeeded hold none (counting the job's
        # whole request made useful exceed allocated once, with kueue)
        return sum(v.gpus for _, v in active if v.node)

    def _elastic(
        self,
        run: JobRun,
        now: float,
        active: list[tuple[str, PodView]],
        running: list[tuple[str, PodView]],
    ) -> int | None:
        """An elastic job trains at the size of its running pods once every bound pod runs and
        that size is allowed (a power of two in [min, max]), at the speedup model's rate
        (solver_sched/sim/model.py), as the trace study's simulator does: losing a pod rolls it
        back to its last checkpoint (a restart); growing is graceful (checkpoint, restart
        bigger); both pay ``restart_overhead``. The GPUs it trains on, or None."""
        p, c = self.params, self.params.compress
        up = dict(running)
        settled = len(up) == sum(1 for _, v in active if v.node) and run.allowed(len(up))
        if run.running_since is not None:
            lost = not run.members <= up.keys()
            if lost or (settled and len(up) != run.size):
                speed = run.speed(run.size)
                trained = max(0.0, (now - run.running_since) * c - run.overhead)
                if lost:
                    trained = math.floor(trained / p.checkpoint) * p.checkpoint
                    run.restarts += 1
                else:
                    run.scale_outs += 1
                run.remaining = max(1.0, run.remaining - trained * speed)
                run.running_since = None
                if not settled:
                    self._annotate([v for _, v in active if v.finish_at], None)
        if run.running_since is None and settled:
            run.running_since, run.size, run.members = now, len(up), set(up)
            run.partial_since = None
            run.first_start = run.first_start or now
            run.max_size = max(run.max_size, run.size)
            run.overhead = p.restart_overhead if run.restarts or run.scale_outs else 0.0
            work = run.overhead + run.remaining / run.speed(run.size)
            self._annotate(list(up.values()), _stamp(work / c))
        if run.running_since is None:
            return None
        return sum(up[u].gpus for u in run.members)

    def _summary(
        self, span: float, alloc_s: float, useful_s: float, partial_gpu_s: float
    ) -> dict[str, Any]:
        c = self.params.compress
        fin = [r for r in self.runs if r.finished is not None and r.submitted is not None]
        jct = sorted((r.finished - r.submitted) * c / 3600 for r in fin)  # type: ignore[operator]
        queue = sorted(
            (r.first_start - r.submitted) * c / 3600
            for r in self.runs
            if r.first_start is not None and r.submitted is not None
        )
        s = self.series
        return {
            "series_rows": [
                {
                    "t": s.t[i] * 3600,
                    "allocated": s.alloc[i],
                    "useful": s.useful[i],
                    "waiting": s.waiting[i],
                }
                for i in range(0, len(s.t), 4)
            ],
            "jobs": len(self.runs),
            "finished": len(fin),
            "avg_jct_h": _mean(jct),
            "p95_jct_h": _pct(jct, 0.95),
            "avg_queue_h": _mean(queue),
            "p95_queue_h": _pct(queue, 0.95),
            "makespan_h": span * c / 3600,
            "util_alloc": alloc_s / (self.capacity * span),
            "util_useful": useful_s / (self.capacity * span),
            "partial_gangs": sum(r.partial_episodes for r in self.runs),
            "partial_gpu_h": partial_gpu_s * c / 3600,
            "rendezvous_timeouts": sum(r.timeouts for r in self.runs),
            "preempted_pods": len(self.watch.preempted),
            "restarts": sum(r.restarts for r in self.runs),
            "elastic_jobs": sum(1 for r in self.runs if r.elastic),
            "scale_outs": sum(r.scale_outs for r in self.runs),
            "grown_jobs": sum(1 for r in self.runs if r.elastic and r.max_size > r.spec.pods),
            "per_job": [
                {
                    "name": r.name,
                    "gpus": r.gpus,
                    "pods": r.spec.pods,
                    "arrival_h": r.spec.arrival / 3600,
                    "duration_h": r.spec.duration / 3600,
                    # the shortest it could run from its arrival on: at its size, or a job run
                    # elastic at its max (sim/bounds.py); no scheduler gives a JCT below this
                    "min_run_h": (
                        alone(r.spec, SimParams(gpus=self.capacity))
                        if r.elastic
                        else r.spec.duration
                    )
                    / 3600,
                    "jct_h": None
                    if r.finished is None or r.submitted is None
                    else (r.finished - r.submitted) * c / 3600,
                    "restarts": r.restarts,
                    "elastic": r.elastic,
                    "scale_outs": r.scale_outs,
                    "max_pods_trained": r.max_size if r.elastic else r.spec.pods,
                    **self._delays(r),
                }
                for r in self.runs
            ],
        }

    def _delays(self, r: JobRun) -> dict[str, Any]:
        """A job's queueing delay in trace hours, split where it went: submit -> its pods exist
        (Job controller), -> first pod bound (the scheduler's decision), -> every pod bound
        (binding), -> the gang runs (KWOK's Running); and the scheduler's messages while it
        waited (ticks of the driver per message class)."""
        c = self.params.compress

        def h(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else (b - a) * c / 3600

        return {
            "queue_h": h(r.submitted, r.first_start),
            "to_pods_h": h(r.submitted, r.pods_seen),
            "to_first_bind_h": h(r.pods_seen, r.first_bind),
            "bind_span_h": h(r.first_bind, r.all_bound),
            "to_running_h": h(r.all_bound, r.first_start),
            "waiting_reasons": dict(r.reasons),
        }


def event_tally(api: KubeApi, top: int = 40) -> dict[str, int]:
    """The stage's events (every component's, still within the API server's event TTL) counted
    by involved kind, reason and message class, most frequent first: why a peer evicted or
    stopped a job (Kueue's ``Preempted`` on Workloads, ``Stopped`` on Jobs with the eviction's
    message: PodsReady timeout or preemption and its reason), which the pods' record does not
    say."""
    counts: Counter[str] = Counter()
    token: str | None = None
    while True:
        query: dict[str, Any] = {"limit": 500}
        if token:
            query["continue"] = token
        page = api.get("/api/v1/events", **query)
        for ev in page.get("items", []):
            kind = (ev.get("involvedObject") or {}).get("kind", "")
            n = ev.get("count") or (ev.get("series") or {}).get("count") or 1
            counts[f"{kind} {ev.get('reason', '')}: {_reason_class(ev.get('message', ''))}"] += n
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return dict(counts.most_common(top))


def _reason_class(message: str) -> str:
    """A scheduler's waiting message without its numbers and names (for counting)."""
    if not message:
        return "(none)"
    words = [w for w in message.split() if not any(ch.isdigit() for ch in w)]
    return " ".join(words)[:80]


def burst(stage: Stage, gangs: int, gang: int = 64) -> dict[str, Any]:
    """``gangs`` Jobs of ``gang`` 1-GPU pods at once on the idle stage: when each pod is bound.
    Reports the first gang's bind span (its first to its last bind: the decision precedes the
    first), creation to all bound, and the bind rate over every pod after the first ``burst``
    (100 for every stack's default client) against the default 50 QPS."""
    assert stage.info is not None
    api = KubeApi(load_client(stage.info.kubeconfig, pool_size=8))
    watch = PodWatch(KubeApi(load_client(stage.info.kubeconfig, pool_size=4)))
    watch.start()
    ns = stage.spec.all_queues()[0].name
    t0 = time.monotonic()
    for g in range(gangs):
        manifest = job_manifest(stage.spec.stack, f"burst-{g}", ns, gang, 1, "low")
        api.request("POST", f"/apis/batch/v1/namespaces/{ns}/jobs", body=manifest)
    created = time.monotonic() - t0
    total = gangs * gang
    deadline = time.monotonic() + 60 + 4 * total / 50
    while time.monotonic() < deadline and len(watch.bound_at) < total:
        stage.check_alive()
        time.sleep(0.1)
    watch.stop.set()
    with watch.lock:
        per_job: dict[str, list[float]] = {}
        for uid, at in watch.bound_at.items():
            view = watch.pods.get(uid)
            if view is not None:
                per_job.setdefault(view.job, []).append(at)
    times = sorted(t for ts in per_job.values() for t in ts)
    first_done = min((max(ts) for ts in per_job.values() if len(ts) == gang), default=None)
    first_gang = next((ts for ts in per_job.values() if max(ts) == first_done), [])
    rest = times[100:] if len(times) > 101 else times
    rate = (len(rest) - 1) / max(1e-9, rest[-1] - rest[0]) if len(rest) > 1 else 0.0
    out = {
        "pods": total,
        "bound": len(times),
        "create_s": created,
        "all_bound_s": (times[-1] - t0) if times else None,
        "first_gang_bound_s": (first_done - t0) if first_done else None,
        "first_gang_bind_span_s": (max(first_gang) - min(first_gang)) if first_gang else None,
        "binds_per_s": rate,
    }
    for g in range(gangs):
        with contextlib.suppress(ApiError):
            api.request(
                "DELETE",
                f"/apis/batch/v1/namespaces/{ns}/jobs/burst-{g}",
                body={
                    "kind": "DeleteOptions",
                    "apiVersion": "v1",
                    "propagationPolicy": "Background",
                },
            )

    def gone() -> bool:
        pods = api.get(f"/api/v1/namespaces/{ns}/pods", labelSelector=JOB_LABEL)["items"]
        return not any(p["metadata"]["labels"][JOB_LABEL].startswith("burst-") for p in pods)

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not gone():
        time.sleep(0.5)
    return out


def shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` as equal as integers allow (the first ones get the rest)."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def stage_spec(stack: str, jobs: list[TraceJob], nodes: int, params: ReplayParams) -> StageSpec:
    """The stage one stack replays ``jobs`` on. Kueue's ClusterQueues (one per trace queue, in
    one cohort that lends idle quota) get equal shares of the cluster's GPUs: their nominal quotas
    add up to the cluster. (Each with the whole cluster let Kueue admit several times what fits:
    docs/benchmarks.md section 6.) Kueue's timeout and client rate follow the trace clock."""
    names = sorted({_namespace(j.queue) for j in jobs})
    split = shares(nodes * 8, len(names))
    queues = tuple(Queue(q, share) for q, share in zip(names, split, strict=True))
    kueue_ready = params.kueue_ready_s or params.partial_timeout / params.compress
    return StageSpec(
        stack,
        nodes=nodes,
        queues=queues,
        kueue_pods_ready_timeout=f"{max(1.0, kueue_ready):.0f}s",
        kueue_qps=params.kueue_qps or KUEUE_QPS * params.compress,
        kube_scoring=params.kube_scoring,
    )


def run_stack(
    stack: str,
    jobs: list[TraceJob],
    nodes: int,
    params: ReplayParams,
    work: Path,
    progress: Any = None,
) -> dict[str, Any]:
    """A fresh stage for ``stack``: the burst, then the replay; the stack's CPU and requests."""
    spec = stage_spec(stack, jobs, nodes, params)
    started, load_at_start = time.monotonic(), os.getloadavg()
    with Stage(spec, work) as stage:
        stage_s = time.monotonic() - started
        burst_out = burst(stage, params.burst_gangs) if params.burst_gangs else {}
        cpu0, req0 = stage.scheduler_cpu_seconds(), stage.requests()
        summary = Replay(stage, jobs, params).run(progress)
        cpu = stage.scheduler_cpu_seconds() - cpu0
        req: Counter[str] = stage.requests()
        req.subtract(req0)
    summary.update(
        stack=stack,
        stage_start_s=stage_s,
        burst=burst_out,
        scheduler_cpu_s=cpu,
        api_requests=sum(req.values()),
        api_requests_by_verb=dict(req),
        load_avg=(load_at_start, os.getloadavg()),  # the machine's, at the stage's start and end
    )
    return summary


def _namespace(queue: str) -> str:
    name = "".join(ch if ch.isalnum() else "-" for ch in queue.lower()).strip("-")
    return name[:50] or "default"


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    return xs[min(len(xs) - 1, math.ceil(q * len(xs)) - 1)]
