"""Turn per-class counts into concrete nodes, repair what the aggregation allowed, and drop
evictions the final plan does not need.

The model reasons over classes of identical nodes; a class's summed capacity can admit pods that no
single node holds. Packing goes job by job (guaranteed starts first, larger pods first) into the
class the solver chose, then into any feasible node; a gang that still does not fit falls back,
all-or-nothing, to the largest allowed size it already holds (0 when it was starting).
"""

from __future__ import annotations

from collections import Counter

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Pod
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.problem import Problem
from solver_sched.placement.state import Chooser, PlanState
from solver_sched.solvers.result import Assignment


def pack(
    snapshot: ClusterSnapshot, problem: Problem, assignment: Assignment
) -> tuple[PlanState, list[str]]:
    st = PlanState(snapshot, problem)
    st.prefer = dict(assignment.domains)  # the solver's domains, tried first
    budget: Counter[tuple[int, int]] = Counter()  # pods per (shape, class) the solver chose
    for (_job, sid, cid), n in assignment.counts.items():
        budget[(sid, cid)] += n
    notes: list[str] = []
    jobs = problem.jobs
    target = {jm.name: assignment.sizes.get(jm.name, 0) for jm in jobs}
    for j, jm in enumerate(jobs):  # evictions first: they make the room
        if target[jm.name] < jm.current:
            st.resize(j, target[jm.name], check_quota=False)
    growing = [j for j, jm in enumerate(jobs) if target[jm.name] > jm.current]
    growing.sort(
        key=lambda j: (not jobs[j].starting, -jobs[j].priority, -_largest(problem, j), jobs[j].name)
    )
    chooser = _chooser(st, problem, budget)
    for j in growing:
        jm = jobs[j]
        if not st.resize(j, target[jm.name], chooser=chooser, check_quota=False):
            fallback = (
                0
                if jm.starting
                else max((o.size for o in jm.options if o.size <= jm.current), default=0)
            )
            st.resize(j, fallback, check_quota=False)
            notes.append(
                f"repair: {jm.name} could not be packed at {target[jm.name]} pods; "
                f"kept at {fallback}"
            )
    return st, notes


def _largest(problem: Problem, j: int) -> int:
    sizes = [
        problem.shapes[s].requests.get(res.GPU, 0) for o in problem.jobs[j].options for s in o.new
    ]
    return max(sizes, default=0)


def _chooser(st: PlanState, problem: Problem, budget: Counter[tuple[int, int]]) -> Chooser:
    """Prefer the classes the solver counted, then any node that fits: that fallback is the repair
    of what class aggregation allowed."""

    classes_of: dict[int, list[int]] = {}  # shape -> the classes it has a budget in, in order
    for sid, cid in sorted(budget):
        classes_of.setdefault(sid, []).append(cid)

    def by_class(pod: Pod, cluster: str) -> str | None:
        sid = problem.shape_of[pod.name]
        for cid in classes_of.get(sid, ()):
            if budget[(sid, cid)] <= 0 or problem.classes[cid].cluster != cluster:
                continue
            node = st.nodes.pick(pod, cluster, cid)
            if node is not None:
                budget[(sid, cid)] -= 1
                return node
        return st.nodes.pick(pod, cluster)

    return by_class


def minimize_evictions(st: PlanState) -> list[str]:
    """Undo every eviction the plan can do without: the most valuable victims first."""
    notes = []
    jobs = st.problem.jobs
    victims = [j for j, jm in enumerate(jobs) if st.size[jm.name] < jm.current and jm.running_ok]
    victims.sort(key=lambda j: (-jobs[j].priority, jobs[j].name))
    for j in victims:
        jm = jobs[j]
        planned = st.size[jm.name]
        for o in sorted(jm.options, key=lambda o: -o.size):
            if planned < o.size <= jm.current and st.resize(j, o.size):
                notes.append(f"kept {jm.name} at {o.size} pods: its eviction was not needed")
                break
    return notes
