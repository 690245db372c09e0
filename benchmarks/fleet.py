"""Fleet scale study (issue 13): 20 members x 500 nodes x 8 GPUs, 2,000 queued hub jobs.

One fleet cycle (member objects + hub objects -> fleet snapshot -> run_cycle -> placements) is
timed on this machine, and its placements are compared, on the same fleet, with two policies
that decide one job at a time, in the queue's order (priority, then age), under the same quota
tree and max-jobs:

- summed: the member whose summed free resources are largest and cover the job's summed request
  (the ACK One/seed behaviour without reservations);
- first-fit: the first member (by name) where every pod of the job fits on a node, pods placed
  first-fit on its nodes (Karmada's estimator with node-level replicas; MultiKueue-like).

For each: jobs dispatched, jobs dispatched to a member that cannot hold them (the member's own
solver-sched, given every job sent there, cannot start them: checked by running the core on that
member), GPUs and priority-weighted GPUs of the jobs that can start. Members' nodes are partly
used by other workloads (fragmented), and the jobs ask for more than the fleet has free.

    .venv/bin/python -m benchmarks.fleet        # the issue's scale, 3 profiles x 3 seeds
    .venv/bin/python -m benchmarks.fleet --members 4 --nodes 50 --jobs 200 --seeds 1
Writes benchmarks/results/fleet.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import resource
import statistics
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from solver_sched.config.schema import SchedulerConfig, Settings
from solver_sched.cycle import run_cycle
from solver_sched.domain import resources as res
from solver_sched.domain.quota import QuotaTree
from solver_sched.fleet.controller import fleet_config
from solver_sched.io.fleet_members import FleetCache, MemberState
from solver_sched.io.fleet_plan import read_plan
from solver_sched.io.fleet_snapshot import FleetSnapshot, build_fleet
from solver_sched.io.kube_snapshot import snapshot_from_objects

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
OUT = Path(__file__).resolve().parent / "results"
GPUS = 8
TEAMS = 8
# value, share, weight in the score: the model's default tier weights (tierFactor 4)
PRIORITIES = ((0, 0.6, 1), (100, 0.3, 4), (1000, 0.1, 16))
POLICY = "policy.one.alibabacloud.com/v1alpha1"


# -- the fleet -------------------------------------------------------------------------------


def _node(name: str) -> dict[str, Any]:
    alloc = {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": str(GPUS), "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {}},
        "status": {"allocatable": alloc},
    }


def _pod(name: str, node: str, gpus: int) -> dict[str, Any]:
    req = {"cpu": str(gpus * 8), "memory": f"{gpus * 64}Gi", "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "other", "uid": name},
        "spec": {
            "nodeName": node,
            "schedulerName": "default-scheduler",
            "containers": [{"name": "c", "resources": {"requests": req}}],
        },
        "status": {"phase": "Running"},
    }


def members(n_members: int, n_nodes: int, rng: random.Random) -> list[MemberState]:
    """Each member: some nodes idle, many with 1-7 GPUs held by other workloads. Members
    differ in how busy and how fragmented they are."""
    out = []
    for k in range(n_members):
        busy = rng.uniform(0.7, 1.0)
        objs: list[dict[str, Any]] = []
        for i in range(n_nodes):
            name = f"n{i:04d}"
            objs.append(_node(name))
            if rng.random() < busy:
                used = rng.choice((2, 3, 4, 5, 6, 7))
                objs.append(_pod(f"o-{name}", name, used))
        out.append(MemberState(f"m{k:02d}", objs))
    return out


def _tree(total_gpus: int, n_jobs: int, profile: str, rng: random.Random) -> dict[str, Any]:
    """The hub's queues. ``open``: each team may use a sixth of the fleet and 400 jobs (the
    limits rarely bind: capacity does). ``max-jobs``: each team lets out between a fifth and
    three fifths of its jobs at once. ``gpu-quota``: each team's GPU max is 1-3% of the fleet
    (below what it asks)."""
    per_team = n_jobs // TEAMS
    leaves = []
    for t in range(TEAMS):
        gpus, jobs = total_gpus // 6, 400
        if profile == "max-jobs":
            jobs = rng.randint(max(1, per_team // 5), max(1, 3 * per_team // 5))
        elif profile == "gpu-quota":
            gpus = rng.randint(max(1, total_gpus // 100), max(1, 3 * total_gpus // 100))
        leaves.append(
            {
                "name": f"team-{t}",
                "namespaces": [f"team-{t}"],
                "min": {},
                "max": {"nvidia.com/gpu": str(gpus), "kube-queue/max-jobs": str(jobs)},
            }
        )
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1beta1",
        "kind": "ElasticQuotaTree",
        "metadata": {"name": "tree", "namespace": "kube-system"},
        "spec": {
            "root": {
                "name": "root",
                "max": {"nvidia.com/gpu": str(total_gpus)},
                "min": {},
                "children": leaves,
            }
        },
    }


def hub(
    n_jobs: int, total_gpus: int, rng: random.Random, profile: str = "open"
) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [_tree(total_gpus, n_jobs, profile, rng)]
    for value, _, _ in PRIORITIES:
        objs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": f"p{value}"},
                "value": value,
            }
        )
    for t in range(TEAMS):
        objs.append(
            {
                "apiVersion": POLICY,
                "kind": "PropagationPolicy",
                "metadata": {"name": "gang", "namespace": f"team-{t}"},
                "spec": {
                    "resourceSelectors": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}],
                    "placement": {
                        "replicaScheduling": {
                            "replicaSchedulingType": "Divided",
                            "customSchedulingType": "Gang",
                        }
                    },
                    "suspension": {"scheduling": True},
                },
            }
        )
    for j in range(n_jobs):
        gpus = rng.choices((1, 2, 4, 8), weights=(4, 3, 3, 3))[0]
        pods = rng.choices((1, 2, 4, 8, 16), weights=(2, 3, 3, 2, 2))[0]
        prio = rng.choices([p for p, _, _ in PRIORITIES], weights=[s for _, s, _ in PRIORITIES])[0]
        req = {"cpu": str(gpus * 8), "memory": f"{gpus * 64}Gi", "nvidia.com/gpu": str(gpus)}

        def replica(n: int, req: dict[str, str] = req, prio: int = prio) -> dict[str, Any]:
            c = {"name": "pytorch", "image": "x", "resources": {"requests": req}}
            return {
                "replicas": n,
                "template": {"spec": {"containers": [c], "priorityClassName": f"p{prio}"}},
            }

        specs = {"Master": replica(1)}
        if pods > 1:
            specs["Worker"] = replica(pods - 1)
        created = NOW - timedelta(minutes=rng.randint(1, 600))
        objs.append(
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "metadata": {
                    "name": f"job-{j:04d}",
                    "namespace": f"team-{j % TEAMS}",
                    "uid": f"{j:08x}-0000-4000-8000-{rng.getrandbits(48):012x}",
                    "creationTimestamp": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
                },
                "spec": {"pytorchReplicaSpecs": specs},
            }
        )
    return objs


# -- the one-at-a-time baselines -------------------------------------------------------------


@dataclass
class Outcome:
    dispatched: dict[str, str] = field(default_factory=dict)  # job -> member
    seconds: float = 0.0


def _queue_order(fleet: FleetSnapshot) -> list[str]:
    snap = fleet.snapshot
    return sorted(
        snap.jobs,
        key=lambda n: (-snap.jobs[n].priority, snap.jobs[n].created or NOW, n),
    )


def _pods_of(fleet: FleetSnapshot, job: str) -> list[Mapping[str, int]]:
    snap = fleet.snapshot
    return [snap.pods[p].requests for p in snap.jobs[job].pods]


class _Queue:
    """kube-queue-like admission: a job goes out only while its chain stays within max and
    max-jobs (the same tree the model obeys)."""

    def __init__(self, fleet: FleetSnapshot) -> None:
        self.snap = fleet.snapshot
        self.tree: QuotaTree = self.snap.quota
        self.used: dict[str, dict[str, int]] = defaultdict(dict)

    def admits(self, job: str, total: Mapping[str, int]) -> bool:
        chain = self.tree.chain(self.snap.queue_of(self.snap.jobs[job]))
        for q in chain:
            queue = self.tree.queues[q]
            used = self.used[q]
            if queue.max_jobs is not None and used.get("jobs", 0) + 1 > queue.max_jobs:
                return False
            if any(used.get(r, 0) + total.get(r, 0) > m for r, m in queue.max.items()):
                return False
        return True

    def take(self, job: str, total: Mapping[str, int]) -> None:
        for q in self.tree.chain(self.snap.queue_of(self.snap.jobs[job])):
            res.add_into(self.used[q], total)
            self.used[q]["jobs"] = self.used[q].get("jobs", 0) + 1


def _member_free(fleet: FleetSnapshot) -> dict[str, dict[str, dict[str, int]]]:
    free: dict[str, dict[str, dict[str, int]]] = defaultdict(dict)
    for name, f in fleet.snapshot.free_per_node.items():
        member, node = fleet.node_member[name]
        free[member][node] = dict(f)
    return free


def summed(fleet: FleetSnapshot) -> Outcome:
    t = time.perf_counter()
    free = _member_free(fleet)
    total_free = {m: res.total(nodes.values()) for m, nodes in free.items()}
    queue, out = _Queue(fleet), Outcome()
    for job in _queue_order(fleet):
        total = res.total(_pods_of(fleet, job))
        if not queue.admits(job, total):
            continue
        fits = [m for m, f in total_free.items() if res.fits(total, f)]
        if not fits:
            continue
        member = max(fits, key=lambda m: (total_free[m].get(res.GPU, 0), m))
        total_free[member] = res.sub(total_free[member], total)
        queue.take(job, total)
        out.dispatched[job] = member
    out.seconds = time.perf_counter() - t
    return out


def first_fit(fleet: FleetSnapshot) -> Outcome:
    t = time.perf_counter()
    free = _member_free(fleet)
    queue, out = _Queue(fleet), Outcome()
    for job in _queue_order(fleet):
        pods = _pods_of(fleet, job)
        total = res.total(pods)
        if not queue.admits(job, total):
            continue
        for member in sorted(free):
            nodes = free[member]
            trial: dict[str, dict[str, int]] = {}
            ok = True
            for req in pods:
                node = next(
                    (n for n in sorted(nodes) if res.fits(req, trial.get(n, nodes[n]))), None
                )
                if node is None:
                    ok = False
                    break
                trial[node] = res.sub(trial.get(node, nodes[node]), req)
            if ok:
                nodes.update(trial)
                queue.take(job, total)
                out.dispatched[job] = member
                break
    out.seconds = time.perf_counter() - t
    return out


def _fits_alone(fleet: FleetSnapshot, job: str, member: str) -> bool:
    """Whether the member's free nodes hold this job's pods at all (first-fit decreasing, with
    no other fleet job there): a job that fails this was sent where it can never start."""
    free = {
        n: dict(f)
        for n, f in fleet.snapshot.free_per_node.items()
        if fleet.node_member[n][0] == member
    }
    for req in sorted(_pods_of(fleet, job), key=lambda r: -r.get(res.GPU, 0)):
        node = next((n for n in free if res.fits(req, free[n])), None)
        if node is None:
            return False
        free[node] = res.sub(free[node], req)
    return True


def startable(
    fleet: FleetSnapshot,
    dispatched: Mapping[str, str],
    hub_objects: list[dict[str, Any]],
    members_: list[MemberState],
) -> set[str]:
    """Jobs a member's own solver-sched starts, given every job sent there: each member is
    planned by the core (CP-SAT, 2 s) with those jobs pending. Only for a policy that does not
    place pods on nodes itself; the others' placements are their own proof."""
    ok: set[str] = set()
    by_member: dict[str, list[str]] = defaultdict(list)
    for job, m in dispatched.items():
        by_member[m].append(job)
    jobs_by_key = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o
        for o in hub_objects
        if o["kind"] == "PyTorchJob"
    }
    member_objs = {m.name: m.objects for m in members_}
    config = SchedulerConfig(settings=Settings(time_limit_seconds=2.0))
    for member, jobs in by_member.items():
        objects: list[dict[str, Any]] = [dict(o) for o in member_objs[member]]
        objects += [o for o in hub_objects if o["kind"] == "PriorityClass"]
        for key in jobs:
            pj = jobs_by_key[key]
            hub_job = fleet.jobs[key]
            for rtype, n in hub_job.replicas:
                spec = pj["spec"]["pytorchReplicaSpecs"][rtype]["template"]["spec"]
                for i in range(n):
                    objects.append(
                        {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "metadata": {
                                "name": f"{hub_job.name}-{rtype.lower()}-{i}",
                                "namespace": hub_job.namespace,
                                "labels": {"training.kubeflow.org/job-name": hub_job.name},
                            },
                            "spec": {**spec, "schedulerName": "solver-sched"},
                        }
                    )
        snap = snapshot_from_objects(objects)
        result = run_cycle(snap, config, NOW)
        ok |= {row.name for row in result.plan.jobs if row.planned >= row.min_workers}
    return ok


def score(fleet: FleetSnapshot, jobs: set[str]) -> tuple[int, int]:
    weight = {p: w for p, _, w in PRIORITIES}
    gpus = weighted = 0
    for job in jobs:
        g = sum(r.get(res.GPU, 0) for r in _pods_of(fleet, job))
        gpus += g
        weighted += g * weight.get(fleet.snapshot.jobs[job].priority, 1)
    return gpus, weighted


def churn(ms: list[MemberState], rng: random.Random, share: float) -> list[MemberState]:
    """The members as the next cycle sees them: ``share`` of their objects changed (new dicts,
    as a watch delivers updates), the rest the same objects."""
    out = []
    for m in ms:
        objs = list(m.objects)
        for i in rng.sample(range(len(objs)), int(len(objs) * share)):
            objs[i] = copy.deepcopy(objs[i])
        out.append(MemberState(m.name, objs, m.reachable))
    return out


def run_seed(args: argparse.Namespace, seed: int, profile: str) -> dict[str, Any]:
    rng = random.Random(seed)
    ms = members(args.members, args.nodes, rng)
    total = args.members * args.nodes * GPUS
    hub_objects = hub(args.jobs, total, rng, profile)
    config = fleet_config(SchedulerConfig())  # the controller's default: a 2.5 s cycle budget
    limit = args.time_limit  # None: the budget decides the search
    cache = FleetCache()
    t = time.perf_counter()
    build_fleet(hub_objects, ms, cache=cache)  # the controller's first cycle
    t_cold = time.perf_counter() - t
    ms = churn(ms, rng, 0.01)  # a later cycle: 1% of the member objects changed
    t = time.perf_counter()
    fleet = build_fleet(hub_objects, ms, cache=cache)
    t_snap = time.perf_counter() - t
    result = run_cycle(fleet.snapshot, config, NOW, None, limit)
    reading = read_plan(fleet, result.plan.binds, result.plan.jobs, result.plan.evictions)
    cycle = time.perf_counter() - t
    ours = {k: d.cluster for k, d in reading.dispatches.items()}
    rows: dict[str, Any] = {}
    free_gpus = sum(f.get(res.GPU, 0) for f in fleet.snapshot.free_per_node.values())
    demand = sum(sum(r.get(res.GPU, 0) for r in _pods_of(fleet, j)) for j in fleet.snapshot.jobs)
    for label, outcome in (
        ("solver-sched", Outcome(ours, cycle)),
        ("summed-free", summed(fleet)),
        ("first-fit", first_fit(fleet)),
    ):
        if label == "summed-free":
            can = startable(fleet, outcome.dispatched, hub_objects, ms)
        else:  # node placements of their own: checked (ours) or packed (first-fit)
            can = set(outcome.dispatched)
        never = sum(1 for j, m in outcome.dispatched.items() if not _fits_alone(fleet, j, m))
        gpus, weighted = score(fleet, can)
        rows[label] = {
            "dispatched": len(outcome.dispatched),
            "cannot_hold": len(set(outcome.dispatched) - can),
            "never_fits": never,
            "gpus": gpus,
            "weighted_gpus": weighted,
            "decide_seconds": round(outcome.seconds, 3),
        }
    return {
        "profile": profile,
        "seed": seed,
        "free_gpus": free_gpus,
        "demand_gpus": demand,
        "cold_snapshot_seconds": round(t_cold, 3),
        "snapshot_seconds": round(t_snap, 3),
        "cycle_seconds": round(cycle, 3),
        "phases": {k: round(v, 3) for k, v in result.phases.items()},
        "solver": result.stats.status.value,
        "chosen": result.chosen,
        "jobs_in_model": len(fleet.snapshot.jobs),
        "rows": rows,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


PROFILES = ("open", "max-jobs", "gpu-quota")


def _ratio(runs: list[dict[str, Any]], key: str, base: str) -> tuple[float, float]:
    """Median and worst of ours / base."""
    r = [x["rows"]["solver-sched"][key] / max(1, x["rows"][base][key]) for x in runs]
    return statistics.median(r), min(r)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--members", type=int, default=20)
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--jobs", type=int, default=2000)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--profiles", default=",".join(PROFILES), help="comma-separated")
    p.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="CP-SAT search limit (default: the fleet's 2.5 s cycle budget decides)",
    )
    args = p.parse_args(argv)
    profiles = [x for x in args.profiles.split(",") if x]
    unknown = set(profiles) - set(PROFILES)
    if unknown:
        p.error(f"unknown profile(s) {', '.join(sorted(unknown))}; choose from {PROFILES}")
    runs = [run_seed(args, seed, pr) for pr in profiles for seed in range(1, args.seeds + 1)]
    OUT.mkdir(exist_ok=True)
    (OUT / "fleet.json").write_text(json.dumps(runs, indent=2))
    print(
        f"fleet: {args.members} members x {args.nodes} nodes x {GPUS} GPUs, {args.jobs} queued "
        f"jobs, CP-SAT limit {args.time_limit or 'by the 2.5 s cycle budget'}"
    )
    for r in runs:
        print(
            f"{r['profile']} seed {r['seed']}: cycle {r['cycle_seconds']:.2f}s (snapshot "
            f"{r['snapshot_seconds']:.2f}s, cold {r['cold_snapshot_seconds']:.2f}s, "
            f"{r['solver']}, plan from {r['chosen']}), free {r['free_gpus']} GPUs, demand "
            f"{r['demand_gpus']}, peak RSS {r['peak_rss_mb']} MB"
        )
        base = r["rows"]["solver-sched"]
        for label, row in r["rows"].items():
            print(
                f"  {label:13s} dispatched {row['dispatched']:5d}  cannot hold "
                f"{row['cannot_hold']:4d} (never fits {row['never_fits']:4d})  "
                f"GPUs {row['gpus']:6d} "
                f"(x{row['gpus'] / max(1, base['gpus']):.3f})  weighted {row['weighted_gpus']:6d} "
                f"(x{row['weighted_gpus'] / max(1, base['weighted_gpus']):.3f})"
            )
    for pr in profiles:
        of = [r for r in runs if r["profile"] == pr]
        cycles = [r["cycle_seconds"] for r in of]
        parts = [f"{pr}: cycle median {statistics.median(cycles):.2f}s, worst {max(cycles):.2f}s"]
        for base in ("first-fit", "summed-free"):
            for key in ("gpus", "weighted_gpus"):
                med, worst = _ratio(of, key, base)
                parts.append(f"{key} vs {base} median x{med:.4f} worst x{worst:.4f}")
        print("; ".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
