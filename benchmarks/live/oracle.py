"""The live study's windows in the trace simulator: what any scheduler, or one that knows every
job's duration, could reach there against gang FIFO.

    .venv/bin/python -m benchmarks.live.oracle                  # fifo, sjf-oracle, bound (seconds)
    .venv/bin/python -m benchmarks.live.oracle --solver-sched   # and solver-sched (~1 min)

Each window's jobs are exactly those the live study replays (``Window.jobs``), on its 64 nodes
of 8 GPUs, with 60 s cycles and no Kubernetes. Ratios are of average JCT against the simulator's
gang FIFO with backfill, whose order (priority, then arrival, gangs that do not fit skipped) is
the peers'. ``sjf-oracle`` is the same backfill smallest work first with durations known;
``bound`` is ``solver_sched/sim/bounds.py``: no scheduler's average is below it.
"""

from __future__ import annotations

import argparse

from benchmarks.live.windows import Window, chosen
from solver_sched.config.schema import SchedulerConfig
from solver_sched.sim.bounds import avg_jct_bound
from solver_sched.sim.engine import simulate
from solver_sched.sim.metrics import summarize
from solver_sched.sim.model import SimParams
from solver_sched.sim.policies import make_policy

# The windows of the reported live runs besides the rule's (docs/benchmarks.md section 6).
REPORTED = (
    Window("itp04", "864000", window_h=1.0, load=32.0, max_duration_h=2.0),
    Window("philly", "2017-10-09", load=16.0),
    Window("itp04", "1728000", load=16.0),
    Window("philly", "2017-10-23", load=16.0),
    Window("itp04", "3456000", load=32.0),
)


def row(window: Window, with_solver: bool = False) -> dict[str, float]:
    """Average JCT of each reference over gang FIFO's on ``window``'s jobs."""
    jobs = window.jobs()
    world = SimParams(gpus=window.nodes * 8)

    def avg(policy: str) -> float:
        p = make_policy(policy, SchedulerConfig(), "cpsat", 2.0)
        return float(summarize(simulate(jobs, p, world))["avg_jct_h"]) * 3600

    fifo = avg("fifo")
    out = {
        "jobs": float(len(jobs)),
        "fifo_h": fifo / 3600,
        "sjf-oracle": avg("sjf-oracle") / fifo,
        "bound": avg_jct_bound(jobs, world) / fifo,
    }
    if with_solver:
        out["solver-sched"] = avg("solver-sched") / fifo
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--solver-sched", action="store_true", help="also solver-sched (CP-SAT, 2 s)")
    p.add_argument("--rule-windows", type=int, default=2, help="the rule's first N per trace")
    args = p.parse_args(argv)
    for w in (*REPORTED, *(w for w, _ in chosen(args.rule_windows))):
        r = row(w, args.solver_sched)
        cells = "  ".join(f"{k} x{v:.3f}" for k, v in r.items() if k not in ("jobs", "fifo_h"))
        head = f"{w.name:40s} {int(r['jobs']):5d} jobs  fifo {r['fifo_h']:.3f} h"
        print(f"{head}  {cells}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
