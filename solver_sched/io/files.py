"""Read Kubernetes objects from YAML/JSON files: `kind: List`, multi-document YAML, or objects.

Large dumps are what `kubectl get -o json` writes, so JSON goes through the standard json module,
item by item: each object is slimmed (``slim.py``) as soon as it is decoded, and the file is read
in chunks, so neither the text nor the full objects of a large dump are ever held at once. YAML
goes through libyaml's C loader when PyYAML has it (the pure-Python loader is 30-50 times
slower; a note says so once). A file that starts like JSON but is not (YAML flow style) is read
as YAML.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import yaml

from solver_sched.config.yaml_text import yaml_error
from solver_sched.io.gcpause import gc_paused
from solver_sched.io.slim import slim

_YAML_LOADER: type[yaml.SafeLoader | yaml.CSafeLoader] = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
)  # SafeLoader: PyYAML built without libyaml

CHUNK = 1 << 24  # characters read at a time
_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_noted: list[bool] = []
Keep = Callable[[dict[str, Any]], dict[str, Any]]  # what of an object to keep: slim, or all


class InputFileError(Exception):
    """An unreadable input file: the message names the file and the parser's complaint."""


def load_objects(paths: list[Path], whole: bool = False) -> list[dict[str, Any]]:
    """The objects of the files, slimmed to what the snapshot loader reads (``whole``: as they
    are, for readers of other fields, such as the fleet's hub)."""
    with gc_paused():
        return _load(paths, (lambda o: o) if whole else slim)


def _load(paths: list[Path], keep: Keep) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for path in paths:
        try:
            objects.extend(_read(path, keep))
        except OSError as exc:
            raise InputFileError(f"{path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise InputFileError(f"{path}: not a text file ({exc.reason})") from None
    return objects


def _read(path: Path, keep: Keep) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8-sig", newline="") as f:
        head = f.read(CHUNK)
        start = _WS.match(head).end()  # type: ignore[union-attr]
        if head[start : start + 1] in ("{", "["):
            stream = _Stream(f, head)
            try:
                return list(_json_objects(stream, path, keep))
            except json.JSONDecodeError as exc:
                line, column = stream.where(exc)
                error = f"{path}:{line}:{column}: not valid JSON: {exc.msg}"
            f.seek(0)
            text = f.read()
            try:
                return _yaml_objects(text, path, keep)
            except InputFileError:
                raise InputFileError(error) from None
        return _yaml_objects(head + f.read(), path, keep)


def _yaml_objects(text: str, path: Path, keep: Keep) -> list[dict[str, Any]]:
    if _YAML_LOADER is yaml.SafeLoader and not _noted:
        _noted.append(True)
        warnings.warn(
            "PyYAML has no libyaml here: reading YAML with the slow pure-Python loader "
            "(JSON input is fast)",
            RuntimeWarning,
            stacklevel=4,
        )
    try:
        docs = list(yaml.load_all(text, Loader=_YAML_LOADER))
    except yaml.YAMLError as exc:
        raise InputFileError(yaml_error(path, exc)) from None
    return [o for doc in docs for o in _flatten(doc, path, keep)]


def _flatten(doc: object, path: Path, keep: Keep) -> list[dict[str, Any]]:
    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise InputFileError(f"{path}: expected Kubernetes objects, found a {type(doc).__name__}")
    items = _list_items(doc, path)
    if items is not None:
        out = []
        for item in items:
            out.extend(_flatten(_item(item, path), path, keep))
        return out
    return [keep(doc)]


def _list_items(doc: dict[str, Any], path: Path) -> list[Any] | None:
    """A List's items (None: the object is no List). A List without a list of items is an
    error: it was read as one object of an unknown kind, and the plan was silently empty. A
    kind ending in List with no items at all may be a kind of its own."""
    kind = str(doc.get("kind") or "")
    items = doc.get("items")
    if not kind.endswith("List") or (items is None and kind != "List"):
        return None  # (a kind of its own that ends in List: kept, as an object)
    if not isinstance(items, list):
        found = "nothing" if items is None else type(items).__name__
        raise InputFileError(f"{path}: a {kind} holds its objects in items, a list; found: {found}")
    return items


def _item(item: object, path: Path) -> object:
    """A List's item: null is no object (an empty YAML document is; an empty item is not)."""
    if item is None:
        raise InputFileError(f"{path}: expected Kubernetes objects, found a null List item")
    return item


class _Stream:
    """JSON values decoded one at a time from a file read in chunks."""

    def __init__(self, f: IO[str], head: str) -> None:
        self.f, self.buf, self.pos = f, head, 0
        self.dropped = 0  # characters of the file before ``buf``

    def _more(self) -> bool:
        data = self.f.read(CHUNK)
        if not data:
            return False
        self.dropped += self.pos
        self.buf, self.pos = self.buf[self.pos :] + data, 0
        return True

    def where(self, exc: json.JSONDecodeError) -> tuple[int, int]:
        """The file's line and column of an error in ``buf``. The lines of the chunks dropped are
        counted here, by reading the file again up to ``buf``, not while reading (0.3-0.45 s
        over a 962 MB dump that has no error)."""
        if not self.dropped:
            return exc.lineno, exc.colno
        self.f.seek(0)
        lines, column, left = 0, 1, self.dropped
        while left:
            text = self.f.read(min(CHUNK, left))
            if not text:
                break
            left -= len(text)
            n = text.count("\n")
            lines += n
            column = len(text) - text.rindex("\n") if n else column + len(text)
        if exc.lineno == 1:
            return lines + 1, column + exc.colno - 1
        return lines + exc.lineno, exc.colno

    def peek(self) -> str:
        """The next character that is not white space ('' at the end of the file)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf) or not self._more():
                return self.buf[self.pos : self.pos + 1]

    def take(self, char: str) -> None:
        if self.peek() != char:
            found = self.buf[self.pos : self.pos + 1] or "the end of the file"
            raise json.JSONDecodeError(f"Expecting {char!r}, found {found!r}", self.buf, self.pos)
        self.pos += 1

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                obj, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError:
                if self._more():  # the value may go on in the next chunk
                    continue
                raise
            if end == len(self.buf) and self._more():  # a number may go on, too
                continue
            self.pos = end
            return obj


def _json_objects(s: _Stream, path: Path, keep: Keep) -> Iterator[dict[str, Any]]:
    """The objects of the top-level JSON values (one, or several in a row). An object's ``items``
    array is decoded item by item, each item slimmed at once, since a List's ``kind`` may come
    after its items."""
    while s.peek():
        if s.peek() != "{":
            yield from _flatten(s.value(), path, keep)
            continue
        s.take("{")
        doc: dict[str, Any] = {}
        while s.peek() != "}":
            if doc:
                s.take(",")
            key = s.value()
            s.take(":")
            doc[key] = _items(s, keep) if key == "items" and s.peek() == "[" else s.value()
        s.take("}")
        items = _list_items(doc, path)
        if items is None:
            yield keep(doc)
            continue
        for item in items:
            if isinstance(item, dict) and "items" not in item:
                yield item  # slimmed already
            else:
                yield from _flatten(_item(item, path), path, keep)


def _items(s: _Stream, keep: Keep) -> list[Any]:
    s.take("[")
    items: list[Any] = []
    while s.peek() != "]":
        if items:
            s.take(",")
        item = s.value()
        items.append(keep(item) if isinstance(item, dict) and "items" not in item else item)
    s.take("]")
    return items
