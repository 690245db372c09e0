"""`solver-sched whatif HUB... --member NAME=FILE`: a fleet moment replayed offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solver_sched.cli.main import main

FLEET = Path(__file__).resolve().parents[2] / "models" / "fleet"
NOW = "2026-01-01T12:00:00Z"


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    rc = main(["whatif", *map(str, argv)])
    out, err = capsys.readouterr()
    return rc, out, err


def members(*names: str) -> list[str]:
    return [a for n in names for a in ("--member", f"{n}={FLEET / f'{n}.yaml'}")]


def test_fleet_seed_json_has_placements(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(
        capsys, FLEET / "hub.yaml", *members("member-1", "member-2"), "--now", NOW, "-o", "json"
    )
    assert rc == 0
    data = json.loads(out)
    assert data["placements"] == [
        {"job": "team-a/train-1", "cluster": "member-2", "reason": ""},
        {
            "job": "team-a/train-2",
            "cluster": None,
            "reason": "queue team-a: kube-queue/max-jobs 1, running 1",
        },
    ]
    assert {b["node"].split("/")[0] for b in data["binds"]} == {"member-2"}
    assert data["status"] in ("OPTIMAL", "FEASIBLE")


def test_without_the_fitting_member_the_job_stays_queued(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = run(capsys, FLEET / "hub.yaml", *members("member-1"), "--now", NOW, "-o", "json")
    assert rc == 0
    rows = {p["job"]: p for p in json.loads(out)["placements"]}
    assert rows["team-a/train-1"]["cluster"] is None
    assert "no node can hold" in rows["team-a/train-1"]["reason"]


def test_table_lists_placements(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, FLEET / "hub.yaml", *members("member-1", "member-2"), "--now", NOW)
    assert rc == 0
    assert "team-a/train-1 -> member-2" in out


@pytest.mark.parametrize("spec", ["member-1", "=x.yaml", "m="])
def test_bad_member_argument(capsys: pytest.CaptureFixture[str], spec: str) -> None:
    rc, _, err = run(capsys, FLEET / "hub.yaml", "--member", spec)
    assert rc == 2 and "NAME=FILE" in err


def test_a_member_named_twice_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    twice = [*members("member-1"), "--member", f"member-1={FLEET / 'member-2.yaml'}"]
    rc, _, err = run(capsys, FLEET / "hub.yaml", *twice)
    assert rc == 2 and "--member member-1: given twice" in err


def test_missing_member_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, _, err = run(capsys, FLEET / "hub.yaml", "--member", f"m1={tmp_path / 'nope.yaml'}")
    assert rc == 2 and "m1" in err


def test_strict_exits_2_on_an_invalid_quantity_in_a_member(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A member node with a broken quantity: planned around by default, exit 2 with --strict."""
    text = (FLEET / "member-1.yaml").read_text()
    bad = tmp_path / "member-1.yaml"
    bad.write_text(text.replace("nvidia.com/gpu: '8'", "nvidia.com/gpu: 'eight'", 1))
    argv: list[str | Path] = [
        FLEET / "hub.yaml",
        "--member",
        f"member-1={bad}",
        *members("member-2"),
        "--now",
        NOW,
    ]
    rc, out, _ = run(capsys, *argv)
    assert rc == 0 and "team-a/train-1 -> member-2" in out and "m1-gpu-0" in out
    rc, out, err = run(capsys, *argv, "--strict")
    assert rc == 2 and out == ""
    assert "m1-gpu-0" in err and "nvidia.com/gpu" in err
