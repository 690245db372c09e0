"""Tentative plan state shared by greedy and the packer: job sizes, concrete binds, queue usage.

Every change is journaled so a gang that does not fit is rolled back whole (all-or-nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Pod
from solver_sched.domain.quota import MAX_JOBS
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.domain.topology import Ask, Mode
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.sizes import change_to
from solver_sched.placement.nodes import NodeState
from solver_sched.placement.topology import DomainIndex, place

Chooser = Callable[[Pod, str], "str | None"]  # (pod, cluster) -> node
HELD = "held by gangs only other starts may break"  # rule 3b's block, after the resource


class PlanState:
    def __init__(self, snapshot: ClusterSnapshot, problem: Problem) -> None:
        self.snapshot, self.problem = snapshot, problem
        self.nodes = NodeState(snapshot, problem.class_of)
        keys = {k for a in problem.asks.values() for k in (a.key, *a.broader)}
        self.domains = DomainIndex(snapshot, problem.topology, keys)
        self.nodes.track(self.domains.members)
        self.prefer: dict[str, tuple[tuple[str, ...], ...]] = {}  # job -> domains to try first
        self.size = {jm.name: jm.current for jm in problem.jobs}
        self.placed: dict[str, str] = {}  # pending pod -> node
        # (job, size, size now) -> what the move lowers (_lowered, for every floor test)
        self._lowered_at: dict[tuple[int, int, int], dict[str, tuple[int, int]]] = {}
        self.evicted: set[str] = set()  # running pods the tentative plan evicts
        self.index = {jm.name: j for j, jm in enumerate(problem.jobs)}
        self.rows_of: dict[int, list[int]] = {}
        for r, row in enumerate(problem.quotas):
            for j in row.jobs:
                self.rows_of.setdefault(j, []).append(r)
        # Per row, usage and ``settled`` are dicts of their own, updated in place by size changes.
        self.usage: list[dict[str, int]] = []
        self.running_jobs: list[int] = []
        for row in problem.quotas:
            u: dict[str, int] = {}
            count = 0
            for j in row.jobs:
                jm = problem.jobs[j]
                res.add_into(u, self.usage_at(j, jm.current))
                count += jm.current > 0
            self.usage.append(u)
            self.running_jobs.append(count)
        # Jobs whose size must change anyway (partial or irregular): the floors leave their usage
        # out (prepare), so floor checks read ``settled``, the usage without them until greedy has
        # settled them.
        self.unsettled = {
            j for j, jm in enumerate(problem.jobs) if not jm.running_ok and jm.current > 0
        }
        self.settled: list[dict[str, int]] = [dict(u) for u in self.usage]
        for j in self.unsettled:
            for r in self.rows_of.get(j, ()):
                res.add_into(self.settled[r], self.usage_at(j, problem.jobs[j].current), -1)
        self._journal: list[Callable[[], None]] = []
        # Every job whose size went up (a bind, or a rollback restoring it), in order: what a
        # shrink of it frees then grows beyond what it freed before (room.NoRoom).
        self.grown: list[int] = []
        self.covered = [  # per row: GPUs of guaranteed parts (queue-min coverage, for reclaim)
            sum(problem.jobs[j].guaranteed_gpus_at(problem.jobs[j].current) for j in row.jobs)
            for row in problem.quotas
        ]
        # Rule 3b: per row with gangs a start may break, usage and running jobs as the members
        # that may break none of them see it (a broken one holds its smallest size)
        self.views_of: dict[int, list[int]] = {}
        self.view: dict[int, dict[str, int]] = {}
        self.view_running: dict[int, int] = {}
        for r, row in enumerate(problem.quotas):
            if not row.breakable:
                continue
            # nothing is broken yet: the view is the row without its licensed starts
            u, count = dict(self.usage[r]), self.running_jobs[r]
            for j in row.licensed:
                if (now := problem.jobs[j].current) > 0:  # a partial gang, starting
                    res.add_into(u, self.usage_at(j, now), -1)
                    count -= 1
            for j in row.jobs:
                if j not in row.licensed:
                    self.views_of.setdefault(j, []).append(r)
            self.view[r], self.view_running[r] = u, count

    def held_usage(self, j: int, size: int) -> res.Resources:
        """``usage_at``, but a gang a start may break holds its smallest size when broken."""
        o = self.problem.jobs[j].held_at(size)
        return o.usage if o is not None else self.usage_at(j, size)

    def held_runs(self, j: int, size: int) -> int:
        jm = self.problem.jobs[j]
        return int(size > 0 or bool(jm.break_needs and jm.running_ok))

    def usage_at(self, j: int, size: int) -> res.Resources:
        jm = self.problem.jobs[j]
        o = jm.option(size)
        if o is not None:
            return o.usage  # shared, never mutated: add_into sums only the rows' own dicts
        job = self.snapshot.jobs[jm.name]  # a size that is no option: what runs now
        return res.total(p.requests for p in self.snapshot.running_pods(job))

    # -- journal -----------------------------------------------------------------------------
    def mark(self) -> int:
        return len(self._journal)

    def rollback(self, mark: int) -> None:
        while len(self._journal) > mark:
            self._journal.pop()()

    # -- queue rows --------------------------------------------------------------------------
    def quota_blocks(
        self,
        j: int,
        size: int,
        first_only: bool = True,
        credit: dict[int, dict[str, int]] | None = None,
    ) -> list[tuple[int, str]]:
        """(row, what) for the queue rows that moving job j to size would break; ``what`` is the
        resource over its cap, MAX_JOBS, ``min <resource>`` for a floor, or either of the first
        two followed by HELD (rule 3b: room a break holds for the starts that may break).
        ``credit`` is usage about to arrive per row (the gang whose start a shrink makes room
        for): floors count it."""
        old, new = self.usage_at(j, self.size[self.problem.jobs[j].name]), self.usage_at(j, size)
        was_running = self.size[self.problem.jobs[j].name] > 0
        lowered = self._lowered(j, size)
        out: list[tuple[int, str]] = []
        for r in self.rows_of.get(j, ()):
            coming = credit.get(r, {}) if credit else {}
            hit = self._row_block(
                r, old, new, lowered, was_running, size, coming, j in self.unsettled
            )
            if hit:
                out.append((r, hit))
                if first_only:
                    return out
        views = self.views_of.get(j)
        if views:
            now = self.size[self.problem.jobs[j].name]
            held_old, held_new = self.held_usage(j, now), self.held_usage(j, size)
            runs = self.held_runs(j, size) - self.held_runs(j, now)
            for r in views:
                hit = self._view_block(r, held_old, held_new, runs)
                if hit:
                    out.append((r, hit))
                    if first_only:
                        break
        return out

    def _view_block(self, r: int, old: res.Resources, new: res.Resources, runs: int) -> str | None:
        """Rule 3b: the cap or max-jobs of row r that a move of a member that may break none of
        the row's breakable gangs breaks (``old``, ``new``: what it holds before and after, a
        broken gang its smallest size; ``runs``: the running jobs it adds)."""
        row = self.problem.quotas[r]
        hit = _over_cap(row.cap, self.view[r], old, new)
        if hit is not None:
            return f"{hit} {HELD}"
        if row.jobs_cap is not None and runs > 0 and self.view_running[r] + runs > row.jobs_cap:
            return f"{MAX_JOBS} {HELD}"
        return None

    def _floor_slack(self, r: int, coming: res.Resources) -> int | None:
        """Settled usage (plus ``coming``) minus floor, for row r's tightest resource; None
        without a floor."""
        usage = self.settled[r]
        floor = self.problem.quotas[r].floor
        return min((usage.get(n, 0) + coming.get(n, 0) - f for n, f in floor.items()), default=None)

    def below_floor(self, r: int, coming: res.Resources | None = None) -> bool:
        """Whether row r is at or below its floor (with ``coming`` usage on its way), counting
        no unsettled job: at the floor, nothing of the row may shrink."""
        slack = self._floor_slack(r, coming or {})
        return slack is not None and slack <= 0

    def floor_debt(self, rows: Iterable[int]) -> set[int]:
        """The rows among ``rows`` whose usage (counting no unsettled job) is under their floor."""
        return {r for r in rows if (slack := self._floor_slack(r, {})) is not None and slack < 0}

    def change(self, j: int, size: int) -> dict[str, int]:
        """What moving job j to size adds (negative: releases). A partial gang's size is no
        option: then what its running pods hold counts."""
        return res.sub(
            self.usage_at(j, size), self.usage_at(j, self.size[self.problem.jobs[j].name])
        )

    def _row_block(
        self,
        r: int,
        old: res.Resources,
        new: res.Resources,
        lowered: dict[str, tuple[int, int]],
        was_running: bool,
        size: int,
        coming: res.Resources,
        unsettled: bool = False,
    ) -> str | None:
        row = self.problem.quotas[r]
        if row.cap:  # only a growth can break a cap (a shrink, tested often, skips the sums)
            hit = _over_cap(row.cap, self.usage[r], old, new)
            if hit is not None:
                return hit
        if row.floor:  # and only a shrink a floor
            hit = self._floor_hit(r, lowered, coming, unsettled)
            if hit is not None:
                return f"min {hit}"
        starts = not was_running and size > 0
        if row.jobs_cap is not None and starts and self.running_jobs[r] + 1 > row.jobs_cap:
            return MAX_JOBS
        return None

    def _floor_hit(
        self, r: int, lowered: dict[str, tuple[int, int]], coming: res.Resources, unsettled: bool
    ) -> str | None:
        """The resource of row r's floor that a shrink lowering usage as in ``lowered``
        (``_lowered``) breaks."""
        settled = self.settled[r]
        for name, floor in self.problem.quotas[r].floor.items():
            drop = lowered.get(name)
            if drop is None:
                continue
            was, will = drop
            gone = 0 if unsettled else was  # an unsettled job's usage is not in ``settled``
            if settled.get(name, 0) - gone + will + coming.get(name, 0) < floor:
                return name
        return None

    def floor_blocks(
        self, j: int, size: int, rows: Iterable[int], credit: dict[int, dict[str, int]]
    ) -> list[int]:
        """The rows among ``rows`` (each with a floor) whose floor moving job j down to size
        breaks: quota_blocks's floor test alone, for the victim search, which asks it of
        every take-back it meets (caps and max-jobs only ever refuse a growth or a start)."""
        lowered = self._lowered(j, size)
        if not lowered:
            return []
        unsettled = j in self.unsettled
        return [r for r in rows if self._floor_hit(r, lowered, credit.get(r, {}), unsettled)]

    def _lowered(self, j: int, size: int) -> dict[str, tuple[int, int]]:
        """Resource -> (usage now, usage at size), for those that moving job j to size lowers
        (what a floor test reads; cached, as usage per size never changes)."""
        now = self.size[self.problem.jobs[j].name]
        key = (j, size, now)
        out = self._lowered_at.get(key)
        if out is None:
            old, new = self.usage_at(j, now), self.usage_at(j, size)
            out = self._lowered_at[key] = {
                n: (was, new.get(n, 0)) for n, was in old.items() if new.get(n, 0) < was
            }
        return out

    # -- which pods a scale-in takes ---------------------------------------------------------
    def order_of(self, name: str) -> tuple[Pod, ...]:
        """A job's running pods in the order this plan keeps them (evictions take the tail)."""
        order = self.problem.running_order.get(name)
        return order if order is not None else self.snapshot.running_pods(self.snapshot.jobs[name])

    # -- size changes ------------------------------------------------------------------------
    def resize(
        self,
        j: int,
        size: int,
        cluster: str | None = None,
        chooser: Chooser | None = None,
        check_quota: bool = True,
    ) -> bool:
        """Move job j to size: evict surplus, bind what is missing (best fit). All or nothing."""
        jm = self.problem.jobs[j]
        if size == self.size[jm.name]:
            return True
        if check_quota and self.quota_blocks(j, size):
            return False
        job = self.snapshot.jobs[jm.name]
        change = change_to(self.snapshot, job, size, self.order_of(jm.name))
        clusters = [cluster] if cluster else (list(jm.clusters) or list(self.problem.clusters))
        pick = chooser or self.nodes.pick
        ask = self.problem.asks.get(jm.name)
        if (
            chooser is None
            and ask is None
            and change.bind
            and not change.evict
            and not any(p in self.placed for p in job.pods)
            and all(self.nodes.cannot_hold(change.bind, k) for k in clusters)
        ):
            return False  # known not to fit (NodeState.cannot_hold); nothing changed yet
        mark = self.mark()
        self._set_size(j, size)
        for pod in change.evict:
            if pod.name not in self.evicted:
                self._release(pod)
        for pod in change.keep:
            if pod.name in self.evicted and not self._restore(pod):
                self.rollback(mark)
                return False
        wanted = {p.name for p in change.bind}
        for name in job.pods:
            if name in self.placed and name not in wanted:
                self._unplace(name)
        if not change.bind and size == jm.current:
            return True  # back as it runs (an eviction given back): nothing to place or judge
        first = self.prefer.get(jm.name, ())
        for k in clusters:
            if ask is None and self._bind_all(change.bind, k, pick):
                return True
            if ask is not None and self._place_in_topology(
                ask, change.keep, change.bind, k, pick, first
            ):
                return True
        self.rollback(mark)
        return False

    def _place_in_topology(
        self,
        ask: Ask,
        keep: tuple[Pod, ...],
        binds: tuple[Pod, ...],
        cluster: str,
        pick: Chooser,
        first: tuple[tuple[str, ...], ...],
    ) -> bool:
        """The gang's new pods inside the domains its request allows (placement/topology.py);
        a required gang that only shrinks must end in one domain. Pods this plan placed
        already (a growth after a start) sit where they are, like the running ones: the domain
        is chosen around them (they were left out, and a gang grown from 2 to 4 ended split).
        A preferred gang's are first placed again with the new ones, kept if one domain then
        holds them all (its growth spilled into a second rack beside a rack that held both)."""
        kept = [n for p in keep if (n := self.placed.get(p.name) or p.node_name) is not None]
        moved = [p for p in binds if p.name in self.placed]
        fresh = tuple(p for p in binds if p.name not in self.placed)
        if not fresh:
            found = self.domains.domains_of(ask.key, [*kept, *(self.placed[p.name] for p in moved)])
            return ask.mode is Mode.PREFERRED or (len(found) <= 1 and None not in found)

        def bind(pods: tuple[Pod, ...]) -> bool:
            return self._bind_all(pods, cluster, pick)

        if ask.mode is Mode.PREFERRED and moved:  # pods this plan placed may still move
            mark = self.mark()
            for p in moved:
                self._unplace(p.name)
            if place(
                self.nodes, self.domains, ask, binds, kept, bind, self.mark, self.rollback, first
            ):
                nodes = [*kept, *(self.placed[p.name] for p in binds)]
                if len(self.domains.domains_of(ask.key, nodes)) == 1:
                    return True  # one domain holds it all (a growth spilled into a second)
            self.rollback(mark)
        kept += [self.placed[p.name] for p in moved]
        return place(
            self.nodes, self.domains, ask, fresh, kept, bind, self.mark, self.rollback, first
        )

    def _bind_all(self, pods: tuple[Pod, ...], cluster: str, chooser: Chooser) -> bool:
        mark = self.mark()
        nodes = self.snapshot.nodes
        for i, pod in enumerate(pods):
            if pod.name in self.placed:
                if nodes[self.placed[pod.name]].cluster != cluster:
                    self.rollback(mark)
                    return False
                continue
            node = chooser(pod, cluster)
            if node is None:
                self.rollback(mark)
                if chooser == self.nodes.pick:  # the pods it tried, from the state it is in again
                    tried = [p for p in pods[: i + 1] if p.name not in self.placed]
                    self.nodes.held_fewer(tried, cluster, len(tried))
                return False
            self.place(pod.name, node)
        return True

    def _release(self, pod: Pod) -> None:
        node = pod.node_name
        if node in self.nodes.free:
            self.nodes.give_back(pod, node)
        self.evicted.add(pod.name)

        def undo() -> None:
            if node in self.nodes.free:
                self.nodes.take(pod, node)
            self.evicted.discard(pod.name)

        self._journal.append(undo)

    def _restore(self, pod: Pod) -> bool:
        node = pod.node_name
        if node in self.nodes.free:
            if not res.fits(pod.requests, self.nodes.free[node]):
                return False
            self.nodes.take(pod, node)
        self.evicted.discard(pod.name)

        def undo() -> None:
            if node in self.nodes.free:
                self.nodes.give_back(pod, node)
            self.evicted.add(pod.name)

        self._journal.append(undo)
        return True

    def place(self, pod_name: str, node: str) -> None:
        pod = self.snapshot.pods[pod_name]
        self.nodes.take(pod, node)
        self.placed[pod_name] = node

        def undo() -> None:
            self.nodes.give_back(pod, node)
            del self.placed[pod_name]

        self._journal.append(undo)

    def _unplace(self, pod_name: str) -> None:
        node = self.placed.pop(pod_name)
        pod = self.snapshot.pods[pod_name]
        self.nodes.give_back(pod, node)

        def undo() -> None:
            self.nodes.take(pod, node)
            self.placed[pod_name] = node

        self._journal.append(undo)

    def _set_size(self, j: int, size: int) -> None:
        name = self.problem.jobs[j].name
        old = self.size[name]
        old_u, new_u = self.usage_at(j, old), self.usage_at(j, size)
        jm = self.problem.jobs[j]
        covered = jm.guaranteed_gpus_at(size) - jm.guaranteed_gpus_at(old)
        rows = self.rows_of.get(j, ())
        settles = j in self.unsettled  # its new size is a decision: floors count it from now on
        delta = res.sub(new_u, old_u)
        settled_delta = new_u if settles else delta
        started = int(size > 0) - int(old > 0)
        for r in rows:
            res.add_into(self.usage[r], delta)
            res.add_into(self.settled[r], settled_delta)
            self.running_jobs[r] += started
            self.covered[r] += covered
        views = self.views_of.get(j, ())
        held_delta, held_runs = delta, started  # what it holds differs only when a gang a start
        if views and jm.break_needs and jm.running_ok and not (size and old):  # may break breaks
            held_delta = res.sub(self.held_usage(j, size), self.held_usage(j, old))
            held_runs = 0
        for r in views:
            res.add_into(self.view[r], held_delta)
            self.view_running[r] += held_runs
        self.size[name] = size
        self.unsettled.discard(j)
        if size > old:
            self.grown.append(j)

        def undo() -> None:
            for r in rows:
                res.add_into(self.usage[r], delta, -1)
                self.running_jobs[r] -= started
                res.add_into(self.settled[r], settled_delta, -1)
                self.covered[r] -= covered
            for r in views:
                res.add_into(self.view[r], held_delta, -1)
                self.view_running[r] -= held_runs
            self.size[name] = old
            if old > size:
                self.grown.append(j)
            if settles:
                self.unsettled.add(j)

        self._journal.append(undo)


def _over_cap(
    caps: res.Resources, usage: res.Resources, old: res.Resources, new: res.Resources
) -> str | None:
    """The first capped resource that a move from ``old`` to ``new`` grows past its cap."""
    for name, cap in caps.items():
        was, will = old.get(name, 0), new.get(name, 0)
        if will > was and usage.get(name, 0) - was + will > cap:
            return name
    return None


def restore(
    snapshot: ClusterSnapshot, problem: Problem, size: dict[str, int], placed: dict[str, str]
) -> PlanState:
    """The plan state a pass reached elsewhere (another process), from its sizes and its pending
    pods' nodes: a size fixes which running pods stay (``change_to``), so the two are the whole
    state. Shrinks first (they free the room growths take), each pod on its recorded node. The
    pass kept the queue rows; the plan is checked like any other."""
    st = PlanState(snapshot, problem)

    def chooser(pod: Pod, cluster: str) -> str | None:
        node = placed.get(pod.name)
        if node is None or snapshot.nodes[node].cluster != cluster:
            return None
        return node if res.fits(pod.requests, st.nodes.free[node]) else None

    jobs = problem.jobs
    moves = [(j, size[jm.name]) for j, jm in enumerate(jobs) if size[jm.name] != jm.current]
    for j, to in sorted(moves, key=lambda m: m[1] > jobs[m[0]].current):
        if not st.resize(j, to, chooser=chooser, check_quota=False):
            raise ValueError(f"job {jobs[j].name}: size {to} does not fit where it was placed")
    return st
