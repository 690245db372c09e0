"""One scheduling cycle: snapshot -> problem -> solve -> plan -> check. Which candidates run,
and when: greedy's passes (planning/passes.py), the searches between them, each where the
budget's rules (planning/clock.py) leave room.

Pure: no I/O, and the clock only through ``now`` (perf_counter measures phase durations). The
one process-wide effect is that the cyclic garbage collector is paused while a cycle runs.
"""

from __future__ import annotations

import gc
import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial

from solver_sched.config.schema import SchedulerConfig, Settings
from solver_sched.domain.plan import Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.domain.topology import Topology, choose
from solver_sched.formulation.aggregate import aggregate, oldest_first
from solver_sched.formulation.build import Built, build
from solver_sched.formulation.prepare import prepare
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.values import to_values
from solver_sched.planning.beside import Beside
from solver_sched.planning.candidates import (
    COMPACT,
    DENSE,
    DENSE_VALUE,
    GREEDY,
    GUIDED,
    GUIDED_VALUE,
    VALUE_AWARE,
    Candidate,
    may_rank_first,
    score,
    verdict,
)
from solver_sched.planning.clock import TAIL, WITH_ROWS, Clock, Timer
from solver_sched.planning.diff import diff
from solver_sched.planning.history import SearchHistory
from solver_sched.planning.pack import compact, pack
from solver_sched.planning.passes import Sent, arrivals, passes_beside, variant
from solver_sched.solvers.budget import MARGIN, auto_budget, search_deadline
from solver_sched.solvers.greedy import assignment_of, greedy_plan
from solver_sched.solvers.lp import relaxation
from solver_sched.solvers.result import SolveStats, SolveStatus
from solver_sched.solvers.solving import BACKENDS, Solving, solution_assignment
from solver_sched.solvers.topology_baselines import BASELINES, replay

__all__ = ["BACKENDS", "CycleResult", "run_cycle"]

# The greedy backend's second pass, and the cycle's first after greedy's own: the dense order with
# value-aware victims. With greedy's victims the dense order's late take-backs lose value, so its
# plan depended on where the deadline cut it (M hard dev seed 2: the default cycle x0.9854 of the
# greedy-only cycle); value-aware, it keeps what it took (docs/benchmarks.md, seventeenth pass).
SECOND = DENSE_VALUE
# Greedy's later passes in a forked child (planning/beside.py), up to BESIDE_NODES schedulable
# nodes. The child slows the parent's passes (copy-on-write faults on every page of the snapshot
# either touches, shared memory bandwidth): greedy's first pass 2.5-6% at 512 nodes, 6-11% at
# 2,000. At 512 the child's value-greedy paid (M full dev seeds 1-12: median x1.0023, up to
# x1.0094, none lower); at 2,000 the slower first pass left no room for the parent's dense pass
# (L fragmented dev 1: x0.9896, dev 3: x1.0137) and cycles took up to 0.2 s longer
# (docs/benchmarks.md section 1, nineteenth pass). With nothing left to run, the parent waits for
# the pass the child is on, up to the child's end (twentieth pass).
BESIDE = True
BESIDE_NODES = 1000
# Of the budget: with less left the model is not even translated (nor with a window shorter
# than SEARCH_NEEDS builds: planning/clock.py, which holds the budget's rules of time)
NO_SEARCH_BELOW = 0.1
REPACKS = 3  # packings of the solver's plan after the first, while some job fails to pack
# Of a cycle's budget: greedy's other candidates end by then, and the LP relaxation (whose window
# is not greedy's pass) by LP_SHARE. A small model (SMALL_MODEL variables, S) is searched
# to its optimum in the budget, so the search keeps half of it. On larger ones (from 512 nodes)
# CP-SAT's short window returned nothing better than the hint while value-greedy's pass found
# +0.2-1.4% (docs/benchmarks.md section 1): the candidates get more, value-greedy first after
# the greedy backend's own second pass (SECOND; a budgeted search now runs beside them).
VARIANTS = 0.75
VARIANTS_SMALL = 0.5
SMALL_MODEL = 2000  # variables (S: 907)
# On a small model greedy's candidates are made within a fifth of the budget and no child runs
# beside them, so the second core idles while the unhinted search runs: a second search, hinted
# with the best candidate, runs there to the same deadline and the better solution is packed.
# Two one-worker searches, each with its own start, where one alone misses the optimum now and
# then as the machine's speed swings (S hard and full, paired cycles with and without it: dev
# hard worst gap 0.82 -> 0.08%, held-out full 1.44 -> 0.35%; docs/benchmarks.md section 1,
# twenty-second pass). Not CP-SAT's own two workers: one solve with a second subsolver, worse
# at S on this machine.
HINTED_BESIDE = True
LP_SHARE = 0.5
# The dense pass, the greedy backend's second plan, runs where TAIL of a pass fits before its
# end, its victim search cut for it, not only where a whole pass fits: at L a whole second pass
# missed its end by a few percent of a pass in some cycles and not in others, as the machine's
# speed swung, and the search that ran instead never made an L plan. L fragmented 1001-1008,
# paired, two cycles each way: below the greedy-only cycle in 2 of 16 -> 0 of 16, the plan
# x1.0053 (geometric mean; 1008's gap 3.11 -> 0.00%); the other L presets unchanged
# (docs/benchmarks.md section 1, twenty-third pass).
SECOND_CUT_TO_FIT = True


@dataclass
class CycleResult:
    plan: Plan
    stats: SolveStats
    terms: dict[str, int] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    chosen: str = ""  # which candidate became the plan: the solver's or greedy's


class _Candidates:
    """Greedy's candidates, made one after another on the cycle's thread, and what runs beside
    them: the child's passes (received between two passes, and waited for at the end) and the
    searches, started between them on a worker thread."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        problem: Problem,
        model: Problem,
        built: Built,
        topology: Topology,
        backend: str,
        s: Settings,
        timer: Timer,
        clock: Clock,
        limit: float,
        history: SearchHistory | None,
    ) -> None:
        self.snapshot, self.problem, self.model, self.built = snapshot, problem, model, built
        self.topology, self.backend, self.s = topology, backend, s
        self.timer, self.clock, self.limit = timer, clock, limit
        self.history = history
        self.unhinted: Solving | None = None  # the budgeted, unhinted search, once started
        self.ruled_out = False  # the budgeted search ruled out by the history
        self.beside: Beside | None = None
        self.labels: tuple[str, ...] = ()  # the child's passes
        self.child_end = clock.start  # when its last pass ends
        self.received: dict[str, Sent | None] = {}
        self.others: list[Candidate | None] = []
        self.second_wanted = bool(problem.gang_start) and problem.too_large is None  # until run

    def fork(self, ends: ExitStack) -> None:
        """Greedy's later passes in a forked child, beside greedy's first pass and the parent's
        own (planning/beside.py): where no search takes the second core, it would idle (M on a
        slow machine). Killed once a search starts; what it sent is read before the ranking."""
        self.labels = (VALUE_AWARE, *((DENSE,) if self.problem.gang_start else ()))
        self.child_end = self.clock.before_check(WITH_ROWS)
        with self.timer("beside"):
            work = partial(
                passes_beside,
                self.snapshot,
                self.problem,
                self.model,
                self.built,
                self.labels,
                self.child_end,
                time.perf_counter() - self.clock.start,
            )
            self.beside = ends.enter_context(Beside(work))

    def first_pass(self) -> list[int] | None:
        """Greedy's plan, the first candidate; its model values (a search's hint), if it maps."""
        model, built = self.model, self.built
        with self.timer("greedy"):
            # concrete already: no packing; its victim search stops where the budget would not
            # hold the rest of the pass and its check (a slow machine at XL)
            state = greedy_plan(self.snapshot, self.problem, deadline=self.clock.first_cutoff())
            greedy = assignment_of(state)
            hint = to_values(model, built, greedy.sizes, greedy.counts)
        with self.timer("plan"):
            self.others.append(score(model, built, GREEDY, state, [], hint))
        return hint

    def receive(self) -> None:
        if self.beside is not None:
            with self.timer("beside"):
                self.received.update(self.beside.arrived())

    def search(self, hinted: list[int] | None) -> Solving:
        """The search, translated and started on its worker thread. An explicit one runs for its
        own limit; a budgeted one at most for what the budget leaves (it is stopped at its
        deadline), and not at all with too little of the budget left or a window too short for
        it to return more than the candidates (its stats then say why)."""
        clock, search_budget = self.clock, self.clock.search_budget
        model, built, limit, s = self.model, self.built, self.limit, self.s
        with self.timer("solve"):
            if search_budget is None:
                return Solving(self.backend, model, built, hinted, limit, s, None)
            at = time.perf_counter()
            left = clock.start + search_budget - at
            skip = None
            open_for = clock.window(at, search_budget)
            if left < NO_SEARCH_BELOW * search_budget:
                skip = f"no search: {max(0.0, left):.2f}s of the {search_budget:.2f}s budget left"
            elif open_for < (needed := clock.needed()):
                skip = f"no search: a window of {max(0.0, open_for):.2f}s, {needed:.2f}s needed"
            elif hinted is None and self.history is not None:
                variables, judged = len(built.model.names), min(limit, open_for)
                ruled = self.history.hopeless(variables, judged)
                if ruled is not None:
                    skip = (
                        f"no search: {ruled[0]} variables found none in {ruled[1]:.2f}s in an "
                        f"earlier cycle; {variables} in {judged:.2f}s now"
                    )
                    self.ruled_out = True
                    # where no hinted search follows either, the candidates may use the budget
                    clock.no_search = not _hinted_follows(self.backend, built)
            if skip is None and self.beside is not None:  # the search takes the second core
                self.receive()
                self.beside.stop()
            window = min(limit, max(0.01, left))
            solving = Solving(self.backend, model, built, hinted, window, s, skip)
            if hinted is None and skip is None:
                self.unhinted = solving
            return solving

    def remember(self, hinted: Solving | None) -> None:
        """The budgeted, unhinted search's outcome, for the next cycles' (planning/history.py):
        its own, not the hinted one's beside it, with the seconds it had (translation to stop).
        Later cycles compare their window as estimated when the search would start, which runs
        short of what a search gets where the check takes less than the build (rackXL: 3.6-5.4 s
        estimated, 5.3-6.2 s had): a window up to that much longer is ruled out too. Not a
        search stopped by the hinted one's proof, nor one that failed on a solver error:
        neither says what its window allows."""
        searched = self.unhinted
        if self.history is None or searched is None or searched.thread is None:
            return  # no history kept, or no search ran
        stats, values = searched.result()
        variables = len(self.built.model.names)
        if values is not None:
            self.history.record(variables, stats.seconds, found=True)
        elif (
            searched.failure is None
            and stats.status is SolveStatus.NO_SOLUTION  # not proved infeasible
            and not (hinted is not None and hinted.proved())
        ):
            self.history.record(variables, stats.seconds, found=False)

    def another(
        self, label: str, end: float | None, shares: dict[str, float] | None = None
    ) -> None:
        """Greedy's pass ``label`` as another candidate, its victim search cut for ``end``;
        none where the child beside has sent it."""
        self.receive()
        if label in self.received:
            return
        deadline = self.clock.cutoff(end)
        self.others.append(
            variant(
                self.snapshot,
                self.problem,
                self.model,
                self.built,
                self.timer,
                label,
                deadline,
                shares,
            )
        )

    def second(self) -> None:
        """The dense pass (SECOND), right after the first: the start bonus values small gangs
        more per GPU, so greedy runs in that order too, for the greedy backend as well, and
        greedy and the model optimise the same objective. It is the greedy backend's second
        plan, so it comes first, with that backend's deadline at the least: later where no
        search could follow anyway, as value-greedy's, since a slower Python phase than in that
        backend's cycle must not skip it (M full 1019 came out x0.9995 of the greedy-only
        cycle: the dense pass not run, value-greedy's plan). Where a whole pass does not fit, a
        cut one still may (SECOND_CUT_TO_FIT); where none fits, ``later`` may run it."""
        if not self.second_wanted:
            return
        clock = self.clock
        end = clock.latest(past_share=False)
        if end is not None and self.backend != "greedy":  # never earlier than greedy's backend
            end = max(end, clock.latest(rows=WITH_ROWS) or end)  # no rows follow so short a window
        if clock.fits(end, TAIL if SECOND_CUT_TO_FIT else 1.0):
            self.another(SECOND, end)
            self.second_wanted = False

    def later(self, searching: bool) -> None:
        """The candidates after the dense pass, each where the budget leaves room for it: the
        dense pass first where ``second`` skipped it and no search follows after all (no rows
        written: the candidates alone make the plan and may use the budget past their share; it
        is the greedy backend's plan: L full 1002 came out x0.9986 of the greedy-only cycle with
        value-greedy run and the dense pass not), value-greedy, the LP relaxation's order, each
        order again with the other victim rule, the topology baselines."""
        clock, s = self.clock, self.s
        if self.second_wanted and not searching and clock.fits(end := clock.latest()):
            self.another(SECOND, end)
        # Where a search runs beside them, value-greedy keeps the slot: it paid up to 1.1% more
        # there (M dev seeds; docs/benchmarks.md section 1, fifteenth pass). It is the candidate
        # that pays most where the search cannot.
        if clock.fits(end := clock.latest()):
            self.another(VALUE_AWARE, end)
        shares = None
        if s.lp_guide and clock.room_for_another(LP_SHARE, past_share=False):
            with self.timer("lp"):  # which gangs the relaxation starts: greedy in that order too
                # within its share of the budget: at L with topology on, the LP of the
                # per-domain model took 3.5 s of a 3 s target (docs/benchmarks.md section 5)
                lp_window = (
                    self.limit
                    if clock.budget is None
                    else clock.start + LP_SHARE * clock.budget - time.perf_counter()
                )
                shares = relaxation(self.model, self.built, min(self.limit, lp_window))
            if shares is not None and clock.fits(end := clock.latest()):
                self.another(GUIDED, end, shares)
        # Each order again with the other victim rule, in what is left of the candidates'
        # share: where the search finds nothing better in its window, these decide the
        # plan (M dev seeds, worst gap to the best known: fragmented 1.31 -> 0.92%, full
        # 1.30 -> 0.99%; docs/benchmarks.md section 1).
        guided = shares is not None
        wanted = ((DENSE, self.problem.gang_start, None), (GUIDED_VALUE, guided, shares))
        for label, useful, given in wanted:
            if useful and clock.fits(end := clock.latest()):
                self.another(label, end, given)
        if self.problem.asks:  # never below a topology baseline's plan
            for name, baseline in BASELINES.items():
                if clock.room_for_another():
                    with self.timer("greedy"):
                        st = replay(
                            self.snapshot, self.problem, baseline(self.snapshot, self.topology)
                        )
                    with self.timer("plan"):
                        self.others.append(score(self.model, self.built, name, st, [], None))

    def ranked(self) -> list[Candidate]:
        """Every candidate made, the child's included, best first. Nothing is left to run
        here: the pass the child is still on, which stops taking victims for child_end, is
        waited for up to then rather than lost (M dev seeds: x1.0006 over 72, up to +1.6%;
        docs/benchmarks.md section 1, twentieth pass). The budget holds: child_end is MARGIN of
        it less the check's estimate."""
        self.receive()
        if self.beside is not None:
            if not self.received.keys() >= set(self.labels):
                with self.timer("beside"):
                    wait = max(0.0, self.child_end - time.perf_counter())
                    self.received.update(self.beside.arrived(wait=wait))
            self.beside.stop()
            with self.timer("beside"):
                self.others += arrivals(
                    self.snapshot, self.problem, self.built, self.received, self.others
                )
        made = (c for c in self.others if c is not None)
        return sorted(made, key=lambda c: c.rank, reverse=True)


def run_cycle(
    snapshot: ClusterSnapshot,
    config: SchedulerConfig,
    now: datetime,
    backend: str | None = None,
    time_limit: float | None = None,
    *,
    bounded: bool = False,
    history: SearchHistory | None = None,
) -> CycleResult:
    """One global decision. Candidates (the solver's plan and greedy's) are packed onto nodes and
    ranked by the model objective; the best one the independent checker accepts is emitted.

    ``time_limit`` is the search's. Without it the cycle has a budget (``cycleSeconds``, else one
    by cluster size, solvers/budget.py): the search gets what the budget leaves, at most
    ``timeLimitSeconds``, and stops early once it proves its optimum. With it, the search runs
    for ``time_limit`` (``timeLimitSeconds`` unread) whatever the budget; ``bounded`` then keeps
    the budget for the rest (greedy's other candidates, the LP relaxation, repacking and
    compacting: what-if's ``--time-limit``, where value-greedy alone took 13-18 s at 10,000
    nodes); unbounded, every candidate runs to its end, so a run does not depend on the
    machine's speed (the simulator, best-known solves). ``bounded`` changes nothing without
    ``time_limit``. ``history`` (the controller's, kept between cycles) rules out a budgeted
    search that an earlier cycle's says cannot find a solution in its window, and learns from
    the one that runs (planning/history.py).

    Python's cyclic garbage collector is paused for the cycle: its full passes over a large
    snapshot cost 15% of a cycle at M (measured in docs/benchmarks.md). The cycle's own garbage is
    freed by reference counting, or by the next automatic collection. The switch is process-wide:
    other threads (metrics, probes) run without cyclic collection while a cycle runs."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with ExitStack() as ends:  # what the cycle starts beside it (a child) ends with it
            return _cycle(snapshot, config, now, backend, time_limit, bounded, ends, history)
    finally:
        if was_enabled:
            gc.enable()


def _cycle(
    snapshot: ClusterSnapshot,
    config: SchedulerConfig,
    now: datetime,
    backend: str | None,
    time_limit: float | None,
    bounded: bool,
    ends: ExitStack,
    history: SearchHistory | None,
) -> CycleResult:
    start = time.perf_counter()
    s = config.settings
    backend = backend or s.solver
    explicit = time_limit is not None  # the search's, whatever the cycle takes
    # bounds everything but an explicit search; None (explicit, unbounded): all runs to its end
    budget = None
    schedulable = sum(1 for n in snapshot.nodes.values() if n.schedulable)
    if not explicit or bounded:
        budget = s.cycle_seconds or auto_budget(schedulable)
    search_budget = None if explicit else budget  # the budget that bounds the search too
    limit = time_limit if time_limit is not None else s.time_limit_seconds
    if search_budget is not None:
        limit = min(limit, search_budget)
    timer = Timer()
    with timer("model"):
        topology, problem, model, built, building = _model(snapshot, config, now)
    share = VARIANTS if len(built.model.names) > SMALL_MODEL else VARIANTS_SMALL
    clock = Clock(start, budget, search_budget, backend != "greedy", timer, building, share)
    if history is not None:  # another solver or its settings: what it found says nothing
        history.under(search_context(backend, s))
    made = _Candidates(
        snapshot, problem, model, built, topology, backend, s, timer, clock, limit, history
    )
    if (
        BESIDE
        and budget is not None
        and schedulable <= BESIDE_NODES
        and backend != "greedy"
        and problem.too_large is None
        and len(built.model.names) > SMALL_MODEL
    ):
        made.fork(ends)
    hint = made.first_pass()
    clock.one_pass = one_pass = timer.phases["greedy"]

    made.second()
    # The model's rows, written now where a search may still follow: the rules below then weigh
    # the whole build, measured. Where none can (its window, shrinking from now on, is short of
    # SEARCH_NEEDS whole builds as estimated: XL), they are never written. After the dense
    # pass, which the greedy backend, writing none, runs at this point too.
    solving = hinted = None
    if backend != "greedy" and (
        search_budget is None
        or clock.window(time.perf_counter(), search_budget) >= clock.needed(WITH_ROWS)
    ):
        with timer("model"):
            rows_start = time.perf_counter()
            built.model.write_rows()
            clock.building += time.perf_counter() - rows_start
        if search_budget is not None:  # the budgeted search starts now, beside the candidates
            solving = made.search(None)
    else:
        clock.building *= WITH_ROWS
    try:  # a search started above runs while the candidates are made and the best checked
        if backend != "greedy" and problem.too_large is None:
            made.later(searching=solving is not None)
        plans = made.ranked()
        first, rest = plans[0], plans[1:]  # the best greedy plan hints an explicit search
        hint = first.values if first.values is not None else hint
        if solving is None:  # an explicit search, hinted with the best candidate; or none
            solving = made.search(hint)
        elif (
            first.values is not None
            and (solving.search is not None or made.ruled_out)
            and _hinted_follows(backend, built)
        ):
            hinted = made.search(first.values)  # on the core the candidates no longer use
        with timer("check"):  # on this thread, while the solver searches
            verdict(snapshot, first, now, s)
    except BaseException:
        for under_way in (solving, hinted):
            if under_way is not None:
                under_way.cancel()
        raise
    assert solving is not None
    with timer("solve"):
        deadline = None
        if search_budget is not None:  # greedy's plan's pack and check, the solver's needs
            after = timer.phases.get("plan", 0.0) + timer.phases.get("check", 0.0)
            deadline = search_deadline(start, search_budget, after)
        stats, values = _searched(built, solving, hinted, deadline)
        made.remember(hinted)
    candidates = [first, *rest]
    packs_end = _packs_end(start, budget, explicit and backend != "greedy", limit, timer)
    # A solution equal to the best candidate's values (an explicit search's hint given back
    # unimproved) is that plan: packed again, it would only be checked again (at XL that is 1-2
    # s). Nor is one the model values below that plan packed: packing keeps its value or loses
    # some (giving back an eviction the packed plan does not need aside), so it would rank below;
    # an unhinted search stopped early, e.g. when greedy's passes ran to the budget's end beside
    # it, returns such plans. Both are still tried when that plan failed the checker.
    if values is not None and (first.violations or may_rank_first(built, values, hint, first)):
        with timer("plan"):
            candidates += _solver_plans(snapshot, problem, model, built, backend, values, packs_end)
    candidates.sort(key=lambda c: c.rank, reverse=True)  # ties go to the solver
    if problem.asks and (packs_end is None or time.perf_counter() + one_pass <= packs_end):
        with timer("plan"):  # the best plan's sizes, best-fit decreasing (planning/pack.py)
            st, notes, _ = compact(snapshot, problem, candidates[0].state)
            candidates.append(score(model, built, COMPACT, st, notes, None))
        candidates.sort(key=lambda c: c.rank, reverse=True)
    return _checked(snapshot, candidates, stats, timer, now, s)


def _packs_end(
    start: float, budget: float | None, searched: bool, limit: float, timer: Timer
) -> float | None:
    """When repacking and compacting must end: MARGIN of the budget (as the search's deadline),
    plus an explicit search's nominal limit where one ``searched`` (not the time it took: one
    that proves its optimum early leaves the rest to them), less the emitted plan's check, about
    as long as greedy's plan's (measured). Repacks that ran to the budget's end with the check
    after them took M hetero-resource 1011 to 1.005 s of a 1 s budget. None: no budget."""
    if budget is None:
        return None
    return start + MARGIN * budget + (limit if searched else 0.0) - timer.phases.get("check", 0.0)


def _solver_plans(
    snapshot: ClusterSnapshot,
    problem: Problem,
    model: Problem,
    built: Built,
    backend: str,
    values: list[int],
    packs_end: float | None,
) -> list[Candidate]:
    """The solver's solution packed onto nodes; while some job fails to pack (the optimum lost
    in packing), packed again with those jobs first, up to REPACKS times while ``packs_end``
    leaves time for another packing."""
    assignment = solution_assignment(model, built, values)
    packing = time.perf_counter()
    st, notes, failed = pack(snapshot, problem, assignment)
    out = [score(model, built, backend, st, notes, None)]
    packing = time.perf_counter() - packing
    ahead: list[str] = []
    for _ in range(REPACKS):
        ahead += [f for f in failed if f not in ahead]
        if not failed or (packs_end is not None and time.perf_counter() + packing > packs_end):
            break
        st, notes, failed = pack(snapshot, problem, assignment, first=ahead)
        out.append(score(model, built, backend, st, notes, None))
    return out


def _checked(
    snapshot: ClusterSnapshot,
    candidates: list[Candidate],
    stats: SolveStats,
    timer: Timer,
    now: datetime,
    s: Settings,
) -> CycleResult:
    """The best candidate the independent checker accepts, best first. Fail closed: a plan the
    checker rejects is never emitted; with none accepted, the plan binds and evicts nothing
    and carries the violations; its rows, the best candidate's, keep every job at its size
    (they said the sizes no plan got: a gang reported as placed while nothing was bound)."""
    rejected: list[str] = []
    for c in candidates:
        if c.plan is None:
            with timer("check"):
                verdict(snapshot, c, now, s)
        if c.violations:
            rejected += [f"{c.label}: {v}" for v in c.violations]
            continue
        assert c.plan is not None
        objective = float(c.value) if c.value is not None else None
        stats = replace(stats, objective=objective, solver_objective=stats.objective)
        return CycleResult(c.plan, stats, c.terms, timer.phases, [], c.label)
    held = "no plan passed the checker this cycle (its notes say why): nothing changes"
    jobs = tuple(  # the best candidate's rows, as nothing happens
        row if row.planned == row.current else replace(row, planned=row.current, reason=held)
        for row in diff(snapshot, candidates[0].state, now, []).jobs
    )
    plan = Plan(jobs=jobs, notes=("no plan passed the checker", *rejected))
    return CycleResult(plan, stats, {}, timer.phases, rejected or ["no plan"], "")


def _model(
    snapshot: ClusterSnapshot, config: SchedulerConfig, now: datetime
) -> tuple[Topology, Problem, Problem, Built, float]:
    """The topology levels in force, the problem, the model the solver sees (jobs aggregated)
    and its build, whose rows are written when first read (a search, the LP); with the build's
    seconds, the cycle's measure of the model's size on this machine, now."""
    topology, topology_note = choose(
        config.topology.levels, config.topology.kueue_topology, snapshot.topologies
    )
    problem = prepare(snapshot, config.weights, config.settings, now, topology)
    if topology_note:
        problem = replace(problem, topology_note=topology_note)
    model = aggregate(problem, oldest_first(snapshot))
    build_start = time.perf_counter()
    built = build(model)
    return topology, problem, model, built, time.perf_counter() - build_start


def search_context(backend: str, s: Settings) -> tuple[object, ...]:
    """What a search's outcome depends on beside the model: the solver and its settings (a
    search history's failures hold under these only)."""
    return (backend, s.workers, s.random_seed, s.linearization_level)


def _hinted_follows(backend: str, built: Built) -> bool:
    """Whether a hinted search joins the budgeted one under way, or runs in its place where an
    earlier cycle's history ruled that one out (HINTED_BESIDE): CP-SAT, a small model."""
    return HINTED_BESIDE and backend == "cpsat" and len(built.model.names) <= SMALL_MODEL


def _searched(
    built: Built, solving: Solving, hinted: Solving | None, deadline: float | None
) -> tuple[SolveStats, list[int] | None]:
    """The searches' outcome (stats, model values), once stopped at ``deadline`` (None: each
    runs to its own limit): of two, the one whose solution the model values higher, the
    unhinted one on a tie or where the hinted one found none."""
    if deadline is not None:
        solving.stop_at(deadline, hinted)
    one = solving.result()
    if hinted is None:
        return one
    stats, values = hinted.result()
    if values is None or (
        one[1] is not None
        and built.model.objective_value(values) <= built.model.objective_value(one[1])
    ):
        return one
    return replace(stats, detail=f"{stats.detail} (hinted, beside the unhinted search)"), values
