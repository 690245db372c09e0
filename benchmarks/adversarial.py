"""Adversarial suite (issue 4): instances built to trip a greedy gang scheduler.

Families (each with several seeds):
- fragmented: nodes partly used by another scheduler, 8-GPU-per-pod gangs against 1-GPU jobs that
  waited longer;
- parent-quota: a binding parent max above leaves whose gang sizes do not add up greedily
  (a knapsack in disguise);
- big-vs-small: whole-node gangs queued behind many small jobs of the same priority;
- preemption: high-priority gangs that need lower-priority victims, where the cheapest victim
  set is not the first one greedy tries.
Metric: planned guaranteed GPU value (sum over jobs placed of guaranteed GPUs x tier weight) of
CP-SAT against the greedy backend on the same instance. Target: at least 5% above greedy.

    .venv/bin/python -m benchmarks.adversarial [--seeds 5] [--time-limit 10]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from solver_sched.config.schema import SchedulerConfig, Settings
from solver_sched.cycle import CycleResult, run_cycle
from solver_sched.io import manifests as m
from solver_sched.io.kube_snapshot import snapshot_from_objects

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
OUT = Path(__file__).resolve().parent / "results"
Objs = list[dict[str, Any]]


def _ts(minutes_ago: int) -> str:
    return f"2026-01-01T{11 - minutes_ago // 60:02d}:{59 - minutes_ago % 60:02d}:00Z"


def fragmented(rng: random.Random) -> Objs:
    objs: Objs = []
    for i in range(12):
        objs.append(m.node(f"n{i}", gpus=8))
        used = rng.choice((0, 0, 2, 4))
        if used:
            objs.append(
                m.pod(
                    f"sys-{i}",
                    gpus=used,
                    node_name=f"n{i}",
                    scheduler="default-scheduler",
                    namespace="infra",
                )
            )
    for k in range(rng.randint(10, 30)):
        objs += m.gang(f"small-{k}", rng.choice((1, 2)), gpus=1, created=_ts(100 + k))
    for k in range(rng.randint(3, 6)):
        objs += m.gang(f"wide-{k}", rng.choice((2, 3)), gpus=8, created=_ts(k))
    return objs


def parent_quota(rng: random.Random) -> Objs:
    cap = rng.choice((16, 24, 32))
    tree = m.quota_tree(
        {
            "name": "root",
            "children": [
                {
                    "name": "org",
                    "max": {"nvidia.com/gpu": str(cap)},
                    "children": [
                        {"name": "team-a", "namespaces": ["team-a"]},
                        {"name": "team-b", "namespaces": ["team-b"]},
                    ],
                }
            ],
        }
    )
    objs: Objs = [tree] + [m.node(f"n{i}", gpus=8) for i in range(8)]
    for k in range(rng.randint(3, 6)):  # awkward sizes waiting longest
        objs += m.gang(
            f"odd-{k}", rng.choice((5, 6, 7, 9, 10, 11)), namespace="team-a", created=_ts(200 + k)
        )
    for k in range(rng.randint(4, 8)):
        objs += m.gang(f"even-{k}", rng.choice((4, 8)), namespace="team-b", created=_ts(k))
    return objs


def big_vs_small(rng: random.Random) -> Objs:
    objs: Objs = [m.node(f"n{i}", gpus=8) for i in range(8)]
    for k in range(rng.randint(20, 40)):
        objs += m.gang(f"s-{k}", 1, gpus=rng.choice((1, 2, 3)), created=_ts(100 + k))
    for k in range(rng.randint(2, 5)):
        objs += m.gang(f"big-{k}", rng.choice((2, 4)), gpus=8, created=_ts(k))
    return objs


def preemption(rng: random.Random) -> Objs:
    objs: Objs = [m.node(f"n{i}", gpus=8) for i in range(6)]
    slots = [f"n{i}" for i in range(6) for _ in range(8)]
    rng.shuffle(slots)
    k = 0
    while slots:
        size = min(len(slots), rng.choice((1, 2, 4, 6)))
        objs += m.gang(f"low-{k}", size, running_on=slots[:size], priority=0)
        slots = slots[size:]
        k += 1
    for j in range(rng.randint(2, 4)):
        objs += m.gang(f"high-{j}", rng.choice((3, 5, 8)), priority=1000, created=_ts(j))
    return objs


FAMILIES = {
    "fragmented": fragmented,
    "parent-quota": parent_quota,
    "big-vs-small": big_vs_small,
    "preemption": preemption,
}


def guaranteed_value(result: CycleResult) -> int:
    return sum(v for k, v in result.terms.items() if k.startswith("guaranteed["))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--time-limit", type=float, default=10.0)
    args = p.parse_args(argv)
    cfg = SchedulerConfig(settings=Settings(time_limit_seconds=args.time_limit, workers=1))
    rows: list[dict[str, Any]] = []
    for family, make in FAMILIES.items():
        ratios = []
        for seed in range(args.seeds):
            snap = snapshot_from_objects(make(random.Random(seed)))
            greedy = run_cycle(snap, cfg, NOW, "greedy")
            cpsat = run_cycle(snap, cfg, NOW, "cpsat")
            g, c = guaranteed_value(greedy), guaranteed_value(cpsat)
            assert not greedy.violations and not cpsat.violations
            ratios.append(c / g if g else 1.0)
            rows.append(
                {
                    "family": family,
                    "seed": seed,
                    "greedy": g,
                    "cpsat": c,
                    "status": cpsat.stats.status.value,
                    "chosen": cpsat.chosen,
                }
            )
        print(
            f"{family:>13}: guaranteed value cpsat/greedy mean x{statistics.mean(ratios):.3f} "
            f"(min x{min(ratios):.3f}, max x{max(ratios):.3f}) over {len(ratios)} seeds",
            flush=True,
        )
    total = statistics.mean(r["cpsat"] / r["greedy"] for r in rows if r["greedy"])
    print(f"all families: mean x{total:.3f} (target >= x1.05)")
    OUT.mkdir(exist_ok=True)
    (OUT / "adversarial.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
