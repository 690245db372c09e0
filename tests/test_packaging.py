"""`make run` and `make test` begin with `pip install -e .`: it must install quietly.

The editable install of a flat layout without ``package-dir`` goes through setuptools' meta path
finder, which prints an "Editable installation ... Please be careful with folders in your working
directory" block into every first `make run`. This installs a copy of the project (no
dependencies, so only the build backend comes from the package index) into a scratch venv with
the flags the Makefile uses and reads what pip printed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_editable_install_prints_no_setuptools_warning(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(ROOT / "pyproject.toml", project)
    shutil.copytree(
        ROOT / "solver_sched",
        project / "solver_sched",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "-e",
            str(project),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    printed = done.stdout + done.stderr
    assert done.returncode == 0, printed
    assert "Warning" not in printed and "careful" not in printed, printed
    where = subprocess.run(
        [str(python), "-c", "import solver_sched; print(solver_sched.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert Path(where.stdout.strip()) == project / "solver_sched" / "__init__.py"
