"""Per-window ratios of the live study, and where each stack's queueing went.

    .venv/bin/python -m benchmarks.live.summary benchmarks/results/live/*/results.json -o out.json

For every results.json (one window, every stack on a fresh stage in one run): solver-sched's
average JCT, queueing delay and gang utilization over each peer's from that same run, then the
median and the worst over the windows. Per stack, the mean queueing delay by gang size (GPUs) and
its split (submit -> pods -> first bind -> whole gang bound -> Running): the breakdown that tells
a scheduler's latency (the split) from its ordering (who waits, by size).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

OURS = "solver-sched"
SPLIT = ("to_pods_h", "to_first_bind_h", "bind_span_h", "to_running_h")


def window(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    meta, summary = data["meta"], data["summary"]
    out: dict[str, Any] = {
        "name": path.parent.name,
        "trace": meta["trace"],
        "start": meta["start"],
        "window_h": meta["window_h"],
        "load": meta["load"],
        "jobs": meta["jobs"],
        "load_avg_at_start": meta["machine"]["load_avg_at_start"],
        "stacks": {},
        "ratios": {},
    }
    for stack, s in summary.items():
        out["stacks"][stack] = {
            "avg_jct_h": s["avg_jct_h"],
            "avg_queue_h": s["avg_queue_h"],
            "util_useful": s["util_useful"],
            "partial_gangs": s["partial_gangs"],
            "queue_by_gpus_h": by_size(s["per_job"]),
            "split_h": split(s["per_job"]),
        }
    ours = summary.get(OURS)
    for stack, s in summary.items():
        if stack == OURS or ours is None:
            continue
        out["ratios"][stack] = {
            k: ours[k] / s[k] if ours.get(k) is not None and s.get(k) else None
            for k in ("avg_jct_h", "avg_queue_h", "util_useful")
        }
        out["ratios"][stack]["floor"] = floor(ours["per_job"], s.get("avg_jct_h"))
    return out


def floor(per_job: list[dict[str, Any]], peer_jct_h: float | None) -> float | None:
    """The lowest JCT ratio any scheduler could reach against this peer: every job started at
    its arrival and run at its shortest (``min_run_h``; rigid jobs: their duration), over the
    peer's measured average JCT. A 0.8x target above this floor cannot be met by scheduling."""
    runs = [float(r.get("min_run_h", r["duration_h"])) for r in per_job]
    if not runs or not peer_jct_h:
        return None
    return statistics.mean(runs) / peer_jct_h


def by_size(per_job: list[dict[str, Any]]) -> dict[int, tuple[int, float]]:
    """GPUs -> (jobs, mean queueing delay h)."""
    groups: dict[int, list[float]] = defaultdict(list)
    for r in per_job:
        if r.get("queue_h") is not None:
            groups[r["gpus"]].append(r["queue_h"])
    return {g: (len(xs), statistics.mean(xs)) for g, xs in sorted(groups.items())}


def split(per_job: list[dict[str, Any]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key in SPLIT:
        xs = [r[key] for r in per_job if r.get(key) is not None]
        out[key] = statistics.mean(xs) if xs else None
    return out


def aggregate(windows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per peer: the median and the worst (largest) of solver-sched's JCT ratio over windows."""
    out: dict[str, dict[str, float]] = {}
    peers = sorted({p for w in windows for p in w["ratios"]})
    for peer in peers:
        rs = [w["ratios"][peer]["avg_jct_h"] for w in windows if peer in w["ratios"]]
        rs = [r for r in rs if r is not None]
        floors = [w["ratios"][peer].get("floor") for w in windows if peer in w["ratios"]]
        floors = [f for f in floors if f is not None]
        if rs:
            out[peer] = {"windows": len(rs), "median": statistics.median(rs), "worst": max(rs)}
        if floors:
            out[peer]["median_floor"] = statistics.median(floors)
    return out


def markdown(windows: list[dict[str, Any]], agg: dict[str, dict[str, float]]) -> list[str]:
    lines = [
        "| window | jobs | peer | peer avg JCT h | solver-sched avg JCT h | JCT ratio | "
        "queue ratio | gang util ratio | floor | load at start |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for w in windows:
        for peer, r in w["ratios"].items():
            p, o = w["stacks"][peer], w["stacks"][OURS]
            fl = "-" if r.get("floor") is None else f"{r['floor']:.3f}"
            lines.append(
                f"| {w['name']} | {w['jobs']} | {peer} | {p['avg_jct_h']:.2f} | "
                f"{o['avg_jct_h']:.2f} | {r['avg_jct_h']:.3f} | {_f(r['avg_queue_h'])} | "
                f"{_f(r['util_useful'])} | {fl} | {w['load_avg_at_start'][0]:.1f} |"
            )
    for peer, a in agg.items():
        fl = f", median floor {a['median_floor']:.3f}" if "median_floor" in a else ""
        lines.append(
            f"\nvs {peer}: median {a['median']:.3f}, worst {a['worst']:.3f} "
            f"over {a['windows']:.0f} windows{fl}"
        )
    return lines


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", type=Path)
    p.add_argument("-o", "--out", type=Path)
    args = p.parse_args(argv)
    windows = [window(path) for path in args.results]
    agg = aggregate(windows)
    print("\n".join(markdown(windows, agg)))
    for w in windows:
        for stack, s in w["stacks"].items():
            sizes = ", ".join(
                f"{g} GPUs: {n} x {q * 60:.0f} min" for g, (n, q) in s["queue_by_gpus_h"].items()
            )
            parts = ", ".join(f"{k} {v * 60:.2f}" for k, v in s["split_h"].items() if v is not None)
            print(f"{w['name']} {stack}: queue by size {sizes}; split (trace min) {parts}")
    if args.out:
        args.out.write_text(json.dumps({"windows": windows, "aggregate": agg}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
