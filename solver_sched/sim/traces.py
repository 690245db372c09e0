"""Trace loaders: rows of a public trace -> ``TraceJob`` (see /work/shared/traces/README.md).

Common mapping (``map_job``), whatever the source:

- arrival: the trace's submission time, shifted so the first selected job arrives at 0 and divided
  by the load factor (``load = 2`` packs the same jobs into half the time);
- gang size: the trace's GPU count ``R``; one GPU per pod up to 8 GPUs, above that 8-GPU pods (or
  4/2/1-GPU pods when 8 does not divide ``R``, e.g. 12 GPUs = 3 pods of 4);
- elastic jobs: ``min = 1`` pod (or ``R x min_factor`` pods rounded down to a power of two),
  ``max = R x max_factor`` pods rounded up to a power of two, sizes powers of two; a job whose min
  equals its max is rigid;
- queue: the trace's virtual cluster where it has one (Philly), else ``default``; priority 0 unless
  the trace says otherwise.

Per source:

- ``philly`` (Pollux's ``philly.csv``): rows with ``duration < 60`` s or ``gpu_time >= 1000``
  GPU-hours are dropped, as Pollux does; ``n`` jobs are sampled uniformly (seeded) from those
  submitted in the ``window_days`` days from ``start`` (default 7 days from 2017-10-09, a Monday),
  keeping their submission times; queue = VC (``cluster``). 93% of Philly jobs use 1 GPU.
  The trace has no elasticity: jobs are rigid unless ``elastic_fraction`` > 0 marks that share of
  multi-GPU jobs elastic (seeded).
- ``itp`` (ElasticFlow ``195job.csv``) and ``itp04`` (``cluster04.csv``, the ``n`` jobs from
  ``start`` seconds on): every multi-GPU job elastic, ``min 1``, ``max num_gpu`` (``max_factor`` 1),
  as ElasticFlow treats them.
- ``shockwave`` (tab-separated, no header): ``mode != static`` (accordion, gns) -> elastic with
  ``max_factor`` 2 by default; priority = ``priority_weight - 1`` (all 0 in the shipped trace).
- ``synthetic``: Poisson arrivals whose offered load is ``load`` x the cluster's GPUs; sizes 1-32
  GPUs (small most common), log-normal durations (median 1 h, 5 min to 24 h), half the multi-GPU
  jobs elastic (``max_factor`` 2), two queues. Deterministic for a seed.

Durations may be clipped (``max_duration``) so that one month-long job does not set the makespan.
"""

from __future__ import annotations

import csv
import math
import os
import random
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

from solver_sched.sim.model import TraceJob

TRACE_DIR = Path(os.environ.get("SOLVER_SCHED_TRACES", "/work/shared/traces"))
TRACES = ("philly", "itp", "itp04", "shockwave", "synthetic")
FILES = {
    "philly": "petuum-adaptdl-pollux/philly.csv",
    "itp": "microsoft-elasticflow-traces/195job.csv",
    "itp04": "microsoft-elasticflow-traces/cluster04.csv",
    "shockwave": "uw-mad-dash-shockwave/shockwave_220jobs_multigpu_dynamic.trace",
}
DEFAULT_MAX_FACTOR = {"philly": 2.0, "itp": 1.0, "itp04": 1.0, "shockwave": 2.0, "synthetic": 2.0}
PHILLY_START = "2017-10-09 00:00:00"
MIN_DURATION = 60.0
DEFAULT_JOBS = 300  # jobs a selection holds unless asked otherwise
MAX_GPU_TIME = 1000 * 3600.0


class ShortTrace(UserWarning):
    """The selection holds fewer jobs than were asked for: results would silently describe a
    smaller study."""


@dataclass(frozen=True)
class TraceOptions:
    jobs: int | None = DEFAULT_JOBS  # at most this many (None: every job of the selection)
    load: float = 1.0
    seed: int = 1
    path: Path | None = None  # override the file of the trace
    start: str | None = None  # philly: timestamp; itp04: seconds; default per trace
    max_factor: float | None = None  # elastic max = R x this (default per trace)
    min_factor: float = 0.0  # elastic min = R x this (0: one pod)
    elastic_fraction: float = 0.0  # philly only: share of multi-GPU jobs made elastic
    window_days: float = 7.0  # philly only: the sampling window
    max_duration: float | None = None  # clip durations (seconds)
    gpus: int = 64  # synthetic: cluster size the offered load refers to


def load_trace_noting(name: str, opts: TraceOptions, note: Callable[[str], None]) -> list[TraceJob]:
    """``load_trace``, with each warning it raises (a ShortTrace every time) handed to ``note``
    instead of Python's once-per-place warning output: the CLI and the study print them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ShortTrace)
        jobs = load_trace(name, opts)
    for w in caught:
        note(str(w.message))
    return jobs


def load_trace(name: str, opts: TraceOptions) -> list[TraceJob]:
    """The mapped, windowed, load-scaled jobs of a trace, sorted by arrival."""
    if name not in TRACES:
        raise ValueError(f"unknown trace {name!r}; choose one of {', '.join(TRACES)}")
    factor = opts.max_factor if opts.max_factor is not None else DEFAULT_MAX_FACTOR[name]
    if name == "synthetic":
        n = opts.jobs if opts.jobs is not None else DEFAULT_JOBS
        return synthetic(n, opts.gpus, opts.load, opts.seed, factor, opts.max_duration)
    path = opts.path or TRACE_DIR / FILES[name]
    text = path.read_text()
    if name == "philly":
        begin = opts.start or PHILLY_START
        rows = philly_rows(text, begin, opts.window_days, opts.jobs, opts.seed)
        jobs = _philly_jobs(rows, factor, opts.elastic_fraction, opts.seed)
    elif name in ("itp", "itp04"):
        start = float(opts.start) if opts.start else 0.0
        jobs = itp_jobs(text, factor, start, opts.jobs)
    else:
        jobs = shockwave_jobs(text, factor)[: opts.jobs]
    if opts.jobs is not None and len(jobs) < opts.jobs:
        warnings.warn(
            f"trace {name}: the selection holds {len(jobs)} jobs, fewer than the {opts.jobs} "
            f"asked for (--jobs); the study runs on {len(jobs)}",
            ShortTrace,
            stacklevel=2,
        )
    if opts.min_factor > 0:
        jobs = [_with_min(j, opts.min_factor) for j in jobs]
    return finish(jobs, opts.load, opts.max_duration)


def _with_min(job: TraceJob, min_factor: float) -> TraceJob:
    if not job.elastic:
        return job
    low = 1 << max(0, math.floor(math.log2(max(1.0, job.pods * min_factor))))
    if low >= job.max_pods:
        return replace(job, min_pods=0, max_pods=0)
    return replace(job, min_pods=low)


def finish(jobs: Iterable[TraceJob], load: float, max_duration: float | None) -> list[TraceJob]:
    """Sort by arrival, shift to start at 0, divide arrivals by ``load``, clip durations."""
    if load <= 0:
        raise ValueError("load must be > 0")
    ordered = sorted(jobs, key=lambda j: (j.arrival, j.name))
    if not ordered:
        return []
    t0 = ordered[0].arrival
    out = []
    for j in ordered:
        duration = min(j.duration, max_duration) if max_duration else j.duration
        out.append(replace(j, arrival=(j.arrival - t0) / load, duration=duration))
    return out


def pod_shape(gpus: int) -> tuple[int, int]:
    """(pods, GPUs per pod) of a gang of ``gpus`` GPUs."""
    if gpus <= 8:
        return max(1, gpus), 1
    per = next(p for p in (8, 4, 2, 1) if gpus % p == 0)
    return gpus // per, per


def next_power_of_two(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


def map_job(
    name: str,
    arrival: float,
    duration: float,
    gpus: int,
    elastic: bool,
    max_factor: float,
    queue: str = "default",
    priority: int = 0,
) -> TraceJob:
    gpus = max(1, gpus)
    pods, per = pod_shape(gpus)
    lo = hi = 0
    if elastic:
        top = next_power_of_two(max(1, round(pods * max_factor)))
        if top > 1:
            lo, hi = 1, top
    return TraceJob(name, arrival, max(1.0, duration), gpus, per, lo, hi, queue, priority)


# -- Philly (Pollux's summary) ------------------------------------------------------------------


def philly_rows(
    text: str, start: str, window_days: float, n: int | None, seed: int
) -> list[dict[str, str]]:
    """``n`` kept rows sampled from the window, by submission time (all of them if fewer, or
    if ``n`` is None)."""
    begin = datetime.fromisoformat(start)
    end = begin + timedelta(days=window_days)
    kept = []
    for row in csv.DictReader(text.splitlines()):
        if not row.get("timestamp"):
            continue
        duration, gpu_time = float(row["duration"]), float(row["gpu_time"])
        if duration < MIN_DURATION or gpu_time >= MAX_GPU_TIME:
            continue
        if begin <= datetime.fromisoformat(row["timestamp"]) < end:
            kept.append(row)
    kept.sort(key=lambda r: (r["timestamp"], r["cluster"], r["duration"], r["num_gpus"]))
    if n is not None and len(kept) > n:
        picked = sorted(random.Random(seed).sample(range(len(kept)), n))
        kept = [kept[i] for i in picked]
    return kept


def _philly_jobs(
    rows: list[dict[str, str]], factor: float, elastic_fraction: float, seed: int
) -> list[TraceJob]:
    rng = random.Random(seed)
    base = datetime.fromisoformat(rows[0]["timestamp"]) if rows else datetime(2017, 1, 1)
    out = []
    for i, row in enumerate(rows):
        gpus = int(row["num_gpus"])
        elastic = gpus > 1 and rng.random() < elastic_fraction
        t = (datetime.fromisoformat(row["timestamp"]) - base).total_seconds()
        out.append(
            map_job(
                f"philly-{i:04d}", t, float(row["duration"]), gpus, elastic, factor, row["cluster"]
            )
        )
    return out


# -- ITP (ElasticFlow) --------------------------------------------------------------------------


def itp_jobs(text: str, factor: float, start: float = 0.0, n: int | None = None) -> list[TraceJob]:
    out: list[TraceJob] = []
    for row in csv.DictReader(text.splitlines()):
        t = float(row["submission_time"])
        if t < start:
            continue
        gpus = int(row["num_gpu"])
        out.append(
            map_job(f"itp-{len(out):04d}", t, float(row["duration"]), gpus, gpus > 1, factor)
        )
        if n is not None and len(out) >= n:
            break
    return out


# -- Shockwave (Gavel format + mode + duration) -------------------------------------------------


def shockwave_jobs(text: str, factor: float) -> list[TraceJob]:
    out: list[TraceJob] = []
    for line in text.splitlines():
        f = line.rstrip("\n").split("\t")
        if len(f) < 12:
            continue
        gpus, mode = int(f[6]), f[7]
        prio = max(0, round(float(f[8])) - 1)
        out.append(
            map_job(
                f"shockwave-{len(out):04d}",
                float(f[11]),
                float(f[10]),
                gpus,
                mode != "static",
                factor,
                priority=prio,
            )
        )
    return out


# -- synthetic ----------------------------------------------------------------------------------

_SIZES = ((1, 0.45), (2, 0.15), (4, 0.15), (8, 0.15), (16, 0.07), (32, 0.03))


def synthetic(
    n: int, gpus: int, load: float, seed: int, factor: float, max_duration: float | None = None
) -> list[TraceJob]:
    rng = random.Random(seed)
    cap = max_duration or 24 * 3600.0
    raw = []
    for _ in range(n):
        size = rng.choices([s for s, _ in _SIZES], weights=[w for _, w in _SIZES])[0]
        duration = min(cap, max(300.0, rng.lognormvariate(math.log(3600.0), 1.0)))
        elastic = size > 1 and rng.random() < 0.5
        queue = "team-a" if rng.random() < 0.6 else "team-b"
        raw.append((size, duration, elastic, queue))
    mean_work = sum(s * d for s, d, _, _ in raw) / max(1, n)
    rate = load * gpus / mean_work  # jobs per second so that offered GPU-seconds = load x G
    t = 0.0
    out = []
    for i, (size, duration, elastic, queue) in enumerate(raw):
        out.append(map_job(f"syn-{i:04d}", t, duration, size, elastic, factor, queue))
        t += rng.expovariate(rate)
    return out
