"""The trace study's pooling of windows (hand-computed from two made-up summaries) and the studies
the flags select."""

import argparse

import pytest

from benchmarks.trace import pooled, pooled_bound, select, targets


def _row(jct: float, jobs: int, util: float, makespan: float, restarts: float) -> dict[str, float]:
    return {
        "avg_jct_h": jct,
        "finished": jobs,
        "jobs": jobs,
        "util_useful": util,
        "makespan_h": makespan,
        "gpus": 64,
        "restarts_per_job": restarts,
        "scale_outs_in_cooldown": 0,
    }


def test_windows_pool_jobs_and_gpu_time() -> None:
    a = {"fifo": _row(10.0, 100, 0.5, 20.0, 0.0), "ours": _row(5.0, 100, 0.9, 10.0, 1.0)}
    b = {"fifo": _row(2.0, 300, 1.0, 60.0, 0.0), "ours": _row(2.0, 300, 0.6, 30.0, 0.0)}
    p = pooled([a, b])
    # (10 * 100 + 2 * 300) / 400 = 4; (5 * 100 + 2 * 300) / 400 = 2.75
    assert p["fifo"]["avg_jct_h"] == pytest.approx(4.0)
    assert p["ours"]["avg_jct_h"] == pytest.approx(2.75)
    # useful GPU-h over GPU-h to the makespan: (0.9 * 10 + 0.6 * 30) / 40 = 0.675
    assert p["ours"]["util_useful"] == pytest.approx(0.675)
    assert p["fifo"]["util_useful"] == pytest.approx((0.5 * 20 + 1.0 * 60) / 80)
    assert p["ours"]["restarts_per_job"] == pytest.approx(100 / 400)
    verdicts = targets(p, "ours")
    assert verdicts[0].startswith("avg JCT vs fifo     0.688") and verdicts[0].endswith("ok")
    assert verdicts[1].endswith("MISSED")  # utilization 0.675 < 0.875


def test_a_target_below_the_bound_is_called_out_of_reach() -> None:
    a = {"fifo": _row(10.0, 100, 0.5, 20.0, 0.0), "ours": _row(9.0, 100, 0.9, 10.0, 1.0)}
    b = {"fifo": _row(2.0, 300, 1.0, 60.0, 0.0), "ours": _row(2.0, 300, 0.6, 30.0, 0.0)}
    bound = pooled_bound([(8.5, 100), (1.9, 300)])  # (850 + 570) / 400 = 3.55
    assert bound == pytest.approx(3.55)
    fifo, _ = targets(pooled([a, b]), "ours", bound)[:2]
    # ours (900 + 600) / 400 = 3.75 against fifo's 4: x0.9375, missed; the bound is x0.8875
    assert fifo == "avg JCT vs fifo     0.938  (target <= 0.80) MISSED; bound x0.887 (out of reach)"
    reachable = targets(pooled([a, b]), "ours", 3.0)[0]
    assert reachable.endswith("MISSED; bound x0.750")


def _args(*argv: object) -> argparse.Namespace:
    """The study's flags as main parses them, without running anything."""
    ns = argparse.Namespace(
        traces=None, with_philly=False, windows=False, days=None, seeds="1", jobs=None, gpus=None
    )
    flags = dict(zip(argv[::2], argv[1::2], strict=True))
    for k, v in flags.items():
        setattr(ns, str(k).lstrip("-").replace("-", "_"), v)
    return ns


def test_labels_are_derived_from_what_runs() -> None:
    names = [s.name for s in select(_args())]
    assert names == ["itp-64gpu-load2", "shockwave-32gpu-load1", "itp04-64gpu-load1"]
    shockwave = select(_args("--traces", "shockwave"))[0]
    assert shockwave.opts.jobs is None  # every job of the trace, not a hard-coded count
    scaled = select(_args("--traces", "itp,philly", "--gpus", "128", "--seeds", "1,2"))
    assert [s.name for s in scaled] == [
        "itp-128gpu-load4",
        "philly-128gpu-load48",
        "philly-128gpu-load48-seed2",
    ]
    assert scaled[2].opts.seed == 2
    windows = select(_args("--traces", "itp04", "--days", "5,15", "--jobs", 100))
    assert [(s.name, s.opts.start, s.opts.jobs) for s in windows] == [
        ("itp04-64gpu-load1-day05", str(5 * 86400), 100),
        ("itp04-64gpu-load1-day15", str(15 * 86400), 100),
    ]
    with pytest.raises(ValueError, match="unknown trace nope"):
        select(_args("--traces", "itp,nope"))
