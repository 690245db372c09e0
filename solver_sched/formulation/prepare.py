"""snapshot + weights + settings + now -> Problem.

Everything the rules need is computed here once, top-down: the jobs that can change at all and
the triggers that allow preemption (``jobs``, ``triggers``), the scale-in order (``scale_in``),
pod shapes and node classes (``classes``), each job's size options (``options``, through
``jobs.job_model``), the quota rows (``quota_rows``) and the objective's scale (``band``).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from solver_sched.config.schema import ObjectiveWeights, Settings, bonus_step_short
from solver_sched.domain import resources as res
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.domain.topology import Topology, ask_of, choose
from solver_sched.formulation.band import (
    band_multiplier,
    overflow_reason,
    tier_weights,
)
from solver_sched.formulation.classes import node_classes, note_unplaceable, pod_shapes, shape_fit
from solver_sched.formulation.jobs import active_jobs, job_model, job_states
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.quota_rows import borrowing_and_below, licences, quota_rows
from solver_sched.formulation.scale_in import scale_in_orders
from solver_sched.formulation.start_bonus import withholdings
from solver_sched.formulation.ties import tie_weights
from solver_sched.formulation.topology import (
    class_domains,
    domain_key,
    free_domains,
    model_keys,
    running_domains,
    split_sizes,
    topology_band,
)
from solver_sched.formulation.triggers import break_triggers, shielded, starters

UNBOUNDED = 2**31  # domains of a level "as many as the gang has pods"


def prepare(
    snapshot: ClusterSnapshot,
    weights: ObjectiveWeights,
    settings: Settings,
    now: datetime,
    topology: Topology | None = None,
) -> Problem:
    """``topology``: the levels the cycle uses (default: the snapshot's only Kueue Topology)."""
    if topology is None:
        topology = choose((), None, snapshot.topologies)[0]
    reasons: dict[str, str] = {}
    states = job_states(snapshot, now, reasons)
    queue_of = {name: snapshot.queue_of(st.job) for name, st in states.items()}
    usage_now = snapshot.bound_usage()
    borrowing, below_min = borrowing_and_below(snapshot, usage_now)
    triggers_of = break_triggers(states, queue_of, borrowing, below_min, settings)
    shield_notes = shielded(states, queue_of, borrowing, below_min, settings)
    active = active_jobs(states, triggers_of)
    free = snapshot.free_per_node
    orders = scale_in_orders(snapshot, active, free)
    active.update({n: replace(active[n], running=order) for n, order in orders.items()})
    shapes_of, shape_reqs = pod_shapes(active)
    relevant = tuple(sorted({r for req, _ in shape_reqs for r in req} | {res.PODS}))
    releasing = {p.node_name for st in active.values() for p in st.running if p.node_name}
    asks = {n: a for n in sorted(active) if (a := ask_of(active[n].job.topology, topology))}
    where = running_domains(snapshot, topology, asks, {n: active[n].running for n in asks})
    keys = model_keys(topology, asks, weights.fragmentation)
    classes, class_of = node_classes(
        snapshot, free, shape_reqs, relevant, releasing, domain_key(topology, keys)
    )
    shapes = shape_fit(snapshot, classes, shape_reqs, free, active)
    note_unplaceable(snapshot, active, shapes, shapes_of, reasons, shield_notes)
    tier = tier_weights(weights, [st.job.priority for st in active.values()])
    ties = tie_weights(sorted(active), active)
    jobs = tuple(
        job_model(
            snapshot,
            active[n],
            queue_of[n],
            tier,
            weights,
            now,
            shapes_of,
            class_of,
            triggers_of.get(n, ()),
            ties[n],
        )
        for n in sorted(active)
    )
    short = bonus_step_short(tier.values(), weights.gang_start)  # the tiers cannot carry it
    gang_start = weights.gang_start if short is None else 0
    if gang_start:
        withheld = withholdings(jobs)  # rule 9: what breaking each running gang withholds
        jobs = tuple(
            replace(jm, withholds=w) if (w := withheld.get(jm.name)) else jm for jm in jobs
        )
    triggers = starters(jobs, below_min)
    quotas = licences(quota_rows(snapshot, jobs, active, usage_now, borrowing), jobs, triggers)
    open_domains = free_domains(snapshot, topology, keys) if weights.fragmentation else ()
    per_level: dict[str, set[object]] = {}
    for c in classes:
        for k in keys:
            per_level.setdefault(k, set()).add(
                topology.domain_of(snapshot.nodes[c.nodes[0]].labels, k)
            )
    band = band_multiplier(jobs, shapes, classes, weights) + topology_band(
        asks,
        {n: len(st.waiting) for n, st in active.items()},
        # with nodes the level does not label, each pod placed there costs like a domain (zo)
        {k: len(v) if None not in v else UNBOUNDED for k, v in per_level.items()},
        open_domains,
        weights.topology_spread,
        weights.fragmentation,
    )
    too_large = overflow_reason(jobs, quotas, band, weights)
    tie_band = 1 + sum(ties.values())
    if tie_band > 1 and overflow_reason(jobs, quotas, band * tie_band, weights) is not None:
        jobs = tuple(replace(jm, tie=0) for jm in jobs)  # no room in the solvers' integers
        tie_band = 1
    return Problem(
        classes=classes,
        shapes=shapes,
        jobs=jobs,
        quotas=quotas,
        resources=relevant,
        class_capacity={c.id: {r: q * len(c.nodes) for r, q in c.free.items()} for c in classes},
        triggers=triggers,
        clusters=tuple(sorted({n.cluster for n in snapshot.nodes.values()})),
        band=band,
        gang_break=weights.gang_break,
        gang_start=gang_start,
        elastic_weight=weights.elastic,
        eviction_weight=weights.elastic_eviction,
        packing_weight=weights.packing,
        waiting_weight=weights.waiting,
        quota_min_weight=weights.quota_min,
        shape_of=shapes_of,
        class_of=class_of,
        reasons=reasons,
        shielded=shield_notes,
        tie_band=tie_band,
        too_large=too_large,
        running_order=orders,
        topology=topology,
        asks=asks,
        class_domain=class_domains(snapshot, topology, classes, keys),
        held={n: frozenset(d) for n, d in where.items()},
        split=split_sizes(asks, where),
        free_domains=open_domains,
        spread_weight=weights.topology_spread,
        fragmentation_weight=weights.fragmentation,
    )
