"""`solver-sched generate`: the first generator as it was, the presets, bad names rejected."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from solver_sched.cli.main import main
from solver_sched.io.files import load_objects
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.synthetic import preset_objects, synthetic_objects

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def test_without_preset_writes_the_first_generators_cluster(tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    argv = ["--nodes", "16", "--running", "20", "--pending", "8"]
    assert main(["generate", *argv, "-o", str(out)]) == 0
    assert json.loads(out.read_text())["items"] == synthetic_objects(16, 20, 8, 1, NOW)


def test_preset_and_seed_write_that_cluster(tmp_path: Path) -> None:
    out = tmp_path / "h.json"
    argv = ["--preset", "hard", "--seed", "7", "--nodes", "32"]
    assert main(["generate", *argv, "-o", str(out)]) == 0
    items = json.loads(out.read_text())["items"]
    assert items == preset_objects("hard", 7, NOW, 32)
    snap = snapshot_from_objects(load_objects([out]))
    assert len(snap.nodes) == 32 and snap.errors == ()


def test_preset_defaults_to_512_nodes(tmp_path: Path) -> None:
    out = tmp_path / "l.json"
    assert main(["generate", "--preset", "light", "-o", str(out)]) == 0
    nodes = [o for o in json.loads(out.read_text())["items"] if o["kind"] == "Node"]
    assert len(nodes) == 512


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--preset", "nope"], "--preset 'nope' is unknown; choose one of hard,"),
        (["--preset", "hard", "--nodes", "0"], "--nodes must be at least 1"),
    ],
)
def test_bad_arguments_exit_2_and_write_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    out = tmp_path / "x.json"
    assert main(["generate", *argv, "-o", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
