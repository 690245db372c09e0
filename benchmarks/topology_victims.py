"""Preemption for gangs that require a rack (issue 15: "victims are chosen so a domain actually
empties"): greedy's victim search with and without its domain-at-a-time step, on clusters whose
racks are full of low-priority gangs, side by side with the default cycle, in one run.

Each instance (deterministic for its seed): 10-60 racks of 2-8 8-GPU nodes, every node filled
with one-pod priority-0 gangs of 1-8 GPUs (a few of priority 100), and 2-6 pending priority-1000
gangs of whole-node pods that require one rack (the 1.37 PodGroup's
``schedulingConstraints.topology``), each of half to all of a rack. The running gangs' names are
shuffled, so the search's order (priority, then name) visits the racks in no particular order.

Per instance: the required gangs started and the evictions of
- ``anywhere``: greedy with victims sought only across the cluster (the search before the
  domain step; an ablation of ``solvers/fences.py``);
- ``greedy``: greedy as it is;
- ``cycle``: the default cycle (its emitted plan, checked).

    .venv/bin/python -m benchmarks.topology_victims [--seeds 20] [--first-seed 1001]
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any
from unittest import mock

from benchmarks.scale import REPORT_SEEDS
from solver_sched.config.schema import SchedulerConfig
from solver_sched.cycle import run_cycle
from solver_sched.domain.topology import Mode, choose
from solver_sched.formulation.prepare import prepare
from solver_sched.io import manifests as m
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.placement.nodes import Fence
from solver_sched.placement.state import PlanState
from solver_sched.solvers import victims
from solver_sched.solvers.greedy import greedy_plan
from solver_sched.synthetic.topology import BLOCK_LABEL, RACK_LABEL, TOPOLOGY_LEVELS

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def cluster_objects(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(f"topology-victims-{seed}")
    racks, per_rack = rng.randint(10, 60), rng.randint(2, 8)
    objs: list[dict[str, Any]] = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Topology",
            "metadata": {"name": "default"},
            "spec": {"levels": [{"nodeLabel": key} for key in TOPOLOGY_LEVELS]},
        }
    ]
    running: list[tuple[str, int]] = []  # (node, GPUs)
    for r in range(racks):
        for i in range(per_rack):
            name = f"r{r:02d}-n{i}"
            labels = {BLOCK_LABEL: "b0", RACK_LABEL: f"r{r}"}
            objs.append(m.node(name, gpus=8, labels=labels))
            left = 8
            while left:
                g = min(left, rng.choice((1, 2, 4, 8)))
                running.append((name, g))
                left -= g
    names = [f"run-{k:05d}" for k in range(len(running))]
    rng.shuffle(names)
    for name, (node, g) in zip(names, running, strict=True):
        prio = 100 if rng.random() < 0.1 else 0
        objs += m.gang(name, 1, gpus=g, running_on=[node], priority=prio, cpu="1", memory="1Gi")
    topology = {"schedulingConstraints": {"topology": [{"key": RACK_LABEL}]}}
    for k in range(rng.randint(2, 6)):
        pods = rng.randint(max(1, per_rack // 2), per_rack)
        objs += m.gang(
            f"big-{k}",
            pods,
            gpus=8,
            priority=1000,
            api="scheduling.k8s.io",
            group_spec=topology,
            cpu="1",
            memory="1Gi",
        )
    return objs


@contextmanager
def anywhere_only() -> Iterator[None]:
    """Greedy's victim search without its domain step (the ablation)."""

    def anywhere(*_: Any) -> Iterator[Fence | None]:
        yield None

    with mock.patch.object(victims, "fences", anywhere):
        yield


def run_instance(seed: int, config: SchedulerConfig | None = None) -> dict[str, Any]:
    """``config``: the study's is the default (the controller's budget by cluster size)."""
    snap = snapshot_from_objects(cluster_objects(seed))
    config = config or SchedulerConfig()
    topology, _ = choose(config.topology.levels, config.topology.kueue_topology, snap.topologies)
    problem = prepare(snap, config.weights, config.settings, NOW, topology)
    asks = {n for n, a in problem.asks.items() if a.mode is Mode.REQUIRED}
    row: dict[str, Any] = {
        "seed": seed,
        "nodes": len(snap.nodes),
        "required": len(asks),
    }

    def greedy(st: PlanState) -> dict[str, int]:
        return {
            "started": sum(1 for j in asks if st.size.get(j, 0) > 0),
            "evicted": len({snap.pods[p].job for p in st.evicted}),
        }

    with anywhere_only():
        row["anywhere"] = greedy(greedy_plan(snap, problem))
    row["greedy"] = greedy(greedy_plan(snap, problem))
    result = run_cycle(snap, config, NOW)
    binds = {b.job for b in result.plan.binds}
    row["cycle"] = {
        "started": len(asks & binds),
        "evicted": len(result.plan.evictions),
        "chosen": result.chosen,
        "violations": len(result.violations),
    }
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--first-seed", type=int, default=REPORT_SEEDS)
    args = p.parse_args(argv)
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        row = run_instance(seed)
        rows.append(row)
        print(
            f"seed {seed}: {row['nodes']} nodes, {row['required']} required gangs; started "
            f"anywhere {row['anywhere']['started']} ({row['anywhere']['evicted']} evicted), "
            f"greedy {row['greedy']['started']} ({row['greedy']['evicted']}), cycle "
            f"{row['cycle']['started']} ({row['cycle']['evicted']}, {row['cycle']['chosen']})",
            flush=True,
        )
    for label in ("anywhere", "greedy", "cycle"):
        share = [r[label]["started"] / r["required"] for r in rows]
        started, required = sum(r[label]["started"] for r in rows), sum(r["required"] for r in rows)
        print(
            f"{label:9s} required gangs started: {started} of {required}, per instance median "
            f"{statistics.median(share):.2f}, worst {min(share):.2f}"
        )
    bad = sum(r["cycle"]["violations"] for r in rows)
    print(f"checker violations in the cycle's plans: {bad}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
