"""The scale run: many KWOK nodes, many pending pods in gangs, one stack; how long until every
placeable gang is bound.

Gangs of 8, 16, 32 and 64 pods of 4 GPUs (in turn) up to ``pods`` pods, half at high priority,
all created while no scheduler runs; for the Kueue stack Jobs are suspended, so Kueue's admission
and the Job controller's pod creation are part of its time. The stack then starts, and the clock
runs from its start until every gang that fits is bound (all of them when ``pods x 4`` <= the
cluster's GPUs) or until, after the first bind, no pod was bound for ``quiet`` seconds (a
scheduler's first decision over thousands of nodes may take longer than that).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks.live.replay import PodWatch
from benchmarks.live.stage import Stage, StageSpec
from benchmarks.live.workload import job_manifest
from solver_sched.kube.api import KubeApi, load_client

SIZES = (8, 16, 32, 64)
GPUS_PER_POD = 4


def gangs_for(pods: int) -> list[int]:
    out: list[int] = []
    while sum(out) < pods:
        out.append(min(SIZES[len(out) % len(SIZES)], pods - sum(out)))
    return out


def scale_run(
    stack: str, nodes: int, pods: int, work: Path, quiet: float = 60.0, limit: float = 3600.0
) -> dict[str, Any]:
    sizes = gangs_for(pods)
    spec = StageSpec(stack, nodes=nodes, defer_stack=True)
    began = time.monotonic()
    with Stage(spec, work) as stage:
        assert stage.info is not None
        stage_up = time.monotonic() - began  # API server, controllers, nodes Ready
        api = KubeApi(load_client(stage.info.kubeconfig, pool_size=8))
        for i, size in enumerate(sizes):
            prio = "high" if i % 2 else "low"
            manifest = job_manifest(stack, f"s{i:05d}", "default", size, GPUS_PER_POD, prio)
            api.request("POST", "/apis/batch/v1/namespaces/default/jobs", body=manifest)
        watch = PodWatch(KubeApi(load_client(stage.info.kubeconfig, pool_size=4)))
        watch.start()
        if stack != "kueue":  # the Job controller makes every pod before the stack starts
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and len(watch.snapshot()) < pods:
                time.sleep(1.0)
        created = len(watch.snapshot())
        t0 = time.monotonic()
        jobs_and_pods = t0 - began - stage_up
        stage.start_stack()
        started = time.monotonic() - t0
        placeable = min(pods, nodes * 8 // GPUS_PER_POD)
        last_count, last_change = 0, time.monotonic()
        while time.monotonic() - t0 < limit:
            stage.check_alive()
            n = len(watch.bound_at)
            if n != last_count:
                last_count, last_change = n, time.monotonic()
            if n >= placeable or (n and time.monotonic() - last_change > quiet):
                break
            time.sleep(0.5)
        watch.stop.set()
        views = watch.snapshot()
        bound_by_job: dict[str, int] = {}
        for v in views:
            if v.node:
                bound_by_job[v.job] = bound_by_job.get(v.job, 0) + 1
        complete = sum(1 for i, size in enumerate(sizes) if bound_by_job.get(f"s{i:05d}") == size)
        partial = sum(
            1 for i, size in enumerate(sizes) if 0 < bound_by_job.get(f"s{i:05d}", 0) < size
        )
        end = max(watch.bound_at.values(), default=t0)
        first = min(watch.bound_at.values(), default=t0)
        return {
            "nodes": nodes,
            "pods": pods,
            "gangs": len(sizes),
            "stage_up_s": stage_up,
            "jobs_and_pods_s": jobs_and_pods,
            "pods_created_before_start": created,
            "stack_start_s": started,
            "bound": len(watch.bound_at),
            "complete_gangs": complete,
            "partial_gangs": partial,
            "placeable_pods": placeable,
            "first_bind_s": first - t0,
            "last_bind_s": end - t0,
            "scheduler_cpu_s": stage.scheduler_cpu_seconds(),
            "api_requests": sum(stage.requests().values()),
        }
