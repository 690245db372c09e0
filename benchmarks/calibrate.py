"""Gang sizes of the public GPU traces, for the cluster generators (``solver_sched/synthetic``).

A cluster snapshot holds two populations with different size mixes:

- *pending* gangs are recent arrivals, so their sizes follow the trace's jobs by count;
- *running* gangs are the jobs in flight at an instant: a job is caught in proportion to how long
  it runs, so long (mostly large) jobs weigh more than their count.

For each trace this prints both mixes over power-of-two GPU counts (a size between two powers
counts as the next one up; 128 GPUs counts as 64, the largest gang the generators place): the
count mix directly, the in-flight mix from 400 instants spread evenly over the trace's middle
80% (each job taken as running from its submission for its duration, no queueing). It also
prints the average GPUs per gang of each mix, and the pooled mix over the traces that record
real sizes and durations (ITP cluster04 and Philly, weighted equally) that
``solver_sched/synthetic/gangs.py`` uses. Traces: /work/shared/traces (README.md there).

    .venv/bin/python -m benchmarks.calibrate
"""

from __future__ import annotations

import argparse
import bisect
import csv
import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from solver_sched.sim.traces import MAX_GPU_TIME, MIN_DURATION, TRACE_DIR

SIZES = (1, 2, 4, 8, 16, 32, 64)
INSTANTS = 400


def bucket(gpus: int) -> int:
    """The power of two at or above ``gpus``, capped at the largest generated size."""
    for s in SIZES:
        if gpus <= s:
            return s
    return SIZES[-1]


def itp(path: Path) -> list[tuple[float, float, int]]:
    """(submission s, duration s, GPUs) of ElasticFlow's ITP cluster04."""
    with path.open() as f:
        return [
            (float(r["submission_time"]), float(r["duration"]), int(r["num_gpu"]))
            for r in csv.DictReader(f)
            if int(r["num_gpu"]) > 0
        ]


def philly(path: Path) -> list[tuple[float, float, int]]:
    """(submission s, duration s, GPUs) of Pollux's Philly summary, filtered as Pollux does."""
    out = []
    with path.open() as f:
        for r in csv.DictReader(f):
            duration, gpus = float(r["duration"]), int(r["num_gpus"])
            if duration < MIN_DURATION or float(r["gpu_time"]) >= MAX_GPU_TIME or gpus <= 0:
                continue
            t = datetime.strptime(r["timestamp"], "%Y-%m-%d %H:%M:%S").timestamp()
            out.append((t, duration, gpus))
    return out


def by_count(jobs: Iterable[tuple[float, float, int]]) -> dict[int, float]:
    counts = dict.fromkeys(SIZES, 0)
    for _, _, g in jobs:
        counts[bucket(g)] += 1
    return _shares(counts)


def in_flight(jobs: list[tuple[float, float, int]]) -> dict[int, float]:
    """The size mix of the jobs running at evenly spread instants (length-biased sampling)."""
    jobs = sorted(jobs)
    starts = [s for s, _, _ in jobs]
    lo, hi = starts[0], starts[-1]
    counts = dict.fromkeys(SIZES, 0)
    for i in range(INSTANTS):
        t = lo + (hi - lo) * (0.1 + 0.8 * i / (INSTANTS - 1))
        for s, d, g in jobs[: bisect.bisect_right(starts, t)]:
            if s + d > t:
                counts[bucket(g)] += 1
    return _shares(counts)


def _shares(counts: dict[int, int]) -> dict[int, float]:
    total = sum(counts.values()) or 1
    return {s: counts[s] / total for s in SIZES}


def mean(mix: dict[int, float]) -> float:
    return sum(s * w for s, w in mix.items())


def pooled(mixes: list[dict[int, float]]) -> dict[int, float]:
    return {s: sum(m[s] for m in mixes) / len(mixes) for s in SIZES}


def calibrate(trace_dir: Path) -> dict[str, dict[str, dict[int, float]]]:
    traces = {
        "itp-cluster04": itp(trace_dir / "microsoft-elasticflow-traces/cluster04.csv"),
        "philly": philly(trace_dir / "petuum-adaptdl-pollux/philly.csv"),
    }
    out = {name: {"count": by_count(j), "in_flight": in_flight(j)} for name, j in traces.items()}
    out["pooled"] = {
        kind: pooled([out[n][kind] for n in traces]) for kind in ("count", "in_flight")
    }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--traces", type=Path, default=TRACE_DIR)
    p.add_argument("--json", action="store_true", help="print the mixes as JSON")
    args = p.parse_args(argv)
    result = calibrate(args.traces)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'trace':<14} {'mix':<10} " + " ".join(f"{s:>6}" for s in SIZES) + "  mean GPUs")
    for name, mixes in result.items():
        for kind, mix in mixes.items():
            cells = " ".join(f"{100 * mix[s]:5.1f}%" for s in SIZES)
            print(f"{name:<14} {kind:<10} {cells}  {mean(mix):6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
