"""Kubernetes resource quantities -> canonical integers (cpu millicores, bytes, units)."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_SUFFIX = {
    "": 1,
    "m": Decimal("0.001"),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_QUANTITY = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
)


MAX_QUANTITY = 2**50  # 1 PiB of memory, 10^12 cores: keeps every model sum inside int64


def parse_quantity(value: object, resource: str) -> int:
    """cpu -> millicores (rounded up), everything else -> integer units (rounded up).

    Raises ValueError with the offending text; callers add the object and field.
    """
    text = str(value).strip()
    m = _QUANTITY.match(text)
    if not m:
        raise ValueError(f"invalid quantity {text!r}")
    try:
        number = Decimal(m.group(1)) * Decimal(str(_SUFFIX[m.group(2) or ""]))
        if resource == "cpu":
            number *= 1000
        if number < 0:
            raise ValueError(f"negative quantity {text!r}")
        if number > MAX_QUANTITY:
            raise ValueError(f"quantity {text!r} out of range (max {MAX_QUANTITY})")
        return math.ceil(number)
    except (InvalidOperation, ArithmeticError):
        raise ValueError(f"invalid quantity {text!r}") from None
