"""Prometheus metrics and the /metrics, /healthz, /readyz endpoints.

Each controller owns a registry (several controllers can live in one test process).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST


class Metrics:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.cycle_seconds = Histogram(
            "solver_sched_cycle_duration_seconds",
            "Whole scheduling cycle",
            registry=r,
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
        )
        self.phase_seconds = Histogram(
            "solver_sched_phase_duration_seconds",
            "Cycle phases",
            ["phase"],
            registry=r,
            buckets=(0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30),
        )
        self.cycles = Counter("solver_sched_cycles_total", "Cycles run", ["result"], registry=r)
        self.solver_status = Gauge(
            "solver_sched_solver_status",
            "1 for the status of the last solve",
            ["status"],
            registry=r,
        )
        self.objective = Gauge(
            "solver_sched_objective", "Objective of the emitted plan", registry=r
        )
        self.bound = Gauge("solver_sched_objective_bound", "Solver's best bound", registry=r)
        self.gap = Gauge("solver_sched_gap", "Relative gap of the last solve", registry=r)
        self.binds = Counter("solver_sched_binds_total", "Pods bound", registry=r)
        self.bind_failures = Counter(
            "solver_sched_bind_failures_total", "Failed binds", ["reason"], registry=r
        )
        self.evictions = Counter("solver_sched_evictions_total", "Pods evicted", registry=r)
        self.evictions_blocked = Counter(
            "solver_sched_evictions_blocked_total", "Job-level evictions refused (PDB)", registry=r
        )
        self.rollbacks = Counter(
            "solver_sched_gang_rollbacks_total",
            "Partial gangs rolled back after their timeout",
            registry=r,
        )
        self.pending_jobs = Gauge(
            "solver_sched_pending_jobs",
            "Jobs below their reachable size",
            ["queue", "reason"],
            registry=r,
        )
        self.config_reloads = Counter(
            "solver_sched_config_reloads_total", "Valid configs loaded", registry=r
        )
        self.config_errors = Counter(
            "solver_sched_config_errors_total", "Invalid configs rejected", registry=r
        )
        self.leader = Gauge("solver_sched_leader", "1 while this replica leads", registry=r)
        self.input_errors = Gauge(
            "solver_sched_input_errors", "Objects rejected at the edge", registry=r
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)


def reason_class(reason: str) -> str:
    """A low-cardinality label for a job's reason."""
    for key, label in (
        ("cooldown", "cooldown"),
        ("queue", "quota"),
        ("needs", "capacity"),
        ("preempt", "preemption"),
        ("PodGroup", "invalid"),
        ("waiting", "room"),
    ):
        if key in reason:
            return label
    return "other" if reason else "none"


def serve(
    addr: str, metrics: Metrics, healthy: Callable[[], bool], ready: Callable[[], bool]
) -> ThreadingHTTPServer:
    """Start the HTTP endpoint on ``host:port`` (``:8080`` = all interfaces) in a thread."""
    host, _, port = addr.rpartition(":")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/metrics"):
                self._send(200, metrics.render(), CONTENT_TYPE_LATEST)
            elif self.path.startswith("/healthz"):
                ok = healthy()
                self._send(200 if ok else 500, b"ok" if ok else b"unhealthy", "text/plain")
            elif self.path.startswith("/readyz"):
                ok = ready()
                self._send(200 if ok else 503, b"ok" if ok else b"not ready", "text/plain")
            else:
                self._send(404, b"not found", "text/plain")

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer((host or "0.0.0.0", int(port)), Handler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
