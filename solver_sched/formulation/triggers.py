"""Preemption triggers: which trigger keys a running gang needs before it may be broken, and which
starting jobs fire each key (docs/formulation.md, rules 4-6).

Keys: ``any`` (``ANY_START``), ``prio:<queue>:<priority>`` and ``reclaim:<queue>``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from solver_sched.config.schema import Settings
from solver_sched.formulation.jobs import JobState
from solver_sched.formulation.problem import JobModel

ANY_START = "any"  # trigger fired by any guaranteed gang starting


def break_triggers(
    states: Mapping[str, JobState],
    queue_of: Mapping[str, str],
    borrowing: set[str],
    below_min: set[str],
    settings: Settings,
) -> dict[str, tuple[str, ...]]:
    """For each running gang: trigger keys of which one must fire before it may be broken."""
    pending_prio: dict[str, set[int]] = defaultdict(set)
    for name, st in states.items():
        if st.starting and st.sizes and st.job.preempts:  # (preemptionPolicy Never: no)
            pending_prio[queue_of[name]].add(st.job.priority)
    out: dict[str, tuple[str, ...]] = {}
    for name, st in states.items():
        if not st.running_ok:
            continue
        if st.job.kept_whole(st.current):
            out[name] = ()  # its budgets refuse evicting it whole: nothing may break it
            continue
        keys: list[str] = []
        q = queue_of[name]
        if settings.priority_preemption and any(p > st.job.priority for p in pending_prio[q]):
            keys.append(f"prio:{q}:{st.job.priority}")
        if settings.queue_reclaim and q in borrowing and below_min - {q}:
            keys.append(f"reclaim:{q}")
        out[name] = tuple(keys)
    return out


def shielded(
    states: Mapping[str, JobState],
    queue_of: Mapping[str, str],
    borrowing: set[str],
    below_min: set[str],
    settings: Settings,
) -> dict[str, str]:
    """For each waiting job, a note naming the running gangs it would fire a trigger for (rules
    4-5) that their PodDisruptionBudgets keep whole (rule 6b): its reason ends with it, since the
    room alone does not say why it waits."""
    kept = [st for _, st in sorted(states.items()) if st.current and st.job.kept_whole(st.current)]
    if not kept:
        return {}
    # one note per (queue, priority, may preempt): thousands of waiting gangs share a few, and
    # a cluster of many budgets has many kept gangs
    notes: dict[tuple[str, int, bool], str] = {}
    out: dict[str, str] = {}
    for name, st in states.items():
        if not st.waiting:
            continue
        q, p, preempts = queue_of[name], st.job.priority, st.job.preempts
        if (q, p, preempts) not in notes:
            prio = [
                k
                for k in kept
                if settings.priority_preemption
                and preempts
                and queue_of[k.job.name] == q
                and k.job.priority < p
            ]
            reclaim = [
                k
                for k in kept
                if settings.queue_reclaim
                and q in below_min
                and queue_of[k.job.name] != q
                and queue_of[k.job.name] in borrowing
            ]
            notes[(q, p, preempts)] = _named(
                "lower-priority gangs of its queue from being preempted", prio
            ) + _named("gangs of queues that borrow from being reclaimed", reclaim)
        if note := notes[(q, p, preempts)]:
            out[name] = note
    return out


def _named(what: str, kept: list[JobState]) -> str:
    if not kept:
        return ""
    shown = [
        f"{k.job.name} ({k.job.disruptions} pod(s) at most)" if k.job.disruptions else k.job.name
        for k in kept[:3]
    ]
    more = f" and {len(kept) - 3} more" if len(kept) > 3 else ""
    return f"; PodDisruptionBudgets keep {what}: {', '.join(shown)}{more}"


def starters(jobs: tuple[JobModel, ...], below_min: set[str]) -> dict[str, tuple[int, ...]]:
    """Trigger key -> the starting jobs that fire it, for the keys some running job needs (and
    ``ANY_START``, fired by every starting job)."""
    needed = sorted({k for jm in jobs for k in jm.break_needs})
    by_queue: dict[str, list[tuple[int, str]]] = defaultdict(list)  # prio keys: (priority, key)
    reclaim: list[tuple[str, str]] = []  # reclaim keys: (borrowing queue, key)
    for k in needed:
        kind, _, rest = k.partition(":")
        if kind == "prio":
            queue, _, prio = rest.rpartition(":")
            by_queue[queue].append((int(prio), k))
        elif kind == "reclaim":
            reclaim.append((rest, k))
    triggers: dict[str, list[int]] = defaultdict(list)
    for i, jm in enumerate(jobs):
        if jm.starting:
            triggers[ANY_START].append(i)
            fired = [
                k for prio, k in by_queue.get(jm.queue, ()) if jm.priority > prio and jm.preempts
            ]
            if jm.queue in below_min:
                fired += [k for queue, k in reclaim if queue != jm.queue]
            for k in sorted(fired):  # the keys' order, as the model's fires[] variables take it
                triggers[k].append(i)
    return {k: tuple(v) for k, v in triggers.items()}
