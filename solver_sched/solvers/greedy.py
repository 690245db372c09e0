"""Greedy backend: queue/priority-ordered, gang at a time (the shape of Volcano's allocate action).

1. Jobs at a size their policy no longer allows shrink to the largest allowed size below.
2. Gangs to start -- partial gangs first (completed or released), then those of queues below
   their min (reclaim: first the gangs that fit in what is left of the min, then any), then the
   rest -- highest priority first, then longest waiting: place the guaranteed part best-fit; if it
   does not fit, take victims one at a time (elastic surplus of any job first, then whole gangs its
   start may preempt, lowest priority first) until it fits, or roll everything back. A partial
   gang that cannot be completed is evicted. Victims keep every queue at its floor; failing that,
   a start may take its own queues below their floors if pending gangs of those queues then start
   in the room and bring them back (the model's replacement).
3. Elastic growth, highest priority first: each job grows to the largest allowed size that fits.
Every step respects the queue rows, so the result maps onto the model as a complete CP-SAT hint; it
is also always a candidate plan, so the emitted plan is never worse than greedy's.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

from solver_sched.domain import resources as res
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.problem import JobModel, Problem
from solver_sched.formulation.sizes import change_to
from solver_sched.placement.state import PlanState
from solver_sched.solvers.result import Assignment


def solve_greedy(snapshot: ClusterSnapshot, problem: Problem) -> Assignment:
    return assignment_of(greedy_plan(snapshot, problem))


def assignment_of(st: PlanState) -> Assignment:
    """The sizes and per-class counts of a plan state."""
    return Assignment(sizes=dict(st.size), counts=counts_of(st.snapshot, st.problem, st.placed))


def greedy_plan(snapshot: ClusterSnapshot, problem: Problem) -> PlanState:
    """The greedy decision as a concrete plan state (nodes chosen, queue rows kept)."""
    st = PlanState(snapshot, problem)
    jobs = problem.jobs
    fired: dict[int, set[str]] = {}
    for key, starters in problem.triggers.items():
        for h in starters:
            fired.setdefault(h, set()).add(key)
    order = sorted(
        range(len(jobs)), key=lambda j: (-jobs[j].priority, -jobs[j].waiting_hours, jobs[j].name)
    )
    victims = _Victims(st, order)
    for j in order:  # 1. irregular sizes
        jm = jobs[j]
        if not jm.running_ok and not jm.starting:
            below = [o.size for o in jm.options if 0 < o.size <= jm.current]
            st.resize(j, max(below, default=0))
    leaf_row = {row.queue: r for r, row in enumerate(problem.quotas) if row.min_gpus}
    decided: set[int] = set()
    # 2. Gangs to start. First, partial gangs are completed (taking victims as any start may) or
    # released: a partial gang goes whatever the queue floors say, so it is settled before any
    # other start counts on a floor's slack. Then the gangs of queues below their min (reclaim):
    # first those that fit in what is left of their queue's min ("within-min"), then any. A gang
    # that would overshoot its queue's min waits for the second pass only if its tier weighs less
    # per GPU than quotaMin (then the min other queues still lack is worth more than the
    # overshoot), and with it the rest of its queue, which keeps its own priority order. Then the
    # rest.
    for phase in ("partial", "within-min", "reclaim", "rest"):
        held: set[str] = set()  # within-min: queues whose next gang overshoots their min
        for j in order:
            jm = jobs[j]
            if not jm.starting or j in decided or (phase == "partial" and not jm.current):
                continue
            r = leaf_row.get(jm.queue)
            if phase in ("within-min", "reclaim") and (r is None or _min_gpus_left(st, r) <= 0):
                continue
            target = _target(jm)
            if phase == "within-min" and (
                jm.queue in held
                or (
                    target is not None
                    and r is not None
                    and jm.guaranteed_gpus_at(target) > _min_gpus_left(st, r)
                    and jm.tier_weight < problem.quota_min_weight
                )
            ):
                held.add(jm.queue)
                continue
            decided.add(j)  # tried once: the cluster only gets fuller after this
            debt = phase != "partial"  # refills start gangs: not before every partial one settled
            if target is None or not _start(
                st, victims, j, target, fired.get(j, set()), order, decided, debt
            ):
                st.resize(j, 0, check_quota=False)  # a partial gang goes whatever floors say
    for j in order:  # 3. elastic growth
        jm = jobs[j]
        size = st.size[jm.name]
        if size == 0 and not jm.running_ok:
            continue
        for o in sorted(jm.options, key=lambda o: -o.size):
            if o.size <= size or st.resize(j, o.size):
                break
    return st


MAX_VICTIM_STEPS = 64  # a gang that still does not fit after this many take-backs waits


def _target(jm: JobModel) -> int | None:
    """The smallest allowed size a gang starts at (a partial gang: at least what it runs)."""
    return min((o.size for o in jm.options if o.size >= jm.current and o.size > 0), default=None)


def _start(
    st: PlanState,
    victims: _Victims,
    j: int,
    target: int,
    fired: set[str],
    order: list[int],
    decided: set[int],
    debt: bool = True,
) -> bool:
    """Start j, taking victims that keep every queue at its floor; failing that, and if the
    floors of j's own queues were what stopped it, taking victims below them and refilling."""
    if victims.start(j, target, fired):
        return True
    if not debt or not victims.own_floor_refused:
        return False
    mark = st.mark()
    if victims.start(j, target, fired, debt=True) and _refill(st, j, order, decided):
        return True
    st.rollback(mark)
    return False


def _refill(st: PlanState, j: int, order: list[int], decided: set[int]) -> bool:
    """A start may break lower-priority gangs of its own queue below the queue's floor, as the
    model allows, when other pending gangs of that queue start in their place: those are started
    here, in order and without victims, skipping those that do not fit, until every floor holds
    again. False when they cannot: the caller rolls back."""
    debt = st.floor_debt(st.rows_of.get(j, ()))
    if not debt:
        return True
    jobs = st.problem.jobs
    started: list[int] = []
    for h in order:
        if h in decided or not jobs[h].starting or jobs[h].current:  # pending gangs only
            continue
        if not debt <= set(st.rows_of.get(h, ())):
            continue
        size = _target(jobs[h])
        if size is not None and st.resize(h, size):
            started.append(h)
            debt = st.floor_debt(debt)
            if not debt:
                decided.update(started)
                return True
    return False


def _min_gpus_left(st: PlanState, r: int) -> int:
    """GPUs of a leaf queue's min that its guaranteed parts do not cover yet."""
    return st.problem.quotas[r].min_gpus - st.covered[r]


class _Victims:
    """Who may be taken back for a starting gang, cheapest first, with a GPU pre-check so a gang
    that cannot fit even after every allowed victim is given up without trying placements."""

    def __init__(self, st: PlanState, order: list[int]) -> None:
        self.st = st
        jobs = st.problem.jobs
        low_first = list(reversed(order))
        self.shrinkable = [
            v
            for v in low_first
            if jobs[v].running_ok
            and jobs[v].shrink_needs_start
            and len(jobs[v].options) > 1
            and jobs[v].options[1].size < jobs[v].current
        ]
        self.position = {v: i for i, v in enumerate(low_first)}
        self.names = [jm.name for jm in jobs]
        self.rows = {v: tuple(st.rows_of.get(v, ())) for v in low_first}
        self.groups: dict[tuple[int, ...], list[int]] = {}  # shrinkable jobs by their queue rows
        for v in self.shrinkable:
            self.groups.setdefault(self.rows[v], []).append(v)
        self.by_key: dict[str, list[int]] = {}
        for v in low_first:
            if jobs[v].running_ok:
                for key in jobs[v].break_needs:
                    self.by_key.setdefault(key, []).append(v)
        self._merged: dict[frozenset[str], dict[tuple[int, ...], list[int]]] = {}
        breakable = {v for vs in self.by_key.values() for v in vs}
        self._rank = {  # breakable gang -> its place in (priority, name) order
            v: i
            for i, v in enumerate(sorted(breakable, key=lambda v: (jobs[v].priority, jobs[v].name)))
        }
        self.floor_rows = [r for r, row in enumerate(st.problem.quotas) if row.floor]
        self.taken = False  # whether victims were taken since the shrinkable list was pruned
        self.dirty: set[tuple[int, ...]] = set()  # queue rows of the victims taken since then
        self.own_floor_refused = False  # the last start was refused victims by its queues' floors
        self.smaller = {  # positive sizes a shrinkable job may take, largest first
            v: sorted((o.size for o in jobs[v].options[1:]), reverse=True) for v in self.shrinkable
        }

    def _breakable(self, fired: frozenset[str]) -> dict[tuple[int, ...], list[int]]:
        """Gangs that one of the fired triggers lets a start break, by queue rows (so a start
        skips rows that give no room without visiting their jobs), lowest priority first."""
        if fired not in self._merged:
            union = {v for key in fired for v in self.by_key.get(key, ())}
            groups: dict[tuple[int, ...], list[int]] = {}
            for v in sorted(union, key=self._rank.__getitem__):
                groups.setdefault(self.rows[v], []).append(v)
            self._merged[fired] = groups
        return self._merged[fired]

    def start(self, j: int, target: int, fired: set[str], debt: bool = False) -> bool:
        st, jobs = self.st, self.st.problem.jobs
        if st.resize(j, target):
            return True
        if self.taken:  # sizes only go down while gangs start: a job at its smallest stays out
            self.taken = False
            for rows in self.dirty & self.groups.keys():  # only victims' groups changed
                self.groups[rows] = [
                    v for v in self.groups[rows] if st.size[jobs[v].name] > self.smaller[v][-1]
                ]
            self.dirty.clear()
        delta = st.change(j, target)  # what the start adds, to the cluster and to its queues
        need = delta.get(res.GPU, 0)
        blocked = {r for r, _ in st.quota_blocks(j, target, first_only=False)}
        coming = {r: delta for r in st.rows_of.get(j, ())}
        # With debt, the floors of j's own queues may be crossed: _refill settles them or undoes.
        own = set(coming) if debt else set()
        at_floor = {  # queues at their min even with the start: none of their jobs may shrink
            r for r in self.floor_rows if r not in own and st.below_floor(r, coming.get(r))
        }
        self.own_floor_refused = bool(at_floor.intersection(coming))

        def rows_help(key: tuple[int, ...]) -> bool:
            """Under a blocking queue only its own jobs make room; a queue at its min gives none."""
            return (not blocked or bool(blocked.intersection(key))) and not (
                at_floor and at_floor.intersection(key)
            )

        useful: dict[tuple[int, ...], bool] = {}  # rows_help per queue-row key, once

        def useful_rows(key: tuple[int, ...]) -> bool:
            if key not in useful:
                useful[key] = rows_help(key)
            return useful[key]

        binds = change_to(st.snapshot, st.snapshot.jobs[jobs[j].name], target).bind
        largest = max(binds, key=lambda p: p.requests.get(res.GPU, 0), default=None)
        per_pod = largest.requests.get(res.GPU, 0) if largest else 0

        def released(v: int, size: int) -> dict[str, int]:
            """GPUs per node that taking v down to size frees."""
            out: dict[str, int] = {}
            name = jobs[v].name
            for pod in change_to(
                st.snapshot, st.snapshot.jobs[name], size, st.order_of(name)
            ).evict:
                if pod.name not in st.evicted and pod.node_name in st.nodes.free:
                    node = pod.node_name
                    out[node] = out.get(node, 0) + pod.requests.get(res.GPU, 0)
            return out

        may_use: dict[str, bool] = {}

        def usable(node: str) -> bool:
            """Whether the gang's largest pod may run on the node (cordon, selectors, taints,
            the job's clusters)."""
            if node not in may_use:
                n = st.snapshot.nodes[node]
                clusters = jobs[j].clusters
                may_use[node] = (
                    largest is not None
                    and n.schedulable
                    and (not clusters or n.cluster in clusters)
                    and not largest.constraints.unmet(n.labels, n.taints, n.name)
                )
            return may_use[node]

        def room(freed: dict[str, int]) -> list[str]:
            """Nodes the gang may use where the freed GPUs open room for one of its pods."""
            return [
                n
                for n, g in freed.items()
                if st.nodes.free[n].get(res.GPU, 0) + g >= per_pod and usable(n)
            ]

        def frees_a_slot(v: int, size: int) -> bool:
            """Whether taking v down to size opens room for one pod of the gang on some node
            (large pods need their room on one node, not spread over many). While a queue still
            blocks the start, any take-back in it helps; once none does, only node room counts."""
            return per_pod <= 1 or still_blocked or bool(room(released(v, size)))

        def steps() -> Iterator[tuple[int, int]]:
            groups = [group for key, group in self.groups.items() if useful_rows(key)]
            size_now, names, smaller = st.size, self.names, self.smaller
            for v in heapq.merge(*groups, key=self.position.__getitem__):  # lowest priority first
                if v != j and size_now[names[v]] > 0:  # running, not the gang; rows give room
                    for size in smaller[v]:
                        yield v, size
            breakable = self._breakable(frozenset(fired))
            groups = [group for key, group in breakable.items() if useful_rows(key)]
            for v in heapq.merge(*groups, key=self._rank.__getitem__):
                if v != j and size_now[names[v]] > 0:
                    yield v, 0

        def together(steps: list[tuple[int, int]]) -> list[tuple[int, int]]:
            """Deferred take-backs that together open room for the gang's largest pod on a node
            it may use: every deferred victim with pods there, on the node where that means the
            fewest breaks, then the fewest victims; each at the largest deferred size that
            frees as much there."""
            sizes: dict[int, list[int]] = {}
            for v, size in steps:
                sizes.setdefault(v, []).append(size)
            cache: dict[tuple[int, int], dict[str, int]] = {}

            def freed(v: int, size: int) -> dict[str, int]:
                if (v, size) not in cache:
                    cache[(v, size)] = released(v, size)
                return cache[(v, size)]

            most: dict[str, int] = {}  # node -> GPUs all deferred take-backs free there
            for v, ss in sizes.items():
                for node, g in freed(v, min(ss)).items():
                    most[node] = most.get(node, 0) + g
            best: tuple[tuple[int, int, str], list[tuple[int, int]]] | None = None
            for node in room(most):
                group = []
                for v, ss in sizes.items():
                    top = freed(v, min(ss)).get(node, 0)
                    if top:
                        group.append((v, max(s for s in ss if freed(v, s).get(node, 0) == top)))
                cost = (sum(size == 0 for _, size in group), len(group), node)
                if best is None or cost < best[0]:
                    best = (cost, group)
            return best[1] if best else []

        mark = st.mark()
        taken = 0
        still_blocked = bool(blocked)  # queue usage changes only when a victim is taken
        todo: Iterable[tuple[int, int, bool]] = ((v, size, False) for v, size in steps())
        while True:
            # Take-backs that open no room alone are retried once others were taken; if none was,
            # those that open room on one node together are taken as a group (forced: without
            # the room test), and the rest are retried after them.
            deferred: list[tuple[int, int]] = []
            taken_before = taken
            # One allowed size at a time: take back no more than needed.
            for v, size, forced in todo:
                if taken >= MAX_VICTIM_STEPS:
                    break
                if size >= st.size[jobs[v].name]:
                    continue
                if not forced and not frees_a_slot(v, size):
                    deferred.append((v, size))
                    continue
                # A shrink can only break a floor; refused ones cost no node work, are not counted.
                hits = [r for r, _ in st.quota_blocks(v, size, False, coming) if r not in own]
                if hits:
                    self.own_floor_refused |= not set(hits).isdisjoint(coming)
                    continue
                taken += 1
                if not st.resize(v, size, check_quota=False):
                    continue
                self.dirty.add(self.rows[v])
                if still_blocked:
                    still_blocked = bool(st.quota_blocks(j, target))
                if st.nodes.gpus_free >= need and st.resize(j, target):
                    self.taken = True
                    return True
            if not deferred or taken >= MAX_VICTIM_STEPS:
                break
            if taken > taken_before:
                todo = [(v, size, False) for v, size in deferred]
                continue
            group = together(deferred)
            if not group:
                break
            rest = [(v, size, False) for v, size in deferred if (v, size) not in group]
            todo = [(v, size, True) for v, size in group] + rest
        st.rollback(mark)
        return False


def counts_of(
    snapshot: ClusterSnapshot, problem: Problem, placed: dict[str, str]
) -> dict[tuple[str, int, int], int]:
    """Per (job, shape, class) pod counts of a concrete placement."""
    out: dict[tuple[str, int, int], int] = {}
    for pod, node in placed.items():
        key = (snapshot.pods[pod].job, problem.shape_of[pod], problem.class_of[node])
        out[key] = out.get(key, 0) + 1
    return out
