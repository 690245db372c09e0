"""Size options: per job and size, the pods bound, the resources released per node class, the
quota usage and the value units, in one pass over the job's pods in keep order."""

from __future__ import annotations

from collections.abc import Mapping

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Job, Pod
from solver_sched.formulation.problem import SizeOption


def size_options(
    job: Job,
    running: tuple[Pod, ...],
    waiting: tuple[Pod, ...],
    sizes: tuple[int, ...],
    shapes_of: Mapping[str, int],
    class_of: Mapping[str, int],
) -> list[SizeOption]:
    """One SizeOption per size, in one pass over the job's pods.

    At size s the job keeps a prefix of (running + waiting) in keep order (see ``change_to``): the
    first s running pods, or all running plus the first s - len(running) waiting ones. Usage and
    value are prefix sums; evicted pods are the running suffix past s."""
    seq = running + waiting
    cur = len(running)
    top = max(sizes, default=0)
    if top > len(seq):
        raise ValueError(f"job {job.name} has {len(seq)} pods, cannot run {top}")
    m = job.min_pods
    marks = {*sizes, m}
    # the prefix sums, kept at the sizes asked for (and the minimum) only
    units = {0: 0}
    usage: dict[int, dict[str, int]] = {0: {}}
    new_at: dict[int, dict[int, int]] = {}
    u = 0
    acc: dict[str, int] = {}
    new: dict[int, int] = {}
    for i, pod in enumerate(seq[:top], 1):
        u += res.value_units(pod.requests)
        res.add_into(acc, pod.requests)
        if i > cur:
            sid = shapes_of[pod.name]
            new[sid] = new.get(sid, 0) + 1
        if i in marks:
            units[i] = u
            usage[i] = dict(acc)
            new_at[i] = dict(new)
    # released at size s: requests of running[s:] per class, summed from the tail
    released_at: dict[int, dict[int, dict[str, int]]] = {}
    freed: dict[int, dict[str, int]] = {}
    wanted = set(sizes)
    for k in range(cur - 1, -1, -1):
        pod = running[k]
        cid = class_of.get(pod.node_name or "")
        if cid is not None:
            res.add_into(freed.setdefault(cid, {}), pod.requests)
        if k in wanted:
            released_at[k] = {c: dict(v) for c, v in freed.items()}
    out = []
    for size in sizes:
        released = released_at.get(size, {})  # sizes at or above cur evict nothing
        guaranteed = size >= m
        out.append(
            SizeOption(
                size=size,
                new=new_at.get(size, {}),
                released=released,
                usage=usage[size],
                guaranteed_units=units[m] if guaranteed else 0,
                guaranteed_gpus=usage[m].get(res.GPU, 0) if guaranteed else 0,
                elastic_units=units[size] - units[m] if size > m else 0,
                evicted=max(0, cur - size),
            )
        )
    return out
