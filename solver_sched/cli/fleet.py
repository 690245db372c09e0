"""`solver-sched fleet` (the controller) and the fleet form of `solver-sched whatif`
(``--member NAME=FILE``): one fleet cycle offline, with ``placements`` added to the JSON."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from solver_sched.config.schema import ConfigError, SchedulerConfig, load_config
from solver_sched.io.files import InputFileError, load_objects


def add_parser(sub: Any) -> None:
    f = sub.add_parser("fleet", help="place hub PyTorchJobs on member clusters (the fleet)")
    f.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG"),
        help="the hub; default: $KUBECONFIG, else the in-cluster service account",
    )
    f.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE", "solver-sched"),
        help="the hub namespace of the ConfigMap and the leader Lease (default: $POD_NAMESPACE)",
    )
    f.add_argument(
        "--config-map",
        default="solver-sched-config",
        help="ConfigMap (in --namespace) whose config.yaml holds weights and settings",
    )
    f.add_argument("--cycle-interval", type=float, default=10.0, help="seconds between cycles")
    f.add_argument(
        "--leader-elect",
        action="store_true",
        help="run as one of several replicas: only the holder of the Lease acts",
    )
    f.add_argument(
        "--identity",
        default=os.environ.get("POD_NAME") or socket.gethostname(),
        help="this replica's name in the Lease (default: $POD_NAME, else the host name)",
    )
    f.add_argument("--metrics-addr", default=":8080", help="host:port; empty to disable")
    f.add_argument("--dry-run", action="store_true", help="plan and log, change nothing")
    f.add_argument(
        "--qps", type=float, default=50.0, help="writes per second, to the hub and to each member"
    )
    f.add_argument("--burst", type=int, default=100, help="writes sent at once (token bucket)")
    f.add_argument("--probe-interval", type=float, default=2.0, help="member health probes")
    f.add_argument(
        "--delete-grace-seconds", type=int, default=None, help="for pods of deleted copies"
    )
    f.add_argument("--config", type=Path, help="initial config before the ConfigMap is read")
    f.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")


def run(args: argparse.Namespace) -> int:
    import logging

    from solver_sched.fleet.controller import FleetOptions, run_forever

    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        config = load_config(args.config) if args.config else None
    except ConfigError as exc:
        print(f"solver-sched: {exc}", file=sys.stderr)
        return 2
    opts = FleetOptions(
        kubeconfig=args.kubeconfig,
        namespace=args.namespace,
        config_map=args.config_map,
        cycle_interval=args.cycle_interval,
        leader_elect=args.leader_elect,
        identity=args.identity,
        metrics_addr=args.metrics_addr or None,
        dry_run=args.dry_run,
        qps=args.qps,
        burst=args.burst,
        probe_interval=args.probe_interval,
        delete_grace_seconds=args.delete_grace_seconds,
    )
    run_forever(opts, config)
    return 0


def whatif(
    args: argparse.Namespace,
    hub: list[dict[str, Any]],
    config: SchedulerConfig,
    scheduler_name: str,
    now: datetime,
) -> int:
    from solver_sched.cli.render import strict_failed, to_json, to_table
    from solver_sched.cycle import run_cycle
    from solver_sched.fleet.controller import fleet_config
    from solver_sched.io.fleet_snapshot import MemberState, build_fleet, read_plan

    members = []
    for spec in args.member:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            print(f"solver-sched: --member {spec!r}: expected NAME=FILE", file=sys.stderr)
            return 2
        try:
            members.append(MemberState(name, load_objects([Path(path)], whole=True)))
        except InputFileError as exc:
            print(f"solver-sched: --member {name}: {exc}", file=sys.stderr)
            return 2
    fleet = build_fleet(hub, members, scheduler_name, config.settings.cooldown)
    if args.strict and strict_failed(fleet.snapshot.errors):
        return 2
    result = run_cycle(fleet.snapshot, fleet_config(config), now, args.solver, args.time_limit)
    placements = read_plan(fleet, result.plan.binds, result.plan.jobs).placements
    if args.output == "json":
        out = to_json(result, fleet.snapshot)
        out["placements"] = placements
        print(json.dumps(out, indent=2))
    else:
        print(to_table(result, fleet.snapshot))
        print("\nPLACEMENTS")
        for p in placements:
            where = p["cluster"] or "(queued)"
            print(f"  {p['job']} -> {where}" + (f"  {p['reason']}" if p["reason"] else ""))
    if result.violations:
        print(
            "solver-sched: the plan failed the feasibility check; nothing emitted", file=sys.stderr
        )
        return 1
    return 0
