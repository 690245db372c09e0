"""parse_quantity: Kubernetes quantities -> canonical integers (cpu millicores, bytes, units)."""

from __future__ import annotations

import re

import pytest

from solver_sched.io.quantity import CAP, parse_quantity


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
        pytest.param("\u0664", id="arabic-indic-digit"),  # int() reads it, Kubernetes not
    ],
)
def test_invalid_quantity_raises_value_error(text: str, resource: str) -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity(text, resource)


def test_error_message_quotes_the_offending_text() -> None:
    with pytest.raises(ValueError, match=re.escape("'1.2.3'")):
        parse_quantity("1.2.3", "cpu")


@pytest.mark.parametrize(
    ("text", "resource", "expected"),
    [
        pytest.param("100000000Gi", "memory", 100_000_000 * 2**30, id="1.1e17-bytes-exact"),
        pytest.param("1e1000000000", "memory", CAP, id="huge-exponent-saturates"),
        pytest.param("9Ei", "memory", CAP, id="binary-cap-as-kubernetes"),
        pytest.param("1" + "0" * 5000, "nvidia.com/gpu", CAP, id="5000-digits"),
        pytest.param("1e30", "cpu", CAP, id="cpu-saturates"),
        pytest.param("1e-1000000000", "memory", 1, id="tiny-rounds-up"),
        pytest.param("1." + "0" * 5000 + "1", "memory", 2, id="long-fraction-rounds-up"),
        pytest.param("500000000n", "cpu", 500, id="nano"),
        pytest.param("100u", "cpu", 1, id="micro-rounds-up"),
        pytest.param("1E", "memory", 10**18, id="exa"),
        pytest.param("5.", "cpu", 5000, id="trailing-dot"),
        pytest.param("+2", "cpu", 2000, id="plus-sign"),
        pytest.param("1e+3", "memory", 1000, id="signed-exponent"),
        pytest.param("-0", "memory", 0, id="negative-zero"),
    ],
)
def test_every_quantity_kubernetes_accepts_is_read(text: str, resource: str, expected: int) -> None:
    """resource.ParseQuantity (k8s.io/apimachinery) accepts any size of decimal quantity and caps
    binary ones at 2^63-1; values past CAP are more than any node or cluster holds."""
    assert parse_quantity(text, resource) == expected


@pytest.mark.parametrize("text", ["1e3Gi", "1e", "1e99999999999999999999", "1Ki3", "1.5e3.2"])
def test_what_kubernetes_rejects_is_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="invalid quantity"):
        parse_quantity(text, "memory")
