"""The trace study's pooling of windows: hand-computed from two made-up summaries."""

import pytest

from benchmarks.trace import pooled, targets


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
