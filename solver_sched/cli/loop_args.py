"""The flags `solver-sched run` and `solver-sched fleet` share (the controller loop's), and the
options and initial config they give."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from solver_sched.config.schema import ConfigError, SchedulerConfig, load_config
from solver_sched.kube.leader import default_identity


def positive(kind: type[int] | type[float], zero: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number of ``kind`` above 0 (at least 0 with ``zero``). A rate
    of 0 divided by zero in the binder's workers and left a gang half bound; 0 workers or a
    burst of 0 bound nothing, silently."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not (value >= 0 if zero else value > 0) or value == float("inf"):  # NaN too
            raise argparse.ArgumentTypeError(f"must be {'0 or more' if zero else 'above 0'}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def add_loop_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """``what``: the API server the kubeconfig names (in the help text)."""
    p.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG"),
        help=f"{what}; default: $KUBECONFIG, else the in-cluster service account",
    )
    p.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE", "solver-sched"),
        help="where the ConfigMap and the leader Lease live",
    )
    p.add_argument(
        "--config-map",
        default="solver-sched-config",
        help="ConfigMap (in --namespace) whose config.yaml holds weights and settings",
    )
    p.add_argument(
        "--cycle-interval", type=positive(float), default=10.0, help="seconds between cycles"
    )
    p.add_argument(
        "--leader-elect",
        action="store_true",
        help="run as one of several replicas: only the holder of the Lease acts",
    )
    p.add_argument(
        "--identity",
        default=os.environ.get("POD_NAME") or default_identity(),
        help="this replica's name in the Lease, unique per replica (default: $POD_NAME, else "
        "the host name and a random suffix, as client-go does)",
    )
    p.add_argument(
        "--lease-duration",
        type=float,
        default=15.0,
        help="seconds a standby waits after the Lease last changed before it takes over",
    )
    p.add_argument(
        "--renew-deadline",
        type=float,
        default=10.0,
        help="the leader stops writing once its last renewal is this old (< --lease-duration)",
    )
    p.add_argument(
        "--retry-period", type=float, default=2.0, help="seconds between Lease renewals or tries"
    )
    p.add_argument("--metrics-addr", default=":8080", help="host:port; empty to disable")
    p.add_argument("--dry-run", action="store_true", help="plan and report, change nothing")
    p.add_argument("--config", type=Path, help="initial config before the ConfigMap is read")
    p.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")


def loop_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "kubeconfig": args.kubeconfig,
        "namespace": args.namespace,
        "config_map": args.config_map,
        "cycle_interval": args.cycle_interval,
        "leader_elect": args.leader_elect,
        "identity": args.identity,
        "lease_duration": args.lease_duration,
        "renew_deadline": args.renew_deadline,
        "retry_period": args.retry_period,
        "metrics_addr": args.metrics_addr or None,
        "dry_run": args.dry_run,
        "qps": args.qps,
        "burst": args.burst,
    }


def start_up(args: argparse.Namespace) -> SchedulerConfig | int | None:
    """Logging, the lease timings and the --config file: the config (None: none given), or the
    exit code 2 after a message."""
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.leader_elect and not args.lease_duration > args.renew_deadline > args.retry_period > 0:
        print(
            "solver-sched: need --lease-duration > --renew-deadline > --retry-period > 0",
            file=sys.stderr,
        )
        return 2
    try:
        return load_config(args.config) if args.config else None
    except ConfigError as exc:
        print(f"solver-sched: {exc}", file=sys.stderr)
        return 2


def run_reporting(run: Callable[[], None]) -> int:
    """Runs a controller until it stops: 0, or 2 after a message when no API client could be
    configured (a missing kubeconfig is the user's to fix, not a traceback)."""
    from solver_sched.kube.api import KubeconfigError

    try:
        run()
    except KubeconfigError as exc:
        print(f"solver-sched: {exc}", file=sys.stderr)
        return 2
    return 0
