"""Objects a real cluster or a careless edit can hand the loader: each is reported (object and
field named) and holds only what depends on it; none stops the cycle or frees capacity that is
taken. Every case here crashed the loader or the cycle, or planned wrongly, before its fix."""

from __future__ import annotations

from typing import Any

import pytest

from solver_sched.config.schema import SchedulerConfig
from solver_sched.cycle import run_cycle
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.io.slim import slim
from solver_sched.planning.check import check
from tests.support.builders import NOW, gang, node, other, pod, pod_group, quota_tree
from tests.support.builders import snapshot as snap

ANN = "solver-sched.io/"


def planned(s: ClusterSnapshot, backend: str = "cpsat") -> dict[str, str]:
    """pod -> node of the cycle's binds, after the independent checker accepted the plan."""
    result = run_cycle(s, SchedulerConfig(), NOW, backend)
    assert check(s, result.plan, NOW) == []
    return {b.pod: b.node for b in result.plan.binds}


def reason(s: ClusterSnapshot, job: str) -> str:
    plan = run_cycle(s, SchedulerConfig(), NOW).plan
    return next(o.reason for o in plan.jobs if o.name == job)


def errors(s: ClusterSnapshot) -> list[str]:
    return [str(e) for e in s.errors]


@pytest.mark.parametrize("backend", ["cpsat", "greedy"])
def test_a_gang_with_a_pod_on_a_deleted_node_is_held_and_the_rest_planned(backend: str) -> None:
    s = snap(
        node("n1"),
        gang("ghost", 2, running_on=["n1", "gone"]),
        gang("fresh", 2),
    )
    assert "spec.nodeName: bound to node gone" in (s.jobs["default/ghost"].invalid or "")
    binds = planned(s, backend)
    assert set(binds) == {"default/fresh-worker-0", "default/fresh-worker-1"}


def test_a_node_rejected_as_unreadable_holds_the_gangs_running_there() -> None:
    bad = node("n0")
    bad["metadata"]["labels"]["rack"] = 7  # not a string: the node is rejected
    s = snap(bad, node("n1"), gang("on-bad", 2, running_on=["n0", "n0"]), gang("fresh", 1))
    assert "n0" not in s.nodes and any("Node n0" in e for e in errors(s))
    assert s.jobs["default/on-bad"].invalid is not None
    assert planned(s) == {"default/fresh-worker-0": "n1"}


def test_a_bound_pod_with_unreadable_requests_leaves_its_node_untouched() -> None:
    hog = other("hog", "n0", 8)
    hog["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    s = snap(node("n0"), node("n1", gpus=2), hog, gang("g", 4))
    assert s.nodes["n0"].invalid is not None and "infra/hog" in s.nodes["n0"].invalid
    assert planned(s) == {}  # n0's room is unknown, n1 has 2 GPUs for a gang of 4


def test_a_bound_pod_that_fails_validation_leaves_its_node_untouched() -> None:
    hog = other("hog", "n0", 8)
    hog["spec"]["priority"] = "x"
    s = snap(node("n0"), hog, gang("g", 1))
    assert any("Pod infra/hog: spec.priority" in e for e in errors(s))
    assert s.nodes["n0"].invalid is not None
    assert planned(s) == {}


def test_a_finished_pod_that_fails_validation_holds_nothing() -> None:
    done = other("done", "n0", 8)
    done["spec"]["priority"] = "x"
    done["status"]["phase"] = "Succeeded"
    s = snap(node("n0"), done, gang("g", 1))
    assert s.nodes["n0"].invalid is None
    assert planned(s) == {"default/g-worker-0": "n0"}


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        pytest.param({"minMember": "two"}, "spec.minMember", id="min-member-string"),
        pytest.param({"minMember": True}, "spec.minMember", id="min-member-bool"),
        pytest.param({"minMember": 2.5}, "spec.minMember", id="min-member-fraction"),
        pytest.param(
            {"minMember": 1, "scheduleTimeoutSeconds": 10**20},
            "spec.scheduleTimeoutSeconds",
            id="timeout-beyond-int32",
        ),
    ],
)
def test_a_podgroup_that_fails_validation_is_the_reason_its_gang_is_held(
    spec: dict[str, Any], field: str
) -> None:
    objs = gang("g", 2)
    objs[0]["spec"] = spec
    s = snap(node("n1"), objs, gang("ok", 1))
    reason = s.jobs["default/g"].invalid or ""
    assert f"PodGroup default/g: {field}" in reason and "not found" not in reason
    assert planned(s) == {"default/ok-worker-0": "n1"}


@pytest.mark.parametrize(
    ("gang_policy", "field"),
    [
        pytest.param(["x"], "spec.schedulingPolicy.gang", id="gang-a-list"),
        pytest.param({"minCount": True}, "spec.schedulingPolicy.gang.minCount", id="bool"),
    ],
)
def test_a_k8s_podgroup_with_an_unreadable_gang_policy_is_held(
    gang_policy: object, field: str
) -> None:
    objs = gang("g", 2, api="scheduling.k8s.io")
    objs[0]["spec"] = {"schedulingPolicy": {"gang": gang_policy}}
    s = snap(node("n1"), objs)
    assert f"PodGroup default/g: {field}" in (s.jobs["default/g"].invalid or "")


def _kubeflow_pods(job: str, n: int) -> list[dict[str, Any]]:
    label = {"training.kubeflow.org/job-name": job}
    return [pod(f"{job}-worker-{i}", labels=label) for i in range(n)]


def _pytorch(job: str, spec: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": job, "namespace": "default"}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta, "spec": spec}


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({"elasticPolicy": {"minReplicas": "two"}}, id="min-replicas-string"),
        pytest.param({"pytorchReplicaSpecs": {"Worker": {"replicas": -3}}}, id="negative"),
        pytest.param({"pytorchReplicaSpecs": {"Worker": None}}, id="worker-null"),
    ],
)
def test_an_invalid_pytorchjob_holds_its_pods(spec: dict[str, Any]) -> None:
    s = snap(node("n1"), _pytorch("pj", spec), _kubeflow_pods("pj", 2), gang("ok", 1))
    assert "PyTorchJob default/pj: spec." in (s.jobs["default/pj"].invalid or "")
    assert planned(s) == {"default/ok-worker-0": "n1"}


def test_an_invalid_pytorchjob_holds_the_podgroup_the_operator_made_for_it() -> None:
    objs = gang("pj", 2)
    s = snap(node("n1"), objs, _pytorch("pj", {"elasticPolicy": {"minReplicas": "two"}}))
    assert "PyTorchJob default/pj" in (s.jobs["default/pj"].invalid or "")
    assert planned(s) == {}


@pytest.mark.parametrize("text", ["²", "٤", "1" * 5000])
def test_digits_python_reads_but_kubernetes_does_not_are_errors_not_crashes(text: str) -> None:
    objs = gang("g", 2)
    objs[0]["metadata"].setdefault("annotations", {})[f"{ANN}max-member"] = text
    objs[1]["metadata"]["labels"]["training.kubeflow.org/replica-index"] = text
    s = snap(node("n1"), objs)
    assert f"metadata.annotations[{ANN}max-member]" in (s.jobs["default/g"].invalid or "")


def test_a_last_scale_time_near_year_9999_locks_the_size_without_overflowing() -> None:
    s = snap(
        node("n1"),
        gang(
            "g",
            4,
            min_member=2,
            max_member=4,
            running_on=["n1", "n1"],
            last_scale_time="9999-12-31T23:59:59Z",
        ),
    )
    until = s.jobs["default/g"].cooldown_until()
    assert until is not None and until.year == 9999
    assert planned(s) == {}  # in cooldown: no scale-out


@pytest.mark.parametrize("cooldown", ["99999999h", "99999999999999999999h"])
def test_a_cooldown_beyond_gos_duration_is_an_error(cooldown: str) -> None:
    s = snap(node("n1"), gang("g", 2, cooldown=cooldown, last_scale_time="2026-01-01T00:00:00Z"))
    assert any(
        f"metadata.annotations[{ANN}cooldown]" in e and "out of range" in e for e in errors(s)
    )


def test_a_queue_that_contains_itself_through_a_yaml_alias_is_reported() -> None:
    root: dict[str, Any] = {"name": "root", "children": [{"name": "qa", "namespaces": ["a"]}]}
    root["children"][0]["children"] = [root]  # what `- *root` under its own child loads as
    s = snapshot_from_objects([quota_tree(root), node("n1")])  # no deepcopy: keeps the loop
    assert any("a queue inside itself" in e for e in errors(s))


def test_a_queue_whose_namespaces_is_a_string_still_holds_that_namespace() -> None:
    tree = quota_tree(
        {
            "name": "root",
            "children": [{"name": "qa", "namespaces": "team-a", "max": {"nvidia.com/gpu": "2"}}],
        }
    )
    s = snap(tree, node("n1"), gang("g", 4, namespace="team-a"))
    assert reason(s, "team-a/g").startswith("queue qa is invalid")
    assert planned(s) == {}  # held by its invalid queue, not run outside the quota


@pytest.mark.parametrize("kind", ["Node", "PodGroup"])
def test_an_object_given_twice_is_reported(kind: str) -> None:
    objs = [node("n1"), node("n1"), *gang("g", 1), pod_group("g", min_member=1)]
    s = snap(objs)
    assert any(e.startswith(f"{kind} ") and "given twice" in e for e in errors(s))


def test_a_kind_that_is_not_a_string_is_left_alone() -> None:
    obj = {"kind": ["Pod"], "metadata": {"name": "x"}}
    assert slim(obj) is obj


def test_an_object_without_a_kind_is_reported_not_dropped() -> None:
    """A file's object with no kind (or kind: null) is no object of any kind: an error names it
    (``--strict`` then plans nothing) and the rest is read."""
    nameless = {"metadata": {"name": "n2"}, "status": {"allocatable": {"cpu": "8"}}}
    s = snap(node("n1"), nameless, {"kind": None, "metadata": {}}, gang("g", 1))
    assert errors(s) == ["object n2: kind: missing", "object (unnamed): kind: missing"]
    assert planned(s) == {"default/g-worker-0": "n1"}


def test_a_pod_no_node_could_hold_is_named_in_the_reason() -> None:
    objs = gang("g", 2)
    objs[1]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1.5Ki"
    s = snap(node("n1"), objs)
    assert reason(s, "default/g").startswith("no node can hold default/g-worker-0")


def test_a_gang_pod_that_fails_validation_holds_its_gang_naming_it() -> None:
    objs = gang("g", 2)
    objs[2]["spec"]["priority"] = "x"  # worker-1
    s = snap(node("n1"), objs)
    assert (s.jobs["default/g"].invalid or "").startswith("Pod default/g-worker-1: could not")
    assert planned(s) == {}
