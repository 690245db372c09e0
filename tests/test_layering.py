"""What the import contracts in pyproject.toml cannot say (``lint-imports``, run by ``make lint``,
checks the layers and the imports the core may not make).

- The core (domain, formulation, placement, solvers, planning, cycle) reads no wall clock: ``now``
  is an argument. That is a call, not an import.
- A forbidden contract lists modules, so "imports only domain" holds for a package added later
  only if the contract names it too.
"""

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "solver_sched"
PYPROJECT = ROOT.parent / "pyproject.toml"
CORE = [
    *(ROOT / d for d in ("domain", "formulation", "placement", "solvers", "planning")),
    ROOT / "cycle.py",
]
FORBIDDEN_CALLS = ("time.time", "datetime.now", "datetime.utcnow", "date.today")


def _files() -> list[Path]:
    out: list[Path] = []
    for p in CORE:
        out += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return out


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_module_reads_no_clock(path: Path) -> None:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            dotted = f"{node.value.id}.{node.attr}"
            assert dotted not in FORBIDDEN_CALLS, f"{path.name} reads the clock via {dotted}"


def _modules(package: Path) -> set[str]:
    """The modules and packages directly inside a package, by dotted name."""
    prefix = ".".join(package.relative_to(ROOT.parent).parts)
    return {
        f"{prefix}.{p.stem}"
        for p in package.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }


@pytest.mark.parametrize(
    ("source", "allowed"),
    [
        ("solver_sched.planning.check", {"solver_sched.domain"}),
        ("solver_sched.config", {"solver_sched.domain"}),
        ("solver_sched.io", {"solver_sched.domain", "solver_sched.config"}),
    ],
)
def test_only_contract_names_every_other_module(source: str, allowed: set[str]) -> None:
    """Every module of solver_sched outside ``allowed`` (and the source's own package) is
    forbidden to ``source``; inside its package, so are its siblings."""
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c.get("source_modules") == [source]]
    assert contract["type"] == "forbidden"
    package = source.rpartition(".")[0]
    others = _modules(ROOT) - allowed - {source, package}
    if package != "solver_sched":
        others |= _modules(ROOT.parent.joinpath(*package.split("."))) - {source}
    assert others <= set(contract["forbidden_modules"])
