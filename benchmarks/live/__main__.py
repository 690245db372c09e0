"""The live study: one trace window replayed against every scheduler stack, each on a fresh
stage with identical KWOK nodes (benchmarks/live/stage.py; `make stage` builds the peers).

    .venv/bin/python -m benchmarks.live                      # itp04 day 10, 1 trace hour, 64 nodes
    .venv/bin/python -m benchmarks.live --stacks kueue,solver-sched --window-h 0.5
    .venv/bin/python -m benchmarks.live --scale               # 5,000 nodes, 10,000 pods in gangs

Jobs are mapped as in the trace study (solver_sched/sim/traces.py: gang sizes, pods per GPU
count, queues, priorities), rigid at the requested size: the peers have no elastic Jobs, and a
Job has exactly ``parallelism`` pods (elastic ranges are not replayed; see docs/benchmarks.md).
Writes benchmarks/results/live/<name>/{results.json,jct_cdf.png,utilization.png} and prints per
stack the metrics and solver-sched's ratios against each peer from the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.live.replay import ReplayParams, run_stack
from benchmarks.live.scale import scale_run
from benchmarks.live.stage import STACKS, missing
from benchmarks.live.summary import aggregate, markdown, window
from benchmarks.live.windows import Window, chosen
from solver_sched.sim.model import TraceJob
from solver_sched.sim.report import plot
from solver_sched.sim.traces import TRACES

ROOT = Path(__file__).resolve().parents[2]
OURS = "solver-sched"
COLUMNS = (
    ("avg_jct_h", "avg JCT h", ".2f"),
    ("p95_jct_h", "p95 JCT h", ".2f"),
    ("avg_queue_h", "queue h", ".2f"),
    ("p95_queue_h", "p95 q h", ".2f"),
    ("util_alloc", "alloc util", ".3f"),
    ("util_useful", "gang util", ".3f"),
    ("partial_gangs", "partial", "d"),
    ("preempted_pods", "preempted", "d"),
    ("restarts", "restarts", "d"),
    ("scale_outs", "scale-outs", "d"),
    ("scheduler_cpu_s", "sched CPU s", ".1f"),
    ("api_requests", "API reqs", "d"),
)


def select_jobs(window: Window) -> list[TraceJob]:
    jobs = window.jobs()
    if not jobs:
        raise SystemExit(f"error: no job of {window.trace} arrives in {window.window_h} h")
    return jobs


def fmt(value: Any, spec: str) -> str:
    if value is None:
        return "-"
    return format(int(value), spec) if spec == "d" else format(value, spec)


def table(summary: dict[str, dict[str, Any]]) -> list[str]:
    head = "| stack | " + " | ".join(c[1] for c in COLUMNS) + " | binds/s | 64-gang span s |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 3)]
    for stack, s in summary.items():
        b = s.get("burst") or {}
        cells = [fmt(s.get(k), spec) for k, _, spec in COLUMNS]
        cells += [fmt(b.get("binds_per_s"), ".1f"), fmt(b.get("first_gang_bind_span_s"), ".2f")]
        lines.append(f"| {stack} | " + " | ".join(cells) + " |")
    return lines


def ratios(summary: dict[str, dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """solver-sched's metric over each peer's, from the same run."""
    ours = summary.get(OURS)
    if not ours:
        return {}
    out: dict[str, dict[str, float | None]] = {}
    for stack, s in summary.items():
        if stack == OURS:
            continue
        row: dict[str, float | None] = {}
        for key in ("avg_jct_h", "p95_jct_h", "avg_queue_h", "util_alloc", "util_useful"):
            a, b = ours.get(key), s.get(key)
            row[key] = a / b if a is not None and b else None
        out[stack] = row
    return out


def targets(summary: dict[str, dict[str, Any]], qps: float) -> list[str]:
    ours = summary.get(OURS)
    if not ours:
        return ["solver-sched did not run: no targets checked"]
    out = []
    for peer in ("kueue", "kube-gang"):
        s = summary.get(peer)
        if not s or not s.get("avg_jct_h") or ours.get("avg_jct_h") is None:
            out.append(f"avg JCT vs {peer}: not measured")
            continue
        r = ours["avg_jct_h"] / s["avg_jct_h"]
        util_ok = ours["util_useful"] >= s["util_useful"]
        verdict = "met" if r <= 0.8 and util_ok else "MISSED"
        out.append(
            f"avg JCT vs {peer:10s} {r:.3f} (target <= 0.80) at gang util "
            f"{ours['util_useful']:.3f} vs {s['util_useful']:.3f}: {verdict}"
        )
    p = ours.get("partial_gangs", 0)
    out.append(f"partial gangs          {p} (target 0): {'met' if p == 0 else 'MISSED'}")
    b = ours.get("burst") or {}
    if b.get("binds_per_s") is not None:
        r = b["binds_per_s"] / qps
        out.append(
            f"binds / configured QPS {r:.2f} (target >= 0.9): {'met' if r >= 0.9 else 'MISSED'}"
        )
    if b.get("first_gang_bind_span_s") is not None:
        s = b["first_gang_bind_span_s"]
        out.append(
            f"64-pod gang, first to last bind {s:.2f} s (target <= 1 s after the decision): "
            f"{'met' if s <= 1.0 else 'MISSED'}"
        )
    return out


class Progress:
    """A tqdm bar over finished jobs when tqdm is installed and stderr is a terminal or forced;
    else a line per 10% on stderr."""

    def __init__(self, total: int, desc: str, bar: bool) -> None:
        self.total, self.desc, self.n, self.shown = total, desc, 0, -1
        self._bar: Any = None
        if bar:
            try:
                from tqdm import tqdm  # type: ignore[import-untyped,import-not-found,unused-ignore]

                self._bar = tqdm(total=total, desc=f"{desc:>14}", unit="job")
            except ImportError:
                pass

    def __call__(self, n: int) -> None:
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
            return
        tenth = 10 * self.n // max(1, self.total)
        if tenth != self.shown:
            self.shown = tenth
            print(
                f"  {self.desc}: {self.n}/{self.total} jobs finished", file=sys.stderr, flush=True
            )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


LOAD_AT_START = os.getloadavg()  # when the study was started (machine() runs at its end)


def machine(load_at_start: tuple[float, float, float] = LOAD_AT_START) -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "load_avg_at_start": load_at_start,
        "load_avg_at_end": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", choices=TRACES, default="itp04")
    p.add_argument("--start", default="864000", help="trace start (itp04: seconds; philly: date)")
    p.add_argument("--jobs", type=int, default=5000, help="jobs read from the trace at most")
    p.add_argument("--load", type=float, default=32.0, help="arrivals x this denser")
    p.add_argument("--window-h", type=float, default=1.0, help="trace hours of arrivals replayed")
    p.add_argument("--max-duration-h", type=float, default=2.0, help="clip job durations")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--compress", type=float, default=60.0, help="trace seconds per wall second")
    p.add_argument("--nodes", type=int, default=64, help="KWOK nodes of 8 GPUs")
    p.add_argument("--stacks", default="all", help=f"comma list of {','.join(STACKS)}, or all")
    p.add_argument("--burst-gangs", type=int, default=8, help="64-pod gangs of the bind burst")
    p.add_argument("--horizon-s", type=float, default=1800.0, help="wall seconds per stack at most")
    p.add_argument("--name", help="results folder name (default from the trace and window)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "live")
    p.add_argument(
        "--windows",
        type=int,
        default=0,
        help="replay the first N windows of each trace the rule of benchmarks/live/windows.py "
        "chooses (each with its own trace, start, load, window and nodes), not one window",
    )
    p.add_argument(
        "--elastic",
        action="store_true",
        help="solver-sched gets the trace's elastic jobs (R:2R pods, power of two); the peers, "
        "which have no elastic Jobs, the same jobs rigid at R",
    )
    p.add_argument("--scale", action="store_true", help="the scale run instead of the replay")
    p.add_argument("--scale-nodes", type=int, default=5000)
    p.add_argument("--scale-pods", type=int, default=10000)
    p.add_argument(
        "--kube-scoring",
        default="",
        choices=("", "LeastAllocated", "MostAllocated"),
        help="kube-scheduler's NodeResourcesFit scoring (a diagnostic; default its own)",
    )
    p.add_argument(
        "--kueue-ready-s",
        type=float,
        help="Kueue's waitForPodsReady timeout in wall seconds (a diagnostic; default the "
        "study's rendezvous timeout compressed: 10 s at 60x)",
    )
    p.add_argument(
        "--kueue-qps",
        type=float,
        help="Kueue's client QPS in wall requests per second (default 50 per trace second: "
        "50 x --compress; 50 reproduces the runs before 2026-12-03 evening)",
    )
    p.add_argument("--keep", type=Path, help="keep each stage's directory (logs) under this")
    p.add_argument("--no-bar", action="store_true", help="no tqdm bar (lines on stderr instead)")
    args = p.parse_args(argv)
    stacks = list(STACKS) if args.stacks == "all" else args.stacks.split(",")
    bad = [s for s in stacks if s not in STACKS]
    if bad:
        p.error(f"unknown stack(s) {', '.join(bad)}; choose from {', '.join(STACKS)}")
    runnable = [s for s in stacks if not missing(s)]
    for s in stacks:
        if s not in runnable:
            print(f"skipping {s}: missing {', '.join(missing(s))} (run `make stage`)")
    if not runnable:
        return 2
    if args.scale:
        return scale_main(args, runnable)
    if args.windows:
        return windows_main(args, runnable, argv)
    w = Window(
        args.trace,
        args.start,
        args.window_h,
        args.load,
        args.max_duration_h,
        args.nodes,
        args.jobs,
        args.seed,
    )
    name = args.name or f"{args.trace}-w{args.window_h:g}h-load{args.load:g}-{args.nodes}n"
    out = replay_main(args, runnable, w, name, argv)
    return 0 if out else 1


def windows_main(args: argparse.Namespace, stacks: list[str], argv: list[str] | None) -> int:
    """Every window the rule chooses (benchmarks/live/windows.py), the stacks paired in each;
    then the median and worst ratio over them."""
    picked = chosen(args.windows)
    for w, offered in picked:
        print(f"window {w.name}: offered load {offered:.2f}", flush=True)
    paths = []
    for w, offered in picked:
        out = replay_main(args, stacks, w, w.name, argv, {"offered_load": offered})
        if out:
            paths.append(out / "results.json")
    rows = [window(p) for p in paths]
    print("\n".join(markdown(rows, aggregate(rows))))
    return 0 if paths else 1


def replay_main(
    args: argparse.Namespace,
    runnable: list[str],
    w: Window,
    name: str,
    argv: list[str] | None,
    extra: dict[str, Any] | None = None,
) -> Path | None:
    """One window replayed against every stack, each on a fresh stage; the results folder."""
    jobs = select_jobs(w)
    params = ReplayParams(
        compress=args.compress,
        burst_gangs=args.burst_gangs,
        horizon=args.horizon_s,
        kube_scoring=args.kube_scoring,
        elastic=args.elastic,
        kueue_ready_s=args.kueue_ready_s,
        kueue_qps=args.kueue_qps,
    )
    print(
        f"{name}: {len(jobs)} jobs, {sum(j.pods for j in jobs)} pods, "
        f"{sum(j.gpus * j.duration for j in jobs) / 3600:.0f} GPU-h on {w.nodes * 8} GPUs; "
        f"{args.compress:g}x compressed; stacks {', '.join(runnable)}"
    )
    summary: dict[str, dict[str, Any]] = {}
    series: dict[str, list[dict[str, Any]]] = {}
    rows: dict[str, list[dict[str, Any]]] = {}
    started, load_at_start = time.time(), os.getloadavg()
    for stack in runnable:
        bar = Progress(len(jobs), stack, not args.no_bar)
        with stage_dir(args.keep, f"live-{stack}-") as tmp:
            try:
                s = run_stack(stack, jobs, w.nodes, params, Path(tmp), bar)
            except (RuntimeError, FileNotFoundError) as exc:
                print(f"{stack} failed: {exc}", file=sys.stderr)
                logs = Path(tmp)
                for log in sorted(logs.glob("*.log")):
                    tail = log.read_text(errors="replace").splitlines()[-5:]
                    print(f"--- {log.name}\n" + "\n".join(tail), file=sys.stderr)
                continue
            finally:
                bar.close()
        summary[stack] = {k: v for k, v in s.items() if k not in ("per_job", "series_rows")}
        rows[stack] = [
            {
                "arrival": r["arrival_h"] * 3600,
                "finish": None if r["jct_h"] is None else (r["arrival_h"] + r["jct_h"]) * 3600,
            }
            for r in s["per_job"]
        ]
        series[stack] = s.pop("series_rows", [])
        summary[stack]["per_job"] = s["per_job"]
    data = {
        "meta": {
            "command": "python -m benchmarks.live " + " ".join(argv or sys.argv[1:]),
            "trace": w.trace,
            "start": w.start,
            "load": w.load,
            "window_h": w.window_h,
            "max_duration_h": w.max_duration_h,
            "compress": args.compress,
            "nodes": w.nodes,
            "gpus": w.nodes * 8,
            "jobs": len(jobs),
            "wall_s": time.time() - started,
            "machine": machine(load_at_start),
            **(extra or {}),
        },
        "summary": summary,
        "ratios_vs_peers": ratios(summary),
        "targets": targets(summary, 50.0),
        "jobs": rows,
        "series": series,
    }
    out = args.out / name
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(data, indent=1))
    plot(data, out, f"live {name}")
    print("\n".join(table(summary)))
    for peer, r in ratios(summary).items():
        cells = ", ".join(f"{k} {v:.3f}" for k, v in r.items() if v is not None)
        print(f"solver-sched / {peer}: {cells}")
    print("\n".join(data["targets"]))
    print(f"results: {out}")
    return out if summary else None


@contextlib.contextmanager
def stage_dir(keep: Path | None, prefix: str) -> Iterator[str]:
    """A stage's directory: kept with its logs under ``keep`` (to analyse a run), else removed."""
    if keep is None:
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            yield tmp
        return
    keep.mkdir(parents=True, exist_ok=True)
    yield tempfile.mkdtemp(prefix=prefix, dir=keep)


def scale_main(args: argparse.Namespace, stacks: list[str]) -> int:
    results = {}
    for stack in stacks:
        with stage_dir(args.keep, f"scale-{stack}-") as tmp:
            try:
                results[stack] = scale_run(stack, args.scale_nodes, args.scale_pods, Path(tmp))
            except (RuntimeError, FileNotFoundError, AssertionError) as exc:  # wait_for timed out
                # a stage that does not come up at this size is a result too: say what failed
                results[stack] = {"failed": str(exc)[:500]}
        print(f"{stack}: {json.dumps(results[stack])}", flush=True)
    out = args.out / f"scale-{args.scale_nodes}n-{args.scale_pods}p"
    out.mkdir(parents=True, exist_ok=True)
    meta = {
        "command": "python -m benchmarks.live " + " ".join(sys.argv[1:]),
        "machine": machine(),
    }
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
