"""The order in which shrinkable jobs give back their running pods, when a waiting pod needs a
whole node's room (``Problem.running_order``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Pod
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.formulation.jobs import JobState


def scale_in_orders(
    snapshot: ClusterSnapshot, active: Mapping[str, JobState], free: Mapping[str, res.Resources]
) -> dict[str, tuple[Pod, ...]]:
    """Running pods of shrinkable jobs in the order they are kept, when a waiting pod needs more
    GPUs than any node has free ("room").

    Highest index first can spread a scale-in over many nodes, so that such a pod finds no node
    although enough GPUs are freed. Here the pods evicted first are those on the nodes that
    scale-ins could empty: nodes that can hold the room, with the fewest GPUs held by pods no
    scale-in frees ("pinned"), then the most free GPUs. The first pod (a master, or worker 0
    hosting the rendezvous) stays first, and only jobs whose other pods have equal requests are
    reordered, so usage at each size is unchanged. The model, greedy, the packer and the plan
    all use this one order."""
    nodes = snapshot.nodes
    gpus = {n: f.get(res.GPU, 0) for n, f in free.items() if nodes[n].schedulable}
    largest_free = max(gpus.values(), default=0)
    room = max(
        (
            p.requests.get(res.GPU, 0)
            for st in active.values()
            if st.starting
            for p in st.waiting
            if p.requests.get(res.GPU, 0) > max(1, largest_free)
        ),
        default=0,
    )
    if not room:
        return {}
    shrinkable = [
        st for st in active.values() if st.running_ok and any(0 < s < st.current for s in st.sizes)
    ]
    movable: dict[str, int] = defaultdict(int)
    for st in shrinkable:
        for p in st.running[1:]:
            movable[p.node_name or ""] += p.requests.get(res.GPU, 0)

    def keep_first(item: tuple[int, Pod]) -> tuple[bool, int, int, str, int]:
        i, p = item
        n = p.node_name or ""
        alloc = nodes[n].allocatable.get(res.GPU, 0) if n in nodes else 0
        pinned = alloc - gpus.get(n, 0) - movable[n]
        return alloc >= room and n in gpus, -pinned, gpus.get(n, 0), n, i

    out: dict[str, tuple[Pod, ...]] = {}
    for st in shrinkable:
        rest = st.running[1:]
        if len(rest) < 2 or any(p.requests != rest[0].requests for p in rest):
            continue
        order = (st.running[0], *(p for _, p in sorted(enumerate(rest), key=keep_first)))
        if order != st.running:
            out[st.job.name] = order
    return out
