"""`solver-sched fleet` (the controller) and the fleet form of `solver-sched whatif`
(``--member NAME=FILE``): one fleet cycle offline, with ``placements`` added to the JSON."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from solver_sched.cli.loop_args import (
    add_loop_arguments,
    loop_options,
    positive,
    run_reporting,
    start_up,
)
from solver_sched.config.schema import SchedulerConfig
from solver_sched.io.files import InputFileError, load_objects


def add_parser(sub: Any) -> None:
    f = sub.add_parser("fleet", help="place hub PyTorchJobs on member clusters (the fleet)")
    add_loop_arguments(f, "the hub")
    f.add_argument("--scheduler-name", help="default: the ConfigMap's settings.schedulerName")
    f.add_argument(
        "--qps", type=positive(float), default=50.0, help="writes per second (each API server)"
    )
    f.add_argument(
        "--burst", type=positive(int), default=100, help="writes sent at once (token bucket)"
    )
    f.add_argument(
        "--probe-interval", type=positive(float), default=2.0, help="member health probes"
    )
    f.add_argument(
        "--delete-grace-seconds",
        type=positive(int, zero=True),
        default=None,
        help="for pods of deleted copies",
    )


def run(args: argparse.Namespace) -> int:
    from solver_sched.fleet.controller import FleetOptions, run_forever

    config = start_up(args)
    if isinstance(config, int):
        return config
    opts = FleetOptions(
        **loop_options(args),
        scheduler_name=args.scheduler_name,
        probe_interval=args.probe_interval,
        delete_grace_seconds=args.delete_grace_seconds,
    )
    return run_reporting(lambda: run_forever(opts, config))
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
    from solver_sched.io.fleet_members import MemberState
    from solver_sched.io.fleet_plan import read_plan
    from solver_sched.io.fleet_snapshot import build_fleet

    members: list[MemberState] = []
    for spec in args.member:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            print(f"solver-sched: --member {spec!r}: expected NAME=FILE", file=sys.stderr)
            return 2
        if any(m.name == name for m in members):
            print(f"solver-sched: --member {name}: given twice", file=sys.stderr)
            return 2
        try:
            members.append(MemberState(name, load_objects([Path(path)], whole=True)))
        except InputFileError as exc:
            print(f"solver-sched: --member {name}: {exc}", file=sys.stderr)
            return 2
    fleet = build_fleet(hub, members, scheduler_name, config.settings.cooldown)
    if args.strict and strict_failed(fleet.snapshot.errors):
        return 2
    at_hub = fleet_config(config)
    result = run_cycle(fleet.snapshot, at_hub, now, args.solver, args.time_limit, bounded=True)
    plan = result.plan
    placements = read_plan(fleet, plan.binds, plan.jobs, plan.evictions).placements
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
