"""`make run`'s one-cluster scenes, run as the demo runs them (its own real API server and
`solver-sched run` process): what a person reads must be grouped by step, one event per resize,
every time in RFC 3339, and the evicted pods' fate said."""

from __future__ import annotations

import re

import pytest

from solver_sched.kube.demo import run_demo
from tests.integration.conftest import BINARY
from tests.integration.kube import ROOT

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def steps() -> dict[str, list[str]]:
    lines: list[str] = []
    assert run_demo(BINARY, ROOT, out=lines.append) == 0, "\n".join(lines)
    by_step: dict[str, list[str]] = {"": []}
    header = ""
    for line in lines:
        if line.startswith("== "):
            header = line[3:].strip()
            by_step[header] = []
        else:
            by_step[header].append(line)
    return by_step


def _step(steps: dict[str, list[str]], start: str) -> list[str]:
    return next(v for k, v in steps.items() if k.startswith(start))


def test_each_steps_events_print_under_its_own_header(steps: dict[str, list[str]]) -> None:
    expected = {
        "1.": "Unschedulable PodGroup default/big",
        "... and the 5 free": "Scheduled     PodGroup default/small",
        "... until room": "Scheduled     PodGroup default/big",
        "2.": "Scheduled     PodGroup default/elastic",
        "... the live": "Scheduled     PodGroup default/trainer",
        "5.": "Unschedulable PodGroup team-a/second",
        "6.": "Unschedulable PodGroup default/wider",
    }
    for start, event in expected.items():
        assert any(event in line for line in _step(steps, start)), (start, _step(steps, start))
    assert not any("default/big" in line for line in _step(steps, "2."))


def test_one_resized_event_per_resize(steps: dict[str, list[str]]) -> None:
    shrink = [line for line in _step(steps, "... the live") if "event Resized" in line]
    assert len(shrink) == 1, shrink
    assert "PodGroup default/elastic: scaled in 8 -> 4" in shrink[0]
    assert "evicted 4 pods: elastic-worker-4, elastic-worker-5" in shrink[0]
    grow = [line for line in _step(steps, "4.") if "event Resized" in line]
    assert len(grow) == 1 and "4 -> 8 workers" in grow[0], grow


def test_evicted_pods_are_recreated_by_the_controller(steps: dict[str, list[str]]) -> None:
    lines = _step(steps, "... the live")
    assert any("its controller recreates the 4 evicted pods" in line for line in lines), lines
    assert any("default/elastic: 4/16 workers running" in line for line in lines), lines


def test_every_time_is_rfc3339_with_date_and_zone(steps: dict[str, list[str]]) -> None:
    text = "\n".join(line for lines in steps.values() for line in lines)
    times = re.findall(r"\S*\d\d:\d\d:\d\d\S*", text)
    assert times and any("cooldown until" in line for line in _step(steps, "4."))
    stamp = re.compile(r"\[?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ[\]:,]?")
    assert [t for t in times if not stamp.fullmatch(t)] == []
    log = [line for line in steps["6. Topology: a gang that requires one rack"] if "cycle " in line]
    assert log and all(re.match(r"   \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ INFO", x) for x in log)
    assert not re.search(r"\[\s*\d+\.\d+s\]", text)


def test_whatif_of_the_same_moment_matches_the_controller(steps: dict[str, list[str]]) -> None:
    whatif = _step(steps, "3. What-if")
    assert any(line.startswith("   $ solver-sched dump --kubeconfig") for line in whatif), whatif
    assert any(re.match(r"   \$ solver-sched whatif \S+ --now \d{4}-", line) for line in whatif)
    pods = ", ".join(f"default/elastic-worker-{i}" for i in (4, 5, 6, 7))
    plan = f"   what-if plan: evict {pods}; bind default/trainer 8 pods"
    assert any(line.startswith(plan) for line in whatif), whatif
    assert not any("event " in line for line in whatif), "the scheduler acted while paused"
    live = _step(steps, "... the live")
    assert "   the controller evicted the same 4 pods and bound trainer's 8" in live, live
