"""The standard trace study: every policy on real traces at loads where queues form.

    .venv/bin/python -m benchmarks.trace                 # ITP, Shockwave, ITP cluster04: < 1 min
    .venv/bin/python -m benchmarks.trace --with-philly   # adds a Philly sample
    .venv/bin/python -m benchmarks.trace --config w.yaml # solver-sched with other weights
    .venv/bin/python -m benchmarks.trace --mapping one   # elastic min = 1 pod (ElasticFlow style)
    .venv/bin/python -m benchmarks.trace --windows       # + cluster04 over all 59.5 days (~3 min)

Elastic jobs are mapped as torchrun ``--nnodes=R:2R`` by default (``--mapping requested``): the
trace's requested size R is the guaranteed min, and elastic pods up to 2R use idle GPUs.
``--mapping one`` guarantees a single pod (min 1, max per trace): every arrival may then shrink
running jobs to admit its one pod (rule 4), which is processor sharing.

Writes benchmarks/results/trace/<study>/{results.json,jct_cdf.png,utilization.png} (git-ignored),
prints one table per study and the targets of issue 4 checked against greedy gang FIFO (``fifo``)
and greedy elastic (``elastic``) measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from solver_sched.config.schema import ConfigError, SchedulerConfig, load_config
from solver_sched.cycle import BACKENDS
from solver_sched.sim.model import SimParams
from solver_sched.sim.policies import POLICIES, parse_policies
from solver_sched.sim.report import run_study, table
from solver_sched.sim.traces import TraceOptions, load_trace

HOUR = 3600.0


@dataclass(frozen=True)
class Study:
    name: str
    trace: str
    gpus: int
    opts: TraceOptions


STUDIES = (
    # ITP testbed window: 195 jobs, 5,490 GPU-h over 2 days; twice as dense on 64 GPUs.
    Study("itp-64gpu-load2", "itp", 64, TraceOptions(jobs=195, load=2.0, max_duration=24 * HOUR)),
    # Shockwave 220 jobs (404 GPU-h in 1.7 h of arrivals) on 32 GPUs.
    Study("shockwave-32gpu-load1", "shockwave", 32, TraceOptions(jobs=220, load=1.0)),
    # ITP cluster04: 300 jobs from day 10 (gangs up to 64 GPUs) on 64 GPUs.
    Study(
        "itp04-64gpu-load1",
        "itp04",
        64,
        TraceOptions(jobs=300, load=1.0, start="864000", max_duration=24 * HOUR),
    ),
)
# ITP cluster04 over its whole span: 300-job windows starting every 5 days, each at load 1 on 64
# GPUs, pooled. One window is a small sample (its ratio vs FIFO ranges from 0.34 to 0.93).
WINDOW_DAYS = tuple(range(0, 60, 5))
WINDOWS = tuple(
    Study(
        f"itp04-64gpu-load1-day{day:02d}",
        "itp04",
        64,
        TraceOptions(jobs=300, load=1.0, start=str(day * 86400), max_duration=24 * HOUR),
    )
    for day in WINDOW_DAYS
)
MAPPINGS = {  # elastic (min, max) factors of the requested size R; None: the trace's default max
    "requested": (1.0, 2.0),
    "one": (0.0, None),
}
PHILLY = Study(  # 300 jobs sampled from a week, 12x denser, on 32 GPUs; half the multi-GPU elastic
    "philly-32gpu-load12",
    "philly",
    32,
    TraceOptions(jobs=300, load=12.0, elastic_fraction=0.5, max_duration=24 * HOUR),
)


def targets(summary: dict[str, dict[str, Any]], ours: str) -> list[str]:
    s, fifo, el = summary[ours], summary.get("fifo"), summary.get("elastic")
    out = []
    if fifo:
        r = s["avg_jct_h"] / fifo["avg_jct_h"]
        verdict = "ok" if r <= 0.8 else "MISSED"
        out.append(f"avg JCT vs fifo     {r:.3f}  (target <= 0.80) {verdict}")
    if el:
        r = s["avg_jct_h"] / el["avg_jct_h"]
        verdict = "ok" if r <= 0.9 else "MISSED"
        out.append(f"avg JCT vs elastic  {r:.3f}  (target <= 0.90) {verdict}")
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.trace", description=__doc__)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/trace"))
    p.add_argument("--config", type=Path, help="SchedulerConfig YAML for solver-sched")
    p.add_argument("--backend", default="cpsat", choices=BACKENDS)
    p.add_argument("--time-limit", type=float, default=2.0)
    p.add_argument("--policies", default=",".join(POLICIES))
    p.add_argument("--with-philly", action="store_true")
    p.add_argument("--mapping", choices=sorted(MAPPINGS), default="requested")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--windows", action="store_true", help="add the cluster04 window sweep")
    args = p.parse_args(argv)
    try:
        config = load_config(args.config) if args.config else SchedulerConfig()
    except ConfigError as exc:
        print(f"benchmarks.trace: {exc}", file=sys.stderr)
        return 2
    try:
        policies = parse_policies(args.policies)
    except ValueError as exc:
        print(f"benchmarks.trace: {exc}", file=sys.stderr)
        return 2
    studies = STUDIES + ((PHILLY,) if args.with_philly else ()) + (WINDOWS if args.windows else ())
    verdicts = {}
    swept: list[dict[str, dict[str, Any]]] = []
    ours = next((x for x in policies if x.startswith("solver-sched")), None)
    done: dict[tuple[str, TraceOptions], dict[str, dict[str, Any]]] = {}  # run once per setup
    for study in studies:
        low, high = MAPPINGS[args.mapping]
        opts = replace(study.opts, gpus=study.gpus, min_factor=low, max_factor=high)
        if (study.trace, opts) in done:  # the day-10 window is also the single cluster04 study
            swept.append(done[(study.trace, opts)])
            continue
        jobs = load_trace(study.trace, opts)
        params = SimParams(gpus=study.gpus, cooldown=config.settings.cooldown)
        extra = {"study": study.name, "load": study.opts.load, "mapping": args.mapping}
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
        done[(study.trace, opts)] = summary
        if study in WINDOWS:
            swept.append(summary)
        elif ours:
            verdicts[study.name] = targets(summary, ours)
    if swept and ours:
        print(f"\n== cluster04 windows (days {', '.join(map(str, WINDOW_DAYS))}), {ours} vs fifo:")
        ratios = []
        for day, s in zip(WINDOW_DAYS, swept, strict=True):
            utils = "  ".join(f"{k} {v['util_useful']:.3f}" for k, v in s.items())
            if "fifo" in s:
                ratios.append(s[ours]["avg_jct_h"] / s["fifo"]["avg_jct_h"])
                utils = f"avg JCT x{ratios[-1]:.3f}   useful util {utils}"
            print(f"   day {day:2d}: {utils}")
        if ratios:
            met = sum(r <= 0.8 for r in ratios)
            median = statistics.median(ratios)
            print(f"   median window x{median:.3f}; {met} of {len(ratios)} <= 0.80")
        verdicts[f"cluster04, {len(swept)} windows pooled"] = targets(pooled(swept), ours)
    for name, lines in verdicts.items():
        print(f"\n-- targets, {name}")
        print("\n".join("   " + line for line in lines))
    print(f"\nresults in {args.out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
