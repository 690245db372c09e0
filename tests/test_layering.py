"""The core (domain, formulation, placement, solvers, planning, cycle) stays pure: no Kubernetes
client, no metrics library, no clock. Adapters (io, cli, kube) may use them."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "solver_sched"
CORE = [
    *(ROOT / d for d in ("domain", "formulation", "placement", "solvers", "planning")),
    ROOT / "cycle.py",
]
FORBIDDEN_MODULES = ("kubernetes", "prometheus_client", "solver_sched.io", "solver_sched.cli")
FORBIDDEN_CALLS = ("time.time", "datetime.now", "datetime.utcnow", "date.today")


def _files() -> list[Path]:
    out: list[Path] = []
    for p in CORE:
        out += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return out


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_module_is_pure(path: Path) -> None:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            names = []
        for name in names:
            assert not name.startswith(FORBIDDEN_MODULES), f"{path.name} imports {name}"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            dotted = f"{node.value.id}.{node.attr}"
            assert dotted not in FORBIDDEN_CALLS, f"{path.name} reads the clock via {dotted}"
