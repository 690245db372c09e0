"""Rule 10: a nominated job (a waiting pod with status.nominatedNodeName) keeps the room made for
it against identical jobs, and never against anything of higher value."""

from __future__ import annotations

from typing import Any

import pytest

from solver_sched.formulation import prepare as prepare_module
from solver_sched.formulation.rules import nomination, objective
from tests.support.builders import NOW, config, gang, node, plan, snapshot, workers_after
from tests.support.rule_model import rule_model

BACKENDS = ["cpsat", "milp", "greedy"]


def nominate(objs: list[dict[str, Any]], node_name: str) -> list[dict[str, Any]]:
    for o in objs:
        if o["kind"] == "Pod":
            o.setdefault("status", {})["nominatedNodeName"] = node_name
    return objs


def _room_for_one(nominated: str, **extra: Any) -> list[Any]:
    """Two identical 4-GPU gangs, room for one; ``nominated`` was named by an eviction."""
    jobs = {n: gang(n, 4, created="2026-01-01T10:00:00Z", **extra) for n in ("b4", "b7")}
    nominate(jobs[nominated], "a")
    return [node("a", gpus=4), *jobs.values()]


def test_rule_alone_values_the_nominated_job_only_in_the_tie_band() -> None:
    rm = rule_model(snapshot(*_room_for_one("b7")), objective.add, nomination.add)
    assert rm.problem.tie_band == 2  # 1 + one nominated job
    assert {jm.name: jm.tie for jm in rm.problem.jobs} == {"default/b4": 0, "default/b7": 1}
    run_b4 = {"y[default/b4,4]": 1, "y[default/b7,0]": 1}
    run_b7 = {"y[default/b4,0]": 1, "y[default/b7,4]": 1}
    assert rm.terms(run_b7)["nomination"] == 1 and rm.terms(run_b4)["nomination"] == 0
    assert rm.objective(run_b7) == rm.objective(run_b4) + 1
    # the real value is scaled by the tie band: one guaranteed unit outweighs every nomination
    none = {"y[default/b4,0]": 1, "y[default/b7,0]": 1}
    assert rm.objective(run_b4) - rm.objective(none) >= rm.problem.tie_band


def test_without_a_nomination_there_is_no_tie_band() -> None:
    jobs = [gang(n, 4) for n in ("b4", "b7")]
    rm = rule_model(snapshot(node("a", gpus=4), *jobs), objective.add, nomination.add)
    assert rm.problem.tie_band == 1 and "nomination" not in rm.model.tie


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("nominated", ["b4", "b7"])
def test_the_nominated_job_gets_the_room(backend: str, nominated: str) -> None:
    """b4 comes first by name (same age): b7 gets the room only through its nomination."""
    snap = snapshot(*_room_for_one(nominated))
    after = workers_after(snap, plan(snap, backend).plan)
    assert after[f"default/{nominated}"] == 4
    assert sum(after.values()) == 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_nomination_yields_to_higher_value(backend: str) -> None:
    """A higher-priority gang that arrives takes the room a nominated job was waiting for."""
    objs: list[dict[str, Any] | list[dict[str, Any]]] = [
        node("a", gpus=4),
        nominate(gang("b7", 4), "a"),
        gang("urgent", 4, priority=1000),
    ]
    snap = snapshot(*objs)
    after = workers_after(snap, plan(snap, backend).plan)
    assert after["default/urgent"] == 4 and after["default/b7"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_identical_jobs_are_told_apart_by_age_then_name_in_every_cycle(backend: str) -> None:
    """No nomination: the older job, then the first name, whatever the solver's search order."""
    objs: list[dict[str, Any] | list[dict[str, Any]]] = [
        node("a", gpus=8),
        gang("b1", 4, created="2026-01-01T11:00:00Z"),
        gang("b2", 4, created="2026-01-01T11:00:00Z"),
        gang("b3", 4, created="2026-01-01T10:59:00Z"),
    ]
    snap = snapshot(*objs)
    for _ in range(3):
        after = workers_after(snap, plan(snap, backend).plan)
        assert {j for j, n in after.items() if n} == {"default/b3", "default/b1"}


def test_no_tie_band_when_it_would_overflow_the_solvers_integers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The nominated job's tie weight is set when jobs are built; where the objective scaled by
    the tie band would overflow, every tie goes back to 0 and there is no tie band."""
    bands: list[int] = []

    def overflow(jobs: Any, quotas: Any, band: int, weights: Any) -> str | None:
        bands.append(band)
        return "too large" if len(bands) == 2 else None  # only with the tie band

    monkeypatch.setattr(prepare_module, "overflow_reason", overflow)
    cfg = config()
    problem = prepare_module.prepare(snapshot(*_room_for_one("b7")), cfg.weights, cfg.settings, NOW)
    assert bands[1] == 2 * bands[0]  # the check ran with the tie band
    assert problem.tie_band == 1 and problem.too_large is None
    assert {jm.tie for jm in problem.jobs} == {0}
