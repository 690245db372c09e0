"""The gang-size calibration: length-biased in-flight mix, and the generators' constants are what
it derives from the shipped traces."""

from pathlib import Path

import pytest

from benchmarks.calibrate import bucket, by_count, calibrate, in_flight
from solver_sched.sim.traces import TRACE_DIR
from solver_sched.synthetic.gangs import ARRIVALS, IN_FLIGHT, SIZES


def test_sizes_round_up_to_powers_of_two_capped_at_64() -> None:
    assert [bucket(g) for g in (1, 3, 8, 12, 24, 128)] == [1, 4, 8, 16, 32, 64]


def test_in_flight_weighs_jobs_by_how_long_they_run() -> None:
    # one 8-GPU job running the whole window, one short 1-GPU job every 10 s
    jobs = [(0.0, 1000.0, 8)] + [(10.0 * i, 5.0, 1) for i in range(100)]
    assert by_count(jobs)[8] == pytest.approx(1 / 101)
    assert in_flight(jobs)[8] > 0.6  # caught at every instant, the short ones at half


@pytest.mark.skipif(not (TRACE_DIR / "petuum-adaptdl-pollux").is_dir(), reason="no traces")
def test_generator_mixes_are_the_calibrated_ones() -> None:
    pooled = calibrate(Path(TRACE_DIR))["pooled"]
    for name, constants in (("count", ARRIVALS), ("in_flight", IN_FLIGHT)):
        derived = [pooled[name][s] for s in SIZES]
        assert constants == pytest.approx(derived, abs=5e-4), name
