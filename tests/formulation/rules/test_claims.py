"""Rule 2c: per-node claims (host ports, required anti-affinity over kubernetes.io/hostname):
no node ends with two pods that make the same claim. Checked here from the objects themselves
(which pods ask for the port or carry or match the term), not from the loader's resources."""

from typing import Any

import pytest

from solver_sched.domain.cluster import Pod
from solver_sched.domain.plan import Plan
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.io import manifests as m
from tests.support.builders import gang, node, other, plan, snapshot, workers_after

BACKENDS = ["cpsat", "milp", "greedy"]
HOSTNAME = "kubernetes.io/hostname"


def with_port(objs: list[dict[str, Any]], port: int = 23456) -> list[dict[str, Any]]:
    for o in objs:
        if o["kind"] == "Pod":
            o["spec"]["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port}]
    return objs


def spread(objs: list[dict[str, Any]], app: str) -> list[dict[str, Any]]:
    """Every pod labelled app=<app>, with a required anti-affinity to app=<app> per node."""
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME}
    for o in objs:
        if o["kind"] == "Pod":
            o["metadata"].setdefault("labels", {})["app"] = app
            o["spec"]["affinity"] = {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            }
    return objs


def nodes_after(snap: ClusterSnapshot, p: Plan) -> dict[str, list[Pod]]:
    evicted = {name for e in p.evictions for name in e.pods}
    where = {b.pod: b.node for b in p.binds}
    out: dict[str, list[Pod]] = {}
    for name, pod in snap.pods.items():
        n = where.get(name) or (pod.node_name if pod.bound and name not in evicted else None)
        if n:
            out.setdefault(n, []).append(pod)
    return out


def crowded(snap: ClusterSnapshot, p: Plan, apart: set[str]) -> list[str]:
    """Nodes that end with two or more of the pods ``apart`` (those that must be kept apart)."""
    return [n for n, ps in nodes_after(snap, p).items() if len({q.name for q in ps} & apart) > 1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_pods_that_share_a_host_port_go_one_per_node(backend: str) -> None:
    objs = [node(n, gpus=8) for n in "abc"] + with_port(gang("g", 3))
    snap = snapshot(*objs)
    result = plan(snap, backend)
    assert workers_after(snap, result.plan)["default/g"] == 3
    assert crowded(snap, result.plan, set(snap.jobs["default/g"].pods)) == []
    assert {b.node for b in result.plan.binds} == {"a", "b", "c"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_gang_with_more_pods_than_nodes_for_its_port_waits_and_says_why(backend: str) -> None:
    """Two nodes of 8 GPUs each hold the 4 GPUs but only 2 pods with port 23456; the third
    node's port is held by another scheduler's pod."""
    taken = other("exporter", "c", gpus=0)
    objs = [node(n, gpus=8) for n in "abc"] + with_port(gang("g", 4)) + with_port([taken])
    snap = snapshot(*objs)
    result = plan(snap, backend)
    assert result.plan.binds == ()
    row = next(j for j in result.plan.jobs if j.name == "default/g")
    assert "kept apart on nodes by hostport:TCP/23456" in row.reason, row.reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_host_port_is_free_again_on_a_node_a_preemption_empties(backend: str) -> None:
    """low holds port 23456 on the only node; high needs it: low is preempted, not ignored."""
    objs = [node("a", gpus=8), *with_port(gang("low", 1, running_on=["a"], priority=0))]
    objs += with_port(gang("high", 1, priority=1000))
    snap = snapshot(*objs)
    result = plan(snap, backend)
    assert workers_after(snap, result.plan) == {"default/low": 0, "default/high": 1}


@pytest.mark.parametrize("backend", BACKENDS)
def test_different_ports_share_a_node(backend: str) -> None:
    objs = [node("a", gpus=8), *with_port(gang("x", 1), 1000), *with_port(gang("y", 1), 2000)]
    snap = snapshot(*objs)
    after = workers_after(snap, plan(snap, backend).plan)
    assert after == {"default/x": 1, "default/y": 1}


@pytest.mark.parametrize("backend", BACKENDS)
def test_anti_affinity_keeps_a_gang_one_pod_per_node_and_off_a_matching_pod(backend: str) -> None:
    """g's 3 pods repel app=g: one per node, and not on d, where a running app=g pod of
    another scheduler is (a running pod it selects counts, whatever its scheduler)."""
    theirs = other("old", "d", gpus=1, namespace="default")
    theirs["metadata"]["labels"] = {"app": "g"}
    objs = [node(n, gpus=8) for n in "abcd"] + spread(gang("g", 3), "g") + [theirs]
    snap = snapshot(*objs)
    result = plan(snap, backend)
    assert workers_after(snap, result.plan)["default/g"] == 3
    apart = {*snap.jobs["default/g"].pods, "default/old"}
    assert crowded(snap, result.plan, apart) == []
    assert "d" not in {b.node for b in result.plan.binds}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_running_pods_anti_affinity_keeps_matching_pods_off_its_node(backend: str) -> None:
    """Symmetry, as kube-scheduler: a running pod's term repels the waiting pods it selects."""
    guard = spread([other("guard", "a", gpus=1)], "batch")[0]
    guard["metadata"]["labels"] = {"role": "guard"}
    guard["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        0
    ]["namespaces"] = ["default"]
    objs = [node("a", gpus=8), node("b", gpus=1), guard]
    g = gang("g", 2)
    for o in g[1:]:
        o["metadata"]["labels"]["app"] = "batch"
    snap = snapshot(*objs, *g)
    result = plan(snap, backend)
    assert result.plan.binds == ()  # a is closed to app=batch; b holds one GPU
    g = gang("g", 1)
    g[1]["metadata"]["labels"]["app"] = "batch"
    snap = snapshot(*objs, *g)
    assert {b.node for b in plan(snap, backend).plan.binds} == {"b"}


def test_a_term_reaches_the_namespaces_it_names() -> None:
    """An app=g pod in another namespace is outside g's term (its own namespace by default),
    inside it with ``namespaces`` listing it, and with an empty ``namespaceSelector`` (all)."""
    theirs = other("old", "a", gpus=1, namespace="elsewhere")
    theirs["metadata"]["labels"] = {"app": "g"}
    for scope, closed in (
        ({}, False),
        ({"namespaces": ["elsewhere"]}, True),
        ({"namespaceSelector": {}}, True),
    ):
        g = spread(gang("g", 1), "g")
        g[1]["spec"]["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ][0].update(scope)
        snap = snapshot(node("a", gpus=8), theirs, *g)
        binds = plan(snap, "greedy").plan.binds
        assert (binds == ()) is closed, scope


@pytest.mark.parametrize(
    ("constraint", "fld"),
    [
        (
            {
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {}, "topologyKey": HOSTNAME}
                        ]
                    }
                }
            },
            "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        ),
        (
            {
                "affinity": {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {}, "topologyKey": "topology.kubernetes.io/zone"}
                        ]
                    }
                }
            },
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
            ".topologyKey",
        ),
        (
            {
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": HOSTNAME,
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {},
                    }
                ]
            },
            "spec.topologySpreadConstraints[0]",
        ),
    ],
    ids=["pod-affinity", "anti-affinity-zone", "spread"],
)
def test_a_constraint_the_model_cannot_hold_holds_the_gang_and_names_the_field(
    constraint: dict[str, Any], fld: str
) -> None:
    """Ignored, the plan would break it: the gang waits, with an input error naming the pod and
    the field. Another scheduler's pods and pods already bound are not ours to judge."""
    g = gang("g", 2)
    for o in g[1:]:
        o["spec"].update(constraint)
    theirs = other("theirs", "a", gpus=1)
    theirs["spec"].update(constraint)
    snap = snapshot(node("a", gpus=8), theirs, *g)
    assert {(e.obj, e.field) for e in snap.errors} == {
        ("Pod default/g-worker-0", fld),
        ("Pod default/g-worker-1", fld),
    }
    result = plan(snap, "greedy")
    assert result.plan.binds == ()
    row = next(j for j in result.plan.jobs if j.name == "default/g")
    assert "is not supported by solver-sched" in row.reason, row.reason
    soft = gang("g", 2, running_on=["a", "a"])
    for o in soft[1:]:
        o["spec"].update(constraint)
    assert snapshot(node("a", gpus=8), *soft).errors == ()


def test_a_soft_spread_is_no_constraint() -> None:
    g = gang("g", 2)
    for o in g[1:]:
        o["spec"]["topologySpreadConstraints"] = [
            {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway"}
        ]
    snap = snapshot(node("a", gpus=8), *g)
    assert snap.errors == ()
    assert workers_after(snap, plan(snap, "greedy").plan)["default/g"] == 2


def test_host_network_claims_its_container_ports() -> None:
    """With hostNetwork the API server defaults each hostPort to its containerPort."""
    p = m.pod("p", gpus=1)
    p["spec"]["hostNetwork"] = True
    p["spec"]["containers"][0]["ports"] = [{"containerPort": 29500, "protocol": "UDP"}]
    snap = snapshot(node("a", gpus=8), p)
    assert snap.pods["default/p"].claims == ("hostport:UDP/29500",)
    p["spec"]["hostNetwork"] = False
    assert snapshot(node("a", gpus=8), p).pods["default/p"].claims == ()


def test_claims_cost_nothing_when_no_waiting_pod_makes_one() -> None:
    """A running pod's port alone adds no resource: nothing waits for it."""
    objs = [node("a", gpus=8), *with_port(gang("g", 1, running_on=["a"]))]
    snap = snapshot(*objs)
    assert "hostport:TCP/23456" not in snap.nodes["a"].allocatable
    assert "hostport:TCP/23456" not in snap.pods["default/g-worker-0"].requests
    snap = snapshot(*objs, *with_port(gang("h", 1)))
    assert snap.nodes["a"].allocatable["hostport:TCP/23456"] == 1
    assert snap.pods["default/g-worker-0"].requests["hostport:TCP/23456"] == 1


def _repel(pod: dict[str, Any], app: str) -> dict[str, Any]:
    """``pod`` with a required anti-affinity to app=<app> per node (it need not match it)."""
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME}
    pod["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    }
    return pod


def _web(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for o in objs:
        if o["kind"] == "Pod":
            o["metadata"]["labels"]["app"] = "web"
    return objs


@pytest.mark.parametrize("backend", BACKENDS)
def test_pods_a_term_selects_may_share_a_node(backend: str) -> None:
    """A running pod on b repels app=web; a runs two app=web pods (low); hi, one app=web pod,
    goes beside them on a, as kube-scheduler puts it. Selected pods were kept one per node too:
    low was preempted to make room that was there."""
    guard = _repel(other("guard", "b", gpus=0, namespace="default"), "web")
    objs = [node("a", gpus=8), node("b", gpus=8), guard]
    objs += _web(gang("low", 2, running_on=["a", "a"], priority=0))
    objs += _web(gang("hi", 1, priority=1000))
    snap = snapshot(*objs)
    result = plan(snap, backend)
    assert result.plan.evictions == ()
    assert workers_after(snap, result.plan) == {"default/low": 2, "default/hi": 1}
    assert {b.node for b in result.plan.binds} == {"a"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_waiting_carrier_keeps_no_one_apart_until_it_is_placed(backend: str) -> None:
    """c carries a term against app=web but needs 16 GPUs, more than any node: the two web pods
    share node a all the same (they waited, one per node, for a pod that never runs)."""
    carrier = _repel(m.pod("c", gpus=16), "web")
    objs = [node("a", gpus=8), carrier, *_web(gang("w", 2))]
    snap = snapshot(*objs)
    result = plan(snap, backend)
    assert workers_after(snap, result.plan)["default/w"] == 2


def test_a_sidecar_claims_its_host_port() -> None:
    """An init container with restartPolicy Always runs beside the others (GetHostPorts counts
    its ports); a plain init container's are gone when the pod runs."""
    p = m.pod("p", gpus=1)
    p["spec"]["initContainers"] = [
        {"name": "exporter", "restartPolicy": "Always", "ports": [{"hostPort": 9100}]},
        {"name": "setup", "ports": [{"hostPort": 9200}]},
    ]
    assert snapshot(node("a", gpus=8), p).pods["default/p"].claims == ("hostport:TCP/9100",)


def test_a_term_with_no_selector_selects_no_pod() -> None:
    """A null labelSelector matches nothing in Kubernetes: no claim, two such pods share."""
    g = gang("g", 2)
    for o in g[1:]:
        o["spec"]["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": HOSTNAME}]
            }
        }
    snap = snapshot(node("a", gpus=8), *g)
    assert not any(r.startswith("anti-affinity:") for r in snap.nodes["a"].allocatable)
    assert workers_after(snap, plan(snap, "greedy").plan)["default/g"] == 2
