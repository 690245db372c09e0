import pytest

from benchmarks.scale import REPORT_SEEDS, instances


def test_seeds_are_the_reported_ones_unless_asked_otherwise() -> None:
    """Development seeds, reported seeds and held-out seeds never overlap by accident."""
    reported = instances(["S", "hard"], 3, dev=False)
    assert [i.seed for i in reported] == [REPORT_SEEDS, REPORT_SEEDS + 1, REPORT_SEEDS + 2]
    assert [i.seed for i in instances(["S", "hard"], 2, dev=True)] == [1, 2]
    held_out = instances(["S", "M", "hard", "light"], 2, dev=False, first_seed=3001)
    assert {(i.size, i.preset) for i in held_out} == {
        ("S", "hard"),
        ("S", "light"),
        ("M", "hard"),
        ("M", "light"),
    }
    assert sorted({i.seed for i in held_out}) == [3001, 3002]


def test_dev_and_a_first_seed_together_are_refused() -> None:
    with pytest.raises(SystemExit, match="choose one"):
        instances(["S"], 1, dev=True, first_seed=3001)
