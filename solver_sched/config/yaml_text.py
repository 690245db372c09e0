"""YAML errors as compilers write them, for every file solver-sched reads (inputs and configs)."""

from __future__ import annotations

from pathlib import Path

import yaml


def yaml_error(path: Path, exc: yaml.YAMLError) -> str:
    """FILE:LINE:COLUMN: the problem (and where the construct it breaks began), as compilers
    write it, instead of PyYAML's text about a "<unicode string>"."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return f"{path}: not valid YAML: {exc}"
    mark = exc.problem_mark
    text = f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {exc.problem}"
    if exc.context:
        began = exc.context_mark
        text += f" ({exc.context}" + (
            f" started at {began.line + 1}:{began.column + 1})" if began is not None else ")"
        )
    return text
