"""The first synthetic generator (``solver-sched generate --nodes ...``), kept as it was.

N nodes x 8 GPUs in two pools, partly used by running gangs; gang sizes from 1 to 64 GPUs
(1-8 pods x 1-8 GPUs); 40% elastic with power-of-two sizes, some inside their cooldown; three
priorities; a two-level ElasticQuotaTree with 4 parents x 4 leaves (16 team namespaces).
Deterministic for a seed.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from solver_sched.io import manifests as m

GPUS_PER_NODE = 8
LEAVES = 16
PRIORITIES = ((0, 0.6), (100, 0.3), (1000, 0.1))


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _shape(rng: random.Random) -> tuple[int, int]:
    """(pods, gpus per pod): a mix from 1 to 64 GPUs, small gangs most common."""
    gpus = rng.choices((1, 2, 4, 8), weights=(10, 3, 2, 1))[0]
    pods = rng.choices((1, 2, 4, 8), weights=(10, 3, 2, 1))[0]
    return pods, gpus


def _tree(nodes: int) -> dict[str, Any]:
    total = nodes * GPUS_PER_NODE
    parents = []
    for p in range(4):
        leaves = []
        for leaf in range(4):
            i = p * 4 + leaf
            leaves.append(
                {
                    "name": f"team-{i:02d}",
                    "namespaces": [f"team-{i:02d}"],
                    "min": {"nvidia.com/gpu": str(total // LEAVES)},
                    "max": {
                        "nvidia.com/gpu": str(max(8, total // 4)),
                        "kube-queue/max-jobs": str(max(4, nodes)),
                    },
                }
            )
        parents.append(
            {
                "name": f"org-{p}",
                "min": {"nvidia.com/gpu": str(total // 4)},
                "max": {"nvidia.com/gpu": str(max(8, total // 2))},
                "children": leaves,
            }
        )
    return m.quota_tree(
        {
            "name": "root",
            "min": {"nvidia.com/gpu": str(total)},
            "max": {"nvidia.com/gpu": str(total)},
            "children": parents,
        }
    )


def _first_fit(free: list[int], pods: int, gpus: int, cursor: int) -> tuple[list[int], int]:
    """Node indexes for ``pods`` pods of ``gpus`` GPUs, first fit from ``cursor``; all or none
    (a gang that does not fit takes nothing and is submitted as pending)."""
    taken: list[int] = []
    for _ in range(pods):
        for step in range(len(free)):
            n = (cursor + step) % len(free)
            if free[n] >= gpus:
                free[n] -= gpus
                taken.append(n)
                cursor = n
                break
    if len(taken) < pods:
        for n in taken:
            free[n] += gpus
        return [], cursor
    return taken, cursor


def synthetic_objects(
    nodes: int, running: int, pending: int, seed: int, now: datetime
) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    objs: list[dict[str, Any]] = [_tree(nodes)]
    free = []
    for i in range(nodes):
        objs.append(
            m.node(
                f"node-{i:05d}",
                gpus=GPUS_PER_NODE,
                cpu="96",
                memory="1024Gi",
                labels={"pool": "a" if i % 2 else "b"},
            )
        )
        free.append(GPUS_PER_NODE)
    cursor = 0
    for k in range(running + pending):
        is_running = k < running
        pods, gpus = _shape(rng)
        elastic = rng.random() < 0.4
        prio = rng.choices([p for p, _ in PRIORITIES], weights=[w for _, w in PRIORITIES])[0]
        ns = f"team-{rng.randrange(LEAVES):02d}"
        name = f"job-{k:06d}"
        created = now - timedelta(minutes=rng.randrange(1, 600))
        minimum, maximum, size = pods, pods, pods
        last = None
        if elastic:
            minimum = rng.choice([p for p in (1, 2, 4) if p <= pods])
            maximum = minimum * rng.choice((2, 4, 8))
            size = (
                minimum
                if not is_running
                else rng.choice([s for s in (1, 2, 4, 8, 16, 32) if minimum <= s <= maximum])
            )
            if is_running and rng.random() < 0.25:
                last = now - timedelta(minutes=rng.randrange(0, 10))
        existing = maximum  # elastic: every pod up to max exists; rigid: maximum == pods
        placement: list[str] = []
        if is_running:
            taken, cursor = _first_fit(free, size, gpus, cursor)
            placement = [f"node-{n:05d}" for n in taken]
        objs += m.gang(
            name,
            existing,
            namespace=ns,
            gpus=gpus,
            min_member=minimum,
            max_member=maximum if elastic else None,
            size_policy="power-of-two" if elastic else None,
            running_on=placement or None,
            priority=prio,
            cpu=str(2 * gpus),
            memory=f"{16 * gpus}Gi",
            last_scale_time=_ts(last) if last else None,
            created=_ts(created),
        )
    return objs


def write_cluster(
    path: Path, nodes: int, running: int, pending: int, seed: int, now: datetime
) -> None:
    objs = synthetic_objects(nodes, running, pending, seed, now)
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
