"""The search history the controller keeps between cycles (planning/history.py)."""

from __future__ import annotations

from solver_sched.planning.history import KEPT, PROBE_EVERY, SearchHistory


def test_a_failure_rules_out_a_model_as_large_in_a_window_no_longer() -> None:
    h = SearchHistory()
    h.record(1000, 3.0, found=False)
    assert h.hopeless(1000, 3.0) == (1000, 3.0)
    assert h.hopeless(5000, 1.0) == (1000, 3.0)
    assert h.hopeless(999, 1.0) is None  # a smaller model may find one
    assert h.hopeless(1000, 3.1) is None  # so may a longer window


def test_a_search_that_finds_a_solution_forgets_every_failure() -> None:
    h = SearchHistory()
    h.record(1000, 3.0, found=False)
    h.record(5000, 6.0, found=False)
    h.record(8000, 1.0, found=True)
    assert h.failed == [] and h.hopeless(10**6, 0.1) is None


def test_only_failures_no_other_covers_are_kept() -> None:
    h = SearchHistory()
    h.record(1000, 3.0, found=False)
    h.record(2000, 2.0, found=False)  # covered by the first: a larger model, a shorter window
    assert h.failed == [(1000, 3.0)]
    h.record(3000, 5.0, found=False)  # another corner of what is ruled out
    assert sorted(h.failed) == [(1000, 3.0), (3000, 5.0)]
    assert h.hopeless(2000, 4.0) is None and h.hopeless(3000, 4.0) == (3000, 5.0)
    h.record(500, 6.0, found=False)  # covers both
    assert h.failed == [(500, 6.0)]


def test_a_failure_replaces_those_it_covers_on_one_side_alone() -> None:
    h = SearchHistory()
    h.record(1000, 2.0, found=False)
    h.record(1000, 3.0, found=False)  # as many variables, a longer window
    assert h.failed == [(1000, 3.0)]
    h.record(500, 3.0, found=False)  # fewer variables, as long a window
    assert h.failed == [(500, 3.0)]


def test_after_probe_every_searches_ruled_out_the_next_runs() -> None:
    h = SearchHistory()
    h.record(1000, 3.0, found=False)
    assert all(h.hopeless(1000, 2.0) is not None for _ in range(PROBE_EVERY))
    assert h.hopeless(1000, 2.0) is None  # the probe: the cluster may have changed
    h.record(1000, 2.0, found=False)  # it found nothing either: ruled out again
    assert h.hopeless(1000, 2.0) == (1000, 3.0)


def test_another_solver_or_its_settings_forget_every_failure() -> None:
    h = SearchHistory()
    h.under(("cpsat", 1))
    h.record(1000, 3.0, found=False)
    h.under(("cpsat", 1))
    assert h.failed == [(1000, 3.0)]
    h.under(("cpsat", 2))
    assert h.failed == [] and h.hopeless(1000, 1.0) is None


def test_at_most_kept_failures_the_oldest_dropped() -> None:
    h = SearchHistory()
    for i in range(KEPT + 4):  # each a larger model in a longer window: none covers another
        h.record(1000 + i, 1.0 + i, found=False)
    assert len(h.failed) == KEPT and h.failed[0] == (1004, 5.0)
