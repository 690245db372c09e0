"""load_objects: Kubernetes objects from YAML/JSON files (List, multi-document, single object)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from solver_sched.io import files
from solver_sched.io.files import InputFileError, load_objects

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p1, namespace: default}\n"


def _kinds_and_names(objs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(o["kind"], o["metadata"]["name"]) for o in objs]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(NODE, [("Node", "n1")], id="single-object"),
        pytest.param(
            f"---\n{NODE}---\n{POD}", [("Node", "n1"), ("Pod", "p1")], id="multi-document"
        ),
        pytest.param(
            f"{NODE}---\n---\n{POD}---\n",
            [("Node", "n1"), ("Pod", "p1")],
            id="multi-document-with-empty-docs",
        ),
        pytest.param(
            "apiVersion: v1\nkind: List\nitems:\n"
            "- {apiVersion: v1, kind: Node, metadata: {name: n1}}\n"
            "- {apiVersion: v1, kind: Pod, metadata: {name: p1}}\n",
            [("Node", "n1"), ("Pod", "p1")],
            id="kind-List",
        ),
        pytest.param(
            "apiVersion: v1\nkind: PodList\nitems:\n- {kind: Pod, metadata: {name: p1}}\n",
            [("Pod", "p1")],
            id="typed-PodList",
        ),
        pytest.param(
            "kind: List\nitems:\n- kind: List\n  items:\n  - {kind: Node, metadata: {name: n1}}\n",
            [("Node", "n1")],
            id="nested-List",
        ),
        pytest.param(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "List",
                    "items": [
                        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
                        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"}},
                    ],
                },
                indent=2,
            ),
            [("Node", "n1"), ("Pod", "p1")],
            id="json-List",
        ),
        pytest.param(
            json.dumps({"kind": "Node", "metadata": {"name": "n1"}}),
            [("Node", "n1")],
            id="json-object",
        ),
        pytest.param("", [], id="empty-file"),
        pytest.param("# only a comment\n", [], id="comment-only"),
        pytest.param("kind: List\nitems: []\n", [], id="empty-List"),
    ],
)
def test_load_objects_formats(tmp_path: Path, text: str, expected: list[tuple[str, str]]) -> None:
    path = tmp_path / "objs.yaml"
    path.write_text(text)
    assert _kinds_and_names(load_objects([path])) == expected


def test_several_files_keep_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.json"
    a.write_text(NODE)
    b.write_text(json.dumps({"kind": "Pod", "metadata": {"name": "p1"}}))
    assert _kinds_and_names(load_objects([a, b])) == [("Node", "n1"), ("Pod", "p1")]


def test_a_list_kind_without_items_is_kept_as_an_object(tmp_path: Path) -> None:
    path = tmp_path / "objs.yaml"
    path.write_text("kind: PodList\nmetadata: {name: odd}\n")
    assert _kinds_and_names(load_objects([path])) == [("PodList", "odd")]


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        pytest.param(
            "bad.yaml",
            "kind: Node\nmetadata: {name: [unclosed\n",
            "not valid YAML",
            id="invalid-yaml",
        ),
        pytest.param(
            "bad.json", '{"kind": "Node", "metadata": ', "not valid JSON", id="truncated-json"
        ),
        pytest.param("tabs.yaml", "kind: Node\n\tmetadata: x\n", "not valid YAML", id="tab-indent"),
        pytest.param("scalar.yaml", "hello world\n", "found a str", id="plain-text"),
        pytest.param("list.yaml", "- kind: Node\n", "found a list", id="top-level-sequence"),
        pytest.param(
            "items.yaml", "kind: List\nitems: [3]\n", "found a int", id="non-object-list-item"
        ),
        pytest.param(
            "null.yaml",
            "kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n-\n",
            "found a null List item",
            id="null-list-item",
        ),
        pytest.param(
            "null.json",
            '{"kind": "List", "items": [{"kind": "Node"}, null]}',
            "found a null List item",
            id="null-list-item-json",
        ),
    ],
)
def test_unreadable_content_raises_input_file_error_naming_the_path(
    tmp_path: Path, name: str, text: str, needle: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputFileError) as exc:
        load_objects([path])
    assert str(path) in str(exc.value)
    assert needle in str(exc.value)


@pytest.mark.parametrize(
    ("name", "text", "where", "needle"),
    [
        pytest.param(
            "flow.yaml",
            "kind: Node\nmetadata:\n  name: a\n  labels: [x\n",
            ":5:1:",
            "while parsing a flow sequence started at 4:11",
            id="unclosed-flow",
        ),
        pytest.param(
            "tabs.yaml", "kind: Node\n\tmetadata: x\n", ":2:1:", "tab character", id="tab"
        ),
        pytest.param(
            "two.yaml",
            "kind: Node\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {name: [b}\n",
            ":5:20:",
            "did not find expected",
            id="second-document",
        ),
    ],
)
def test_yaml_errors_name_file_line_and_column(
    tmp_path: Path, name: str, text: str, where: str, needle: str
) -> None:
    """FILE:LINE:COLUMN as editors and compilers write it, not PyYAML's "<unicode string>"."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InputFileError) as exc:
        load_objects([path])
    message = str(exc.value)
    assert message.startswith(f"{path}{where} not valid YAML: "), message
    assert needle in message
    assert "<unicode string>" not in message


@pytest.mark.parametrize("chunk", [1 << 24, 5, 16])
def test_json_errors_name_the_line_and_column_across_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """The JSON reader reads in chunks: the position is the file's, not the chunk's."""
    monkeypatch.setattr(files, "CHUNK", chunk)
    path = tmp_path / "dump.json"
    path.write_text('{"kind": "List",\n "items": [\n  {"kind": "Node"} {"kind": "Pod"}\n ]}\n')
    with pytest.raises(InputFileError) as exc:
        load_objects([path])
    assert str(exc.value) == f"{path}:3:20: not valid JSON: Expecting ',', found '{{'"


def test_missing_file_raises_input_file_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(InputFileError) as exc:
        load_objects([path])
    assert str(path) in str(exc.value)
    assert "No such file" in str(exc.value)


def test_directory_raises_input_file_error(tmp_path: Path) -> None:
    with pytest.raises(InputFileError) as exc:
        load_objects([tmp_path])
    assert str(tmp_path) in str(exc.value)


def test_error_in_second_file_names_the_second_file(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(NODE)
    bad.write_text("{")
    with pytest.raises(InputFileError) as exc:
        load_objects([good, bad])
    assert str(bad) in str(exc.value) and str(good) not in str(exc.value)


# Regression tests for bugs found in review (binary input, non-string kind).


def test_binary_file_raises_input_file_error(tmp_path: Path) -> None:
    path = tmp_path / "image.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x00")
    with pytest.raises(InputFileError):
        load_objects([path])


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("kind:\nmetadata: {name: x}\n", id="kind-null"),
        pytest.param("kind: 5\nmetadata: {name: x}\n", id="kind-int"),
    ],
)
def test_non_string_kind_does_not_crash(tmp_path: Path, text: str) -> None:
    path = tmp_path / "objs.yaml"
    path.write_text(text)
    with contextlib.suppress(InputFileError):  # rejecting the file is fine; crashing is not
        load_objects([path])


# -- large dumps: JSON item by item, in chunks, slimmed --------------------------------------


@pytest.mark.parametrize("chunk", [97, 4096, 1 << 24])
@pytest.mark.parametrize("profile", ["kubectl", "managed"])
def test_a_kubectl_dump_reads_as_the_whole_document_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, profile: str
) -> None:
    """Chunk boundaries fall inside strings, numbers and objects: every item still comes out
    whole, slimmed to what the models read, and the snapshot is the same."""
    from benchmarks.kubectl_dump import write_dump
    from solver_sched.io import files
    from solver_sched.io.kube_snapshot import snapshot_from_objects
    from solver_sched.io.slim import slim

    path = tmp_path / "dump.json"
    write_dump(path, 12, seed=3, profile=profile)
    monkeypatch.setattr(files, "CHUNK", chunk)
    streamed = load_objects([path])
    whole = json.loads(path.read_text())["items"]
    assert streamed == [slim(o) for o in whole]
    assert all("managedFields" not in o["metadata"] for o in streamed)
    assert snapshot_from_objects(streamed) == snapshot_from_objects(whole)


_N1 = '{"kind": "Node", "metadata": {"name": "n1"}}'
_P1 = '{"kind": "Pod", "metadata": {"name": "p1"}}'


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"{_N1}\n{_P1}", id="two-objects-in-a-row"),
        pytest.param(f'{{"items": [{_N1}, {_P1}], "kind": "List"}}', id="kind-after-items"),
        pytest.param(
            "{kind: List, items: [{kind: Node, metadata: {name: n1}},"
            " {kind: Pod, metadata: {name: p1}}]}",
            id="yaml-flow-style",
        ),
    ],
)
def test_json_like_files(tmp_path: Path, text: str) -> None:
    path = tmp_path / "objs.json"
    path.write_text(text)
    assert _kinds_and_names(load_objects([path])) == [("Node", "n1"), ("Pod", "p1")]


def test_objects_of_other_kinds_stay_whole_and_whole_keeps_everything(tmp_path: Path) -> None:
    """A PropagationPolicy is not the snapshot loader's, but the fleet reads its spec; the
    fleet's hub and members are read whole."""
    policy = {"kind": "PropagationPolicy", "metadata": {"name": "pp"}, "spec": {"placement": {}}}
    node = {"kind": "Node", "metadata": {"name": "n1", "managedFields": [{}]}, "status": {"x": 1}}
    path = tmp_path / "objs.json"
    path.write_text(json.dumps({"kind": "List", "items": [policy, node]}))
    slimmed = load_objects([path])
    assert slimmed[0] == policy
    assert "managedFields" not in slimmed[1]["metadata"] and "x" not in slimmed[1]["status"]
    assert load_objects([path], whole=True) == [policy, node]
