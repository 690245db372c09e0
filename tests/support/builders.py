"""Keyword builders for tests: Kubernetes manifests go through the real loader, so every test also
exercises the edge the CLI and controller use."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from solver_sched import cycle as cycle_module
from solver_sched.config.schema import SchedulerConfig, Settings
from solver_sched.cycle import CycleResult, run_cycle
from solver_sched.domain.plan import Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.io import manifests as m
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.solvers.result import SolveStatus

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
node, pod, gang, pod_group, quota_tree = m.node, m.pod, m.gang, m.pod_group, m.quota_tree


def leaf_queues(
    *leaves: tuple[str, str], gpus: dict[str, dict[str, int]] | None = None
) -> dict[str, Any]:
    """An ElasticQuotaTree of leaf queues under the root: (queue, namespace); ``gpus``: per
    queue, its GPU ``min`` and/or ``max`` (none where not given)."""
    limits = gpus or {}
    children = [
        {
            "name": q,
            "namespaces": [ns],
            **{k: {"nvidia.com/gpu": str(v)} for k, v in limits.get(q, {}).items()},
        }
        for q, ns in leaves
    ]
    return quota_tree({"name": "root", "children": children})


def other(name: str, node_name: str, gpus: int, namespace: str = "infra") -> dict[str, Any]:
    """A running pod of another scheduler: consumes capacity, never ours to touch."""
    return m.pod(
        name, gpus=gpus, node_name=node_name, scheduler="default-scheduler", namespace=namespace
    )


def on_node_only(p: dict[str, Any], node_name: str) -> dict[str, Any]:
    """``p`` with a required node affinity to one node by name (a matchFields term)."""
    field = {"key": "metadata.name", "operator": "In", "values": [node_name]}
    required = {"nodeSelectorTerms": [{"matchFields": [field]}]}
    p["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
    }
    return p


def reclaim_swap(
    z_priority: int = 1000, qc_cpu: str | None = None, with_c: bool = True
) -> list[Any]:
    """qb (min 8 GPUs, idle) waits with bnew; qc (no min: all it uses is borrowed) runs a1 and z
    (one pod each) and waits with c (4 pods); the root runs at most 2 jobs. bnew may break a1 or
    z (reclaim); c may break z only if it outranks z. ``qc_cpu``: qc's cpu max."""
    qc: dict[str, Any] = {"name": "qc", "namespaces": ["qc"]}
    if qc_cpu:
        qc["max"] = {"cpu": qc_cpu}
    root = {
        "name": "root",
        "max": {"kube-queue/max-jobs": "2"},
        "children": [
            {"name": "qb", "namespaces": ["qb"], "min": {"nvidia.com/gpu": "8"}},
            qc,
        ],
    }
    return [
        *(node(f"n{i}") for i in range(3)),
        quota_tree(root),
        gang("a1", 1, namespace="qc", running_on=["n0"], priority=1000),
        gang("z", 1, namespace="qc", running_on=["n0"], priority=z_priority),
        *(gang("c", 4, namespace="qc", priority=1000, cpu="1") if with_c else []),
        gang("bnew", 1, namespace="qb", priority=0),
    ]


def snapshot(*groups: dict[str, Any] | list[dict[str, Any]]) -> ClusterSnapshot:
    objs: list[dict[str, Any]] = []
    for g in groups:
        objs.extend(g if isinstance(g, list) else [g])
    return snapshot_from_objects(objs)


def hi_breaks_low() -> ClusterSnapshot:
    """hi starts only by breaking low (its node n); small fits on m as it is: a start that
    takes victims beside one that needs none."""
    return snapshot(
        node("n", gpus=4),
        node("m", gpus=1),
        gang("low", 4, running_on=["n"] * 4, priority=0),
        gang("hi", 4, priority=100),
        gang("small", 1, priority=50),
    )


def config(**settings: Any) -> SchedulerConfig:
    # the cycle budget as long as the search limit: rule tests search until the optimum
    base = {"time_limit_seconds": 10.0, "cycle_seconds": 10.0, "workers": 1, "random_seed": 0}
    base.update(settings)
    return SchedulerConfig(settings=Settings(**base))


def plan(
    snap: ClusterSnapshot,
    backend: str = "cpsat",
    now: datetime = NOW,
    cfg: SchedulerConfig | None = None,
) -> CycleResult:
    return run_cycle(snap, cfg or config(), now, backend)


def workers_after(snap: ClusterSnapshot, p: Plan) -> dict[str, int]:
    """Pods per job after the plan, counted from the snapshot and the plan's actions only."""
    evicted = {name for e in p.evictions for name in e.pods}
    bound = {b.pod for b in p.binds}
    out = {}
    for name, job in snap.jobs.items():
        out[name] = sum(
            1 for pn in job.pods if (snap.pods[pn].bound and pn not in evicted) or pn in bound
        )
    return out


def assert_solver_decided(result: CycleResult) -> None:
    """The solver proved its optimum and the emitted plan is worth exactly that: a plan the
    solver could not make (overflow, no solution, greedy fallback) or that packing degraded
    fails here. ``chosen`` may still say greedy when greedy's plan is that optimum."""
    assert result.stats.status == SolveStatus.OPTIMAL, result.stats.detail
    assert result.stats.objective == result.stats.solver_objective


# read before any test patches it
_VARIANT = inspect.signature(cycle_module.variant)  # type: ignore[attr-defined]


def _record_variants(
    monkeypatch: pytest.MonkeyPatch, record: Callable[[str, float | None], object]
) -> None:
    """``record(label, deadline)`` for each of greedy's other passes a cycle runs, while patched."""
    variant = cycle_module.variant  # type: ignore[attr-defined]  # patched below

    def recorded_variant(*a: Any, **k: Any) -> Any:
        given = _VARIANT.bind(*a, **k).arguments  # by name, however the cycle passes them
        record(given["label"], given["deadline"])
        return variant(*a, **k)

    monkeypatch.setattr(cycle_module, "variant", recorded_variant)


def tried_variants(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The labels of greedy's other passes a cycle runs, in order (recorded while patched)."""
    tried: list[str] = []
    _record_variants(monkeypatch, lambda label, _: tried.append(label))
    return tried


def variant_deadlines(monkeypatch: pytest.MonkeyPatch) -> dict[str, float | None]:
    """The victim-search deadline each of greedy's other passes a cycle runs was given, by label
    in the order they ran (recorded while patched)."""
    given: dict[str, float | None] = {}
    _record_variants(monkeypatch, given.__setitem__)
    return given
