"""What a start brings and a take-back gives up in the guaranteed band of the objective (rule 9):
the value-aware victim search takes no victim that alone gives up as much as the start brings."""

from __future__ import annotations

from solver_sched.placement.state import PlanState


def start_gain(st: PlanState, j: int, target: int) -> int:
    """The guaranteed-band value (rule 9) moving j to target adds: its guaranteed units, the
    start bonus, the waiting bonus, and the GPUs of its queues' mins it covers. A partial gang
    (running at a size that is no option) is valued from nothing, as the model values completing
    it against releasing it, bonuses included."""
    problem = st.problem
    jm = problem.jobs[j]
    now = jm.option(st.size[jm.name])
    o = jm.option(target)
    if o is None:
        return 0
    gain = jm.tier_weight * (o.guaranteed_units - (now.guaranteed_units if now else 0))
    if jm.starting and (now is None or not now.size):  # pending, or partial (no option: from 0)
        gain += problem.gang_start * jm.tier_weight + problem.waiting_weight * jm.waiting_hours
    more = o.guaranteed_gpus - (now.guaranteed_gpus if now else 0)
    for r in st.rows_of.get(j, ()):
        left = problem.quotas[r].min_gpus - st.covered[r]
        if left > 0:
            gain += problem.quota_min_weight * min(more, left)
    return gain


def take_loss(st: PlanState, v: int, size: int) -> int:
    """The guaranteed-band value taking v down to size gives up: its guaranteed units, the
    penalty for breaking a gang, and the GPUs of its queues' mins it stops covering. An elastic
    shrink above the min gives up none."""
    problem = st.problem
    jm = problem.jobs[v]
    now, after = jm.option(st.size[jm.name]), jm.option(size)
    if now is None or after is None:
        return 0
    loss = jm.tier_weight * (now.guaranteed_units - after.guaranteed_units)
    if size == 0 and jm.running_ok:
        loss += problem.gang_break
    drop = now.guaranteed_gpus - after.guaranteed_gpus
    if drop:
        for r in st.rows_of.get(v, ()):
            floor = problem.quotas[r].min_gpus
            if floor:
                covered = st.covered[r]
                lost = min(floor, covered) - min(floor, covered - drop)
                loss += problem.quota_min_weight * lost
    return loss
