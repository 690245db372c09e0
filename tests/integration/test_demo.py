"""`make run`'s scenes, run as the demo runs them (their own real API servers, training-operator
and `solver-sched run` processes): what a person reads must be grouped by step, one event per
resize, every time in RFC 3339, and what the training-operator does with the elastic PyTorchJob
read from the cluster."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from solver_sched.fleet.demo import run_fleet_demo
from solver_sched.kube.demo import run_demo
from tests.integration.conftest import BINARY
from tests.integration.kube import ROOT

pytestmark = pytest.mark.integration
OPERATOR = ROOT / ".cache" / "bin" / "training-operator"
TIME = re.compile(r"\S*\d\d:\d\d:\d\d\S*")  # anything that looks like a time of day
STAMP = re.compile(r"\[?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ[\]:,]?")  # RFC 3339, UTC


@pytest.fixture(scope="module")
def steps() -> dict[str, list[str]]:
    lines: list[str] = []
    assert run_demo(BINARY, OPERATOR, ROOT, out=lines.append) == 0, "\n".join(lines)
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
    assert not any("default/big" in line for line in _step(steps, "2.")), _step(steps, "2.")


def test_one_resized_event_per_resize(steps: dict[str, list[str]]) -> None:
    shrink = [line for line in _step(steps, "... the live") if "event Resized" in line]
    assert len(shrink) == 1, shrink
    assert "PodGroup default/elastic: scaled in 8 -> 4" in shrink[0]
    assert "evicted 4 pods: elastic-worker-4, elastic-worker-5" in shrink[0]
    grow = [line for line in _step(steps, "4.") if "event Resized" in line]
    assert len(grow) == 1 and "4 -> 8 workers" in grow[0], grow


def test_the_elastic_job_is_a_pytorchjob_whose_pods_the_operator_created(
    steps: dict[str, list[str]],
) -> None:
    """Its pods' controller, and the field manager that created them, as the API server has
    them: the training-operator's, not the demo's."""
    lines = _step(steps, "2.")
    made = (
        "] PyTorchJob default/elastic: training-operator created 16 pods (elastic-worker-0 .. "
        "elastic-worker-15) and PodGroup default/elastic (minMember 16), all controlled by the "
        "PyTorchJob; solver-sched plans it from 2 to 16 workers (its elasticPolicy)"
    )
    assert any(line.endswith(made) for line in lines), lines
    # started whole at 8, not at the 4 of the first pods the operator made and grown next cycle
    started = [line for line in lines if "event Scheduled" in line or "event Resized" in line]
    assert len(started) == 1 and started[0].endswith("bound 8 pod(s): 0 -> 8 workers"), started
    status = "   PyTorchJob default/elastic status (written by the training-operator): Running, "
    assert status + "Worker 8 active of 16 replicas" in lines, lines


def test_evicted_pods_are_recreated_by_the_operator(steps: dict[str, list[str]]) -> None:
    lines = _step(steps, "... the live")
    pods = ", ".join(f"elastic-worker-{i}" for i in (4, 5, 6, 7))
    recreated = (
        f"] default/elastic: training-operator recreated the 4 evicted pods ({pods}: new UIDs, "
        "controlled by PyTorchJob default/elastic); 4 of them wait pending in PodGroup "
        "default/elastic"
    )
    assert any(line.endswith(recreated) for line in lines), lines
    assert any("default/elastic: 4/16 workers running" in line for line in lines), lines
    assert any(line.endswith(": Running, Worker 4 active of 16 replicas") for line in lines)
    everything = [line for step in steps.values() for line in step]
    assert not any("its controller recreates" in line for line in everything)


def test_the_operator_completes_the_elastic_job(steps: dict[str, list[str]]) -> None:
    """The running workers exit 0: the operator marks the elastic job Succeeded (v1.8.1: one
    completed worker completes it) and, with cleanPodPolicy Running, deletes the pods that were
    still waiting, and the PodGroup."""
    grown = _step(steps, "4.")
    assert any(line.endswith(": Running, Worker 8 active of 16 replicas") for line in grown)
    lines = _step(steps, "... and the PyTorchJob completes")
    done = (
        "] PyTorchJob default/elastic: PyTorchJobSucceeded: PyTorchJob default/elastic "
        "successfully completed. The training-operator deleted its 8 pending pods "
        "(cleanPodPolicy Running); its PodGroup: deleted"
    )
    assert any(line.endswith(done) for line in lines), lines


def test_every_time_is_rfc3339_with_date_and_zone(steps: dict[str, list[str]]) -> None:
    text = "\n".join(line for lines in steps.values() for line in lines)
    times = TIME.findall(text)
    assert times and any("cooldown until" in line for line in _step(steps, "4."))
    assert [t for t in times if not STAMP.fullmatch(t)] == []
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


@pytest.fixture(scope="module")
def fleet_lines() -> list[str]:
    lines: list[str] = []
    assert run_fleet_demo(BINARY, OPERATOR, ROOT, out=lines.append) == 0, "\n".join(lines)
    return lines


def test_fleet_scene_prints_every_time_in_rfc3339(fleet_lines: list[str]) -> None:
    lines = fleet_lines
    stamped = [line for line in lines if line.startswith("[")]
    assert len(stamped) >= 10, lines  # every line of what happened carries its time
    times = TIME.findall("\n".join(lines))
    assert len(times) >= len(stamped)
    assert [t for t in times if not STAMP.fullmatch(t)] == [], lines


def test_the_fleet_scene_removes_its_work_directory(fleet_lines: list[str]) -> None:
    """Three API servers' etcd data and logs (about 370 MB) are not left in /tmp once the scene
    ends well."""
    found = [re.search(r"\(logs in (\S+)\)", line) for line in fleet_lines]
    (work,) = [Path(m.group(1)) for m in found if m]
    assert not work.exists()
