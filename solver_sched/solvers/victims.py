"""Greedy's victim search: who may be taken back so that a gang can start, cheapest first.

Elastic surplus of any job first (one allowed size at a time, lowest priority first), then whole
gangs that one of the start's fired triggers lets it break. Take-backs that open no room for the
gang's largest pod on their own are deferred, then taken as a group on one node
(``grouped``). Queue floors are kept, except for the starting gang's own queues when the caller
allows debt (greedy's refill settles it or rolls back). A gang that requires one topology domain
and finds no victims that way takes them inside one domain at a time (``domains_to_try``), so
that a domain actually empties, instead of room freed all over the cluster that no one domain
adds up to.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence

from solver_sched.domain import resources as res
from solver_sched.domain.topology import Mode
from solver_sched.formulation.sizes import change_to
from solver_sched.placement.nodes import Fence
from solver_sched.placement.state import PlanState

MAX_VICTIM_STEPS = 64  # a gang that still does not fit after this many take-backs waits
# A gang that must sit in one domain, when the search anywhere fails, searches inside one domain
# at a time: the first DOMAINS_TRIED domains the victims, in the search's order, free enough in.
DOMAINS_TRIED = 3
Freed = Callable[[int, int], dict[str, int]]  # (victim, size) -> GPUs freed per node
Vectors = Mapping[str, Mapping[str, int]]  # node -> resources freed there


class Victims:
    """Who may be taken back for a starting gang, cheapest first, with a GPU pre-check so a gang
    that cannot fit even after every allowed victim is given up without trying placements."""

    remember_no_room = True  # (tests turn it off: the same plans, found by the full walk)

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
        # back (_NoRoom): the first pass of a search walks only the others.
        self._no_room: dict[Hashable, _NoRoom] = {}
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
        # Searches no victim could help, by what they depend on: what all their victims freed
        # per node, and how far the nodes' record of room given back was read (_out_of_reach).
        self._unreachable: dict[Hashable, tuple[Vectors, int]] = {}
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
        st, jobs = self.st, self.st.problem.jobs
        if st.resize(j, target):
            return True
        if self.taken:  # sizes only go down while gangs start: a job at its smallest stays out
            self.taken = False
            for rows in self.dirty & self.groups.keys():  # only victims' groups changed
                kept = [v for v in self.groups[rows] if st.size[jobs[v].name] > self.smaller[v][-1]]
                self.live.difference_update(set(self.groups[rows]).difference(kept))
                self.groups[rows] = kept
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

        released = self.released

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

        def room(freed: Vectors, inside: frozenset[str] | None = None) -> list[str]:
            """Nodes the gang may use (inside the fence, when one is given) where what is freed
            (per node) opens room for its largest pod: its GPUs first, then all it requests (on
            nodes whose CPU or memory other pods hold, GPUs alone are not room)."""
            free = st.nodes.free
            return [
                n
                for n, vec in freed.items()
                if free[n].get(res.GPU, 0) + vec.get(res.GPU, 0) >= per_pod
                and usable(n)
                and (inside is None or n in inside)
                and largest is not None
                and res.fits(largest.requests, res.add(free[n], vec))
            ]

        size_now, names, smaller = st.size, self.names, self.smaller

        def shrinks() -> Iterator[int]:
            """Shrinkable jobs whose rows give room, lowest priority first."""
            groups = [group for key, group in self.groups.items() if useful_rows(key)]
            return heapq.merge(*groups, key=self.position.__getitem__)

        def breaks() -> Iterator[tuple[int, int]]:
            breakable = self._breakable(frozenset(fired))
            groups = [group for key, group in breakable.items() if useful_rows(key)]
            for v in heapq.merge(*groups, key=self._rank.__getitem__):
                if v != j and size_now[names[v]] > 0:
                    yield v, 0

        def steps() -> Iterator[tuple[int, int]]:
            for v in shrinks():
                if v != j and size_now[names[v]] > 0:  # running, not the gang; rows give room
                    for size in smaller[v]:
                        yield v, size
            yield from breaks()

        # value_aware: no victim that alone gives up as much guaranteed value as the start brings
        # (with debt the refills bring more: greedy._refill settles that)
        gain = start_gain(st, j, target) if self.value_aware and not debt else None

        def take(fence: Fence | None) -> bool:
            """Victims, cheapest first, until j starts; inside the fence's domain when given
            (its free GPUs must then reach the start's). Rolled back when j does not start."""
            inside = frozenset(st.domains.members[fence]) if fence is not None else None
            still_blocked = bool(blocked)  # queue usage changes only when a victim is taken

            def frees_a_slot(v: int, size: int) -> bool:
                """Whether taking v down to size opens room for one pod of the gang on some node
                (large pods need their room on one node, not spread over many). While a queue
                still blocks the start, any take-back in it helps; once none does, only node room
                counts (in the fence: a take-back that frees nothing there does not help)."""
                if still_blocked:
                    return True
                if inside is not None and inside.isdisjoint(released(v, size)):
                    return False
                return per_pod <= 1 or bool(room(self.released_all(v, size), inside))

            def free() -> int:
                return st.nodes.gpus_free if fence is None else st.nodes.domain_gpus(fence)

            # A pending gang's search that no victim could help (none frees room for its pod alone
            # nor all together on one node) is not walked again while it depends on the same
            # things (its victims follow from the triggers and the queues at their floor) and no
            # node it could use got room back (_out_of_reach).
            memo: Hashable | None = None
            if (
                largest is not None
                and per_pod > 1
                and gain is None
                and not blocked
                and not jobs[j].current
                and not st.size[jobs[j].name]
            ):
                demand = (per_pod, largest.constraints, jobs[j].clusters, frozenset(fired))
                memo = (*demand, debt, fence, frozenset(at_floor))
            if memo is not None and self._out_of_reach(memo, lambda freed: room(freed, inside)):
                return False
            mark = st.mark()
            taken = 0
            helped = False  # some take-back opened room alone
            # Shrinks known to open no room alone for this pod shape are not tested again. When
            # no queue blocks the start (while one does, every take-back in it helps) and the
            # victims are not value-aware (that walk also skips the dear ones, by the state at
            # the time), the first pass does not even walk them, and if it does not start j, it
            # rebuilds the list of those it deferred as the full walk would have (`replay`).
            no_room = None
            if self.remember_no_room and per_pod > 1 and largest is not None:
                shape = (res.key(largest.requests), largest.constraints, jobs[j].clusters, fence)
                no_room = self._no_room.get(shape)
                if no_room is None:
                    no_room = self._no_room[shape] = _NoRoom(self.smaller, st.nodes.given, st.grown)
                no_room.sync()
            # the first pass's shrinks: visited (deferred or not), resized; the sizes before
            outcome: dict[tuple[int, int], bool] = {}
            resized: set[tuple[int, int]] = set()
            began: dict[int, int] = {}

            def unknown() -> Iterator[tuple[int, int, bool]]:
                """The first pass: the shrinks not known to open no room, in the walk's order,
                then the breaks."""
                assert no_room is not None

                def visit(v: int, size: int) -> bool:  # (larger sizes: skipped by the walk)
                    return v in self.live and v != j and useful_rows(self.rows[v])

                for v, size in no_room.walk(size_now, names, visit):
                    yield v, size, False
                for v, size in breaks():
                    yield v, size, False

            def replay() -> list[tuple[int, int]]:
                """The shrinks the full walk's first pass would have deferred, in its order:
                those deferred, and those skipped as known to open no room that its size test
                would have let through."""
                out = []
                for v in shrinks():
                    size = began.get(v, size_now[names[v]])
                    if v == j or size <= 0:
                        continue
                    for s in smaller[v]:
                        if (v, s) in resized:
                            size = s
                            continue
                        was = outcome.get((v, s))  # deferred, or visited and not
                        if was or (was is None and s < size):
                            out.append((v, s))
                return out

            first = no_room is not None and not blocked and gain is None
            todo: Iterable[tuple[int, int, bool]] = (
                unknown() if first else ((v, size, False) for v, size in steps())
            )
            while True:
                # Take-backs that open no room alone are retried once others were taken; if none
                # was, those that open room on one node together are taken as a group (forced:
                # without the room test), and the rest are retried after them.
                deferred: list[tuple[int, int]] = []
                taken_before = taken
                # One allowed size at a time: take back no more than needed.
                for v, size, forced in todo:
                    if taken >= MAX_VICTIM_STEPS:
                        break
                    if first and size:
                        outcome[(v, size)] = False
                    if size >= st.size[jobs[v].name]:
                        continue
                    if gain is not None and take_loss(st, v, size) >= gain:
                        continue  # too dear alone: in no set of victims worth taking
                    # (the first pass meets no known shrink: `unknown` reads the nodes given room)
                    if not forced and (
                        (
                            not first
                            and not still_blocked
                            and no_room is not None
                            and no_room.known(v, size)
                        )
                        or not frees_a_slot(v, size)
                    ):
                        deferred.append((v, size))
                        if no_room is not None and size:
                            if first:
                                outcome[(v, size)] = True
                            no_room.add((v, size), self.released_all(v, size))
                        continue
                    helped = True  # (even if the floors refuse it: they may not later)
                    # A shrink can only break a floor; refused ones cost no node work, are not
                    # counted.
                    hits = [r for r, _ in st.quota_blocks(v, size, False, coming) if r not in own]
                    if hits:
                        self.own_floor_refused |= not set(hits).isdisjoint(coming)
                        continue
                    taken += 1
                    before = st.size[jobs[v].name]
                    if not st.resize(v, size, check_quota=False):
                        continue
                    if first:
                        began.setdefault(v, before)
                        if size:
                            resized.add((v, size))
                    self.dirty.add(self.rows[v])
                    if still_blocked:
                        still_blocked = bool(st.quota_blocks(j, target))
                    if free() >= need and st.resize(j, target):
                        self.taken = True
                        return True
                if first and taken < MAX_VICTIM_STEPS:
                    deferred = replay() + [(v, size) for v, size in deferred if not size]
                first = False
                if not deferred or taken >= MAX_VICTIM_STEPS:
                    break
                if taken > taken_before:
                    todo = [(v, size, False) for v, size in deferred]
                    continue
                # summed in full only on nodes whose GPUs could make room (room tests them first)
                near = near_room(deferred, released, st.nodes.free, per_pod)
                most = most_freed(deferred, self.released_all, near)
                group = grouped(deferred, released, lambda freed: room(freed, inside), most)
                if not group:
                    if memo is not None and not helped:
                        most = most_freed(deferred, self.released_all)  # every node, for later
                        self._unreachable[memo] = (most, len(st.nodes.given))
                    break
                rest = [(v, size, False) for v, size in deferred if (v, size) not in group]
                todo = [(v, size, True) for v, size in group] + rest
            st.rollback(mark)
            return False

        return any(take(fence) for fence in self._fences(j, target, need, steps))

    def _out_of_reach(self, memo: Hashable, room: Callable[[Vectors], list[str]]) -> bool:
        """Whether a search that no victim could help still fails. Since it failed, running
        jobs only shrank (what they freed became room on their nodes, which ``NodeState.given``
        records) and room elsewhere only shrank (other pods were bound): on a node not given room
        back since, its room plus what its victims free can only be less. So it still fails
        unless, on a node given room back since, the room now plus what its victims freed then
        opens room for its pod (``room``)."""
        hit = self._unreachable.get(memo)
        if hit is None:
            return False
        most, seen = hit
        given = self.st.nodes.given
        if room({n: most.get(n, {}) for n in set(given[seen:])}):
            return False
        self._unreachable[memo] = (most, len(given))
        return True

    def _fences(
        self, j: int, target: int, need: int, steps: Callable[[], Iterator[tuple[int, int]]]
    ) -> Iterator[Fence | None]:
        """Where the victims of j's start are sought, in turn: anywhere (None); for a gang that
        requires one domain, anywhere first, then the domain its kept pods are in or else the
        domains ``domains_to_try`` finds (walked only once the search anywhere has failed).
        Anywhere first: where that succeeds, the room it frees beyond the gang's domain is either
        given back (minimize_evictions) or used by later starts, which the model values (on
        rack16 and rack32 dev seeds, fenced first lost 2.5-3.5% of the objective on 2 of 24
        instances); where it fails, one domain at a time."""
        st = self.st
        name = self.names[j]
        ask = st.problem.asks.get(name)
        if ask is None or ask.mode is not Mode.REQUIRED:
            yield None
            return
        keep = change_to(st.snapshot, st.snapshot.jobs[name], target, st.order_of(name)).keep
        kept = [n for p in keep if (n := st.placed.get(p.name) or p.node_name) is not None]
        if kept:
            found = st.domains.domains_of(ask.key, kept)
            held = [d for d in found if d is not None]
            if len(found) != 1 or len(held) != 1:
                return  # split (or outside every domain): placement grows it nowhere
            yield None
            yield (ask.key, held[0])
            return
        yield None
        yield from domains_to_try(st, self.released, ask.key, need, steps())


class _NoRoom:
    """For one pod shape (and fence), the shrinks (job, size) that opened no room for it alone,
    with the nodes they free. One stays known while none of its nodes got room back and its job
    did not grow: room elsewhere only shrinks (pods were bound), and what a shrink frees only
    shrinks as its job does (the pods it no longer frees left room on their nodes, given back);
    a job that grows (a bind, or a rollback restoring its pods) frees more. ``open``: every
    other shrink."""

    def __init__(
        self, smaller: Mapping[int, list[int]], given: list[str], grown: list[int]
    ) -> None:
        self.open = {(v, s): None for v, ss in smaller.items() for s in ss}
        self.smaller = smaller  # jobs in the walk's order, each one's sizes largest first
        self.by_node: dict[str, list[tuple[int, int]]] = {}
        self.by_job: dict[int, list[tuple[int, int]]] = {}
        self.given, self.grown = given, grown  # NodeState.given, PlanState.grown
        self.seen = len(self.given), len(self.grown)  # how far both records were read

    def add(self, pair: tuple[int, int], nodes: Iterable[str]) -> None:
        if self.open.pop(pair, 0) is None:
            for n in nodes:
                self.by_node.setdefault(n, []).append(pair)
            self.by_job.setdefault(pair[0], []).append(pair)

    def known(self, v: int, size: int) -> bool:
        """A shrink known to open no room alone now (the records read first)."""
        if not size:
            return False
        if self.stale():
            self.sync()
        return (v, size) not in self.open

    def stale(self) -> bool:
        """Whether a node got room back or a job grew since the records were last read."""
        return (len(self.given), len(self.grown)) != self.seen

    def walk(
        self, size: Mapping[str, int], names: Sequence[str], visit: Callable[[int, int], bool]
    ) -> Iterator[tuple[int, int]]:
        """The open shrinks below their job's size (``size`` by ``names``) that ``visit`` lets
        through, in the order of ``smaller`` (lowest priority first, each job's sizes largest
        first); while it walks, a node given room back (or a job grown) reopens shrinks, and
        those ahead of the walk are walked too. Lazily: a walk usually stops after a take-back
        or two, out of thousands of shrinks, most of them at or above their job's size.
        ``visit`` must not change for the shrinks ahead while the walk is under way (the caller
        only shrinks the job it was just given, whose smaller sizes come next and stay below
        its size)."""
        open_ = self.open
        for v, sizes in self.smaller.items():
            now = size[names[v]]
            for s in sizes:
                if s < now and (v, s) in open_ and visit(v, s):
                    yield v, s
                    if self.stale():  # the caller's take-back gave nodes room back
                        self.sync()

    def sync(self) -> list[tuple[int, int]]:
        """Reopen the shrinks with a node given room back, or whose job grew, since last read;
        those reopened."""
        out = []
        given, grown = self.seen
        pairs = [p for n in self.given[given:] for p in self.by_node.pop(n, ())]
        pairs += [p for v in self.grown[grown:] for p in self.by_job.pop(v, ())]
        for pair in pairs:
            if pair not in self.open:
                self.open[pair] = None
                out.append(pair)
        self.seen = len(self.given), len(self.grown)
        return out


def domains_to_try(
    st: PlanState, released: Freed, key: str, need: int, steps: Iterable[tuple[int, int]]
) -> list[Fence]:
    """The domains of level ``key`` where a start of ``need`` GPUs seeks its victims: walking the
    victims in the search's order (cheapest first), the first DOMAINS_TRIED domains whose free
    GPUs plus what the victims so far free there reach ``need``. So the domain whose room costs
    the cheapest victims comes first, and the search empties one domain rather than freeing room
    across many. An estimate (per node fit is left to the search)."""
    of = st.domains.of.get(key, {})
    room = {d: st.nodes.domain_gpus((key, d)) for d in st.domains.domains(key)}
    freed: dict[tuple[tuple[str, ...], int], int] = {}  # (domain, victim) -> GPUs freed there
    found: list[Fence] = []
    for v, size in steps:
        here: dict[tuple[str, ...], int] = {}
        for node, g in released(v, size).items():
            d = of.get(node)
            if d is not None:
                here[d] = here.get(d, 0) + g
        for d, g in here.items():
            before = freed.get((d, v), 0)  # a smaller size of v frees what a larger one did
            if d in room and g > before:
                freed[(d, v)] = g
                room[d] += g - before
                if room[d] >= need:
                    del room[d]
                    found.append((key, d))
                    if len(found) == DOMAINS_TRIED:
                        return found
    return found


def start_gain(st: PlanState, j: int, target: int) -> int:
    """The guaranteed-band value (rule 9) moving j to target adds: its guaranteed units, the
    start bonus, the waiting bonus, and the GPUs of its queues' mins it covers."""
    problem = st.problem
    jm = problem.jobs[j]
    now = jm.option(st.size[jm.name])
    o = jm.option(target)
    if o is None:
        return 0
    gain = jm.tier_weight * (o.guaranteed_units - (now.guaranteed_units if now else 0))
    if jm.starting and not st.size[jm.name]:
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


def _smallest(steps: list[tuple[int, int]]) -> dict[int, int]:
    smallest: dict[int, int] = {}
    for v, size in steps:
        smallest[v] = min(size, smallest.get(v, size))
    return smallest


def most_freed(
    steps: list[tuple[int, int]],
    released: Callable[[int, int], Vectors],
    only: set[str] | None = None,
) -> dict[str, dict[str, int]]:
    """Node -> what all these take-backs free there (each victim at its smallest size), on
    the nodes ``only`` names (None: every node)."""
    most: dict[str, dict[str, int]] = {}
    for v, size in _smallest(steps).items():
        for node, vec in released(v, size).items():
            if only is None or node in only:
                res.add_into(most.setdefault(node, {}), vec)
    return most


def near_room(
    steps: list[tuple[int, int]],
    released: Freed,
    free: Mapping[str, Mapping[str, int]],
    per_pod: int,
) -> set[str]:
    """The nodes where the GPUs free now plus those all these take-backs free (each victim at
    its smallest size) reach ``per_pod``: the only ones where they may open room together."""
    gpus: dict[str, int] = {}
    for v, size in _smallest(steps).items():
        for node, g in released(v, size).items():
            gpus[node] = gpus.get(node, 0) + g
    return {n for n, g in gpus.items() if free[n].get(res.GPU, 0) + g >= per_pod}


def grouped(
    steps: list[tuple[int, int]],
    released: Freed,
    room: Callable[[Vectors], list[str]],
    most: Vectors,
) -> list[tuple[int, int]]:
    """Deferred take-backs that together open room for the gang's largest pod on a node it may
    use (``room``: the nodes where what is freed opens room; ``most``: what all of them free per
    node, most_freed; ``released``: cached by Victims): every deferred victim with pods there,
    on the node where that means the fewest breaks, then the fewest victims; each at the largest
    deferred size that frees as much there."""
    sizes: dict[int, list[int]] = {}
    for v, size in steps:
        sizes.setdefault(v, []).append(size)
    nodes = room(most)
    if not nodes:
        return []
    groups: dict[str, list[tuple[int, int]]] = {n: [] for n in nodes}
    for v, ss in sizes.items():  # by victim, over the nodes it frees, not every victim per node
        for node, top in released(v, min(ss)).items():
            if top and node in groups:
                groups[node].append((v, max(s for s in ss if released(v, s).get(node, 0) == top)))
    best: tuple[tuple[int, int, str], list[tuple[int, int]]] | None = None
    for node in nodes:
        group = groups[node]
        cost = (sum(size == 0 for _, size in group), len(group), node)
        if best is None or cost < best[0]:
            best = (cost, group)
    return best[1] if best else []
