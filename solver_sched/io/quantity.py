"""Kubernetes resource quantities -> canonical integers (cpu millicores, bytes, units).

Accepted is what k8s.io/apimachinery's ``resource.ParseQuantity`` accepts: a decimal number
(``1``, ``1.5``, ``.5``, ``5.``, optionally signed) with at most one suffix, binary (``Ki`` ...
``Ei``), decimal (``n``, ``u``, ``m``, ``k``, ``M``, ``G``, ``T``, ``P``, ``E``) or an exponent
(``e3``, ``E-2``). Negative values are rejected: requests, capacity and quota cannot be negative.
Values round up to the canonical unit, as Kubernetes rounds up to its smallest one.

Kubernetes puts no upper bound on a decimal quantity (binary ones are capped at 2^63-1), so any
size must be read: values above ``CAP`` (2^63-1 canonical units: 8 EiB of memory, 9.2e15 cores)
are read as ``CAP``, more than any node holds or any cluster can use. The model scales its rows
so that such values never overflow a solver (``formulation/linear.py``).
"""

from __future__ import annotations

import re
from functools import lru_cache

CAP = 2**63 - 1
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(
    r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE]([+-]?[0-9]+))?"
)
_LOG10_2 = 0.30103
_KEEP = 40  # significant digits kept: more than CAP in millicores has, so rounding up is exact


def parse_quantity(value: object, resource: str) -> int:
    """cpu -> millicores (rounded up), everything else -> integer units (rounded up).

    Raises ValueError with the offending text; callers add the object and field.
    """
    return _parse(str(value).strip(), resource == "cpu")


@lru_cache(maxsize=4096)  # a dump repeats a few hundred distinct quantities thousands of times
def _parse(text: str, cpu: bool) -> int:
    m = _QUANTITY.fullmatch(text)
    if not m or not (m.group(2) or m.group(3)):
        raise ValueError(f"invalid quantity {text!r}")
    sign, whole, frac, suffix, exponent = m.groups()
    frac = frac or ""
    digits = (whole + frac).lstrip("0")
    if not digits:
        return 0
    if sign == "-":
        raise ValueError(f"negative quantity {text!r}")
    twos = _BINARY.get(suffix or "", 0)
    if exponent is not None:
        tens = int(exponent)
        if abs(tens) > CAP:  # Kubernetes reads the exponent as an int64
            raise ValueError(f"invalid quantity {text!r}")
    else:
        tens = _DECIMAL.get(suffix or "", 0)
    tens += 3 * cpu - len(frac)  # value = int(digits) * 2**twos * 10**tens
    size = len(digits) + tens + twos * _LOG10_2  # about log10 of the value
    if size > 21:
        return CAP
    if size < -3:
        return 1  # a positive fraction of the unit rounds up to one
    if len(digits) > _KEEP:  # more digits than a rounded-up integer needs: round them up
        rest = digits[_KEEP:].strip("0")
        tens += len(digits) - _KEEP
        digits = str(int(digits[:_KEEP]) + bool(rest))
    number = int(digits) << twos
    value: int = number * 10**tens if tens >= 0 else -(-number // 10**-tens)
    return min(value, CAP)
