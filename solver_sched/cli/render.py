"""CycleResult -> a table a person reads, or the stable JSON contract (docs/whatif-json.md)."""

from __future__ import annotations

import json
import sys
from typing import Any

from solver_sched.cycle import CycleResult
from solver_sched.domain.snapshot import ClusterSnapshot, InputError


def sizes_text(sizes: tuple[int, ...]) -> str:
    if not sizes:
        return "-"
    if len(sizes) <= 4:
        return ",".join(map(str, sizes))
    if list(sizes) == list(range(sizes[0], sizes[-1] + 1)):
        return f"{sizes[0]}-{sizes[-1]}"
    return f"{sizes[0]},{sizes[1]}..{sizes[-1]}"


def to_json(result: CycleResult, snapshot: ClusterSnapshot) -> dict[str, Any]:
    st, plan = result.stats, result.plan
    return {
        "status": st.status.value if not result.violations else "REJECTED",
        "solver": st.backend,
        "objective": st.objective,
        "bound": st.bound,
        "gap": st.gap,
        "solveSeconds": round(st.seconds, 6),
        "chosen": result.chosen,
        "terms": result.terms,
        "jobs": [
            {
                "name": j.name,
                "queue": j.queue,
                "priority": j.priority,
                "minWorkers": j.min_workers,
                "maxWorkers": j.max_workers,
                "allowedSizes": list(j.allowed_sizes),
                "currentWorkers": j.current,
                "workers": j.planned,
                "reason": j.reason,
            }
            for j in plan.jobs
        ],
        "binds": [{"pod": b.pod, "node": b.node} for b in plan.binds],
        "evictions": [
            {"job": e.job, "pods": list(e.pods), "reason": e.reason} for e in plan.evictions
        ],
        "errors": [str(e) for e in snapshot.errors],
        "notes": list(plan.notes),
    }


def to_json_text(result: CycleResult, snapshot: ClusterSnapshot) -> str:
    return json.dumps(to_json(result, snapshot), indent=2, sort_keys=False)


def to_table(result: CycleResult, snapshot: ClusterSnapshot) -> str:
    plan, st = result.plan, result.stats
    rows = [("JOB", "QUEUE", "PRIO", "SIZES", "NOW", "PLAN", "REASON")]
    for j in plan.jobs:
        rows.append(
            (
                j.name,
                j.queue,
                str(j.priority),
                sizes_text(j.allowed_sizes),
                str(j.current),
                str(j.planned),
                j.reason,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:6], widths, strict=True)) + "  " + r[6]
        for r in rows
    ]
    lines.append("")
    lines.append(f"BINDS ({len(plan.binds)})")
    lines += [f"  {b.pod} -> {b.node}" for b in plan.binds]
    lines.append(f"EVICTIONS ({len(plan.evictions)})")
    for e in plan.evictions:
        lines.append(f"  {e.job}: {len(e.pods)} pod(s) [{', '.join(e.pods)}] - {e.reason}")
    gap = f"{st.gap:.2%}" if st.gap is not None else "-"
    obj = f"{st.objective:.0f}" if st.objective is not None else "-"
    bound = f"{st.bound:.0f}" if st.bound is not None else "-"
    lines.append("")
    lines.append(
        f"SOLVER  backend={st.backend} status={st.status.value} objective={obj} "
        f"bound={bound} gap={gap} seconds={st.seconds:.3f} plan-from={result.chosen}"
    )
    if st.detail:
        lines.append(f"        {st.detail}")
    lines.append("TERMS   " + " ".join(f"{k}={v}" for k, v in result.terms.items()))
    phases = " ".join(f"{k}={v * 1000:.1f}ms" for k, v in result.phases.items())
    lines.append(f"PHASES  {phases}")
    if snapshot.errors:
        lines.append(f"INPUT ERRORS ({len(snapshot.errors)})")
        lines += [f"  {e}" for e in snapshot.errors]
    if plan.notes:
        lines.append("NOTES")
        lines += [f"  {n}" for n in plan.notes]
    return "\n".join(lines)


def strict_failed(errors: tuple[InputError, ...]) -> bool:
    """``--strict``: every rejected object on stderr, and no plan (exit 2)."""
    for err in errors:
        print(f"solver-sched: {err}", file=sys.stderr)
    if errors:
        print(f"solver-sched: --strict: {len(errors)} input error(s); no plan", file=sys.stderr)
    return bool(errors)
