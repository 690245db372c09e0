"""Greedy's victim search: who may be taken back so that a gang can start, cheapest first.

Elastic surplus of any job first (one allowed size at a time, lowest priority first), then whole
gangs that one of the start's fired triggers lets it break. Take-backs that open no room for the
gang's largest pod on their own are deferred, then taken as a group on one node
(``room.grouped``). Queue floors are kept, except for the starting gang's own queues when the
caller allows debt (greedy's refill settles it or rolls back). A gang that requires one topology
domain and finds no victims that way takes them inside one domain at a time (``fences.py``).

``Victims`` holds what outlives one start (the victims by queue rows, caches, what failed);
``Start`` what one start needs and who may give it room. The walk of one start's take-backs in
one fence is ``walk.py``'s, what take-backs free per node ``room.py``'s, what they are worth
``worth.py``'s.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Hashable, Iterator

from solver_sched.domain import resources as res
from solver_sched.domain.quota import MAX_JOBS
from solver_sched.formulation.sizes import change_to
from solver_sched.placement.nodes import Fence
from solver_sched.placement.state import PlanState
from solver_sched.solvers.fences import fences
from solver_sched.solvers.room import NoRoom, Vectors, summed
from solver_sched.solvers.walk import Walk
from solver_sched.solvers.worth import start_gain

Floors = dict[int, dict[str, int]]  # queue row -> usage at which its floor refused take-backs


class Victims:
    """Who may be taken back for a starting gang, cheapest first, with a GPU pre-check so a gang
    that cannot fit even after every allowed victim is given up without trying placements."""

    remember_no_room = True  # (tests turn it off: the same plans, found by the full walk)
    remember_out_of_reach = True  # (likewise)
    bound_by_quota = True  # (likewise, the same sizes: starts no victim brings under their max)

    def __init__(
        self,
        st: PlanState,
        order: list[int],
        value_aware: bool = False,
        deadline: float | None = None,
    ) -> None:
        self.st = st
        self.value_aware = value_aware
        self.deadline = deadline  # perf_counter time past which no start takes victims
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
        self.live = set(self.shrinkable)  # the jobs in groups (pruned with them)
        # Shrinks that opened no room alone for a pod shape, until one of their nodes gets room
        # back (NoRoom): the first pass of a search walks only the others.
        self._no_room: dict[Hashable, NoRoom] = {}
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
        self._released: dict[tuple[int, int, int], dict[str, int]] = {}
        self._released_all: dict[tuple[int, int, int], dict[str, dict[str, int]]] = {}
        self._failed: dict[Hashable, tuple[int, bool]] = {}  # demand -> (plan version, refused)
        self._failed_smaller: dict[Hashable, tuple[int, int]] = {}  # -> (version, fewest pods)
        # Searches no victim could help, by what they depend on: what each of their victims
        # freed per node (summed only on the nodes given room back since), how far the nodes'
        # record of room given back was read, and the floors that refused the take-backs that
        # would have opened room (out_of_reach).
        self.unreachable: dict[Hashable, tuple[tuple[Vectors, ...], int, Floors]] = {}
        self.smaller = {  # positive sizes a shrinkable job may take, largest first
            v: sorted((o.size for o in jobs[v].options[1:]), reverse=True) for v in self.shrinkable
        }

    def released(self, v: int, size: int) -> dict[str, int]:
        """GPUs per node that taking v down to size frees. Cached by v's size now: the pods a
        plan has evicted of v are those its size leaves out, so nothing else changes it."""
        st = self.st
        key = (v, size, st.size[self.names[v]])
        out = self._released.get(key)
        if out is None:
            vectors = self.released_all(v, size)
            out = self._released[key] = {n: vec.get(res.GPU, 0) for n, vec in vectors.items()}
        return out

    def releases(self, least: dict[int, int]) -> tuple[Vectors, ...]:
        """What each victim frees per node at its size in ``least`` (``released_all``'s dicts,
        never changed once made: the out-of-reach memo keeps them)."""
        return tuple(self.released_all(v, size) for v, size in least.items())

    def released_all(self, v: int, size: int) -> dict[str, dict[str, int]]:
        """``released`` with every resource: what the freed pods request, per node."""
        st = self.st
        name = self.names[v]
        key = (v, size, st.size[name])
        out = self._released_all.get(key)
        if out is None:
            out = {}
            job = st.snapshot.jobs[name]
            for pod in change_to(st.snapshot, job, size, st.order_of(name)).evict:
                if pod.name not in st.evicted and pod.node_name in st.nodes.free:
                    res.add_into(out.setdefault(pod.node_name, {}), pod.requests)
            self._released_all[key] = out
        return out

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
        """Start j at target, taking victims if it does not fit. A pending gang whose start
        failed is not searched again while the plan is unchanged: the same demand (pods, clusters,
        queue rows and usage, fired triggers) fails the same way in the same state. The plan is
        unchanged while the journal has its length: every failed attempt rolls back to where it
        began, and what succeeds only appends.

        Nor is a larger one: more pods of one shape than a start that failed in the same plan,
        with the same clusters, queue rows and triggers, when no queue row blocks it and its
        queues have no floor (so its usage changes neither which victims may go nor which the
        floors refuse): it meets the same victims in the same order and needs more room.

        Past the deadline a start takes no victims: it starts only where it fits."""
        if self.deadline is not None and time.perf_counter() > self.deadline:
            self.own_floor_refused = False
            return self.st.resize(j, target)
        key = self._demand(j, target, fired, debt)
        version = self.st.mark()
        hit = self._failed.get(key) if key is not None else None
        if hit is not None and hit[0] == version:
            self.own_floor_refused = hit[1]
            return False
        larger = self._larger(j, target, fired, debt)
        if larger is not None:
            dom, pods = larger
            smallest = self._failed_smaller.get(dom)
            if smallest is not None and smallest[0] == version and smallest[1] <= pods:
                self.own_floor_refused = False
                return False
        if self._search(j, target, fired, debt):
            return True
        if key is not None:
            self._failed[key] = (version, self.own_floor_refused)
        if larger is not None:
            dom, pods = larger
            old = self._failed_smaller.get(dom)
            if old is None or old[0] != version or pods < old[1]:
                self._failed_smaller[dom] = (version, pods)
        return False

    def _larger(
        self, j: int, target: int, fired: set[str], debt: bool
    ) -> tuple[Hashable, int] | None:
        """(what the start depends on but its pod count, its pod count) for a pending gang of
        one pod shape that no queue row blocks and whose queues have no floor; else None."""
        st = self.st
        jm = st.problem.jobs[j]
        if self.value_aware or jm.current or st.size[jm.name]:
            return None
        rows = tuple(st.rows_of.get(j, ()))
        if any(st.problem.quotas[r].floor for r in rows) or st.quota_blocks(j, target):
            return None
        binds = change_to(st.snapshot, st.snapshot.jobs[jm.name], target).bind
        shapes = {(res.key(p.requests), p.constraints) for p in binds}
        if len(shapes) != 1:
            return None
        return (shapes.pop(), jm.clusters, rows, frozenset(fired), debt), len(binds)

    def _demand(self, j: int, target: int, fired: set[str], debt: bool) -> Hashable | None:
        """What a pending gang's start depends on besides the plan (None for a partial gang)."""
        st = self.st
        jm = st.problem.jobs[j]
        if jm.current or st.size[jm.name]:
            return None
        binds = change_to(st.snapshot, st.snapshot.jobs[jm.name], target).bind
        return (
            tuple((res.key(p.requests), p.constraints) for p in binds),
            jm.clusters,
            tuple(st.rows_of.get(j, ())),
            res.key(st.change(j, target)),
            frozenset(fired),
            debt,
        )

    def _search(self, j: int, target: int, fired: set[str], debt: bool) -> bool:
        st = self.st
        if st.resize(j, target):
            return True
        if self.taken:  # sizes only go down while gangs start: a job at its smallest stays out
            self.taken = False
            jobs = st.problem.jobs
            for rows in self.dirty & self.groups.keys():  # only victims' groups changed
                kept = [v for v in self.groups[rows] if st.size[jobs[v].name] > self.smaller[v][-1]]
                self.live.difference_update(set(self.groups[rows]).difference(kept))
                self.groups[rows] = kept
            self.dirty.clear()
        start = Start(self, j, target, fired, debt)
        if self.bound_by_quota and start.blocked and start.over_quota_at_best() and start.quiet():
            return False  # no walk could start it, nor tell greedy more (quiet)
        return any(
            Walk(start, fence).run()
            for fence in fences(st, j, target, start.need, self.released, start.steps)
        )

    def out_of_reach(
        self, memo: Hashable, start: Start, room: Callable[[Vectors], list[str]]
    ) -> bool:
        """Whether a search that no victim could help still fails. Since it failed, running
        jobs only shrank (what they freed became room on their nodes, which ``NodeState.given``
        records) and room elsewhere only shrank (other pods were bound): on a node not given room
        back since, its room plus what its victims free can only be less. So it still fails
        unless, on a node given room back since, the room now plus what its victims freed then
        opens room for its pod (``room``), or a queue floor that refused a take-back (tested
        before its room) may now let it go: its row's usage, with the start's, grew since, or
        the start may cross it (with debt, its own queues' floors). Nor is it skipped where the
        walk's refusals would tell greedy more than its outcome (``Start.quiet``)."""
        hit = self.unreachable.get(memo)
        if hit is None or not self.remember_out_of_reach:
            return False
        parts, seen, floors = hit
        for r, then in floors.items():
            if r in start.own or any(q > then[n] for n, q in start.level(r).items()):
                return False
        given = self.st.nodes.given
        back = set(given[seen:])
        most = summed(parts, back) if back else {}
        if room({n: most.get(n, {}) for n in back}) or not start.quiet():
            return False
        self.unreachable[memo] = (parts, len(given), floors)
        return True


class Start:
    """One start's victim search: what the start needs (its GPUs and queue usage, the queues that
    block it or sit at their floor, its largest pod) and who may give it room, cheapest first:
    elastic surplus lowest priority first (``shrinks``), then the gangs its fired triggers let it
    break (``breaks``)."""

    def __init__(self, victims: Victims, j: int, target: int, fired: set[str], debt: bool) -> None:
        self.victims = victims
        st = self.st = victims.st
        self.j, self.target, self.fired, self.debt = j, target, fired, debt
        delta = st.change(j, target)  # what the start adds, to the cluster and to its queues
        self.need = delta.get(res.GPU, 0)
        self.blocked = {r for r, _ in st.quota_blocks(j, target, first_only=False)}
        self.coming = {r: delta for r in st.rows_of.get(j, ())}
        # With debt, the floors of j's own queues may be crossed: _refill settles them or undoes.
        self.own = set(self.coming) if debt else set()
        # The start's own queues with a floor it may not cross: a take-back one of them refuses
        # makes greedy try the start again with debt (own_floor_refused).
        quotas = st.problem.quotas
        self.own_floors = [] if debt else [r for r in self.coming if quotas[r].floor]
        self.at_floor = {  # queues at their min even with the start: none of their jobs may shrink
            r
            for r in victims.floor_rows
            if r not in self.own and st.below_floor(r, self.coming.get(r))
        }
        victims.own_floor_refused = bool(self.at_floor.intersection(self.coming))
        self._useful: dict[tuple[int, ...], bool] = {}  # rows_help per queue-row key, once
        self._floored: dict[tuple[int, ...], tuple[int, ...]] = {}  # floored(), per row key
        job = st.snapshot.jobs[st.problem.jobs[j].name]
        binds = change_to(st.snapshot, job, target).bind
        self.largest = max(binds, key=lambda p: p.requests.get(res.GPU, 0), default=None)
        self.per_pod = self.largest.requests.get(res.GPU, 0) if self.largest else 0
        self._may_use: dict[str, bool] = {}
        # value_aware: no victim that alone gives up as much guaranteed value as the start brings
        # (with debt the refills bring more: greedy._refill settles that)
        self.gain = start_gain(st, j, target) if victims.value_aware and not debt else None

    def useful_rows(self, key: tuple[int, ...]) -> bool:
        """Under a blocking queue only its own jobs make room; a queue at its min gives none."""
        useful = self._useful.get(key)
        if useful is None:
            blocked, at_floor = self.blocked, self.at_floor
            useful = self._useful[key] = (not blocked or bool(blocked.intersection(key))) and not (
                at_floor and at_floor.intersection(key)
            )
        return useful

    def floored(self, v: int) -> tuple[int, ...]:
        """v's queue rows with a floor that may refuse its take-backs (not the start's own
        queues when it runs with debt)."""
        key = self.victims.rows[v]
        rows = self._floored.get(key)
        if rows is None:
            quotas, own = self.st.problem.quotas, self.own
            rows = self._floored[key] = tuple(r for r in key if quotas[r].floor and r not in own)
        return rows

    def usable(self, node: str) -> bool:
        """Whether the gang's largest pod may run on the node (cordon, selectors, taints, the
        job's clusters)."""
        may = self._may_use.get(node)
        if may is None:
            n = self.st.snapshot.nodes[node]
            clusters = self.st.problem.jobs[self.j].clusters
            largest = self.largest
            may = self._may_use[node] = (
                largest is not None
                and n.schedulable
                and (not clusters or n.cluster in clusters)
                and not largest.constraints.unmet(n.labels, n.taints, n.name)
            )
        return may

    def room(self, freed: Vectors, inside: frozenset[str] | None = None) -> list[str]:
        """Nodes the gang may use (inside the fence, when one is given) where what is freed (per
        node) opens room for its largest pod: its GPUs first, then all it requests (on nodes
        whose CPU or memory other pods hold, GPUs alone are not room)."""
        free, per_pod, largest, usable = self.st.nodes.free, self.per_pod, self.largest, self.usable
        return [
            n
            for n, vec in freed.items()
            if free[n].get(res.GPU, 0) + vec.get(res.GPU, 0) >= per_pod
            and usable(n)
            and (inside is None or n in inside)
            and largest is not None
            and res.fits(largest.requests, res.add(free[n], vec))
        ]

    def useful(
        self, groups: dict[tuple[int, ...], list[int]], rows: set[int] | None = None
    ) -> list[list[int]]:
        """The victim groups (by queue rows) whose rows give room, and meet ``rows`` if given."""
        return [
            group
            for key, group in groups.items()
            if (rows is None or not rows.isdisjoint(key)) and self.useful_rows(key)
        ]

    def breakable(self) -> dict[tuple[int, ...], list[int]]:
        """The gangs a fired trigger lets this start break, grouped by queue rows."""
        return self.victims._breakable(frozenset(self.fired))

    def shrinks(self) -> Iterator[int]:
        """Shrinkable jobs whose rows give room, lowest priority first."""
        return heapq.merge(*self.useful(self.victims.groups), key=self.victims.position.__getitem__)

    def breaks(self) -> Iterator[tuple[int, int]]:
        """Gangs a fired trigger lets the start break, whose rows give room, lowest priority
        first: (gang, 0)."""
        victims, j, size_now = self.victims, self.j, self.st.size
        for v in heapq.merge(*self.useful(self.breakable()), key=victims._rank.__getitem__):
            if v != j and size_now[victims.names[v]] > 0:
                yield v, 0

    def steps(self) -> Iterator[tuple[int, int]]:
        """Every take-back in the search's order: each shrink's sizes largest first, then the
        breaks."""
        j, size_now, names, smaller = self.j, self.st.size, self.victims.names, self.victims.smaller
        for v in self.shrinks():
            if v != j and size_now[names[v]] > 0:  # running, not the gang; rows give room
                for size in smaller[v]:
                    yield v, size
        yield from self.breaks()

    def quiet(self) -> bool:
        """Whether no floor of the start's own queues (``own_floors``) can refuse one of its
        take-backs, so that a walk would not set ``own_floor_refused``: each such row stays at
        or above its floor, with the start's usage, even if every victim in it went to its
        smallest size (a walk's take-backs, however many, free no more than that)."""
        if not self.own_floors:
            return True
        st = self.st
        after = {r: self.level(r) for r in self.own_floors}
        names = self.victims.names
        for v, size in self.deepest(set(after)):
            now = st.size[names[v]]
            if size < now:
                old, new = st.usage_at(v, now), st.usage_at(v, size)
                for r in st.rows_of.get(v, ()):
                    if (level := after.get(r)) is not None:
                        for n in level:  # the floor's resources only
                            level[n] += new.get(n, 0) - old.get(n, 0)
        quotas = st.problem.quotas
        return all(
            level.get(n, 0) >= floor
            for r, level in after.items()
            for n, floor in quotas[r].floor.items()
        )

    def over_quota_at_best(self) -> bool:
        """Whether a queue row that blocks the start still would with every victim in it at its
        smallest size (each shrink's smallest, each break's 0), as if no floor refused any: then
        every walk fails, after taking back up to MAX_VICTIM_STEPS (walk.py) victims (at L,
        walks under a queue at its max number of running jobs, whose shrinks free no job, were
        a third of greedy's pass). Victims are summed until the row's excess is covered."""
        st, names = self.st, self.victims.names
        delta = st.change(self.j, self.target)
        starts = st.size[names[self.j]] == 0
        for r in self.blocked:
            row, usage = st.problem.quotas[r], st.usage[r]
            if (  # rule 3b: a slot held by gangs only other starts may break (placement/state.py)
                starts
                and r in st.view
                and row.jobs_cap is not None
                and self.j not in row.licensed
                and st.view_running[r] >= row.jobs_cap
            ):
                return True  # shrinks free no job, and this start may break no gang of the row
            excess = {  # what must be freed in the row, per resource (jobs under MAX_JOBS)
                name: over
                for name, cap in row.cap.items()
                if delta.get(name, 0) > 0
                and (over := usage.get(name, 0) + delta.get(name, 0) - cap) > 0
            }
            if row.jobs_cap is not None and starts and st.running_jobs[r] >= row.jobs_cap:
                excess[MAX_JOBS] = st.running_jobs[r] - row.jobs_cap + 1
            for v, size in self.deepest({r}):
                if not excess:
                    break
                was, will = st.usage_at(v, st.size[names[v]]), st.usage_at(v, size)
                for name in list(excess):
                    if name == MAX_JOBS:
                        excess[name] -= size == 0  # only a break frees a running job
                    else:
                        excess[name] -= was.get(name, 0) - will.get(name, 0)
                    if excess[name] <= 0:
                        del excess[name]
            if excess:
                return True
        return False

    def deepest(self, rows: set[int]) -> Iterator[tuple[int, int]]:
        """``smallest(self.steps())`` for the victims in any of ``rows``, each once: each break's
        0, then each shrink's smallest size. Read from the groups whose queue rows meet ``rows``,
        not by walking every take-back (at 10,000 nodes that walk was a quarter of greedy's
        pass)."""
        victims, j, size_now, names = self.victims, self.j, self.st.size, self.victims.names
        seen: set[int] = set()
        for groups, smallest in ((self.breakable(), None), (victims.groups, victims.smaller)):
            for group in self.useful(groups, rows):
                for v in group:
                    if v != j and size_now[names[v]] > 0 and v not in seen:
                        seen.add(v)
                        yield v, 0 if smallest is None else smallest[v][-1]

    def level(self, r: int) -> dict[str, int]:
        """Row r's settled usage plus the start's, per resource of its floor: what the floor
        tests a take-back against (PlanState._row_block), before the take-back."""
        st, coming = self.st, self.coming.get(r, {})
        return {n: st.settled[r].get(n, 0) + coming.get(n, 0) for n in st.problem.quotas[r].floor}

    def memo(self, fence: Fence | None) -> Hashable | None:
        """What a pending gang's search depends on (its victims follow from the triggers and the
        queues at their floor, the queues that block it), when a failed one may be remembered
        (``out_of_reach``): a gang of large pods, not value-aware, not running."""
        st, jm, largest = self.st, self.st.problem.jobs[self.j], self.largest
        if (
            largest is None
            or self.per_pod <= 1
            or self.gain is not None
            or jm.current
            or st.size[jm.name]
        ):
            return None
        demand = (self.per_pod, largest.constraints, jm.clusters, frozenset(self.fired))
        return (*demand, self.debt, fence, frozenset(self.at_floor), frozenset(self.blocked))

    def no_room(self, fence: Fence | None) -> NoRoom | None:
        """The take-backs known to open no room alone for this gang's pod shape (in the fence)."""
        victims, st, largest = self.victims, self.st, self.largest
        if not victims.remember_no_room or self.per_pod <= 1 or largest is None:
            return None
        clusters = st.problem.jobs[self.j].clusters
        key = (res.key(largest.requests), largest.constraints, clusters, fence)
        no_room = victims._no_room.get(key)
        if no_room is None:
            no_room = victims._no_room[key] = NoRoom(victims.smaller, st.nodes.given, st.grown)
        no_room.sync()
        return no_room
