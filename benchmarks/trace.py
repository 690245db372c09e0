"""The standard trace study: every policy on real traces at loads where queues form.

    .venv/bin/python -m benchmarks.trace                 # ITP, Shockwave, ITP cluster04: < 1 min
    .venv/bin/python -m benchmarks.trace --with-philly   # adds a Philly sample
    .venv/bin/python -m benchmarks.trace --config w.yaml # solver-sched with other weights
    .venv/bin/python -m benchmarks.trace --mapping one   # elastic min = 1 pod (ElasticFlow style)
    .venv/bin/python -m benchmarks.trace --windows       # cluster04 over all 59.5 days (~3 min)
    .venv/bin/python -m benchmarks.trace --traces itp04 --days 5,15 --gpus 32,128  # windows, sizes
    .venv/bin/python -m benchmarks.trace --traces philly --policies all,solver-sched:greedy
    .venv/bin/python -m benchmarks.trace --racks 4 \
        --policies fifo,kueue-bestfit,volcano-tiers,solver-sched     # racks, spread slowdown

Elastic jobs are mapped as torchrun ``--nnodes=R:2R`` by default (``--mapping requested``): the
trace's requested size R is the guaranteed min, and elastic pods up to 2R use idle GPUs.
``--mapping one`` guarantees a single pod (min 1, max per trace): every arrival may then shrink
running jobs to admit its one pod (rule 4), which is processor sharing.

``--gpus`` runs every study at each size with its load scaled by size / the study's own size
(the offered load per GPU stays). Writes benchmarks/results/trace/<study>/{results.json,
jct_cdf.png,utilization.png} and groups.json (git-ignored), prints one table per study, then per
trace and size the median, worst and best ratio of solver-sched's average JCT to greedy gang FIFO
(``fifo``) and greedy elastic (``elastic``) measured in the same run, and the targets of issue 4,
each beside the bound no scheduler could beat even knowing every job's duration
(``solver_sched/sim/bounds.py``): a target is out of reach where the bound is above it. With
``--policies ...,sjf-oracle``, also gang FIFO's backfill smallest work first, durations known.

``--racks N`` groups the nodes into racks of N (issue 15): every multi-pod gang then prefers one
rack, a gang spread over k racks runs ``1 + s (k - 1)`` times slower (``--spread-slowdown s``,
default 0.1; sim/model.py), and the topology baselines ``kueue-bestfit`` and ``volcano-tiers`` may
be run as policies; the ratios are then also given against them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from solver_sched.config.schema import ConfigError, SchedulerConfig, load_config
from solver_sched.cycle import BACKENDS
from solver_sched.sim.model import SimParams
from solver_sched.sim.policies import (
    POLICIES,
    REFERENCE_POLICIES,
    TOPOLOGY_POLICIES,
    parse_policies,
)
from solver_sched.sim.report import run_study, table
from solver_sched.sim.traces import TraceOptions, load_trace_noting

HOUR = 3600.0


@dataclass(frozen=True)
class Study:
    trace: str
    gpus: int
    opts: TraceOptions
    window: str = ""  # which window of the trace: "day05", "seed2"; "" for the trace's one

    @property
    def name(self) -> str:
        """Derived from what the study runs, so a label can never describe another study."""
        load = f"{self.opts.load:g}".replace(".", "_")
        return "-".join(x for x in (self.trace, f"{self.gpus}gpu", f"load{load}", self.window) if x)

    def at(self, gpus: int) -> Study:
        """The same study on another cluster size, at the same offered load per GPU: the
        arrivals are compressed by gpus / (the study's own size)."""
        load = self.opts.load * gpus / self.gpus
        return replace(self, gpus=gpus, opts=replace(self.opts, load=load))


DAY = 24 * HOUR
STUDIES = (
    # ITP testbed window: 195 jobs, 5,490 GPU-h over 2 days; twice as dense on 64 GPUs.
    Study("itp", 64, TraceOptions(jobs=None, load=2.0, max_duration=DAY)),
    # Shockwave: every job of the shipped trace (404 GPU-h in 1.7 h of arrivals) on 32 GPUs.
    Study("shockwave", 32, TraceOptions(jobs=None, load=1.0)),
    # ITP cluster04: 300 jobs from day 10 (gangs up to 64 GPUs) on 64 GPUs.
    Study("itp04", 64, TraceOptions(jobs=300, load=1.0, start=str(10 * 86400), max_duration=DAY)),
)
# ITP cluster04 over its whole span: 300-job windows starting every 5 days, each at load 1 on 64
# GPUs, pooled. One window is a small sample (its ratio vs FIFO ranges from 0.34 to 0.93).
WINDOW_DAYS = tuple(range(0, 60, 5))


def itp04_window(day: int, jobs: int = 300) -> Study:
    opts = TraceOptions(jobs=jobs, load=1.0, start=str(day * 86400), max_duration=DAY)
    return Study("itp04", 64, opts, f"day{day:02d}")


def philly(seed: int = 1) -> Study:
    """300 jobs sampled from a week, 12x denser, on 32 GPUs; half the multi-GPU elastic."""
    opts = TraceOptions(jobs=300, load=12.0, seed=seed, elastic_fraction=0.5, max_duration=DAY)
    return Study("philly", 32, opts, f"seed{seed}" if seed != 1 else "")


STUDY_TRACES = (*(s.trace for s in STUDIES), "philly")  # what --traces may name

MAPPINGS = {  # elastic (min, max) factors of the requested size R; None: the trace's default max
    "requested": (1.0, 2.0),
    "one": (0.0, None),
}


def select(args: argparse.Namespace) -> list[Study]:
    """The studies the flags ask for, each at every size of ``--gpus`` (default: its own)."""
    if args.traces:
        names = [t.strip() for t in args.traces.split(",") if t.strip()]
        unknown = sorted(set(names) - set(STUDY_TRACES))
        if unknown:
            raise ValueError(
                f"unknown trace {', '.join(unknown)}; the studies have {', '.join(STUDY_TRACES)}"
            )
    else:
        names = [s.trace for s in STUDIES] + (["philly"] if args.with_philly else [])
    days = [int(d) for d in args.days.split(",")] if args.days else list(WINDOW_DAYS)
    seeds = [int(x) for x in args.seeds.split(",")]
    base: list[Study] = []
    for name in names:
        if name == "itp04" and (args.windows or args.days):
            base += [itp04_window(d) for d in days]
        elif name == "philly":
            base += [philly(seed) for seed in seeds]
        else:
            base += [next(s for s in STUDIES if s.trace == name)]
    if args.jobs is not None:
        base = [replace(s, opts=replace(s.opts, jobs=args.jobs)) for s in base]
    if not args.gpus:
        return base
    return [s.at(int(g)) for g in args.gpus.split(",") for s in base]


def targets(
    summary: dict[str, dict[str, Any]], ours: str, bound_h: float | None = None
) -> list[str]:
    """The issue's targets, each with its verdict. ``bound_h``: no scheduler's average JCT is
    below it (sim/bounds.py); a JCT target whose baseline's average times the target is below
    the bound is out of any scheduler's reach, and says so."""
    s, fifo, el = summary[ours], summary.get("fifo"), summary.get("elastic")
    out = []
    for label, base, goal in (("fifo", fifo, 0.8), ("elastic", el, 0.9)):
        if not base:
            continue
        r = s["avg_jct_h"] / base["avg_jct_h"]
        verdict = "ok" if r <= goal else "MISSED"
        line = f"avg JCT vs {label:8s} {r:.3f}  (target <= {goal:.2f}) {verdict}"
        if bound_h is not None:
            b = bound_h / base["avg_jct_h"]
            line += f"; bound x{b:.3f}" + (" (out of reach)" if b > goal else "")
        for ref in REFERENCE_POLICIES:
            if ref in summary:
                line += f"; {ref} x{summary[ref]['avg_jct_h'] / base['avg_jct_h']:.3f}"
        out.append(line)
    others = [x["util_useful"] for x in (fifo, el) if x]
    if others:
        ok = all(s["util_useful"] > u for u in others)
        out.append(
            f"useful util         {s['util_useful']:.3f} vs {', '.join(f'{u:.3f}' for u in others)}"
            f"  (target: higher than both) {'ok' if ok else 'MISSED'}"
        )
    r = s["restarts_per_job"]
    out.append(f"restarts per job    {r:.2f}   (target <= 1.5) {'ok' if r <= 1.5 else 'MISSED'}")
    c = s["scale_outs_in_cooldown"]
    out.append(f"scale-outs in cooldown {c}    (must be 0) {'ok' if c == 0 else 'VIOLATED'}")
    return out


def pooled(summaries: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per policy, the studies' jobs taken together: average JCT and restarts per job over all
    jobs, useful utilization as useful GPU-time over GPU-time to each study's makespan."""
    out: dict[str, dict[str, Any]] = {}
    for policy in summaries[0]:
        rows = [s[policy] for s in summaries]
        jobs = sum(r["finished"] for r in rows)
        span = sum(r["makespan_h"] * r["gpus"] for r in rows)
        out[policy] = {
            "avg_jct_h": sum(r["avg_jct_h"] * r["finished"] for r in rows) / jobs,
            "util_useful": sum(r["util_useful"] * r["makespan_h"] * r["gpus"] for r in rows) / span,
            "restarts_per_job": sum(r["restarts_per_job"] * r["jobs"] for r in rows)
            / sum(r["jobs"] for r in rows),
            "scale_outs_in_cooldown": sum(r["scale_outs_in_cooldown"] for r in rows),
        }
    return out


def pooled_bound(studies: list[tuple[float, int]]) -> float:
    """The bound on the pooled average JCT: each study's bound weighted by its jobs."""
    return sum(b * n for b, n in studies) / max(1, sum(n for _, n in studies))


def ratios(rows: list[dict[str, dict[str, Any]]], ours: str, base: str) -> list[float]:
    return [r[ours]["avg_jct_h"] / r[base]["avg_jct_h"] for r in rows if base in r]


def group_lines(
    name: str,
    rows: list[dict[str, dict[str, Any]]],
    ours: str,
    bounds: list[tuple[float, int]] | None = None,
) -> list[str]:
    """One group of windows (or the one study) of a trace at one size: median and worst ratios
    against each baseline measured in the same run, the bound's ratio to FIFO's (what no
    scheduler could beat), and the pooled utilization."""
    out = []
    if bounds and all("fifo" in r for r in rows):
        rs = [b / r["fifo"]["avg_jct_h"] for (b, _), r in zip(bounds, rows, strict=True)]
        out.append(
            f"{name:28s} bound vs fifo median x{statistics.median(rs):.3f}  "
            f"worst x{max(rs):.3f}  best x{min(rs):.3f}  (any scheduler, durations known)"
        )
    for ref in REFERENCE_POLICIES:
        rs = ratios(rows, ref, "fifo") if all(ref in r for r in rows) else []
        if rs:
            out.append(
                f"{name:28s} {ref} vs fifo median x{statistics.median(rs):.3f}  "
                f"worst x{max(rs):.3f}  best x{min(rs):.3f}  (durations known, no preemption)"
            )
    for base in ("fifo", "elastic", *TOPOLOGY_POLICIES):
        rs = ratios(rows, ours, base)
        if rs:
            out.append(
                f"{name:28s} vs {base:8s} median x{statistics.median(rs):.3f}  "
                f"worst x{max(rs):.3f}  best x{min(rs):.3f}  ({len(rs)} windows)"
            )
    p = pooled(rows)
    utils = " / ".join(f"{k} {v['util_useful']:.3f}" for k, v in p.items())
    out.append(f"{name:28s} pooled useful util {utils}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.trace",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/trace"))
    p.add_argument("--config", type=Path, help="SchedulerConfig YAML for solver-sched")
    p.add_argument("--backend", default="cpsat", choices=BACKENDS)
    p.add_argument("--time-limit", type=float, default=2.0)
    p.add_argument("--policies", default=",".join(POLICIES))
    p.add_argument("--with-philly", action="store_true")
    p.add_argument("--mapping", choices=sorted(MAPPINGS), default="requested")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--windows", action="store_true", help="cluster04 as its window sweep")
    p.add_argument("--traces", help=f"comma-separated: {', '.join(STUDY_TRACES)}")
    p.add_argument("--days", help="cluster04 windows: start days (default 0,5,...,55)")
    p.add_argument("--seeds", default="1", help="philly: comma-separated sampling seeds")
    p.add_argument("--jobs", type=int, help="jobs per study (default: each study's own)")
    p.add_argument("--racks", type=int, default=0, help="nodes per rack (default: no racks)")
    p.add_argument("--spread-slowdown", type=float, default=0.1, help="per extra rack a gang spans")
    p.add_argument(
        "--gpus",
        help="comma-separated cluster sizes; each study runs at each, its load scaled to keep "
        "the offered load per GPU (default: each study's own size)",
    )
    args = p.parse_args(argv)
    try:
        config = load_config(args.config) if args.config else SchedulerConfig()
        policies = parse_policies(args.policies)
        studies = select(args)
    except (ConfigError, ValueError) as exc:
        print(f"benchmarks.trace: {exc}", file=sys.stderr)
        return 2
    ours = next((x for x in policies if x.startswith("solver-sched")), None)
    groups: dict[str, list[dict[str, dict[str, Any]]]] = {}
    bounds: dict[str, list[tuple[float, int]]] = {}  # per group: (bound_avg_jct_h, jobs) per study
    for study in studies:
        low, high = MAPPINGS[args.mapping]
        opts = replace(study.opts, gpus=study.gpus, min_factor=low, max_factor=high)
        note = partial(print, f"benchmarks.trace: {study.name}:", file=sys.stderr)
        jobs = load_trace_noting(study.trace, opts, note)
        params = SimParams(
            gpus=study.gpus,
            cooldown=config.settings.cooldown,
            rack_nodes=args.racks,
            spread_slowdown=args.spread_slowdown,
        )
        extra = {"study": study.name, "load": opts.load, "mapping": args.mapping}
        data, _ = run_study(
            study.trace,
            jobs,
            policies,
            params,
            config,
            args.backend,
            args.time_limit,
            args.out / study.name,
            study.name,
            extra,
            not args.no_progress,
        )
        meta = data["meta"]
        print(
            f"\n== {study.name}: {len(jobs)} jobs ({meta['elastic_jobs']} elastic), "
            f"{meta['offered_gpu_hours']:.0f} GPU-h offered, arrivals over "
            f"{meta['arrival_span_h']:.1f} h, {study.gpus} GPUs"
        )
        print(table(data))
        summary = {k: {**v, "gpus": study.gpus} for k, v in data["summary"].items()}
        group = f"{study.trace}-{study.gpus}gpu"
        groups.setdefault(group, []).append(summary)
        bounds.setdefault(group, []).append((meta["bound_avg_jct_h"], len(jobs)))
        if args.racks:
            spread = ", ".join(f"{k} {v['spread_jobs']}" for k, v in summary.items())
            print(f"   jobs that ran over several racks: {spread}")
        if ours and len(studies) > 1 and "fifo" in summary:
            (r,) = ratios([summary], ours, "fifo")
            print(f"   {study.name}: {ours} avg JCT x{r:.3f} of fifo")
    if not ours:
        print(f"\nresults in {args.out}/")
        return 0
    print(f"\n== {ours}, per trace and size (ratios of average JCT, same run):")
    for name, rows in groups.items():
        lines = group_lines(name, rows, ours, bounds[name])
        print("\n".join("   " + line for line in lines))
    for name, rows in groups.items():
        label = name if len(rows) == 1 else f"{name}, {len(rows)} windows pooled"
        print(f"\n-- targets, {label}")
        bound = pooled_bound(bounds[name])
        print("\n".join("   " + line for line in targets(pooled(rows), ours, bound)))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "groups.json").write_text(json.dumps(groups, indent=1, default=str))
    (args.out / "bounds.json").write_text(json.dumps(bounds, indent=1))
    print(f"\nresults in {args.out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
