"""What one load shares: the scheduler's name and default cooldown, the priority classes, and the
InputErrors found so far; pydantic validation and quantities that report into it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from solver_sched.config.schema import field_path, plain
from solver_sched.domain.affinity import NodeConstraints
from solver_sched.domain.snapshot import InputError
from solver_sched.io.quantity import parse_quantity

M = TypeVar("M", bound=BaseModel)
# A whole number as Kubernetes writes one: ASCII digits (str.isdigit() takes "²", which int()
# refuses), at most 18 (int() refuses 5,000 digits; int64 holds 18)
WHOLE = re.compile(r"[0-9]{1,18}")
TWICE = "given twice: the later one is used"  # a dump never repeats an object; files may


@dataclass
class LoadContext:
    scheduler_name: str
    cooldown: timedelta
    errors: list[InputError] = field(default_factory=list)
    priority_classes: dict[str, int] = field(default_factory=dict)
    never_preempting: set[str] = field(default_factory=set)  # classes of preemptionPolicy Never
    default_priority: int = 0
    constraints: dict[Any, NodeConstraints] = field(default_factory=dict)  # interned (pods.py)
    requests: dict[Any, dict[str, int]] = field(default_factory=dict)  # interned (pods.py)

    def error(self, obj: str, fld: str, msg: str) -> str:
        self.errors.append(InputError(obj, fld, msg))
        return f"{obj}: {fld}: {msg}"


def parse(
    b: LoadContext, model: type[M], raw: dict[str, Any], obj: str | None = None, at: str = ""
) -> M | None:
    """The validated model, or None with up to three InputErrors. ``obj`` names the object when
    ``raw`` is a part of one (then at ``at``), else its kind and name do."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        if obj is None:
            meta = raw.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            name = "/".join(str(x) for x in (meta.get("namespace"), meta.get("name")) if x)
            obj = f"{raw.get('kind', 'object')} {name or '(unnamed)'}"
        for err in exc.errors()[:3]:
            b.error(obj, field_path(err["loc"], at), plain(err["msg"]))
        return None


def parse_or_why(b: LoadContext, model: type[M], raw: dict[str, Any]) -> M | str:
    """``parse``, or why the object was rejected (its errors, reported as well): what a job that
    depends on the object gives as its reason."""
    before = len(b.errors)
    parsed = parse(b, model, raw)
    if parsed is not None:
        return parsed
    return "; ".join(str(e) for e in b.errors[before:]) or "rejected"


def raw_key(raw: dict[str, Any]) -> tuple[str, str] | None:
    """(namespace, name) of an object that may have failed validation, if both are readable."""
    meta = raw.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        return None
    ns = meta.get("namespace")
    return (ns if isinstance(ns, str) and ns else "default", meta["name"])


def quantities(b: LoadContext, obj: str, fld: str, values: dict[str, Any]) -> dict[str, int] | str:
    if not values:
        return {}
    out = {}
    for name, value in values.items():
        try:
            out[name] = parse_quantity(value, name)
        except ValueError as exc:
            return b.error(obj, f"{fld}.{name}", str(exc))
    return out
