"""What `solver-sched run` and `solver-sched fleet` share: the API client with its fence, leader
election, the ConfigMap as the live config, informers over the kinds the API server serves, the
metrics and probes endpoint, and the single-threaded cycle loop.

One cycle runs at a time, every ``cycle_interval`` seconds and soon after a watched change
(debounced). Only the leader acts: every write is fenced on the lease (``KubeApi.fence`` is
``may_act``), a lapse calls ``lost_leadership`` once, and ``--dry-run`` never takes the Lease and
writes nothing. A subclass names the kinds it watches and implements ``cycle``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer

from solver_sched.config.schema import SchedulerConfig
from solver_sched.kube.api import ApiError, KubeApi, RateLimiter, load_client
from solver_sched.kube.configsource import ConfigSource
from solver_sched.kube.informer import Informer
from solver_sched.kube.leader import LeaderElector, default_identity
from solver_sched.kube.resources import CONFIG_MAPS, Resource
from solver_sched.kube.store import ObjectStore
from solver_sched.metrics import Metrics, serve

log = logging.getLogger(__name__)
DISCOVERY_RETRY = 2.0  # seconds between discoveries while the API server cannot be reached


@dataclass
class LoopOptions:
    kubeconfig: str | None = None
    scheduler_name: str | None = None  # None: the config's settings.schedulerName
    namespace: str = "solver-sched"  # the ConfigMap and the Lease
    config_map: str = "solver-sched-config"
    cycle_interval: float = 10.0
    debounce: float = 0.5
    leader_elect: bool = False
    lease_name: str = "solver-sched"
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    metrics_addr: str | None = None
    dry_run: bool = False
    qps: float = 50.0
    burst: int = 100
    discovery_interval: float = 30.0


class ControlLoop:
    """The machinery of a controller; ``cycle`` is the subclass's."""

    watched: tuple[Resource, ...] = ()
    thread_name = "controller"

    def __init__(
        self, opts: LoopOptions, api: KubeApi | None, metrics: Metrics, pool_size: int = 32
    ) -> None:
        self.opts = opts
        self.api = api or KubeApi(
            load_client(opts.kubeconfig, pool_size), RateLimiter(opts.qps, opts.burst)
        )
        self.api.fence = self.may_act  # every write checks the lease right before it is sent
        self.store = ObjectStore()
        self.stop = threading.Event()
        self.metrics = metrics
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
            if opts.leader_elect and not opts.dry_run  # a dry run observes: it never leads
            else None
        )
        if self.leader is not None:
            self.leader.on_lost.append(self.lost_leadership)
        self.configs = ConfigSource(
            self.store,
            opts.namespace,
            opts.config_map,
            self._bad_config,
            self._config_loaded,
        )
        # the InvalidConfig Event not yet sent: a standby's would be fenced and lost, and the
        # ConfigMap is judged once per version, so it waits until this replica may write
        self._config_event: tuple[dict[str, object], str] | None = None
        self.informers: dict[str, Informer] = {}
        self.cycles = 0
        self._alive = time.monotonic()
        self._discovered = False
        self._thread: threading.Thread | None = None
        self._server: ThreadingHTTPServer | None = None

    # -- what a subclass provides --------------------------------------------------------------
    def cycle(self) -> object:
        raise NotImplementedError

    def lost_leadership(self) -> None:
        """Called once when the lease lapses (in-flight writes are stopped by the fence)."""

    def close(self) -> None:
        """Stops the subclass's own threads, after the loop has ended."""

    def post(self, action: Callable[[], None]) -> None:
        """Runs a status write (a subclass may queue it on a thread of its own)."""
        action()

    def event(self, ref: dict[str, object], reason: str, message: str) -> None:
        raise NotImplementedError

    # -- lifecycle -----------------------------------------------------------------------------
    def may_act(self) -> bool:
        if self.opts.dry_run or self.stop.is_set():
            return False
        return self.leader is None or self.leader.may_write()

    def leading(self) -> bool:
        """Leads (or needs no lease); a dry run plans whether it leads or not."""
        return self.leader is None or self.leader.is_leader() or self.opts.dry_run

    def start(self) -> None:
        self._discovered = self._try_discover()  # the API server may be away: the loop retries
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
        self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        self.stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        self.close()
        if self.leader is not None:
            self.leader.release()
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

    def refresh_config(self) -> SchedulerConfig:
        self.metrics.leader.set(1 if self.may_act() else 0)
        config = self.configs.refresh()
        self._report_config()  # a replica that took over reports what it read as a standby
        return config

    def _try_discover(self) -> bool:
        try:
            self._discover()
        except Exception as exc:  # API server away: logged, tried again by the loop
            log.warning("discovery: %s; retried", exc)
            return False
        return True

    def _discover(self) -> None:
        """Start informers for every watched kind the API server serves (CRDs may come later)."""
        for resource in self.watched:
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
        ref: dict[str, object] = {
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "namespace": ns,
            "name": name,
        }
        self._config_event = ref, message
        self._report_config()

    def _config_loaded(self) -> None:
        self.metrics.config_reloads.inc()
        self._config_event = None

    def _report_config(self) -> None:
        event = self._config_event
        if event is not None and self.may_act():
            self._config_event = None
            ref, message = event
            self.post(lambda: self.event(ref, "InvalidConfig", message))

    # -- the loop ------------------------------------------------------------------------------
    def _loop(self) -> None:
        retry = DISCOVERY_RETRY  # doubled while the API server stays away, as the informers do

        def after(ok: bool) -> float:
            nonlocal retry
            wait, retry = (
                (self.opts.discovery_interval, DISCOVERY_RETRY)
                if ok
                else (retry, min(2 * retry, self.opts.discovery_interval))
            )
            return time.monotonic() + wait

        next_discovery = after(self._discovered)
        while not self.stop.is_set():
            self._alive = time.monotonic()
            if time.monotonic() > next_discovery:
                self._discovered = self._try_discover()
                next_discovery = after(self._discovered)
            if not self.ready():
                self.stop.wait(0.1)
                continue
            # read before the cycle takes its snapshot: a change that lands while the cycle runs
            # is not in that snapshot, so it must start the next cycle (after the debounce), not
            # wait for yet another change or the whole interval
            generation = self.store.generation
            try:
                self.cycle()
            except ApiError as exc:  # the API server is away or refusing: next cycle retries
                log.warning("cycle aborted: %s", exc)
                self.metrics.cycles.labels("error").inc()
            except Exception:  # a bug: must not kill the controller
                log.exception("cycle failed")
                self.metrics.cycles.labels("error").inc()
            deadline = time.monotonic() + self.opts.cycle_interval
            while not self.stop.is_set() and time.monotonic() < deadline:
                changed = self.store.wait_for_change(generation, deadline - time.monotonic())
                if changed != generation:
                    self.stop.wait(self.opts.debounce)  # let a burst of events settle
                    break


def run_until_signalled(loop: ControlLoop) -> None:
    """Blocking: start, then stop cleanly on SIGTERM/SIGINT."""
    import signal

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: loop.stop.set())
    loop.start()
    try:
        while not loop.stop.wait(1.0):
            pass
    finally:
        loop.shutdown()
