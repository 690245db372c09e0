"""Rule 2: node fit for every resource, cordons, taints, nodeSelector and node affinity."""

import pytest

from tests.support.builders import (
    assert_solver_decided,
    gang,
    node,
    other,
    plan,
    pod,
    snapshot,
    workers_after,
)

BACKENDS = ["cpsat", "milp", "greedy"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_cordoned_node_takes_nothing(backend: str) -> None:
    snap = snapshot(node("a", gpus=8, unschedulable=True), node("b", gpus=2), gang("g", 4))
    assert workers_after(snap, plan(snap, backend).plan)["default/g"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_pods_of_other_schedulers_consume_capacity(backend: str) -> None:
    snap = snapshot(node("a", gpus=8), other("x", "a", 6), gang("g", 4))
    assert workers_after(snap, plan(snap, backend).plan)["default/g"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_cpu_is_a_limit_too(backend: str) -> None:
    snap = snapshot(node("a", gpus=8, cpu="8"), gang("g", 4, cpu="3"))
    assert workers_after(snap, plan(snap, backend).plan)["default/g"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_eight_gpu_pod_needs_one_node_with_eight_free(backend: str) -> None:
    snap = snapshot(
        node("a", gpus=8),
        node("b", gpus=8),
        other("x", "a", 4),
        other("y", "b", 4),
        gang("g", 1, gpus=8),
    )
    assert workers_after(snap, plan(snap, backend).plan)["default/g"] == 0


TAINT = [{"key": "gpu", "value": "a100", "effect": "NoSchedule"}]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("tolerations", "want"),
    [
        (None, 0),
        ([{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}], 1),
        ([{"key": "gpu", "operator": "Equal", "value": "h100"}], 0),
    ],
    ids=["untolerated", "tolerated-exists", "wrong-value"],
)
def test_taints(backend: str, tolerations: list[dict[str, str]] | None, want: int) -> None:
    p = pod("p", tolerations=tolerations)
    snap = snapshot(node("a", gpus=8, taints=TAINT), p)
    assert workers_after(snap, plan(snap, backend).plan)["default/p"] == want


@pytest.mark.parametrize("backend", BACKENDS)
def test_node_selector(backend: str) -> None:
    snap = snapshot(
        node("a", gpus=8),
        node("b", gpus=8, labels={"gpu": "h100"}),
        pod("p", node_selector={"gpu": "h100"}),
    )
    (bind,) = plan(snap, backend).plan.binds
    assert bind.node == "b"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("op", "values", "want_node"),
    [("In", ["h100"], "b"), ("NotIn", ["h100"], "a"), ("DoesNotExist", [], "a")],
)
def test_required_node_affinity(backend: str, op: str, values: list[str], want_node: str) -> None:
    p = pod("p")
    p["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "gpu", "operator": op, "values": values}]}
                ]
            }
        }
    }
    snap = snapshot(node("a", gpus=8), node("b", gpus=8, labels={"gpu": "h100"}), p)
    (bind,) = plan(snap, backend).plan.binds
    assert bind.node == want_node


@pytest.mark.parametrize("backend", BACKENDS)
def test_pods_of_other_schedulers_are_never_bound(backend: str) -> None:
    snap = snapshot(node("a", gpus=8), pod("mine"), pod("theirs", scheduler="default-scheduler"))
    assert [b.pod for b in plan(snap, backend).plan.binds] == ["default/mine"]


@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_nodes_and_pods_of_exabytes_still_plan_with_the_solver(backend: str) -> None:
    """8Ei (capped at 2^63-1 bytes, as Kubernetes caps it) per node and 1Ei per pod are valid
    quantities. Unscaled, the capacity row overflows CP-SAT's int64 (MODEL_INVALID) and passes
    the largest matrix value HiGHS accepts, and the cycle falls back to greedy."""
    snap = snapshot(
        node("a", gpus=8, memory="8Ei"),
        node("b", gpus=8, memory="8Ei"),
        gang("g", 10, memory="1Ei", min_member=10),
        gang("h", 6, memory="1Ei", gpus=0, min_member=6),
    )
    assert snap.errors == ()
    result = plan(snap, backend)
    assert result.violations == []
    assert_solver_decided(result)
    after = workers_after(snap, result.plan)
    assert after == {"default/g": 10, "default/h": 0}  # 7 per node: room for 14 of 1Ei
