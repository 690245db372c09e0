"""Greedy's victim search, one start's walk in one fence (``Walk``). victims.py decides who may
be taken back and builds the walks; this module takes them back, in order, until the gang starts."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from solver_sched.placement.nodes import Fence
from solver_sched.solvers.room import (
    NoRoom,
    Vectors,
    grouped,
    most_freed,
    near_room,
    smallest,
    summed,
)
from solver_sched.solvers.worth import take_loss

if TYPE_CHECKING:  # victims.py builds the walks
    from solver_sched.solvers.victims import Start

MAX_VICTIM_STEPS = 64  # a gang that still does not fit after this many take-backs waits


class Walk:
    """The walk of one start's victims in one fence (None: anywhere): take-backs cheapest first
    until the gang starts, rolled back when it does not.

    Take-backs that open no room alone are deferred and retried once others were taken; if none
    was, those that open room on one node together are taken as a group (``grouped``), the rest
    retried after them. Take-backs known to open no room alone for this pod shape (``NoRoom``)
    are deferred untested when no queue blocks the start (while one does, every take-back in it
    helps). The first pass, where the victims are not value-aware (that walk also skips the dear
    ones, by the state at the time), does not even walk the known shrinks; if it does not start
    the gang, it rebuilds the list of those it deferred as the full walk would have
    (``replay``). It walks every break, untested where known (XL fragmented: greedy's first pass
    x0.66-0.71, the same plans)."""

    def __init__(self, start: Start, fence: Fence | None) -> None:
        self.start, self.fence = start, fence
        st = start.st
        self.inside = frozenset(st.domains.members[fence]) if fence is not None else None
        self.still_blocked = bool(start.blocked)  # queue usage changes only when a victim is taken
        self.no_room: NoRoom | None = None
        # the first pass's shrinks: visited (deferred or not), resized; the sizes before
        self.outcome: dict[tuple[int, int], bool] = {}
        self.resized: set[tuple[int, int]] = set()
        self.began: dict[int, int] = {}
        self.refused: set[int] = set()  # the floors that refused take-backs

    def room(self, freed: Vectors) -> list[str]:
        return self.start.room(freed, self.inside)

    def frees_a_slot(self, v: int, size: int) -> bool:
        """Whether taking v down to size opens room for one pod of the gang on some node (large
        pods need their room on one node, not spread over many). While a queue still blocks the
        start, any take-back in it helps; once none does, only node room counts (in the fence: a
        take-back that frees nothing there does not help)."""
        if self.still_blocked:
            return True
        victims = self.start.victims
        if self.inside is not None and self.inside.isdisjoint(victims.released(v, size)):
            return False
        if self.start.per_pod <= 1:
            return True
        return bool(self.room(victims.released_all(v, size)))

    def floor_refuses(self, v: int, size: int, forced: bool) -> bool:
        """Whether a queue floor (not of the start's own queues) refuses taking v down to size.
        Tested before the node room: a refused take-back costs no node work, is not counted and
        is not deferred (in a group it would be refused again, once the others were taken for
        nothing). Floors only tighten as victims go, so it stays refused for this walk. Where
        one of the start's own queues refuses a take-back that would have helped (opened room,
        or was one of a group), greedy tries the start again with debt."""
        start = self.start
        rows = start.floored(v)
        if not rows:
            return False
        coming = start.coming
        hits = start.st.floor_blocks(v, size, rows, coming)
        if hits:
            if not set(hits).isdisjoint(coming) and (forced or self.frees_a_slot(v, size)):
                start.victims.own_floor_refused = True
            self.refused.update(hits)
        return bool(hits)

    def free(self) -> int:
        nodes = self.start.st.nodes
        return nodes.gpus_free if self.fence is None else nodes.domain_gpus(self.fence)

    def unknown(self) -> Iterator[tuple[int, int, bool]]:
        """The first pass: the shrinks not known to open no room, in the walk's order, then the
        breaks."""
        no_room, start = self.no_room, self.start
        assert no_room is not None
        victims, j = start.victims, start.j
        live, rows, useful_rows = victims.live, victims.rows, start.useful_rows

        def visit(v: int, size: int) -> bool:  # (larger sizes: skipped by the walk)
            return v in live and v != j and useful_rows(rows[v])

        for v, size in no_room.walk(start.st.size, victims.names, visit):
            yield v, size, False
        for v, size in start.breaks():
            yield v, size, False

    def replay(self) -> list[tuple[int, int]]:
        """The shrinks the full walk's first pass would have deferred, in its order: those
        deferred, and those skipped as known to open no room that its size test would have let
        through."""
        start = self.start
        size_now, names, smaller = start.st.size, start.victims.names, start.victims.smaller
        out = []
        for v in start.shrinks():
            size = self.began.get(v, size_now[names[v]])
            if v == start.j or size <= 0:
                continue
            for s in smaller[v]:
                if (v, s) in self.resized:
                    size = s
                    continue
                was = self.outcome.get((v, s))  # deferred, or visited and not
                if was or (was is None and s < size and not self.floor_refuses(v, s, False)):
                    out.append((v, s))
        return out

    def run(self) -> bool:
        """Victims, cheapest first, until the gang starts; inside the fence's domain when given
        (its free GPUs must then reach the start's). Rolled back when it does not start."""
        start, victims = self.start, self.start.victims
        st, jobs, j, target = start.st, start.st.problem.jobs, start.j, start.target
        gain = start.gain
        # A pending gang's search that no victim could help (none frees room for its pod alone
        # nor all together on one node) is not walked again while it depends on the same things
        # and no node it could use got room back (Victims.out_of_reach).
        memo = start.memo(self.fence)
        if memo is not None and victims.out_of_reach(memo, start, self.room):
            return False
        mark = st.mark()
        taken = 0
        helped = False  # some take-back passed the floors and opened room (or was forced)
        refused = self.refused
        no_room = self.no_room = start.no_room(self.fence)
        outcome, resized, began = self.outcome, self.resized, self.began
        first = no_room is not None and not start.blocked and gain is None
        todo: Iterable[tuple[int, int, bool]] = (
            self.unknown() if first else ((v, size, False) for v, size in start.steps())
        )
        while True:
            deferred: list[tuple[int, int]] = []
            least: dict[int, int] = {}  # smallest(deferred), once the group phase needs it
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
                if self.floor_refuses(v, size, forced):
                    continue
                # (the first pass meets no known shrink: `unknown` reads the nodes given room;
                # it walks every break, known or not, so a group may take it)
                known = (
                    not forced
                    and (not first or not size)
                    and not self.still_blocked
                    and no_room is not None
                    and no_room.known(v, size)
                )
                if known or (not forced and not self.frees_a_slot(v, size)):
                    deferred.append((v, size))
                    if first and size:
                        outcome[(v, size)] = True
                    if no_room is not None and not known:
                        no_room.add((v, size), victims.released_all(v, size))
                    continue
                helped = True
                taken += 1
                before = st.size[jobs[v].name]
                if not st.resize(v, size, check_quota=False):
                    continue
                if first:
                    began.setdefault(v, before)
                    if size:
                        resized.add((v, size))
                victims.dirty.add(victims.rows[v])
                if self.still_blocked:
                    self.still_blocked = bool(st.quota_blocks(j, target))
                if self.free() >= start.need and st.resize(j, target):
                    victims.taken = True
                    return True
            if first and taken < MAX_VICTIM_STEPS:
                deferred = self.replay() + [(v, size) for v, size in deferred if not size]
            first = False
            if not deferred or taken >= MAX_VICTIM_STEPS:
                break
            if taken > taken_before:
                todo = [(v, size, False) for v, size in deferred]
                continue
            # summed in full only on nodes whose GPUs could make room (room tests them first)
            released, least = victims.released, smallest(deferred)  # deferred is final here
            near = near_room(least, released, st.nodes.free, start.per_pod)
            most = most_freed(least, victims.released_all, near)
            group = grouped(deferred, released, self.room, most)
            if not group:
                break
            rest = [(v, size, False) for v, size in deferred if (v, size) not in group]
            todo = [(v, size, True) for v, size in group] + rest
        st.rollback(mark)
        if memo is None:
            return False
        if not helped:
            # nothing was taken: the last pass deferred every victim left and found no group
            # (``least`` is theirs), or none was left
            parts = victims.releases(least)  # summed later, on the nodes given room back
            floors = {r: start.level(r) for r in refused}
            victims.unreachable[memo] = (parts, len(st.nodes.given), floors)
        elif start.blocked:
            # A queue blocked it: its first take-backs went to the queue, not to room. Remembered
            # when all its victims together open no room on any node (whatever the queues say).
            parts = victims.releases(smallest(start.steps()))
            if not self.room(summed(parts)):
                victims.unreachable[memo] = (parts, len(st.nodes.given), {})
        return False
