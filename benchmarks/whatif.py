"""What-if on large cluster dumps (issue 14, part 1): whole-process time and peak RSS per size.

For each size and dump profile (``benchmarks/kubectl_dump.py``: compact, kubectl, managed),
several instances (one seed each) are written once to ``benchmarks/results/dumps/`` and
`solver-sched whatif` runs on each as a child process: wall time from spawn to exit, and the
child's peak RSS (``wait4``). Each measured run (``--time-limit``: the size's search) follows a
greedy-only run of the same file (the baseline, measured in the same machine state) and a run
with the defaults (no ``--time-limit``: the cycle's budget by cluster size, what a user gets),
and the ratio between the measured run and the baseline is reported with the medians and worst
cases over the instances (the baseline ran with the search's ``--time-limit`` before 2026-12-04,
so its other passes had no budget: ratios in older tables are not comparable). A calibration
loop (10^7 additions) and the load average give the machine's state. ``--old-loader`` also
times the previous pure-Python YAML loader on the first instance of each case, as the starting
point of the issue.

    .venv/bin/python -m benchmarks.whatif                      # 512, 2,000, 10,000 nodes
    .venv/bin/python -m benchmarks.whatif --sizes 512 --instances 5 --profiles kubectl
Writes benchmarks/results/whatif.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.kubectl_dump import PROFILES, VERSION, write_dump

OUT = Path(__file__).resolve().parent / "results"
NOW = "2026-01-01T12:00:00Z"
EXE = Path(sys.executable).with_name("solver-sched")


@dataclass(frozen=True)
class Size:
    nodes: int
    search: float  # seconds of CP-SAT search (--time-limit)
    target: float  # whole-process seconds (issue 14)
    profiles: tuple[str, ...]


SIZES = {
    512: Size(512, 1.0, 3.0, PROFILES),
    2000: Size(2000, 3.0, 8.0, PROFILES),
    10000: Size(10000, 3.0, 20.0, ("compact", "kubectl")),  # managed: 2.5 GB of JSON
}
RSS_TARGET = {2000: 600.0}  # MB

# The previous loader, for --old-loader: yaml.safe_load (pure Python) of the whole file, then
# the same snapshot and greedy-only cycle.
OLD_LOADER = """
import sys, yaml
from datetime import datetime
from solver_sched.config.schema import SchedulerConfig
from solver_sched.cycle import run_cycle
from solver_sched.io.kube_snapshot import snapshot_from_objects
doc = yaml.safe_load(open(sys.argv[1]).read())
snap = snapshot_from_objects(doc["items"])
run_cycle(snap, SchedulerConfig(), datetime.fromisoformat(sys.argv[2]), "greedy")
"""


def dump_path(nodes: int, profile: str, seed: int) -> Path:
    path = OUT / "dumps" / f"v{VERSION}-{profile}-{nodes}-seed{seed}.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        # in a child of its own: a child's peak RSS (wait4) starts at its parent's at fork, and
        # writing a 10,000-node dump takes this process to 1.4 GB
        writer = multiprocessing.get_context("spawn").Process(
            target=write_dump, args=(tmp, nodes, seed, profile)
        )
        writer.start()
        writer.join()
        if writer.exitcode != 0:
            raise RuntimeError(f"writing {tmp} failed ({writer.exitcode})")
        tmp.rename(path)
    return path


def run(cmd: list[str]) -> dict[str, Any]:
    """Wall seconds, peak RSS (MB), exit code and the --timings line of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    steps: dict[str, Any] = {}
    for line in err.splitlines():
        if line.startswith("{"):
            steps = json.loads(line)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {err[-2000:]}")
    return {"wall": wall, "rss": usage.ru_maxrss / 1024, "code": proc.returncode, "steps": steps}


def whatif(path: Path, solver: str, search: float | None) -> dict[str, Any]:
    """One what-if process; ``search`` None: without --time-limit (the cycle's own budget)."""
    cmd = [str(EXE), "whatif", str(path), "--now", NOW, "-o", "json", "--timings"]
    cmd += ["--solver", solver] + ([] if search is None else ["--time-limit", str(search)])
    return run(cmd)


def calibration() -> float:
    start = time.perf_counter()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.perf_counter() - start


def _steps(result: dict[str, Any]) -> dict[str, float]:
    return {k: v for k, v in result["steps"].items() if k != "phases"}


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "worst": max(values)}


def measure(size: Size, profile: str, instances: int, old: bool) -> dict[str, Any]:
    runs = []
    for seed in range(1, instances + 1):
        path = dump_path(size.nodes, profile, seed)
        greedy = whatif(path, "greedy", None)
        default = whatif(path, "cpsat", None)
        cpsat = whatif(path, "cpsat", size.search)
        runs.append(
            {
                "seed": seed,
                "file_mb": path.stat().st_size / 1e6,
                "load": os.getloadavg()[0],
                "greedy": greedy,
                "default": default,
                "cpsat": cpsat,
                "ratio": cpsat["wall"] / greedy["wall"],
            }
        )
        print(
            f"  {profile:8} {size.nodes:>6} seed {seed}: {cpsat['wall']:6.2f} s "
            f"(default {default['wall']:5.2f} s, greedy-only {greedy['wall']:5.2f} s), "
            f"{cpsat['rss']:5.0f} MB, "
            f"{runs[-1]['file_mb']:7.1f} MB file, load {runs[-1]['load']:.1f}, "
            f"steps {_steps(cpsat)}",
            flush=True,
        )
    out: dict[str, Any] = {
        "nodes": size.nodes,
        "profile": profile,
        "search": size.search,
        "target": size.target,
        "runs": runs,
        "wall": _summary([r["cpsat"]["wall"] for r in runs]),
        "default_wall": _summary([r["default"]["wall"] for r in runs]),
        "greedy_wall": _summary([r["greedy"]["wall"] for r in runs]),
        "ratio": _summary([r["ratio"] for r in runs]),
        "rss": _summary([max(r[k]["rss"] for k in ("cpsat", "default", "greedy")) for r in runs]),
        "file_mb": statistics.median(r["file_mb"] for r in runs),
    }
    if old:
        path = dump_path(size.nodes, profile, 1)
        out["old_loader"] = run([sys.executable, "-c", OLD_LOADER, str(path), NOW])
        print(
            f"  {profile:8} {size.nodes:>6} old loader, greedy: {out['old_loader']['wall']:.1f} s"
        )
    return out


def _table(results: list[dict[str, Any]], before: float, after: float) -> str:
    lines = [
        f"calibration (10^7 additions): {before:.2f} s before, {after:.2f} s after",
        "| nodes | profile | file MB | search | whole process p50 / worst (target) | "
        "defaults p50 / worst | greedy-only p50 | ratio p50 / worst | peak RSS p50 / worst |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        met = "met" if r["wall"]["worst"] <= r["target"] else "missed"
        default = r["default_wall"]
        met_default = "met" if default["worst"] <= r["target"] else "missed"
        rss_target = RSS_TARGET.get(r["nodes"])
        rss = f"{r['rss']['median']:.0f} / {r['rss']['worst']:.0f} MB"
        if rss_target:
            rss += f" ({'met' if r['rss']['worst'] <= rss_target else 'missed'})"
        lines.append(
            f"| {r['nodes']:,} | {r['profile']} | {r['file_mb']:.0f} | {r['search']:g} s | "
            f"{r['wall']['median']:.2f} / {r['wall']['worst']:.2f} s ({r['target']:g} s, {met}) | "
            f"{default['median']:.2f} / {default['worst']:.2f} s ({met_default}) | "
            f"{r['greedy_wall']['median']:.2f} s | "
            f"x{r['ratio']['median']:.2f} / x{r['ratio']['worst']:.2f} | {rss} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", choices=sorted(SIZES), default=sorted(SIZES))
    p.add_argument("--profiles", nargs="+", choices=PROFILES, default=list(PROFILES))
    p.add_argument("--instances", type=int, default=3, help="seeds per size and profile")
    p.add_argument("--old-loader", action="store_true", help="also time the pure-Python loader")
    args = p.parse_args(argv)
    before = calibration()
    results = []
    for nodes in args.sizes:
        size = SIZES[nodes]
        for profile in args.profiles:
            if profile in size.profiles:
                results.append(measure(size, profile, args.instances, args.old_loader))
    after = calibration()
    table = _table(results, before, after)
    print(table)
    OUT.mkdir(parents=True, exist_ok=True)
    doc = {"calibration": [before, after], "results": results}
    (OUT / "whatif.json").write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
