"""Resource vectors in canonical integer units.

cpu is in millicores, memory and storage in bytes, everything else (pods, nvidia.com/gpu, ...) in
units. Vectors are plain ``dict[str, int]`` treated as immutable by convention: they are hot in the
model builder, where a dict beats any wrapper.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from solver_sched.domain.claims import is_claim

Resources = Mapping[str, int]

GPU = "nvidia.com/gpu"
CPU = "cpu"
MEMORY = "memory"
PODS = "pods"


def add(a: Resources, b: Resources, times: int = 1) -> dict[str, int]:
    """a + times * b."""
    out = dict(a)
    add_into(out, b, times)
    return out


def add_into(acc: dict[str, int], b: Resources, times: int = 1) -> None:
    """acc += times * b, in place: for sums that change often (``add`` copies)."""
    for name, qty in b.items():
        acc[name] = acc.get(name, 0) + times * qty


def sub(a: Resources, b: Resources) -> dict[str, int]:
    """a - b (may go negative: an overcommitted node)."""
    return add(a, b, -1)


def total(vectors: Iterable[Resources]) -> dict[str, int]:
    out: dict[str, int] = {}
    for vec in vectors:
        add_into(out, vec)
    return out


def fits(request: Resources, free: Resources) -> bool:
    """True when every requested quantity is available (a missing resource counts as 0 free)."""
    return all(qty <= free.get(name, 0) for name, qty in request.items() if qty > 0)


def shortfall(request: Resources, free: Resources) -> dict[str, int]:
    """Per resource, how much the request exceeds what is free."""
    return {n: q - free.get(n, 0) for n, q in request.items() if q > free.get(n, 0)}


def how_many_fit(request: Resources, free: Resources) -> int:
    """How many copies of request fit into free (requests of 0 never limit)."""
    limits = [free.get(n, 0) // q for n, q in request.items() if q > 0]
    if not limits:
        return 1 << 30
    return max(0, min(limits))


def value_units(request: Resources) -> int:
    """The unit a pod is worth in the objective: its GPUs, or 1 for a pod without GPUs."""
    return max(1, request.get(GPU, 0))


def key(vec: Resources) -> tuple[tuple[str, int], ...]:
    """A hashable, order-independent form (zero entries dropped)."""
    return tuple(sorted((n, q) for n, q in vec.items() if q))


def fmt(vec: Resources) -> str:
    """Human form: cpu in cores, memory in Gi, others as integers."""
    parts = []
    for name, qty in sorted(vec.items()):
        if is_claim(name):  # (per-node claims are named apart: their amounts mean nothing)
            continue
        if name == CPU:
            parts.append(f"cpu={qty / 1000:g}")
        elif name == MEMORY:
            parts.append(f"memory={qty / 2**30:g}Gi")
        else:
            parts.append(f"{name}={qty}")
    return ",".join(parts)
