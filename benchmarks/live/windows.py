"""Which trace windows the live study replays, by a rule fixed before any of them ran: windows
where a queue must build, judged from the trace alone.

    .venv/bin/python -m benchmarks.live.windows      # each candidate, its offered load, chosen?
    .venv/bin/python -m benchmarks.live --windows 2  # replay the first 2 chosen of each trace

The rule: every candidate is ``WINDOW_H`` trace hours of arrivals at ``LOAD`` (both traces the same)
on the study's cluster, durations clipped to ``MAX_DURATION_H``. Its **offered load** is the GPUs
its jobs would hold on an unbounded cluster (each running from its arrival for its duration),
averaged over the window, over the cluster's GPUs. A candidate is chosen when that is at least
``MIN_OFFERED``: then the arrivals exceed the cluster within the window and every scheduler must
queue. Candidates are tried in the fixed order of ``CANDIDATES``; the first ``n`` chosen of each
trace are replayed.
"""

from __future__ import annotations

import argparse
import warnings
from dataclasses import dataclass

from solver_sched.sim.model import TraceJob
from solver_sched.sim.traces import ShortTrace, TraceOptions, load_trace

WINDOW_H = 0.5
LOAD = 64.0
MAX_DURATION_H = 1.0
MIN_OFFERED = 1.2
NODES = 64
CANDIDATES = (
    # ITP cluster04: the trace study's windows, a start every 5 days (seconds into the trace)
    *(("itp04", str(day * 86400)) for day in range(0, 60, 5)),
    # Philly: a week from each Monday of its first 8 weeks
    *(
        ("philly", f"2017-{m:02d}-{d:02d}")
        for m, d in ((10, 9), (10, 16), (10, 23), (10, 30), (11, 6), (11, 13), (11, 20), (11, 27))
    ),
)


@dataclass(frozen=True)
class Window:
    trace: str
    start: str
    window_h: float = WINDOW_H
    load: float = LOAD
    max_duration_h: float = MAX_DURATION_H
    nodes: int = NODES
    read: int = 5000  # jobs read from the trace at most (philly samples this many from its week)
    seed: int = 1  # philly: the sampling seed

    @property
    def name(self) -> str:
        start = self.start.replace("-", "")
        return f"{self.trace}-{start}-w{self.window_h:g}h-load{self.load:g}-{self.nodes}n"

    def jobs(self) -> list[TraceJob]:
        """The window's jobs that fit the cluster, with the elastic ranges of the trace study's
        default mapping (torchrun ``--nnodes=R:2R``; half of Philly's multi-GPU jobs elastic):
        only ``--elastic`` replays them, to solver-sched."""
        capacity = self.nodes * 8
        opts = TraceOptions(
            jobs=self.read,
            load=self.load,
            start=self.start,
            max_duration=self.max_duration_h * 3600,
            seed=self.seed,
            gpus=capacity,
            min_factor=1.0,
            max_factor=2.0,
            elastic_fraction=0.5 if self.trace == "philly" else 0.0,
        )
        with warnings.catch_warnings():
            # the window is a prefix of what is read: fewer jobs than ``read`` left is no news
            warnings.simplefilter("ignore", ShortTrace)
            jobs = load_trace(self.trace, opts)
        return [j for j in jobs if j.arrival <= self.window_h * 3600 and j.gpus <= capacity]


def offered_load(jobs: list[TraceJob], gpus: int, window_h: float) -> float:
    """The GPUs the jobs would hold on an unbounded cluster, averaged over [0, window), over
    ``gpus``."""
    w = window_h * 3600
    held = sum(j.gpus * max(0.0, min(w, j.arrival + j.duration) - j.arrival) for j in jobs)
    return held / (gpus * w)


def chosen(per_trace: int) -> list[tuple[Window, float]]:
    """The first ``per_trace`` candidates of each trace whose offered load is >= MIN_OFFERED."""
    out: list[tuple[Window, float]] = []
    taken: dict[str, int] = {}
    for trace, start in CANDIDATES:
        if taken.get(trace, 0) >= per_trace:
            continue
        w = Window(trace, start)
        x = offered_load(w.jobs(), w.nodes * 8, w.window_h)
        if x >= MIN_OFFERED:
            out.append((w, x))
            taken[trace] = taken.get(trace, 0) + 1
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.parse_args(argv)
    for trace, start in CANDIDATES:
        w = Window(trace, start)
        jobs = w.jobs()
        x = offered_load(jobs, w.nodes * 8, w.window_h)
        gpu_h = sum(j.work for j in jobs) / 3600
        mark = "chosen" if x >= MIN_OFFERED else ""
        print(f"{w.name:42s} {len(jobs):5d} jobs {gpu_h:6.0f} GPU-h offered {x:.2f} {mark}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
