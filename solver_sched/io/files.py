"""Read Kubernetes objects from YAML/JSON files: `kind: List`, multi-document YAML, or objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class InputFileError(Exception):
    """An unreadable input file: the message names the file and the parser's complaint."""


def load_objects(paths: list[Path]) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for path in paths:
        try:
            text = path.read_text()
        except OSError as exc:
            raise InputFileError(f"{path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise InputFileError(f"{path}: not a text file ({exc.reason})") from None
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            raise InputFileError(f"{path}: not valid YAML/JSON: {exc}") from None
        for doc in docs:
            objects.extend(_flatten(doc, path))
    return objects


def _flatten(doc: object, path: Path) -> list[dict[str, Any]]:
    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise InputFileError(f"{path}: expected Kubernetes objects, found a {type(doc).__name__}")
    if str(doc.get("kind") or "").endswith("List") and isinstance(doc.get("items"), list):
        out = []
        for item in doc["items"]:
            out.extend(_flatten(item, path))
        return out
    return [doc]
