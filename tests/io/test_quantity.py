"""parse_quantity: Kubernetes quantities -> canonical integers (cpu millicores, bytes, units)."""

from __future__ import annotations

import re

import pytest

from solver_sched.io.quantity import parse_quantity


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("100m", 100, id="millicores"),
        pytest.param("2", 2000, id="whole-cores"),
        pytest.param("1.5", 1500, id="fractional-cores"),
        pytest.param("0.1", 100, id="tenth-core"),
        pytest.param(".5", 500, id="leading-dot"),
        pytest.param("0.5m", 1, id="sub-millicore-rounds-up"),
        pytest.param(2, 2000, id="yaml-int"),
        pytest.param(0.25, 250, id="yaml-float"),
        pytest.param("1k", 1_000_000, id="kilo-cores"),
    ],
)
def test_cpu_is_millicores(text: object, expected: int) -> None:
    assert parse_quantity(text, "cpu") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2Gi", 2 * 2**30, id="Gi"),
        pytest.param("512Mi", 512 * 2**20, id="Mi"),
        pytest.param("1Ki", 1024, id="Ki"),
        pytest.param("1e3", 1000, id="exponent"),
        pytest.param("1E3", 1000, id="exponent-upper"),
        pytest.param("500M", 500_000_000, id="decimal-M"),
        pytest.param("1k", 1000, id="decimal-k"),
        pytest.param("1G", 10**9, id="decimal-G"),
        pytest.param("1.5Gi", 3 * 2**29, id="fractional-Gi"),
        pytest.param("100m", 1, id="milli-bytes-round-up"),
        pytest.param(" 4Gi ", 4 * 2**30, id="surrounding-space"),
        pytest.param(1024, 1024, id="yaml-int"),
    ],
)
def test_memory_is_bytes(text: object, expected: int) -> None:
    assert parse_quantity(text, "memory") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("8", 8, id="string"),
        pytest.param(4, 4, id="yaml-int"),
        pytest.param("0", 0, id="zero"),
    ],
)
def test_gpu_is_integer_units(text: object, expected: int) -> None:
    assert parse_quantity(text, "nvidia.com/gpu") == expected


@pytest.mark.parametrize("resource", ["cpu", "memory", "nvidia.com/gpu"])
@pytest.mark.parametrize(
    "text",
    [
        pytest.param("abc", id="letters"),
        pytest.param("", id="empty"),
        pytest.param("1.2.3", id="two-dots"),
        pytest.param("-1", id="negative"),
        pytest.param("-100m", id="negative-milli"),
        pytest.param("1Gb", id="unknown-suffix"),
        pytest.param("Gi", id="suffix-only"),
        pytest.param("1 Gi", id="inner-space"),
    ],
)
def test_invalid_quantity_raises_value_error(text: str, resource: str) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(text, resource)


def test_error_message_quotes_the_offending_text() -> None:
    with pytest.raises(ValueError, match=re.escape("'1.2.3'")):
        parse_quantity("1.2.3", "cpu")


def test_huge_exponent_raises_value_error() -> None:
    with pytest.raises(ValueError):
        parse_quantity("1e1000000000", "memory")
