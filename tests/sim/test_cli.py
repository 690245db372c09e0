"""`solver-sched simulate` end to end on a small synthetic trace (fast: greedy backends)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from solver_sched.cli import simulate


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    simulate.add_parser(p.add_subparsers(dest="command", required=True))
    return p.parse_args(["simulate", *argv])


def test_simulate_writes_results_and_prints_ratios(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse(
        [
            "--trace", "synthetic", "--jobs", "20", "--gpus", "16", "--load", "1.5",
            "--policies", "fifo,elastic,solver-sched:greedy", "--out", str(tmp_path),
            "--no-progress", "--no-plots",
        ]
    )  # fmt: skip
    assert simulate.run(args) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert set(data["summary"]) == {"fifo", "elastic", "solver-sched:greedy"}
    assert data["ratios_vs_baseline"]["fifo"]["avg_jct_h"] == 1.0
    assert data["summary"]["solver-sched:greedy"]["unfinished"] == 0
    out = capsys.readouterr().out
    assert "vs fifo" in out and "avg JCT" in out


def test_simulate_rejects_unknown_policy(tmp_path: Path) -> None:
    args = parse(["--trace", "synthetic", "--policies", "nope", "--out", str(tmp_path)])
    assert simulate.run(args) == 2


def test_plots_are_written(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    args = parse(
        [
            "--trace", "synthetic", "--jobs", "10", "--gpus", "16",
            "--policies", "fifo,elastic", "--out", str(tmp_path), "--no-progress",
        ]
    )  # fmt: skip
    assert simulate.run(args) == 0
    assert (tmp_path / "jct_cdf.png").stat().st_size > 0
    assert (tmp_path / "utilization.png").stat().st_size > 0
