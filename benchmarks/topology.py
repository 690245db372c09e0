"""Topology study (issue 15): solver-sched against one-gang-at-a-time topology baselines, side by
side in one run, on the topology presets (blocks of 4-8 racks of 8-32 nodes, 70-95% used).

Policies on each instance (the same snapshot, one cycle each):
- ``kueue-bestfit``: Kueue TAS's BestFit (solvers/topology_baselines.py, docs/topology.md);
- ``volcano-tiers``: Volcano's HyperNode tiers with its binpack score;
- ``greedy``: solver-sched's greedy backend (BestFit per gang, in greedy's order);
- ``solver-sched``: the default cycle (CP-SAT).
Preemption and reclaim are off for all four (the baselines preempt nothing), so every policy
places into the same free room. Every plan goes through the independent checker.

Metrics at the rack level over the gangs each plan starts: rack crossings (racks spanned - 1,
summed), racks per multi-pod gang, GPUs idle in partly used racks, GPU value (GPUs x 4 per
priority rank), gangs split although one rack could hold them, required gangs split.

``--bounds``: per instance, the fewest crossings any plan could have at the best greedy's value
and at solver-sched's (CP-SAT on the model with its value, less the topology terms, held at the
plan's as a row and the gangs' racks spanned - 1 minimised; the model is a relaxation of the
nodes, so this is a lower bound on every real plan of that value).

``--scale``: issue 15's scale target instead. The controller's cycle (the default config, its
size-based budget) on the ``rackL`` (2,000 nodes, 100 racks) and ``rackXL`` (10,000 nodes, 400
racks) presets, snapshot in memory -> checked plan, against the L and XL cycle targets (3 s,
8 s); with each phase, the candidate emitted and the two baselines' own times. ``--cycles N``
runs N cycles per instance with the search history the controller keeps between cycles.

    .venv/bin/python -m benchmarks.topology [--seeds 20] [--first-seed 1001] [--time-limit 10]
        [--presets rack8,...] [--bounds]
    .venv/bin/python -m benchmarks.topology --scale [--seeds 5] [--presets rackL,rackXL]
        [--cycles 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.scale import REPORT_SEEDS
from solver_sched.config.schema import SchedulerConfig, Settings
from solver_sched.cycle import run_cycle
from solver_sched.domain.plan import Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.domain.topology import choose
from solver_sched.formulation.aggregate import aggregate, oldest_first
from solver_sched.formulation.build import build
from solver_sched.formulation.prepare import prepare
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.planning.candidates import score
from solver_sched.planning.check import check
from solver_sched.planning.history import SearchHistory
from solver_sched.sim.topology import metrics
from solver_sched.solvers.cpsat import solve_cpsat
from solver_sched.solvers.lexicographic import crossings, held_value
from solver_sched.solvers.result import SolveStatus
from solver_sched.solvers.topology_baselines import BASELINES, replay
from solver_sched.synthetic.topology import (
    RACK_LABEL,
    TOPOLOGY_PRESETS,
    TOPOLOGY_SCALE,
    topology_objects,
)

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
OUT = Path(__file__).resolve().parent / "results"
SOLVERS = ("greedy", "solver-sched")
SCALE_TARGETS = {"rackL": 3.0, "rackXL": 8.0}  # issue 14's L and XL cycle targets, seconds


def run_instance(
    preset: str, seed: int, cfg: SchedulerConfig, bounds: bool = False
) -> dict[str, Any]:
    snap = snapshot_from_objects(topology_objects(preset, seed, NOW))
    topo = snap.topologies["default"]
    row: dict[str, Any] = {"preset": preset, "seed": seed, "nodes": len(snap.nodes)}
    plans: dict[str, tuple[Plan, float]] = {}
    chosen = ""
    for name, baseline in BASELINES.items():
        t = time.perf_counter()
        plans[name] = (baseline(snap, topo), time.perf_counter() - t)
    for name in SOLVERS:
        t = time.perf_counter()
        result = run_cycle(snap, cfg, NOW, "greedy" if name == "greedy" else None)
        plans[name] = (result.plan, time.perf_counter() - t)
        chosen = result.chosen if name == "solver-sched" else chosen
    for name, (plan, secs) in plans.items():
        bad = check(snap, plan, NOW, False, False, topo)
        row[name] = {**asdict(metrics(snap, plan, topo, RACK_LABEL)), "s": secs, "bad": bad}
    row["chosen"] = chosen  # the candidate solver-sched's cycle emitted
    if bounds:
        for name in (_best_greedy(row), "solver-sched"):
            row[name]["min_crossings"] = fewest_crossings(snap, cfg, plans[name][0])
    return row


def fewest_crossings(snap: ClusterSnapshot, cfg: SchedulerConfig, plan: Plan) -> int | None:
    """The fewest rack crossings of any model solution worth at least ``plan`` without its
    topology terms (proven by CP-SAT within 60 s, else None)."""
    topology, _ = choose(cfg.topology.levels, cfg.topology.kueue_topology, snap.topologies)
    problem = prepare(snap, cfg.weights, cfg.settings, NOW, topology)
    model = aggregate(problem, oldest_first(snap))
    built = build(model)
    values = score(model, built, "plan", replay(snap, problem, plan), [], None).values
    if values is None:
        return None
    fewest = held_value(built.model, values, crossings(built.vars))
    status, _found, objective, _bound, _s, _d = solve_cpsat(fewest, values, 60.0, 1, 0)
    return round(-objective) if status is SolveStatus.OPTIMAL and objective is not None else None


def _best_greedy(row: dict[str, Any]) -> str:
    """The baseline that places the most GPU value, then crosses the fewest racks."""
    names = [*BASELINES, "greedy"]
    return min(names, key=lambda n: (-row[n]["gpu_value"], row[n]["crossings"], n))


def summary(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    names = [*BASELINES, *SOLVERS]
    for preset in dict.fromkeys(r["preset"] for r in rows):
        group = [r for r in rows if r["preset"] == preset]
        out.append(
            f"\n{preset}: {len(group)} instances, {min(r['nodes'] for r in group)}-"
            f"{max(r['nodes'] for r in group)} nodes"
        )
        out.append(
            f"  {'policy':<14} {'crossings':>9} {'racks/gang':>10} {'idle GPUs':>9} "
            f"{'GPU value':>9} {'split-fit':>9} {'req split':>9} {'bad':>4} {'s p50':>6}"
        )
        for n in names:
            m = [r[n] for r in group]
            out.append(
                f"  {n:<14} {sum(x['crossings'] for x in m):>9} "
                f"{statistics.median(x['domains_per_gang'] for x in m):>10.2f} "
                f"{statistics.median(x['idle_in_partial'] for x in m):>9.0f} "
                f"{sum(x['gpu_value'] for x in m):>9} {sum(x['split_but_fit'] for x in m):>9} "
                f"{sum(x['required_split'] for x in m):>9} {sum(bool(x['bad']) for x in m):>4} "
                f"{statistics.median(x['s'] for x in m):>6.2f}"
            )
        best = [_best_greedy(r) for r in group]
        s = [r["solver-sched"] for r in group]
        b = [r[n] for r, n in zip(group, best, strict=True)]
        value = [
            x["gpu_value"] / y["gpu_value"] if y["gpu_value"] else 1.0
            for x, y in zip(s, b, strict=True)
        ]
        dominates = sum(
            x["gpu_value"] >= y["gpu_value"] and x["crossings"] <= y["crossings"]
            for x, y in zip(s, b, strict=True)
        )
        same_value = [(x, y) for x, y in zip(s, b, strict=True) if x["gpu_value"] == y["gpu_value"]]
        cb, cs = sum(y["crossings"] for y in b), sum(x["crossings"] for x in s)
        out.append(
            f"  vs best greedy per instance: crossings {cs} vs {cb} "
            f"({(1 - cs / cb) * 100 if cb else 0:+.0f}% fewer); GPU value median x"
            f"{statistics.median(value):.3f}, worst x{min(value):.3f}; solver-sched at least as "
            f"much value and no more crossings on {dominates}/{len(group)}"
        )
        if same_value:
            cb2 = sum(y["crossings"] for _, y in same_value)
            cs2 = sum(x["crossings"] for x, _ in same_value)
            out.append(
                f"  at equal GPU value ({len(same_value)} instances): crossings {cs2} vs {cb2}"
                f" ({(1 - cs2 / cb2) * 100 if cb2 else 0:+.0f}% fewer), worst instance "
                f"{max(x['crossings'] - y['crossings'] for x, y in same_value):+d}"
            )
            if all(y.get("min_crossings") is not None for _, y in same_value):
                fb = sum(y["min_crossings"] for _, y in same_value)
                out.append(
                    f"    fewest possible at the best greedy's value: {fb} "
                    f"({(1 - fb / cb2) * 100 if cb2 else 0:.0f}% below the best greedy's {cb2})"
                )
        if all(x.get("min_crossings") is not None for x in s):
            fs = sum(x["min_crossings"] for x in s)
            out.append(
                f"  fewest possible at solver-sched's own value, all instances: {fs} vs {cs}"
            )
        diff = [x["crossings"] - y["crossings"] for x, y in zip(s, b, strict=True)]
        secs = [x["s"] for x in s]
        out.append(
            f"  per instance: crossings - best greedy's median {statistics.median(diff):+.1f}, "
            f"worst {max(diff):+d}; cycle median {statistics.median(secs):.2f} s, "
            f"max {max(secs):.2f} s"
        )
        started = sum(x["gangs_started"] for x in s), sum(y["gangs_started"] for y in b)
        out.append(
            f"  crossings per gang started: {cs / max(1, started[0]):.3f} vs best greedy "
            f"{cb / max(1, started[1]):.3f} ({started[0]} vs {started[1]} gangs)"
        )
    return out


def scale_instance(preset: str, seed: int, cycles: int = 1) -> list[dict[str, Any]]:
    """Controller cycles (default config and budget) on a topology scale preset, checked: the
    same snapshot ``cycles`` times, with one search history kept between them as the controller
    keeps it (planning/history.py), so the later cycles show a cluster that changed little."""
    snap = snapshot_from_objects(topology_objects(preset, seed, NOW))
    topo = snap.topologies["default"]
    baselines = {}
    for name, baseline in BASELINES.items():
        t = time.perf_counter()
        baseline(snap, topo)
        baselines[name] = time.perf_counter() - t
    cfg = SchedulerConfig()
    history = SearchHistory()
    rows = []
    for n in range(1, cycles + 1):
        t = time.perf_counter()
        result = run_cycle(replace(snap), cfg, NOW, history=history)
        seconds = time.perf_counter() - t
        s = cfg.settings
        bad = check(snap, result.plan, NOW, s.priority_preemption, s.queue_reclaim, topo)
        rows.append(
            {
                "preset": preset,
                "seed": seed,
                "cycle": n,
                "nodes": len(snap.nodes),
                "cycle_s": seconds,
                "target_s": SCALE_TARGETS[preset],
                "phases": result.phases,
                "chosen": result.chosen,
                "objective": result.stats.objective,
                "bad": bad + result.violations,
                "baselines_s": baselines,
                "search": result.stats.detail,
            }
        )
    return rows


def scale_summary(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in rows:
        phases = ", ".join(f"{k} {v:.2f}" for k, v in r["phases"].items())
        base = ", ".join(f"{k} {v:.2f} s" for k, v in r["baselines_s"].items())
        out.append(
            f"{r['preset']} {r['seed']} cycle {r['cycle']}: {r['cycle_s']:.2f} s "
            f"(target {r['target_s']:g}) [{phases}] emitted {r['chosen']} "
            f"(objective {r['objective']:.6g}; search: {r['search']}); "
            f"{'BAD ' if r['bad'] else ''}baselines {base}"
        )
    for preset in dict.fromkeys(r["preset"] for r in rows):
        for n in sorted({r["cycle"] for r in rows}):
            secs = [r["cycle_s"] for r in rows if r["preset"] == preset and r["cycle"] == n]
            target = SCALE_TARGETS[preset]
            out.append(
                f"{preset} cycle {n}: median {statistics.median(secs):.2f} s, worst "
                f"{max(secs):.2f} s over {len(secs)} seeds; within {target:g} s on "
                f"{sum(x <= target for x in secs)}"
            )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument(
        "--first-seed", type=int, default=REPORT_SEEDS, help="reported runs: 1001 on; tune < 1000"
    )
    p.add_argument("--time-limit", type=float, default=10.0)
    p.add_argument("--presets", help="default: the study's presets, or with --scale rackL,rackXL")
    p.add_argument("--bounds", action="store_true", help="the fewest crossings at each value")
    p.add_argument("--scale", action="store_true", help="rackL/rackXL cycle times (issue 15)")
    p.add_argument(
        "--cycles", type=int, default=1, help="with --scale: cycles per instance, one history"
    )
    args = p.parse_args(argv)
    if args.scale:
        presets = args.presets.split(",") if args.presets else list(TOPOLOGY_SCALE)
        rows = [
            row
            for preset in presets
            for seed in range(args.first_seed, args.first_seed + args.seeds)
            for row in scale_instance(preset, seed, args.cycles)
        ]
        for line in scale_summary(rows):
            print(line)
        OUT.mkdir(exist_ok=True)
        (OUT / "topology-scale.json").write_text(json.dumps(rows, indent=2))
        return 0
    cfg = SchedulerConfig(
        settings=Settings(
            time_limit_seconds=args.time_limit,
            workers=1,
            priority_preemption=False,
            queue_reclaim=False,
        )
    )
    rows = []
    for preset in args.presets.split(",") if args.presets else TOPOLOGY_PRESETS:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            rows.append(run_instance(preset, seed, cfg, args.bounds))
            print(f"{preset} seed {seed} done", flush=True)
    for line in summary(rows):
        print(line)
    OUT.mkdir(exist_ok=True)
    (OUT / "topology.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
