"""Per-cycle scale study (issue 14, part 3): the cluster families of ``solver_sched/synthetic``
at S (64 nodes), M (512), L (2,000) and XL (10,000), many instances each.

For every instance (a preset, a size and a seed):

- a cycle of the greedy backend (the baseline) and, right after it, the default cycle (the
  controller's: the default config, CP-SAT with its budget rule, the better of greedy's and the
  solver's plan), each on a fresh snapshot object, so what the snapshot caches is paid inside;
  cycle time = ``run_cycle`` wall time, snapshot in memory -> checked plan. The two are paired:
  the machine's speed swings within minutes, the ratio shows what the solver adds;
- the best known plan: a ``--best`` seconds one-worker CP-SAT cycle in a forked child (its
  memory is not the scheduler's); the best known is the best plan of the three, the bound is
  that solve's (the model relaxes node placement, so it caps every plan).

Prints, per size and preset, medians and worst cases of the cycle time, the paired ratio, the
gap to the best known and the plan's value against greedy's; writes benchmarks/results/scale.json.
Reported runs use seeds from 1001 on; ``--dev`` takes seeds 1, 2, ... for development, so nothing
is tuned on the reported instances; ``--first-seed`` runs seeds no run has used before.

    .venv/bin/python -m benchmarks.scale                              # everything (hours)
    .venv/bin/python -m benchmarks.scale --only S M hard --instances 5 --best 10
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from solver_sched.config.schema import ObjectiveWeights, SchedulerConfig, Settings, load_config
from solver_sched.cycle import CycleResult, run_cycle
from solver_sched.domain import resources as res
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.synthetic import PRESETS, SIZES, preset_objects

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
OUT = Path(__file__).resolve().parent / "results"
REPORT_SEEDS = 1001
TARGETS = {"S": 0.5, "M": 1.0, "L": 3.0, "XL": 8.0}  # seconds per cycle (issue 14)
GAP_MEDIAN, GAP_WORST = 0.01, 0.02
INSTANCES = {"S": 20, "M": 20, "L": 5, "XL": 2}


@dataclass(frozen=True)
class Instance:
    size: str
    preset: str
    seed: int


def fresh(snap: ClusterSnapshot) -> ClusterSnapshot:
    """The same cluster as a new snapshot object (its caches recomputed inside the cycle)."""
    return replace(snap)


def _seconds(r: CycleResult) -> float:
    return sum(r.phases.values())


_BEST_OF: ClusterSnapshot | None = None  # the snapshot the forked child solves


def _best_known(seconds: float, weights: ObjectiveWeights) -> dict[str, Any]:
    assert _BEST_OF is not None
    settings = Settings(time_limit_seconds=seconds, workers=1)
    config = SchedulerConfig(weights=weights, settings=settings)
    r = run_cycle(fresh(_BEST_OF), config, NOW, "cpsat", seconds)  # no cycle budget
    return {
        "objective": r.stats.objective,
        "status": r.stats.status.value,
        "bound": r.stats.bound,
        "model_objective": r.stats.solver_objective,
        "seconds": round(_seconds(r), 2),
    }


def measure(inst: Instance, best: float, config: SchedulerConfig) -> dict[str, Any]:
    global _BEST_OF
    t = time.perf_counter()
    snap = snapshot_from_objects(preset_objects(inst.preset, inst.seed, NOW, SIZES[inst.size]))
    load = time.perf_counter() - t
    greedy = run_cycle(fresh(snap), config, NOW, "greedy")
    cycle = run_cycle(fresh(snap), config, NOW)
    _BEST_OF = snap
    if best > 0:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            offline = pool.apply(_best_known, (best, config.weights))
    else:
        offline = {"objective": None, "status": "skipped", "bound": None, "model_objective": None}
    _BEST_OF = None
    g, c = greedy.stats.objective or 0.0, cycle.stats.objective or 0.0
    model = cycle.stats.solver_objective  # the solver's own value of its solution
    # what packing lost: the solver's solution is worth more than the emitted plan
    loss = (model - c) / abs(model) if model and model > c else 0.0
    best_obj = max(v for v in (g, c, offline["objective"]) if v is not None)
    bound = offline["bound"]
    gpus = sum(n.allocatable.get(res.GPU, 0) for n in snap.nodes.values())
    running = sum(1 for j in snap.jobs.values() if any(snap.pods[p].bound for p in j.pods))
    return {
        "size": inst.size,
        "preset": inst.preset,
        "seed": inst.seed,
        "nodes": len(snap.nodes),
        "gpus": gpus,
        "jobs_running": running,
        "jobs_pending": len(snap.jobs) - running,
        "load_seconds": round(load, 2),
        "model": cycle.stats.detail,
        "status": cycle.stats.status.value,
        "chosen": cycle.chosen,
        "violations": len(cycle.violations) + len(greedy.violations),
        "cycle": round(_seconds(cycle), 3),
        "phases": {k: round(v, 3) for k, v in cycle.phases.items()},
        "search": round(cycle.stats.search_seconds, 3),
        "greedy_cycle": round(_seconds(greedy), 3),
        "paired": round(_seconds(cycle) / max(_seconds(greedy), 1e-9), 3),
        "objective": c,
        "greedy_objective": g,
        "vs_greedy": c / g if g else None,
        "packing_loss": loss,
        "best_known": best_obj,
        "best": offline,
        "gap": (best_obj - c) / abs(best_obj) if best_obj else 0.0,
        "gap_to_bound": (bound - c) / abs(bound) if bound else None,
        "optimal": offline["status"] == "OPTIMAL" and c >= (offline["model_objective"] or 0),
    }


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Medians and worst cases per size and preset, in the order of SIZES and PRESETS."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["size"], r["preset"]), []).append(r)
    order = {k: i for i, k in enumerate((s, p) for s in SIZES for p in PRESETS)}
    out = []
    for size, name in sorted(groups, key=lambda k: order.get(k, len(order))):
        rs = groups[(size, name)]
        gaps = [r["gap"] for r in rs]
        cycles = [r["cycle"] for r in rs]
        paired = [r["paired"] for r in rs]
        vs = [r["vs_greedy"] for r in rs if r["vs_greedy"] is not None]
        bounds = [r["gap_to_bound"] for r in rs if r["gap_to_bound"] is not None]
        chosen = Counter(r["chosen"] or "none" for r in rs)
        out.append(
            {
                "size": size,
                "preset": name,
                "instances": len(rs),
                "nodes": rs[0]["nodes"],
                "jobs": f"{statistics.median(r['jobs_running'] for r in rs):.0f} / "
                f"{statistics.median(r['jobs_pending'] for r in rs):.0f}",
                "cycle_median": statistics.median(cycles),
                "cycle_worst": max(cycles),
                "target": TARGETS[size],
                "greedy_cycle_median": statistics.median(r["greedy_cycle"] for r in rs),
                "paired_median": statistics.median(paired),
                "paired_worst": max(paired),
                "gap_median": statistics.median(gaps),
                "gap_worst": max(gaps),
                "bound_gap_median": statistics.median(bounds) if bounds else None,
                "bound_gap_worst": max(bounds) if bounds else None,
                "vs_greedy_median": statistics.median(vs) if vs else None,
                "vs_greedy_worst": min(vs) if vs else None,
                "optimal": sum(r["optimal"] for r in rs),
                "from_solver": sum(r["chosen"] != "greedy" for r in rs),
                "chosen": ", ".join(f"{k} {n}" for k, n in chosen.most_common()),
                "violations": sum(r["violations"] for r in rs),
                "packing_loss_worst": max(r["packing_loss"] for r in rs),
            }
        )
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"x{x:.4f}"


def table(summary: list[dict[str, Any]]) -> str:
    head = (
        "| size | preset | n | jobs run / pend | cycle median / worst (target) | greedy-only "
        "cycle median | paired ratio median / worst | gap to best known median / worst | "
        "gap to bound median / worst | vs greedy median / worst | packing loss worst | "
        "proven optimal | plan from |"
    )
    lines = [head, "|" + "---|" * 13]
    for s in summary:
        lines.append(
            f"| {s['size']} | {s['preset']} | {s['instances']} | {s['jobs']} | "
            f"{s['cycle_median']:.3f} / {s['cycle_worst']:.3f} s ({s['target']} s) | "
            f"{s['greedy_cycle_median']:.3f} s | "
            f"x{s['paired_median']:.2f} / x{s['paired_worst']:.2f} | "
            f"{_pct(s['gap_median'])} / {_pct(s['gap_worst'])} | "
            f"{_pct(s['bound_gap_median'])} / {_pct(s['bound_gap_worst'])} | "
            f"{_ratio(s['vs_greedy_median'])} / {_ratio(s['vs_greedy_worst'])} | "
            f"{_pct(s['packing_loss_worst'])} | {s['optimal']}/{s['instances']} | "
            f"{s['chosen']} |"
        )
    return "\n".join(lines)


def instances(
    only: list[str], count: int | None, dev: bool, first_seed: int | None = None
) -> list[Instance]:
    sizes = [s for s in SIZES if s in only] or list(SIZES)
    presets = [p for p in PRESETS if p in only] or list(PRESETS)
    unknown = set(only) - set(SIZES) - set(PRESETS)
    if unknown:
        raise SystemExit(f"--only: unknown {', '.join(sorted(unknown))}")
    if dev and first_seed is not None:
        raise SystemExit("--dev and --first-seed: choose one")
    first = first_seed if first_seed is not None else 1 if dev else REPORT_SEEDS
    return [
        Instance(size, name, first + i)
        for size in sizes
        for name in presets
        for i in range(count if count is not None else INSTANCES[size])
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--only", nargs="*", default=[], help="sizes and/or presets to run")
    p.add_argument(
        "--instances",
        type=int,
        help=f"per size and preset (default {', '.join(f'{k} {v}' for k, v in INSTANCES.items())})",
    )
    p.add_argument("--best", type=float, default=60.0, help="seconds of the best-known solve")
    p.add_argument("--dev", action="store_true", help="development seeds 1, 2, ...")
    p.add_argument(
        "--first-seed",
        type=int,
        help=f"seeds from this one on (default {REPORT_SEEDS}): held-out instances no run has used",
    )
    p.add_argument("--time-limit", type=float, help="override the cycle's search limit")
    p.add_argument("-o", "--out", type=Path, default=OUT / "scale.json")
    p.add_argument("--config", type=Path, help="weights (SchedulerConfig YAML) for every solve")
    args = p.parse_args(argv)
    config = load_config(args.config) if args.config else SchedulerConfig()
    if args.time_limit is not None:
        settings = config.settings.model_copy(update={"time_limit_seconds": args.time_limit})
        config = config.model_copy(update={"settings": settings})
    rows = []
    for inst in instances(args.only, args.instances, args.dev, args.first_seed):
        row = measure(inst, args.best, config)
        rows.append(row)
        print(
            f"{inst.size:>2} {inst.preset:<16} seed {inst.seed}: cycle {row['cycle']:.3f}s "
            f"(greedy {row['greedy_cycle']:.3f}s, x{row['paired']:.2f}), gap {_pct(row['gap'])}, "
            f"to bound {_pct(row['gap_to_bound'])}, vs greedy x{row['vs_greedy']:.4f}, "
            f"{row['chosen']}, {row['status']}, best {row['best']['status']}, {row['model']}",
            flush=True,
        )
    summary = summarize(rows)
    print()
    print(table(summary))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows, "summary": summary}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
