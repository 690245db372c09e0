"""`solver-sched simulate`: the policies over a job trace in the discrete-event simulator."""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from pathlib import Path

from solver_sched.config.schema import ConfigError, SchedulerConfig, load_config
from solver_sched.cycle import BACKENDS
from solver_sched.sim.model import SimParams, Speedup
from solver_sched.sim.policies import POLICIES, parse_policies
from solver_sched.sim.report import BASELINE, run_study, table
from solver_sched.sim.traces import TRACES, TraceOptions, load_trace_noting


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser(
        "simulate",
        help="replay a job trace in a simulated cluster under several policies",
        description="Discrete-event simulation of solver-sched and baseline policies over a job "
        "trace (no Kubernetes). Writes DIR/results.json, DIR/jct_cdf.png, DIR/utilization.png "
        "and prints a table with ratios vs greedy gang FIFO.",
    )
    s.add_argument(
        "--trace", choices=TRACES, default="itp", help="the job trace to replay (default itp)"
    )
    s.add_argument("--trace-file", type=Path, help="override the trace's file")
    s.add_argument("--jobs", type=int, default=300, help="at most this many jobs")
    s.add_argument("--gpus", type=int, default=64, help="cluster GPUs (nodes of --gpus-per-node)")
    s.add_argument("--gpus-per-node", type=int, default=8, help="GPUs per node (default 8)")
    s.add_argument(
        "--load", type=float, default=1.0, help="arrival-rate factor (2 = twice as dense)"
    )
    s.add_argument("--interval", type=float, default=60.0, help="seconds between cycles")
    s.add_argument(
        "--policies",
        default="all",
        help=f"comma-separated from {', '.join(POLICIES)}, or all; also solver-sched:greedy|milp "
        "and sjf-oracle (a reference that knows every job's duration)",
    )
    s.add_argument("--out", type=Path, required=True, help="directory for results and plots")
    s.add_argument("--backend", choices=BACKENDS, default="cpsat", help="solver-sched's solver")
    s.add_argument("--time-limit", type=float, default=2.0, help="solver seconds per cycle")
    s.add_argument("--config", type=Path, help="SchedulerConfig YAML (weights, settings)")
    s.add_argument("--checkpoint", type=float, default=900.0, help="checkpoint interval, seconds")
    s.add_argument(
        "--restart-overhead", type=float, default=30.0, help="seconds without progress per resize"
    )
    s.add_argument("--cooldown", type=float, help="seconds (default: the config's defaultCooldown)")
    s.add_argument(
        "--speedup-alpha", type=float, default=0.5, help="throughput exponent beyond the request"
    )
    s.add_argument("--partial-timeout", type=float, default=600.0, help="per-pod rendezvous, s")
    s.add_argument("--max-factor", type=float, help="elastic max = requested x this")
    s.add_argument("--min-factor", type=float, default=0.0, help="elastic min = requested x this")
    s.add_argument("--elastic-fraction", type=float, default=0.0, help="philly: elastic share")
    s.add_argument("--start", help="philly: first timestamp; itp04: first submission second")
    s.add_argument("--window-days", type=float, default=7.0, help="philly: sampling window")
    s.add_argument("--max-duration-hours", type=float, help="clip job durations")
    s.add_argument("--seed", type=int, default=1, help="random seed of the sampling")
    s.add_argument("--horizon-days", type=float, default=60.0, help="stop after this much time")
    s.add_argument(
        "--recheck", type=int, default=0, help="also plan every N cycles while jobs wait"
    )
    s.add_argument("--no-progress", action="store_true", help="no progress bars")
    s.add_argument("--no-plots", action="store_true", help="write results.json only")


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config) if args.config else SchedulerConfig()
        policies = parse_policies(args.policies)
        opts = TraceOptions(
            jobs=args.jobs,
            load=args.load,
            seed=args.seed,
            path=args.trace_file,
            start=args.start,
            max_factor=args.max_factor,
            min_factor=args.min_factor,
            elastic_fraction=args.elastic_fraction,
            window_days=args.window_days,
            max_duration=args.max_duration_hours * 3600 if args.max_duration_hours else None,
            gpus=args.gpus,
        )
        jobs = load_trace_noting(
            args.trace, opts, lambda m: print(f"solver-sched: warning: {m}", file=sys.stderr)
        )
    except (ConfigError, ValueError, OSError) as exc:
        print(f"solver-sched: {exc}", file=sys.stderr)
        return 2
    if not jobs:
        print("solver-sched: the trace selection is empty", file=sys.stderr)
        return 2
    cooldown = (
        timedelta(seconds=args.cooldown) if args.cooldown is not None else config.settings.cooldown
    )
    params = SimParams(
        gpus=args.gpus,
        gpus_per_node=args.gpus_per_node,
        interval=args.interval,
        checkpoint_interval=args.checkpoint,
        restart_overhead=args.restart_overhead,
        cooldown=cooldown,
        partial_timeout=args.partial_timeout,
        horizon=args.horizon_days * 86400,
        recheck_cycles=args.recheck,
        speedup=Speedup(args.speedup_alpha),
    )
    title = f"{args.trace}, {len(jobs)} jobs, {args.gpus} GPUs, load {args.load:g}"
    data, written = run_study(
        args.trace,
        jobs,
        policies,
        params,
        config,
        args.backend,
        args.time_limit,
        args.out,
        None if args.no_plots else title,
        {"load": args.load, "seed": args.seed, "policies": policies},
        not args.no_progress,
    )
    offered, span = data["meta"]["offered_gpu_hours"], data["meta"]["arrival_span_h"]
    print(f"{title}: {offered:.0f} GPU-h offered, arrivals over {span:.1f} h")
    print(table(data))
    if BASELINE not in policies:
        print(f"(no ratios: add {BASELINE} to --policies)")
    print(f"wrote {args.out / 'results.json'}" + "".join(f", {p}" for p in written))
    return 0
