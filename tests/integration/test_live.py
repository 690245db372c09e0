"""The live study, short: every stack on its own fresh stage (real kube-apiserver, kube-controller-
manager, KWOK nodes; kube-scheduler, Kueue or solver-sched), a 64-pod bind burst and a few
minutes of a compressed trace window, checked against what the stage must guarantee."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.live.replay import ReplayParams, run_stack
from benchmarks.live.stage import STACKS, Stage, StageSpec, missing
from solver_sched.sim.model import TraceJob
from solver_sched.sim.traces import TraceOptions, load_trace

pytestmark = pytest.mark.integration
NODES = 64
PARAMS = ReplayParams(compress=120.0, burst_gangs=1, horizon=300.0)
TICK_H = PARAMS.tick * PARAMS.compress / 3600  # how late the driver may see a finish


def _jobs() -> list[TraceJob]:
    opts = TraceOptions(jobs=400, load=32.0, start="864000", max_duration=0.25 * 3600)
    return [j for j in load_trace("itp04", opts) if j.arrival <= 0.1 * 3600]


@pytest.mark.parametrize("stack", STACKS)
def test_a_short_trace_window_runs_on_each_stack(stack: str, tmp_path: Path) -> None:
    lacking = missing(stack)
    if lacking:
        pytest.fail(f"run `make stage` (make test builds it); missing {', '.join(lacking)}")
    jobs = _jobs()
    assert len(jobs) >= 20
    s = run_stack(stack, jobs, NODES, PARAMS, tmp_path)
    assert s["finished"] == len(jobs), f"{stack}: {s['finished']}/{len(jobs)} jobs finished"
    for row in s["per_job"]:
        # KWOK completes a pod only at the finish-at the rendezvous wrote: no job is done early
        assert row["jct_h"] >= row["duration_h"] - 2 * TICK_H, row
    assert 0 < s["util_useful"] <= s["util_alloc"] + 1e-9 <= 1.0
    assert s["burst"]["bound"] == 64
    assert s["scheduler_cpu_s"] > 0 and s["api_requests"] > 0
    # the stage's events are tallied (the Job controller's pod creations on every stack; Kueue
    # admits each Workload with an event)
    assert any(k.startswith("Job SuccessfulCreate") for k in s["events"]), s["events"]
    if stack == "kueue":
        assert any(k.startswith("Workload Admitted") for k in s["events"]), s["events"]
    if stack in ("kube-gang", "solver-sched"):
        assert s["partial_gangs"] == 0
        assert s["rendezvous_timeouts"] == 0


def test_the_stage_tears_down_every_process(tmp_path: Path) -> None:
    if missing("kueue"):
        pytest.fail(f"run `make stage`; missing {', '.join(missing('kueue'))}")
    with Stage(StageSpec("kueue", nodes=4), tmp_path) as stage:
        pids = [p.popen.pid for p in stage.procs]
        assert stage.server is not None and stage.server.proc is not None
        pids.append(stage.server.proc.pid)
        assert len(pids) == 5  # controller-manager, kwok, kueue, kube-scheduler, apiserver
        assert stage.api is stage.api  # one client per stage, not one per use
        stage.check_alive()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # reaped: gone
