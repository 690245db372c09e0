"""Trace loaders on a few hand-written rows, the common job mapping, and the policy list the
studies take."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from solver_sched.sim.policies import POLICIES, parse_policies
from solver_sched.sim.traces import (
    ShortTrace,
    TraceOptions,
    load_trace,
    map_job,
    pod_shape,
    synthetic,
)

PHILLY = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 01:00:00,600.0,1,600.0,vc1
2017-10-09 00:00:00,30.0,1,30.0,vc1
2017-10-09 00:30:00,7200.0,16,115200.0,vc2
2017-10-09 02:00:00,300000.0,16,4800000.0,vc2
2017-10-01 00:00:00,600.0,1,600.0,vc1
2017-10-09 03:00:00,900.0,4,3600.0,vc3

"""

ITP = """job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration
a,1000,1,bert,2000,32,1,100
b,1100,1,bert,2000,32,8,200
c,1300,1,bert,2000,32,16,300"""

SHOCKWAVE = (
    "ResNet-18 (batch size 32)\tpython3 main.py\tcifar10\t--num_steps\t1\t100\t1\taccordion\t1\t"
    "-1.000000\t720\t0\n"
    "LM (batch size 20)\tpython3 main.py\tlm\t--steps\t1\t100\t4\tstatic\t1\t-1.000000\t3600\t24\n"
    "Transformer (batch size 16)\tpython3 t.py\tt\t-step\t1\t100\t2\tgns\t2\t-1.000000\t1800\t60\n"
)


def test_pod_shape() -> None:
    assert pod_shape(1) == (1, 1)
    assert pod_shape(8) == (8, 1)
    assert pod_shape(16) == (2, 8)
    assert pod_shape(12) == (3, 4)
    assert pod_shape(24) == (3, 8)


def test_map_job_elastic_bounds_are_powers_of_two() -> None:
    j = map_job("x", 0.0, 100.0, 4, True, 2.0)
    assert (j.min_pods, j.max_pods, j.gpus_per_pod, j.pods) == (1, 8, 1, 4)
    assert j.elastic and j.work == 400.0
    assert map_job("y", 0.0, 100.0, 24, True, 1.0).max_pods == 4  # 3 pods -> up to 4
    rigid = map_job("z", 0.0, 100.0, 1, True, 1.0)  # min == max: rigid
    assert not rigid.elastic and rigid.min_pods == 0


def test_philly_filters_window_and_maps_vc(tmp_path: Path) -> None:
    f = tmp_path / "philly.csv"
    f.write_text(PHILLY)
    jobs = load_trace("philly", TraceOptions(jobs=3, path=f, load=2.0))
    # dropped: duration < 60 s, >= 1000 GPU-hours, and the row before the window
    assert [(j.gpus, j.queue) for j in jobs] == [(16, "vc2"), (1, "vc1"), (4, "vc3")]
    assert [j.arrival for j in jobs] == [0.0, 900.0, 4500.0]  # shifted, divided by the load
    assert jobs[0].gpus_per_pod == 8 and jobs[0].pods == 2
    assert not any(j.elastic for j in jobs)  # Philly is rigid unless asked
    some = load_trace("philly", TraceOptions(jobs=3, path=f, elastic_fraction=1.0))
    assert [j.elastic for j in some] == [True, False, True]
    assert len(load_trace("philly", TraceOptions(jobs=2, path=f))) == 2  # sampled


def test_itp_every_multi_gpu_job_elastic_up_to_its_size(tmp_path: Path) -> None:
    f = tmp_path / "itp.csv"
    f.write_text(ITP)
    jobs = load_trace("itp", TraceOptions(path=f, jobs=None))
    assert [j.arrival for j in jobs] == [0.0, 100.0, 300.0]
    assert [(j.gpus, j.min_pods, j.max_pods, j.gpus_per_pod) for j in jobs] == [
        (1, 0, 0, 1),
        (8, 1, 8, 1),
        (16, 1, 2, 8),
    ]
    window = load_trace("itp04", TraceOptions(path=f, start="1050", jobs=1))
    assert [j.gpus for j in window] == [8]


def test_shockwave_mode_marks_elastic(tmp_path: Path) -> None:
    f = tmp_path / "s.trace"
    f.write_text(SHOCKWAVE)
    jobs = load_trace("shockwave", TraceOptions(path=f, jobs=None))
    assert [(j.gpus, j.elastic, j.max_pods) for j in jobs] == [
        (1, True, 2),
        (4, False, 0),
        (2, True, 4),
    ]
    assert [j.duration for j in jobs] == [720.0, 3600.0, 1800.0]
    assert [j.priority for j in jobs] == [0, 0, 1]


def test_synthetic_is_deterministic_and_load_scales_arrivals() -> None:
    a = synthetic(50, 64, 1.0, seed=3, factor=2.0)
    assert a == synthetic(50, 64, 1.0, seed=3, factor=2.0)
    b = synthetic(50, 64, 2.0, seed=3, factor=2.0)
    assert b[-1].arrival == pytest.approx(a[-1].arrival / 2)
    assert any(j.elastic for j in a) and a[0].arrival == 0.0


def test_unknown_trace() -> None:
    with pytest.raises(ValueError):
        load_trace("nope", TraceOptions())


def test_min_factor_raises_the_elastic_min(tmp_path: Path) -> None:
    f = tmp_path / "itp.csv"
    f.write_text(ITP)
    jobs = load_trace("itp", TraceOptions(path=f, jobs=None, min_factor=0.5))
    assert [(j.min_pods, j.max_pods) for j in jobs] == [(0, 0), (4, 8), (1, 2)]


def test_a_short_selection_says_how_many_jobs_it_found(tmp_path: Path) -> None:
    f = tmp_path / "itp.csv"
    f.write_text(ITP)
    with pytest.warns(ShortTrace, match="holds 3 jobs, fewer than the 10 asked for"):
        assert len(load_trace("itp", TraceOptions(path=f, jobs=10))) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # enough jobs, or every job asked for: no warning
        assert len(load_trace("itp", TraceOptions(path=f, jobs=3))) == 3
        assert len(load_trace("itp", TraceOptions(path=f, jobs=None))) == 3


def test_policies_all_combines_with_named_ones() -> None:
    assert parse_policies("all,solver-sched:greedy") == [*POLICIES, "solver-sched:greedy"]
    assert parse_policies("fifo, all") == ["fifo", *(p for p in POLICIES if p != "fifo")]
    assert parse_policies("all") == list(POLICIES)
    with pytest.raises(ValueError, match="unknown policy 'nope'"):
        parse_policies("all,nope")
