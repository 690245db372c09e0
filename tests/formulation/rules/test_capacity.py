"""Rule 2: node fit for every resource, cordons, taints, nodeSelector and node affinity."""

import pytest

from solver_sched.config.schema import ObjectiveWeights
from solver_sched.formulation.rules import capacity
from tests.support.builders import (
    assert_solver_decided,
    config,
    gang,
    node,
    other,
    plan,
    pod,
    snapshot,
    workers_after,
)
from tests.support.rule_model import RuleModel, rule_model

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


# -- the rows alone (rules/capacity.py on a LinearModel, values fixed) -----------------------


def _two_shapes() -> RuleModel:
    """One 8-GPU node: a 4-GPU pod (a) and 2-GPU pods (b, min 1, max 3), each fits on its own."""
    return rule_model(
        snapshot(
            node("n", gpus=8, cpu="64"),
            gang("a", 1, gpus=4),
            gang("b", 3, gpus=2, min_member=1, max_member=3),
        ),
        capacity.add,
    )


@pytest.mark.parametrize(("b_pods", "ok"), [(2, True), (3, False)])
def test_pods_of_all_shapes_share_a_class_capacity(b_pods: int, ok: bool) -> None:
    rm = _two_shapes()
    assign = {rm.x("default/a-worker-0", "n"): 1, rm.x("default/b-worker-0", "n"): b_pods}
    assert rm.violated(assign) == ([] if ok else ["cap[0,nvidia.com/gpu]"])


def test_every_resource_a_pod_requests_has_a_row() -> None:
    """Two shapes of 3 cores and 1 GPU on an 8-core node: three pods fit the GPUs, not the cores."""
    rm = rule_model(
        snapshot(
            node("n", gpus=8, cpu="8"),
            gang("g", 2, gpus=1, cpu="3", memory="8Gi"),
            gang("h", 1, gpus=1, cpu="3", memory="4Gi"),
        ),
        capacity.add,
    )
    assert rm.rows("cap[") == [
        "cap[0,cpu]",
        "cap[0,memory]",
        "cap[0,nvidia.com/gpu]",
        "cap[0,pods]",
    ]
    g, h = rm.x("default/g-worker-0", "n"), rm.x("default/h-worker-0", "n")
    assert rm.violated({g: 2}) == []
    assert rm.violated({g: 2, h: 1}) == ["cap[0,cpu]"]


@pytest.mark.parametrize(
    ("gpus", "pending", "size", "ok"),
    [(8, 6, 4, False), (8, 6, 3, False), (8, 6, 2, True), (4, 1, 4, False), (4, 1, 3, True)],
)
def test_a_scale_in_frees_room_for_a_pending_pod(
    gpus: int, pending: int, size: int, ok: bool
) -> None:
    """An elastic job runs 4 x 1 GPU; the pending pod fits only in what the scale-in releases
    in that class: on an 8-GPU node a 6-GPU pod needs two back, on a full 4-GPU node one."""
    rm = rule_model(
        snapshot(
            node("n", gpus=gpus),
            gang("e", 4, gpus=1, min_member=1, max_member=4, running_on=["n"] * 4),
            gang("p", 1, gpus=pending),
        ),
        capacity.add,
    )
    assign = {rm.x("default/p-worker-0", "n"): 1, f"y[default/e,{size}]": 1}
    assert ("cap[0,nvidia.com/gpu]" not in rm.violated(assign)) is ok


def test_a_class_sums_its_nodes() -> None:
    """Two identical free nodes form one class of 16 GPUs: 4 pods of 4 GPUs, no more."""
    rm = rule_model(
        snapshot(
            node("n1", gpus=8), node("n2", gpus=8), gang("g", 5, gpus=4, min_member=1, max_member=5)
        ),
        capacity.add,
    )
    x = rm.x("default/g-worker-0", "n1")
    assert x == rm.x("default/g-worker-0", "n2")
    assert rm.violated({x: 4}) == []
    assert "cap[0,nvidia.com/gpu]" in rm.violated({x: 5})


@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_the_solver_fills_a_node_greedy_fragments(backend: str) -> None:
    """One 8-GPU node, pods of 5, 4 and 4 GPUs: greedy starts a (5) first and then fits neither
    b nor c; the optimum starts b and c and uses all eight GPUs. With capacity rows missing,
    the solver would start all three and packing would undo its plan. Without the start bonus:
    with it greedy starts the smaller gangs first and finds the optimum itself."""
    snap = snapshot(
        node("n", gpus=8), gang("a", 1, gpus=5), gang("b", 1, gpus=4), gang("c", 1, gpus=4)
    )
    cfg = config(lp_guide=False).model_copy(update={"weights": ObjectiveWeights(gang_start=0)})
    result = plan(snap, backend, cfg=cfg)  # the solver alone
    assert (result.violations, result.chosen) == ([], backend)
    assert_solver_decided(result)
    assert workers_after(snap, result.plan) == {"default/a": 0, "default/b": 1, "default/c": 1}
    assert workers_after(snap, plan(snap, "greedy", cfg=cfg).plan)["default/a"] == 1


def test_rows_only_for_resources_pending_pods_request() -> None:
    """Running pods also hold a NIC; the pending ones do not ask for one: no row for it."""
    running = gang("e", 2, min_member=1, max_member=2, running_on=["n"] * 2)
    for obj in running[1:]:
        obj["spec"]["containers"][0]["resources"]["limits"]["example.com/nic"] = "1"
    nic_node = node("n", gpus=8)
    nic_node["status"]["allocatable"]["example.com/nic"] = "4"
    rm = rule_model(snapshot(nic_node, running, gang("p", 1)), capacity.add)
    assert not any("example.com/nic" in r for r in rm.rows("cap["))


def _two_full_nodes() -> list[dict[str, object] | list[dict[str, object]]]:
    """Nodes A and B full, each with two 4-GPU gangs: the cheap ones (a on A, b on B, priority
    0) and dearer ones (c on A, d on B, priority 50); a pending 8-GPU gang p of priority 100
    needs a whole node."""
    return [
        node("A", gpus=8),
        node("B", gpus=8),
        gang("a", 1, gpus=4, running_on=["A"], priority=0),
        gang("b", 1, gpus=4, running_on=["B"], priority=0),
        gang("c", 1, gpus=4, running_on=["A"], priority=50),
        gang("d", 1, gpus=4, running_on=["B"], priority=50),
        gang("p", 1, gpus=8, priority=100),
    ]


@pytest.mark.parametrize(
    ("broken", "ok"), [(("a", "b"), False), (("a", "c"), True), (("b", "d"), True)]
)
def test_evictions_free_room_on_their_own_node(broken: tuple[str, str], ok: bool) -> None:
    """A node whose pods a plan may evict is a class of its own: breaking a on A and b on B
    frees 8 GPUs but no node with 8, and the row says so (when A and B were one class, the 8
    freed GPUs were the class's and an 8-GPU pod fitted)."""
    rm = rule_model(snapshot(*_two_full_nodes()), capacity.add)
    assert rm.problem.class_of["A"] != rm.problem.class_of["B"]
    assign = {f"y[default/{j},{0 if j in broken else 1}]": 1 for j in "abcd"}
    assign |= {"y[default/p,1]": 1, rm.x("default/p-worker-0", "A" if "a" in broken else "B"): 1}
    assert (rm.rows("cap[") and not any(r.startswith("cap[") for r in rm.violated(assign))) is ok


def test_nodes_without_evictable_pods_still_share_a_class() -> None:
    """Only nodes where the plan can release room are split: two idle nodes stay one class."""
    rm = rule_model(
        snapshot(*_two_full_nodes(), node("C", gpus=8), node("D", gpus=8)), capacity.add
    )
    classes = rm.problem.class_of
    assert classes["C"] == classes["D"]
    assert len({classes["A"], classes["B"], classes["C"]}) == 3


@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_the_solvers_optimum_packs_without_loss(backend: str) -> None:
    """The model's optimum breaks the two cheap gangs of one node and starts p there, and the
    emitted plan is worth exactly that optimum (the class-level optimum broke a and b, on two
    nodes, and packing then had to give p up)."""
    snap = snapshot(*_two_full_nodes(), node("C", gpus=8), other("x", "C", 1))
    result = plan(snap, backend)
    assert result.violations == []
    assert_solver_decided(result)
    after = workers_after(snap, result.plan)
    assert after["default/p"] == 1
    assert sorted(j for j in "abcd" if not after[f"default/{j}"]) in (["a", "c"], ["b", "d"])
