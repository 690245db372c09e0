"""What the loader reads of each object, derived from the pydantic models in ``objects.py``.

``slim`` drops everything else as a file is read: on a `kubectl get -o json` dump most of an
object is status, managedFields and container details the scheduler never reads, and keeping them
until the snapshot is built is what made a 2,000-node dump cost over a gigabyte. The fields kept
are exactly those the models declare (by alias and by name), so validation and its error messages
are the same as on the full object. Objects of other kinds are kept whole: other readers (the
fleet's PropagationPolicies) may need them, and a dump holds few.
"""

from __future__ import annotations

import types
import typing
from functools import cache
from typing import Any, Union

from pydantic import BaseModel

from solver_sched.io.objects import MODEL_OF_KIND

Tree = dict[str, "Tree | None"]  # field -> what to keep of its value (None: all of it)


def slim(obj: dict[str, Any]) -> dict[str, Any]:
    kind = obj.get("kind")
    model = MODEL_OF_KIND.get(kind) if isinstance(kind, str) else None
    if model is None:
        return obj
    return _keep(obj, _tree(model))  # type: ignore[no-any-return]


def _keep(value: Any, tree: Tree | None) -> Any:
    if tree is None:
        return value
    if isinstance(value, dict):  # (the inner test saves a call per kept scalar)
        return {
            k: v if (sub := tree[k]) is None else _keep(v, sub)
            for k, v in value.items()
            if k in tree
        }
    if isinstance(value, list):
        return [_keep(v, tree) for v in value]
    return value  # not what the model expects: validation reports it


_BUILDING: set[type[BaseModel]] = set()


@cache
def _tree(model: type[BaseModel]) -> Tree | None:
    if model in _BUILDING:
        return None  # a recursive model (a tree of itself): keep the nested part whole
    _BUILDING.add(model)
    out: Tree = {"kind": None, "apiVersion": None}
    for name, info in model.model_fields.items():
        sub = _sub(info.annotation)
        out[name] = sub
        if info.alias:
            out[info.alias] = sub
    _BUILDING.discard(model)
    return out


def _sub(annotation: Any) -> Tree | None:
    """The tree of a field: a model's, or a list's or an optional's model; else keep it all."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _tree(annotation)
    origin = typing.get_origin(annotation)
    if origin is list or origin in (Union, types.UnionType):
        models = [_sub(a) for a in typing.get_args(annotation)]
        trees = [t for t in models if t is not None]
        if len(trees) == 1 and (origin is list or len(models) == 2):
            return trees[0]  # list[M] or M | None
    return None
