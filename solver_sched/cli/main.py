"""`solver-sched` entry point. Exit codes: 0 ok, 1 no acceptable plan, 2 bad input or usage."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from solver_sched.cli import fleet as fleet_cli
from solver_sched.cli import simulate
from solver_sched.cli.loop_args import (
    add_loop_arguments,
    loop_options,
    positive,
    run_reporting,
    start_up,
)
from solver_sched.cli.stdout import own_stdout
from solver_sched.config.schema import ConfigError, SchedulerConfig, load_config
from solver_sched.cycle import BACKENDS, run_cycle
from solver_sched.io.files import InputFileError, load_objects
from solver_sched.io.gcpause import gc_paused
from solver_sched.io.kube_snapshot import FLEET_KINDS, READ_KINDS, snapshot_from_objects
from solver_sched.synthetic.presets import PRESETS

DESCRIPTION = """\
An optimization-based gang scheduler for distributed AI training on Kubernetes: each cycle
writes every rule (gangs, elastic sizes, priorities, queue quotas, cooldowns) as one integer
model, solves it, and binds or evicts whole jobs."""
EPILOG = """\
exit codes: 0 done (a plan was printed), 1 no plan passed the feasibility checker,
            2 unreadable input, bad config or usage (with --strict: any rejected object)
`solver-sched COMMAND --help` describes each command's flags."""


def seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse names the flag when this refuses)."""
    value = float(text)
    if not 0 < value < float("inf"):
        raise ValueError(text)
    return value


def _now(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not RFC 3339: {text!r}") from None
    if value.tzinfo is None:
        raise argparse.ArgumentTypeError(f"needs a time zone (e.g. Z): {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="solver-sched",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    w = sub.add_parser("whatif", help="plan one cycle offline on Kubernetes objects from files")
    w.add_argument("files", nargs="+", type=Path, help="YAML/JSON: a List, multi-doc or objects")
    w.add_argument("--config", type=Path, help="weights and settings (the ConfigMap's schema)")
    w.add_argument("--solver", choices=BACKENDS, help="default: the config's (cpsat)")
    w.add_argument(
        "--time-limit",
        type=seconds,
        help="seconds of search, whatever the cycle's budget (which still bounds greedy's other "
        "plans); default: the cycle's budget by cluster size, the controller's",
    )
    w.add_argument(
        "-o",
        "--output",
        choices=("table", "json"),
        default="table",
        help="a table to read (default) or the JSON of docs/whatif-json.md",
    )
    w.add_argument("--now", type=_now, help="RFC 3339 clock for cooldowns (default: now)")
    w.add_argument("--scheduler-name", help="schedulerName of pods we may bind")
    w.add_argument(
        "--member",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="fleet what-if: a member's nodes and pods (repeat); the files are then the hub's",
    )
    w.add_argument(
        "--timings", action="store_true", help="print seconds per step to stderr (one JSON line)"
    )
    w.add_argument(
        "--strict",
        action="store_true",
        help="exit 2 when any object is rejected (default: plan the rest and list the errors)",
    )
    r = sub.add_parser("run", help="schedule a live cluster (the secondary scheduler)")
    add_loop_arguments(r, "the cluster")
    r.add_argument(
        "--scheduler-name",
        default=os.environ.get("SCHEDULER_NAME"),
        help="default: the ConfigMap's settings.schedulerName (solver-sched)",
    )
    r.add_argument(
        "--qps", type=positive(float), default=50.0, help="binds and evictions per second"
    )
    r.add_argument(
        "--burst",
        type=positive(int),
        default=100,
        help="binds and evictions sent at once (token bucket)",
    )
    r.add_argument(
        "--status-qps",
        type=positive(float),
        default=20.0,
        help="status writes (conditions, Events, PodGroup status) per second, a separate budget",
    )
    r.add_argument(
        "--status-burst", type=positive(int), default=50, help="status writes sent at once"
    )
    r.add_argument("--bind-workers", type=positive(int), default=16, help="binds in flight at once")
    r.add_argument(
        "--eviction-grace-seconds",
        type=positive(int, zero=True),
        default=None,
        help="grace period of evicted pods (default: each pod's own)",
    )
    fleet_cli.add_parser(sub)
    demo = sub.add_parser("demo", help="the seed scenarios live on a local API server")
    demo.add_argument(
        "--testenv",
        type=Path,
        default=Path(".cache/bin/kube-testenv"),
        help="the kube-apiserver + etcd binary (`make testenv`) the demo starts on loopback",
    )
    demo.add_argument(
        "--operator",
        type=Path,
        default=Path(".cache/bin/training-operator"),
        help="the Kubeflow training-operator binary (`make operator`) that runs the PyTorchJobs",
    )
    demo.add_argument(
        "--scene",
        choices=("cluster", "fleet", "all"),
        default="all",
        help="the one-cluster scenarios, the fleet scene, or both (default)",
    )
    simulate.add_parser(sub)
    d = sub.add_parser("dump", help="write the live cluster as a what-if input file")
    d.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG"),
        help="the cluster to read; default: $KUBECONFIG, else the in-cluster service account",
    )
    d.add_argument(
        "-o",
        "--out",
        type=Path,
        required=True,
        help="the file to write: JSON if it ends in .json, else YAML",
    )
    g = sub.add_parser("generate", help="write a synthetic cluster (benchmarks)")
    g.add_argument(
        "--preset",
        help=f"a named cluster family: {', '.join(PRESETS)} (solver_sched/synthetic/presets.py); "
        "without it, the first generator with --running and --pending",
    )
    g.add_argument("--nodes", type=int, help="default: 64, or 512 with --preset")
    g.add_argument("--running", type=int, default=200, help="running jobs, without --preset")
    g.add_argument("--pending", type=int, default=100, help="pending jobs, without --preset")
    g.add_argument("--seed", type=int, default=1, help="random seed: same seed, same file")
    g.add_argument(
        "--now",
        type=_now,
        default=datetime(2026, 1, 1, 12, tzinfo=UTC),
        help="RFC 3339 time the jobs' creation and scale times are relative to",
    )
    g.add_argument("-o", "--out", type=Path, required=True, help="the file to write (a JSON List)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "run":
        return _run(args)
    if args.command == "dump":
        return _dump(args)
    if args.command == "fleet":
        return fleet_cli.run(args)
    if args.command == "simulate":
        return simulate.run(args)
    if args.command == "demo":
        from solver_sched.fleet.demo import run_fleet_demo
        from solver_sched.kube.demo import run_demo

        rc = run_demo(args.testenv, args.operator, Path.cwd()) if args.scene != "fleet" else 0
        if rc == 0 and args.scene != "cluster":
            rc = run_fleet_demo(args.testenv, args.operator, Path.cwd())
        return rc
    if args.command == "generate":
        return _generate(args)
    return _whatif(args)


def _generate(args: argparse.Namespace) -> int:
    from solver_sched.synthetic import write_cluster, write_preset

    if args.nodes is not None and args.nodes < 1:
        print(f"error: --nodes must be at least 1, not {args.nodes}", file=sys.stderr)
        return 2
    if args.preset is None:
        nodes = 64 if args.nodes is None else args.nodes
        write_cluster(args.out, nodes, args.running, args.pending, args.seed, args.now)
        return 0
    if args.preset not in PRESETS:
        print(
            f"error: --preset {args.preset!r} is unknown; choose one of {', '.join(PRESETS)}",
            file=sys.stderr,
        )
        return 2
    write_preset(args.out, args.preset, args.seed, args.now, args.nodes)
    return 0


def _run(args: argparse.Namespace) -> int:
    from solver_sched.kube.controller import RunOptions, run_forever

    config = start_up(args)
    if isinstance(config, int):
        return config
    opts = RunOptions(
        **loop_options(args),
        scheduler_name=args.scheduler_name,
        status_qps=args.status_qps,
        status_burst=args.status_burst,
        bind_workers=args.bind_workers,
        eviction_grace_seconds=args.eviction_grace_seconds,
    )
    return run_reporting(lambda: run_forever(opts, config))


def _dump(args: argparse.Namespace) -> int:
    from solver_sched.kube.api import ApiError, KubeconfigError
    from solver_sched.kube.dump import dump_cluster

    try:
        count = dump_cluster(args.kubeconfig, args.out)
    except (ApiError, OSError, KubeconfigError) as exc:
        print(f"solver-sched: dump failed: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {count} objects to {args.out}")
    return 0


def _whatif(args: argparse.Namespace) -> int:
    # A what-if lives for one cycle and builds millions of objects that all stay alive: the
    # cyclic collector's passes over them would only cost time (docs/benchmarks.md).
    with gc_paused():
        return _whatif_cycle(args)


def _whatif_cycle(args: argparse.Namespace) -> int:
    from solver_sched.cli.render import strict_failed, to_json_text, to_table

    steps: dict[str, float] = {}
    start = time.perf_counter()
    try:
        config = load_config(args.config) if args.config else SchedulerConfig()
        objects = load_objects(args.files, whole=bool(args.member))  # the fleet reads more
    except (ConfigError, InputFileError) as exc:
        print(f"solver-sched: {exc}", file=sys.stderr)
        return 2
    start = _step(steps, "read", start)
    name = args.scheduler_name or config.settings.scheduler_name
    now = args.now or datetime.now(UTC)
    if args.member:
        return fleet_cli.whatif(args, objects, config, name, now)
    if ignored := _ignored(objects):
        print(f"solver-sched: {ignored}", file=sys.stderr)
    snapshot = snapshot_from_objects(objects, name, config.settings.cooldown)
    del objects  # the raw objects are not needed past the snapshot: keep the peak down
    start = _step(steps, "snapshot", start)
    if args.strict and strict_failed(snapshot.errors):
        return 2
    result = run_cycle(snapshot, config, now, args.solver, args.time_limit, bounded=True)
    start = _step(steps, "cycle", start)
    print(to_json_text(result, snapshot) if args.output == "json" else to_table(result, snapshot))
    _step(steps, "output", start)
    if args.timings:
        phases = {k: round(v, 3) for k, v in result.phases.items()}
        print(json.dumps({**steps, "phases": phases}), file=sys.stderr)
    if result.violations:
        print(
            "solver-sched: the plan failed the feasibility check; nothing emitted", file=sys.stderr
        )
        return 1
    return 0


def _ignored(objects: list[dict[str, Any]]) -> str:
    """What the what-if leaves out, said once on stderr: a misspelt kind (``Podd``) or a fleet's
    hub file without its members was read as nothing, and the plan silently empty."""
    kinds = Counter(
        str(o.get("kind")) for o in objects if o.get("kind") not in READ_KINDS | {"Namespace"}
    )
    if not kinds:
        return ""
    said = "ignored objects of kinds the snapshot does not read: " + ", ".join(
        f"{k} ({n})" for k, n in sorted(kinds.items())
    )
    if FLEET_KINDS & kinds.keys():
        said += "; a fleet's hub is planned with each member's file: --member NAME=FILE"
    return said


def _step(steps: dict[str, float], name: str, start: float) -> float:
    now = time.perf_counter()
    steps[name] = round(now - start, 3)
    return now


def entry() -> int:
    """The console script: ``main`` with standard output kept for the CLI's own output."""
    with own_stdout():
        return main()


if __name__ == "__main__":
    sys.exit(entry())
