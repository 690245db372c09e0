"""Topology presets (issue 15): blocks of 4-8 racks of 8-32 8-GPU nodes, 70-95% used, and pending
gangs that ask for a rack through the 1.37 PodGroup, Kueue's annotation or Volcano's soft mode."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from solver_sched.io import manifests as m
from solver_sched.synthetic.classic import GPUS_PER_NODE, PRIORITIES, _ts

BLOCK_LABEL = "topology.solver-sched.io/block"
RACK_LABEL = "topology.solver-sched.io/rack"
TOPOLOGY_LEVELS = (BLOCK_LABEL, RACK_LABEL, "kubernetes.io/hostname")
# preset -> (nodes per rack, racks per block, blocks): each a (low, high) range drawn per seed
TOPOLOGY_PRESETS: dict[str, tuple[tuple[int, int], tuple[int, int], tuple[int, int]]] = {
    "rack8": ((8, 8), (4, 8), (1, 2)),
    "rack16": ((16, 16), (4, 6), (2, 2)),
    "rack32": ((24, 32), (4, 8), (1, 2)),
}
# issue 15's scale targets: L = 2,000 nodes in 100 racks (10 blocks of 10 racks of 20), XL =
# 10,000 nodes in 400 racks (20 blocks of 20 racks of 25)
TOPOLOGY_SCALE: dict[str, tuple[tuple[int, int], tuple[int, int], tuple[int, int]]] = {
    "rackL": ((20, 20), (10, 10), (10, 10)),
    "rackXL": ((25, 25), (20, 20), (20, 20)),
}
_KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"


def topology_objects(preset: str, seed: int, now: datetime) -> list[dict[str, Any]]:
    """A cluster of blocks of racks of 8-GPU nodes (labels and a Kueue ``Topology``), 70-95%
    used by running gangs placed as a cluster's history leaves them (each in a random rack, the
    rest wherever it fits), and pending gangs that ask for a rack: required through the 1.37
    PodGroup (sizes up to half a rack), preferred through Kueue's annotation or Volcano's soft
    mode (up to two racks). Deterministic for a seed."""
    per_rack, racks_per_block, blocks = (
        random.Random(seed).randint(lo, hi)
        for lo, hi in {**TOPOLOGY_PRESETS, **TOPOLOGY_SCALE}[preset]
    )
    rng = random.Random(f"{preset}-{seed}")
    load = rng.uniform(0.70, 0.95)
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": "default"},
            "spec": {"levels": [{"nodeLabel": key} for key in TOPOLOGY_LEVELS]},
        }
    ]
    names: list[str] = []
    for b in range(blocks):
        for r in range(racks_per_block):
            for k in range(per_rack):
                name = f"b{b}-r{r}-n{k:02d}"
                labels = {BLOCK_LABEL: f"b{b}", RACK_LABEL: f"r{r}"}
                objs.append(
                    m.node(name, gpus=GPUS_PER_NODE, cpu="96", memory="1024Gi", labels=labels)
                )
                names.append(name)
    # history: the racks filled by gangs of whole nodes (and 4-GPU pairs), then gangs finished
    # at random until the load is reached: free room is scattered over the racks
    gangs: list[tuple[list[int], int]] = []
    cursor = 0
    while cursor < len(names):
        pods, gpus = rng.choice(((1, 8), (2, 8), (3, 8), (4, 8), (6, 8), (2, 4)))
        nodes = list(range(cursor, min(len(names), cursor + (pods if gpus == 8 else 1))))
        gangs.append((nodes * (1 if gpus == 8 else pods), gpus))
        cursor = nodes[-1] + 1
    rng.shuffle(gangs)
    used = sum(len(ns) * g for ns, g in gangs)
    total = len(names) * GPUS_PER_NODE
    while gangs and used > load * total:
        ns, g = gangs.pop()
        used -= len(ns) * g
    free = [GPUS_PER_NODE] * len(names)
    for k, (ns, gpus) in enumerate(gangs):
        for n in ns:
            free[n] -= gpus
        objs += m.gang(
            f"run-{k:04d}",
            len(ns),
            gpus=gpus,
            running_on=[names[n] for n in ns],
            priority=rng.choice([p for p, _ in PRIORITIES]),
            cpu=str(2 * gpus),
            memory=f"{16 * gpus}Gi",
            created=_ts(now - timedelta(hours=rng.randint(2, 48))),
        )
    demand = 0
    j = 0
    while demand < 1.3 * sum(free):  # pending: more than the room left
        kind = rng.choices(("required", "kueue", "volcano", "small"), weights=(3, 4, 2, 1))[0]
        if kind == "small":
            pods, gpus = 1, rng.choice((1, 2, 4))
        else:
            top = per_rack // 2 if kind == "required" else per_rack
            pods, gpus = rng.randint(2, max(2, top)), 8
        prio = rng.choices([p for p, _ in PRIORITIES], weights=[w for _, w in PRIORITIES])[0]
        extra: dict[str, Any] = {}
        if kind == "required":
            extra = {
                "api": "scheduling.k8s.io",
                "group_spec": {"schedulingConstraints": {"topology": [{"key": RACK_LABEL}]}},
            }
        elif kind == "kueue":
            extra = {"annotations": {_KUEUE_PREFERRED: RACK_LABEL}}
        elif kind == "volcano":
            extra = {
                "api": "scheduling.volcano.sh",
                "group_spec": {"networkTopology": {"mode": "soft"}},
            }
        objs += m.gang(
            f"job-{j:04d}",
            pods,
            gpus=gpus,
            priority=prio,
            cpu=str(2 * gpus),
            memory=f"{16 * gpus}Gi",
            created=_ts(now - timedelta(minutes=rng.randint(1, 600))),
            **extra,
        )
        demand += pods * gpus
        j += 1
    return objs
