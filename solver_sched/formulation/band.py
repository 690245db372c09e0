"""The objective's scale: weights per priority tier, the band that keeps guaranteed work above
any elastic gain, and the guard against overflowing the solvers' integers."""

from __future__ import annotations

from collections.abc import Iterable

from solver_sched.config.schema import ObjectiveWeights
from solver_sched.domain import resources as res
from solver_sched.formulation.problem import JobModel, NodeClass, QuotaRow, Shape

MAX_TIER_WEIGHT = 2**20  # many distinct priorities share the top weight instead of overflowing
MAX_OBJECTIVE = 2**62  # CP-SAT works in int64


def tier_weights(weights: ObjectiveWeights, priorities: Iterable[int]) -> dict[int, int]:
    distinct = sorted(set(priorities))
    if weights.tiers:
        out = {}
        for p in distinct:
            eligible = [t.weight for t in weights.tiers if t.min_priority <= p]
            out[p] = eligible[-1] if eligible else weights.tiers[0].weight
        return out
    return {
        p: min(MAX_TIER_WEIGHT, weights.guaranteed * weights.tier_factor**rank)
        for rank, p in enumerate(distinct)
    }


def band_multiplier(
    jobs: tuple[JobModel, ...],
    shapes: tuple[Shape, ...],
    classes: tuple[NodeClass, ...],
    weights: ObjectiveWeights,
) -> int:
    """1 + the largest magnitude the elastic band can reach: guaranteed work then always wins."""
    max_gpu_free = max((c.gpus_free for c in classes), default=0)
    total = 0
    for jm in jobs:
        total += weights.elastic * max(o.elastic_units for o in jm.options)
        total += weights.elastic_eviction * max(o.evicted for o in jm.options)
        gpus = max(
            (
                sum(n * shapes[s].requests.get(res.GPU, 0) for s, n in o.new.items())
                for o in jm.options
            ),
            default=0,
        )
        total += weights.packing * gpus * max_gpu_free
    return total + 1


def overflow_reason(
    jobs: tuple[JobModel, ...], quotas: tuple[QuotaRow, ...], band: int, weights: ObjectiveWeights
) -> str | None:
    """Why the objective would overflow the solvers' integers, or None when it fits."""
    top = 0
    for jm in jobs:
        top += jm.tier_weight * max(o.guaranteed_units for o in jm.options)
        top += weights.waiting * jm.waiting_hours + weights.gang_break
        top += jm.tier_weight * weights.gang_start
    top += weights.quota_min * sum(row.min_gpus for row in quotas)
    if (top + 1) * band >= MAX_OBJECTIVE:
        return (
            f"objective range {top} x {band} exceeds the solvers' integers; "
            f"lower the weights or the number of priority tiers"
        )
    return None
