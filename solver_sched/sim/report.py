"""Run several policies on one trace; write results.json, the plots, and a table with ratios."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from solver_sched.config.schema import SchedulerConfig
from solver_sched.sim.bounds import avg_jct_bound
from solver_sched.sim.engine import RunResult, simulate
from solver_sched.sim.metrics import RATIO_KEYS, job_rows, ratios, summarize
from solver_sched.sim.model import SimParams, TraceJob
from solver_sched.sim.policies import make_policy

BASELINE = "fifo"


def run_policies(
    jobs: Sequence[TraceJob],
    policies: Sequence[str],
    params: SimParams,
    config: SchedulerConfig | None = None,
    backend: str = "cpsat",
    time_limit: float = 2.0,
    progress: bool = True,
) -> list[RunResult]:
    out = []
    for name in policies:
        policy = make_policy(name, config, backend, time_limit)
        with _Bar(len(jobs), name, progress) as bar:
            out.append(simulate(jobs, policy, params, bar.update))
    return out


def run_study(
    trace: str,
    jobs: Sequence[TraceJob],
    policies: Sequence[str],
    params: SimParams,
    config: SchedulerConfig,
    backend: str,
    time_limit: float,
    out: Path,
    title: str | None,
    extra: dict[str, Any],
    progress: bool = True,
) -> tuple[dict[str, Any], list[Path]]:
    """Every policy on one trace: results.json in ``out``, plots too unless ``title`` is None.
    Returns the results and the plots written."""
    runs = run_policies(jobs, policies, params, config, backend, time_limit, progress)
    data = results(runs, run_meta(trace, jobs, params, config, backend, time_limit) | extra)
    write(data, out)
    return data, ([] if title is None else plot(data, out, title))


def run_meta(
    trace: str,
    jobs: Sequence[TraceJob],
    params: SimParams,
    config: SchedulerConfig,
    backend: str,
    time_limit: float,
) -> dict[str, Any]:
    """What a results.json records about the run: the trace, the world and solver-sched's set-up."""
    return {
        "trace": trace,
        "jobs": len(jobs),
        "elastic_jobs": sum(j.elastic for j in jobs),
        "offered_gpu_hours": sum(j.work for j in jobs) / 3600,
        "arrival_span_h": jobs[-1].arrival / 3600 if jobs else 0.0,
        "bound_avg_jct_h": avg_jct_bound(jobs, params) / 3600,  # no scheduler does better
        "gpus": params.gpus,
        "gpus_per_node": params.gpus_per_node,
        "interval": params.interval,
        "checkpoint": params.checkpoint_interval,
        "restart_overhead": params.restart_overhead,
        "cooldown": params.cooldown.total_seconds(),
        "speedup_alpha": params.speedup.alpha,
        "backend": backend,
        "time_limit": time_limit,
        "weights": config.weights.model_dump(by_alias=True),
    }


class _Bar:
    """A tqdm bar over finished jobs when tqdm is installed and wanted; otherwise nothing."""

    def __init__(self, total: int, desc: str, enabled: bool) -> None:
        self._bar: Any = None
        if enabled:
            try:
                from tqdm import tqdm  # type: ignore[import-untyped,import-not-found,unused-ignore]
            except ImportError:
                return
            self._bar = tqdm(total=total, desc=f"{desc:>14}", unit="job", leave=True)

    def update(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def __enter__(self) -> _Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()


def results(runs: Sequence[RunResult], meta: dict[str, Any]) -> dict[str, Any]:
    summaries = {r.policy: summarize(r) for r in runs}
    data: dict[str, Any] = {
        "meta": meta,
        "baseline": BASELINE,
        "summary": summaries,
        "ratios_vs_baseline": ratios(summaries, BASELINE),
        "series": {
            r.policy: [
                {"t": s.t, "allocated": s.allocated, "useful": s.useful, "waiting": s.waiting}
                for s in r.samples
            ]
            for r in runs
        },
        "jobs": {r.policy: job_rows(r) for r in runs},
    }
    return data


def write(data: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(_finite(data), indent=1, sort_keys=True))


def _finite(x: Any) -> Any:
    """NaN/inf -> None so that results.json is strict JSON."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


COLUMNS = (
    ("avg JCT h", "avg_jct_h", "{:.2f}"),
    ("p95 JCT h", "p95_jct_h", "{:.2f}"),
    ("queue h", "avg_queue_h", "{:.2f}"),
    ("makespan h", "makespan_h", "{:.1f}"),
    ("util", "util_alloc", "{:.3f}"),
    ("useful", "util_useful", "{:.3f}"),
    ("useful busy", "util_useful_busy", "{:.3f}"),
    ("restarts/job", "restarts_per_job", "{:.2f}"),
    ("out in cd", "scale_outs_in_cooldown", "{}"),
    ("in in cd", "scale_ins_in_cooldown", "{}"),
    ("unfinished", "unfinished", "{}"),
    ("plan s mean", "plan_s_mean", "{:.3f}"),
    ("plan s p95", "plan_s_p95", "{:.3f}"),
)


def table(data: dict[str, Any]) -> str:
    summary: dict[str, dict[str, Any]] = data["summary"]
    rows = [["policy", *(c[0] for c in COLUMNS)]]
    for name, s in summary.items():
        rows.append([name, *(fmt.format(s[key]) for _, key, fmt in COLUMNS)])
    lines = [_grid(rows)]
    rat: dict[str, dict[str, float]] = data["ratios_vs_baseline"]
    if rat:
        label = {key: title.removesuffix(" h") for title, key, _ in COLUMNS}
        rrows = [["vs " + data["baseline"], *(label[k] for k in RATIO_KEYS)]]
        for name, r in rat.items():
            rrows.append([name, *(f"{r[k]:.3f}" for k in RATIO_KEYS)])
        lines += ["", _grid(rrows)]
    bound = data["meta"].get("bound_avg_jct_h")
    if bound is not None:
        base = summary.get(data["baseline"], {}).get("avg_jct_h")
        of = f", x{bound / base:.3f} of {data['baseline']}'s" if base else ""
        lines.append(f"\nno scheduler's avg JCT is below {bound:.3f} h here{of} (sim/bounds.py)")
    return "\n".join(lines)


def _grid(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    )


def plot(data: dict[str, Any], out: Path, title: str) -> list[Path]:
    """jct_cdf.png and utilization.png (matplotlib, Agg); [] when matplotlib is missing."""
    try:
        import matplotlib  # type: ignore[import-not-found,unused-ignore]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return []
    out.mkdir(parents=True, exist_ok=True)
    written = []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, rows in data.get("jobs", {}).items():
        jct = sorted((r["finish"] - r["arrival"]) / 3600 for r in rows if r["finish"] is not None)
        if jct:
            ax.step(jct, [(i + 1) / len(jct) for i in range(len(jct))], where="post", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (h, log)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title(f"JCT CDF: {title}")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = out / "jct_cdf.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    gpus = data["meta"]["gpus"]
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for name, series in data["series"].items():
        if not series:
            continue
        makespan = data["summary"][name]["makespan_h"] * 3600
        pts = [s for s in series if s["t"] <= makespan] or series
        t = [s["t"] / 3600 for s in pts]
        axes[0].plot(t, _smooth([s["useful"] / gpus for s in pts]), label=name, lw=1)
        axes[1].plot(t, _smooth([float(s["waiting"]) for s in pts]), label=name, lw=1)
    axes[0].set_ylabel("useful GPU utilization")
    axes[0].set_ylim(0, 1.05)
    axes[0].set_title(f"Utilization over time (moving average of 15 cycles): {title}")
    axes[1].set_ylabel("waiting jobs")
    axes[1].set_xlabel("simulated time (h)")
    for a in axes:
        a.grid(True, alpha=0.3)
        a.legend(fontsize=8)
    fig.tight_layout()
    path = out / "utilization.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
    return written


def _smooth(xs: list[float], k: int = 15) -> list[float]:
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= k:
            acc -= xs[i - k]
        out.append(acc / min(i + 1, k))
    return out
