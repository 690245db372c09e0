"""snapshot_from_objects: Kubernetes objects -> ClusterSnapshot, validated at the edge.

Every test goes through the public entry point with plain manifests (as kubectl writes them).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from solver_sched.domain import resources as res
from solver_sched.domain.affinity import Taint
from solver_sched.domain.cluster import PodPhase, SizePolicy
from solver_sched.domain.quota import IMPLICIT_QUEUE, MAX_JOBS
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.io.kube_snapshot import Parsed, snapshot_from_objects
from tests.support.builders import gang, node, pod, pod_group, quota_tree

GPU, CPU, MEM, PODS = res.GPU, res.CPU, res.MEMORY, res.PODS
ANN = "solver-sched.io/"


def snap(*objs: dict[str, Any] | list[dict[str, Any]]) -> ClusterSnapshot:
    flat: list[dict[str, Any]] = []
    for o in objs:
        flat.extend(o if isinstance(o, list) else [o])
    return snapshot_from_objects(copy.deepcopy(flat))


def raw_pod(
    name: str = "p",
    *,
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    overhead: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A pod with hand-written containers (requests/limits/restartPolicy as given)."""
    body: dict[str, Any] = {"schedulerName": "solver-sched", "containers": containers or []}
    if init:
        body["initContainers"] = init
    if overhead:
        body["overhead"] = overhead
    body.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
        "status": {"phase": "Pending"},
    }


def c(
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    restart: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": "c", "resources": {}}
    if requests is not None:
        out["resources"]["requests"] = requests
    if limits is not None:
        out["resources"]["limits"] = limits
    if restart:
        out["restartPolicy"] = restart
    return out


def error_strings(s: ClusterSnapshot) -> list[str]:
    return [str(e) for e in s.errors]


# -- nodes -----------------------------------------------------------------------------------


def test_node_allocatable_labels_taints_parsed() -> None:
    taints = [
        {"key": "gpu", "value": "a100", "effect": "NoSchedule"},
        {"key": "maint", "effect": "NoExecute"},
    ]
    s = snap(
        node(
            "n1",
            gpus=8,
            cpu="63500m",
            memory="500Gi",
            pods=110,
            labels={"zone": "a"},
            taints=taints,
        )
    )
    n = s.nodes["n1"]
    assert dict(n.allocatable) == {CPU: 63500, MEM: 500 * 2**30, PODS: 110, GPU: 8}
    assert n.labels == {"kubernetes.io/hostname": "n1", "zone": "a"}
    assert n.taints == (Taint("gpu", "a100", "NoSchedule"), Taint("maint", "", "NoExecute"))
    assert n.unschedulable is False and n.schedulable and n.invalid is None
    assert s.errors == ()


def test_unschedulable_node() -> None:
    n = snap(node("n1", unschedulable=True)).nodes["n1"]
    assert n.unschedulable and not n.schedulable and n.invalid is None


def test_node_without_allocatable_falls_back_to_capacity() -> None:
    raw = node("n1", gpus=4)
    del raw["status"]["allocatable"]
    assert snap(raw).nodes["n1"].allocatable[GPU] == 4


@pytest.mark.parametrize(
    ("resource", "value"),
    [
        pytest.param(GPU, "eight", id="gpu-word"),
        pytest.param(CPU, "1.2.3", id="cpu-two-dots"),
        pytest.param(MEM, "-1Gi", id="memory-negative"),
    ],
)
def test_unparsable_node_allocatable_marks_node_invalid(resource: str, value: str) -> None:
    raw = node("bad")
    raw["status"]["allocatable"][resource] = value
    s = snap(raw, node("good"))
    bad = s.nodes["bad"]
    assert bad.invalid is not None and not bad.schedulable
    assert "Node bad" in bad.invalid and f"status.allocatable.{resource}" in bad.invalid
    assert [(e.obj, e.field) for e in s.errors] == [("Node bad", f"status.allocatable.{resource}")]
    assert value in s.errors[0].message
    assert s.nodes["good"].invalid is None


# -- pod requests ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod_obj", "expected"),
    [
        pytest.param(
            raw_pod(containers=[c({"cpu": "1", "memory": "1Gi"})]),
            {CPU: 1000, MEM: 2**30, PODS: 1},
            id="one-container",
        ),
        pytest.param(
            raw_pod(containers=[c({"cpu": "1"}), c({"cpu": "500m", "memory": "1Gi"})]),
            {CPU: 1500, MEM: 2**30, PODS: 1},
            id="sum-of-containers",
        ),
        pytest.param(
            raw_pod(containers=[c(limits={"nvidia.com/gpu": "2"})]),
            {GPU: 2, PODS: 1},
            id="gpu-from-limits",
        ),
        pytest.param(
            raw_pod(containers=[c({"cpu": "1"}, {"cpu": "4", GPU: "1"})]),
            {CPU: 1000, GPU: 1, PODS: 1},
            id="requests-win-over-limits",
        ),
        pytest.param(
            raw_pod(containers=[c(limits={"cpu": "2", "memory": "4Gi"})]),
            {CPU: 2000, MEM: 4 * 2**30, PODS: 1},
            id="all-from-limits",
        ),
        pytest.param(raw_pod(containers=[c()]), {PODS: 1}, id="no-resources-still-a-pod"),
        pytest.param(
            raw_pod(containers=[c({"cpu": "1", "pods": "7"})]),
            {CPU: 1000, PODS: 1},
            id="pods-is-always-1",
        ),
        pytest.param(
            raw_pod(containers=[c({"cpu": "1"})], init=[c({"cpu": "3"})]),
            {CPU: 3000, PODS: 1},
            id="init-larger-than-main",
        ),
        pytest.param(
            raw_pod(containers=[c({"cpu": "1"}), c({"cpu": "2"})], init=[c({"cpu": "2"})]),
            {CPU: 3000, PODS: 1},
            id="main-sum-larger-than-init",
        ),
        pytest.param(
            raw_pod(containers=[c({"cpu": "1"})], init=[c({"cpu": "2"}), c({"cpu": "4"})]),
            {CPU: 4000, PODS: 1},
            id="init-max-not-sum",
        ),
        pytest.param(
            raw_pod(
                containers=[c({"cpu": "2", "memory": "1Gi"})],
                init=[c({"cpu": "1", "memory": "8Gi"})],
            ),
            {CPU: 2000, MEM: 8 * 2**30, PODS: 1},
            id="init-max-per-resource",
        ),
        pytest.param(
            raw_pod(containers=[c({"cpu": "2"})], init=[c({"cpu": "1"}, restart="Always")]),
            {CPU: 3000, PODS: 1},
            id="sidecar-added-to-main",
        ),
        pytest.param(
            raw_pod(
                containers=[c({"cpu": "2"})],
                init=[c({"cpu": "1"}, restart="Always"), c({"cpu": "4"})],
            ),
            {CPU: 5000, PODS: 1},
            id="init-after-sidecar-runs-alongside-it",
        ),
        pytest.param(
            raw_pod(
                containers=[c({"cpu": "2"})],
                init=[c({"cpu": "4"}), c({"cpu": "1"}, restart="Always")],
            ),
            {CPU: 4000, PODS: 1},
            id="init-before-sidecar-runs-alone",
        ),
        pytest.param(
            raw_pod(
                containers=[c({"cpu": "1"})],
                init=[c({"cpu": "1"}, restart="Always"), c({"cpu": "1"}, restart="Always")],
            ),
            {CPU: 3000, PODS: 1},
            id="two-sidecars",
        ),
        pytest.param(
            raw_pod(
                containers=[c({"cpu": "1", GPU: "1"})], overhead={"cpu": "250m", "memory": "64Mi"}
            ),
            {CPU: 1250, MEM: 64 * 2**20, GPU: 1, PODS: 1},
            id="overhead-added",
        ),
        pytest.param(
            raw_pod(containers=[c({"cpu": "1"})], init=[c({"cpu": "3"})], overhead={"cpu": "100m"}),
            {CPU: 3100, PODS: 1},
            id="overhead-on-top-of-init-max",
        ),
    ],
)
def test_pod_requests(pod_obj: dict[str, Any], expected: dict[str, int]) -> None:
    s = snap(pod_obj)
    assert dict(s.pods["default/p"].requests) == expected
    assert s.errors == ()


def test_unparsable_pod_request_is_reported_and_its_job_invalid() -> None:
    bad = raw_pod("bad", containers=[c({"cpu": "lots"})])
    s = snap(bad, raw_pod("ok", containers=[c({"cpu": "1"})]))
    assert len(s.errors) == 1
    err = s.errors[0]
    assert err.obj == "Pod default/bad"
    assert err.field.startswith("spec.containers[0].resources") and err.field.endswith("cpu")
    job = s.jobs["default/bad"]
    assert job.invalid is not None and "Pod default/bad" in job.invalid
    assert s.jobs["default/ok"].invalid is None


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_finished_pods_hold_nothing_and_leave_the_job(phase: str) -> None:
    objs = gang("g", 3, running_on=["n1", "n1", "n1"])
    objs[1]["status"]["phase"] = phase  # g-worker-0 finished
    s = snap(node("n1"), objs)
    done = s.pods["default/g-worker-0"]
    assert done.phase is PodPhase(phase)
    assert done.terminated and not done.bound and not done.waiting
    assert s.jobs["default/g"].pods == ("default/g-worker-1", "default/g-worker-2")
    assert [p.name for p in s.pods_by_node["n1"]] == ["default/g-worker-1", "default/g-worker-2"]


def test_job_of_only_finished_pods_does_not_exist() -> None:
    s = snap(pod("done", phase="Succeeded", node_name="n1"), node("n1"))
    assert "default/done" in s.pods and s.jobs == {}


def test_an_empty_node_name_is_no_node() -> None:
    """``spec.nodeName: ""`` is how some clients write an unscheduled pod: it is pending, holds
    nothing and counts in no queue's usage (read as bound, it counted in the model's usage and
    not in the checker's)."""
    p = pod("p", gpus=1)
    p["spec"]["nodeName"] = ""
    s = snap(p, node("n1"))
    read = s.pods["default/p"]
    assert read.node_name is None and read.waiting and not read.bound
    assert s.queue_usage(q for q in s.pods.values() if q.bound) == {}


def test_unknown_phase_is_unknown() -> None:
    p = pod("p")
    p["status"]["phase"] = "Evicted"
    assert snap(p).pods["default/p"].phase is PodPhase.UNKNOWN


# -- scheduler name --------------------------------------------------------------------------


def test_only_our_pods_make_jobs() -> None:
    theirs = gang("theirs", 2, running_on=["n1", "n1"])
    for o in theirs[1:]:
        o["spec"]["schedulerName"] = "default-scheduler"
    s = snap(node("n1"), theirs, pod("lone-theirs", scheduler="volcano"), gang("ours", 2))
    assert set(s.jobs) == {"default/ours"}
    assert {"default/theirs-worker-0", "default/theirs-worker-1", "default/lone-theirs"} <= set(
        s.pods
    )
    assert len(s.pods_by_node["n1"]) == 2  # their bound pods still consume capacity


def test_scheduler_name_is_configurable() -> None:
    objs = [pod("a", scheduler="custom"), pod("b")]
    s = snapshot_from_objects(objs, scheduler_name="custom")
    assert set(s.jobs) == {"default/a"} and s.scheduler_name == "custom"


# -- gang membership -------------------------------------------------------------------------


def _members(label_api: str, n: int = 3, ns: str = "ml") -> list[dict[str, Any]]:
    return [pod(f"g-worker-{i}", namespace=ns, group="g", group_api=label_api) for i in range(n)]


def _pg(api_version: str, ns: str = "ml", min_member: int = 3) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if api_version.startswith("scheduling.k8s.io/"):
        spec = {"schedulingPolicy": {"gang": {"minCount": min_member}}}
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": ns},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("api_version", "label_api"),
    [
        pytest.param("scheduling.x-k8s.io/v1alpha1", "scheduling.x-k8s.io", id="scheduler-plugins"),
        pytest.param(
            "scheduling.sigs.k8s.io/v1alpha1",
            "scheduling.x-k8s.io",
            id="scheduler-plugins-old-apiVersion",
        ),
        pytest.param("scheduling.volcano.sh/v1beta1", "scheduling.volcano.sh", id="volcano"),
        pytest.param("scheduling.k8s.io/v1beta1", "scheduling.k8s.io", id="upstream-k8s"),
    ],
)
def test_podgroup_apis_form_a_gang(api_version: str, label_api: str) -> None:
    s = snap(_pg(api_version), _members(label_api))
    assert set(s.jobs) == {"ml/g"}
    job = s.jobs["ml/g"]
    assert job.invalid is None and job.namespace == "ml"
    assert (job.min_pods, job.max_pods) == (3, 3)
    assert job.pods == ("ml/g-worker-0", "ml/g-worker-1", "ml/g-worker-2")
    assert job.source == "PodGroup ml/g"
    assert all(s.pods[p].job == "ml/g" for p in job.pods)
    assert s.errors == ()


def test_basic_policy_podgroup_schedules_its_pods_one_by_one() -> None:
    pg = _pg("scheduling.k8s.io/v1alpha2")
    pg["spec"] = {"schedulingPolicy": {"basic": {}}}
    s = snap(pg, _members("scheduling.k8s.io"))
    assert set(s.jobs) == {f"ml/g-worker-{i}" for i in range(3)}
    for name, job in s.jobs.items():
        assert (job.min_pods, job.max_pods, job.pods) == (1, 1, (name,))
        assert job.invalid is None and s.pods[name].job == name
    assert s.errors == ()


def test_old_scheduler_plugins_pod_label() -> None:
    pods = [pod(f"w-{i}", labels={"pod-group.scheduling.sigs.k8s.io": "g"}) for i in range(2)]
    pg = _pg("scheduling.sigs.k8s.io/v1alpha1", ns="default", min_member=2)
    job = snap(pg, pods).jobs["default/g"]
    assert job.invalid is None and len(job.pods) == 2


def test_lone_pod_is_a_gang_of_one() -> None:
    s = snap(pod("solo", namespace="ns1"))
    job = s.jobs["ns1/solo"]
    assert (job.min_pods, job.max_pods, job.pods) == (1, 1, ("ns1/solo",))
    assert s.pods["ns1/solo"].job == "ns1/solo"


def test_pod_without_namespace_defaults_to_default() -> None:
    p = pod("solo")
    del p["metadata"]["namespace"]
    assert set(snap(p).jobs) == {"default/solo"}


def test_same_group_name_in_two_namespaces_is_two_jobs() -> None:
    s = snap(gang("g", 2, namespace="a"), gang("g", 2, namespace="b"))
    assert set(s.jobs) == {"a/g", "b/g"}


@pytest.mark.parametrize(
    ("objs", "needle"),
    [
        pytest.param([pod("w-0", group="ghost")], "PodGroup default/ghost", id="no-podgroup"),
        pytest.param(
            [pod_group("ghost", namespace="other"), pod("w-0", group="ghost")],
            "PodGroup default/ghost",
            id="podgroup-in-other-namespace",
        ),
        pytest.param(
            [pod_group("ghost", api="scheduling.volcano.sh"), pod("w-0", group="ghost")],
            "PodGroup default/ghost",
            id="podgroup-of-another-api",
        ),
    ],
)
def test_pod_pointing_to_missing_podgroup_is_invalid(
    objs: list[dict[str, Any]], needle: str
) -> None:
    s = snap(objs, gang("fine", 2))
    job = s.jobs["default/ghost"]
    assert job.invalid is not None and needle in job.invalid and "not found" in job.invalid
    assert "default/w-0" in job.invalid
    assert s.jobs["default/fine"].invalid is None
    assert any(e.obj == needle for e in s.errors)


def test_lone_pod_and_group_with_same_name_do_not_collide() -> None:
    s = snap(pod("g"), gang("g", 2))
    assert len(s.jobs) == 2
    assert s.jobs["default/g"].pods == ("default/g-worker-0", "default/g-worker-1")
    assert s.jobs["default/g#pod"].pods == ("default/g",)
    assert all(s.pods[p].job == name for name, j in s.jobs.items() for p in j.pods)


# -- elastic annotations ---------------------------------------------------------------------


def test_elastic_annotations() -> None:
    objs = gang(
        "e",
        16,
        min_member=2,
        max_member=256,
        size_policy="power-of-two",
        cooldown="1h30m",
        last_scale_time="2026-01-01T11:58:00Z",
    )
    job = snap(objs).jobs["default/e"]
    assert job.invalid is None
    assert (job.min_pods, job.max_pods) == (2, 256)
    assert job.elastic and job.size_policy is SizePolicy.POWER_OF_TWO
    assert job.allowed_sizes() == (2, 4, 8, 16)  # capped by the 16 pods that exist
    assert job.cooldown == timedelta(hours=1, minutes=30)
    assert job.last_scale_time == datetime(2026, 1, 1, 11, 58, tzinfo=UTC)
    assert job.cooldown_until() == datetime(2026, 1, 1, 13, 28, tzinfo=UTC)


def test_size_policy_any_allows_every_size() -> None:
    job = snap(gang("e", 5, min_member=2, max_member=4)).jobs["default/e"]
    assert job.size_policy is SizePolicy.ANY and job.allowed_sizes() == (2, 3, 4)


def test_default_cooldown_applies_without_annotation() -> None:
    s = snapshot_from_objects(gang("e", 2), default_cooldown=timedelta(minutes=3))
    assert s.jobs["default/e"].cooldown == timedelta(minutes=3)
    assert s.jobs["default/e"].last_scale_time is None


def _one_pg(
    min_member: int = 4,
    api: str = "scheduling.x-k8s.io",
    **anns: str,
) -> list[dict[str, Any]]:
    """PodGroup default/bad (annotations as keyword args) and max(min_member, 1) pods."""
    pg = pod_group("bad", min_member=min_member, api=api)
    if anns:
        pg["metadata"]["annotations"] = {ANN + k.replace("_", "-"): v for k, v in anns.items()}
    return [pg] + [
        pod(f"bad-worker-{i}", group="bad", group_api=api) for i in range(max(min_member, 1))
    ]


def _k8s_pg_without_min_count() -> list[dict[str, Any]]:
    objs = _one_pg(2, api="scheduling.k8s.io")
    objs[0]["spec"] = {}
    return objs


@pytest.mark.parametrize(
    ("objs", "needles"),
    [
        pytest.param(
            _one_pg(4, max_member="2"),
            ["PodGroup default/bad", "solver-sched.io/max-member", "2 < spec.minMember 4"],
            id="max-member-below-minMember",
        ),
        pytest.param(
            _one_pg(4, api="scheduling.k8s.io", max_member="2"),
            [
                "PodGroup default/bad",
                "solver-sched.io/max-member",
                "2 < spec.schedulingPolicy.gang.minCount 4",
            ],
            id="max-member-below-minCount",
        ),
        pytest.param(
            _one_pg(2, max_member="many"),
            ["PodGroup default/bad", "solver-sched.io/max-member", "'many'"],
            id="max-member-not-integer",
        ),
        pytest.param(
            _one_pg(3, max_member="8", size_policy="power-of-two"),
            ["PodGroup default/bad", "spec.minMember", "3 is not a power of two"],
            id="power-of-two-with-min-3",
        ),
        pytest.param(
            _one_pg(2, size_policy="fibonacci"),
            ["PodGroup default/bad", "solver-sched.io/size-policy", "'fibonacci'"],
            id="unknown-size-policy",
        ),
        pytest.param(
            _one_pg(2, cooldown="ten minutes"),
            ["PodGroup default/bad", "solver-sched.io/cooldown", "'ten minutes'"],
            id="cooldown-words",
        ),
        pytest.param(
            _one_pg(2, cooldown="1.5h"),
            ["PodGroup default/bad", "solver-sched.io/cooldown"],
            id="cooldown-fraction",
        ),
        pytest.param(
            _one_pg(2, last_scale_time="yesterday"),
            ["PodGroup default/bad", "solver-sched.io/last-scale-time", "'yesterday'"],
            id="last-scale-time-words",
        ),
        pytest.param(
            _one_pg(2, last_scale_time="2026-01-01T11:58:00"),
            ["PodGroup default/bad", "solver-sched.io/last-scale-time"],
            id="last-scale-time-no-zone",
        ),
        pytest.param(
            _one_pg(0), ["PodGroup default/bad", "spec.minMember", ">= 1"], id="minMember-zero"
        ),
        pytest.param(
            _k8s_pg_without_min_count(),
            ["PodGroup default/bad", "spec.schedulingPolicy.gang.minCount"],
            id="k8s-without-minCount",
        ),
    ],
)
def test_invalid_podgroup_is_reported_and_rest_still_loads(
    objs: list[dict[str, Any]], needles: list[str]
) -> None:
    s = snap(objs, gang("fine", 2, max_member=4), node("n1"))
    bad = s.jobs["default/bad"]
    assert bad.invalid is not None
    for needle in needles:
        assert needle in bad.invalid
    assert any(all(n in str(e) for n in needles) for e in s.errors), error_strings(s)
    fine = s.jobs["default/fine"]
    assert fine.invalid is None and (fine.min_pods, fine.max_pods) == (2, 4)
    assert s.nodes["n1"].invalid is None


def test_priority_class_name_on_podgroup() -> None:
    pc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    }
    objs = gang("g", 2, priority=5)
    objs[0]["spec"]["priorityClassName"] = "high"
    assert snap(pc, objs).jobs["default/g"].priority == 1000


# -- Kubeflow PyTorchJob ---------------------------------------------------------------------


def pytorchjob(
    name: str, *, workers: int, lo: int | None = None, hi: int | None = None, master: int = 0
) -> dict[str, Any]:
    specs: dict[str, Any] = {"Worker": {"replicas": workers}}
    if master:
        specs["Master"] = {"replicas": master}
    spec: dict[str, Any] = {"pytorchReplicaSpecs": specs}
    if lo is not None or hi is not None:
        spec["elasticPolicy"] = {
            k: v for k, v in (("minReplicas", lo), ("maxReplicas", hi)) if v is not None
        }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def kubeflow_pods(name: str, n: int, *, group: bool) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        labels = {
            "training.kubeflow.org/job-name": name,
            "training.kubeflow.org/replica-type": "worker",
            "training.kubeflow.org/replica-index": str(i),
        }
        out.append(pod(f"{name}-worker-{i}", labels=labels, group=name if group else None))
    return out


def test_pytorchjob_elastic_range_when_podgroup_has_no_max_member() -> None:
    objs = [
        pytorchjob("pt", workers=4, lo=2, hi=8),
        pod_group("pt", min_member=4),
        *kubeflow_pods("pt", 4, group=True),
    ]
    job = snap(objs).jobs["default/pt"]
    assert job.invalid is None
    assert (job.min_pods, job.max_pods) == (2, 8)
    assert job.allowed_sizes() == (2, 3, 4)


def test_max_member_annotation_wins_over_pytorchjob() -> None:
    objs = [
        pytorchjob("pt", workers=4, lo=2, hi=8),
        pod_group("pt", min_member=4, max_member=6),
        *kubeflow_pods("pt", 4, group=True),
    ]
    job = snap(objs).jobs["default/pt"]
    assert (job.min_pods, job.max_pods) == (4, 6)


@pytest.mark.parametrize(
    ("pj", "expected"),
    [
        pytest.param(pytorchjob("pt", workers=4, lo=1, hi=6), (1, 6), id="elastic"),
        # the training-operator's defaults: a bound left unset is the other one
        pytest.param(pytorchjob("pt", workers=4, lo=2), (2, 2), id="elastic-no-max"),
        pytest.param(pytorchjob("pt", workers=4, hi=3), (3, 3), id="elastic-no-min"),
        pytest.param(pytorchjob("pt", workers=3, master=1), (4, 4), id="rigid-with-master"),
        pytest.param(None, (4, 4), id="no-pytorchjob-object"),
    ],
)
def test_kubeflow_label_without_podgroup_forms_the_job(
    pj: dict[str, Any] | None, expected: tuple[int, int]
) -> None:
    objs = [*kubeflow_pods("pt", 4, group=False)] + ([pj] if pj else [])
    job = snap(objs).jobs["default/pt"]
    assert job.invalid is None
    assert (job.min_pods, job.max_pods) == expected
    assert job.pods == tuple(f"default/pt-worker-{i}" for i in range(4))


def test_kubeflow_job_without_podgroup_reads_scaling_annotations_from_its_pytorchjob() -> None:
    pj = pytorchjob("pt", workers=4, lo=2, hi=8)
    pj["metadata"]["annotations"] = {
        "solver-sched.io/size-policy": "power-of-two",
        "solver-sched.io/cooldown": "5m",
        "solver-sched.io/last-scale-time": "2026-01-01T11:58:00Z",
    }
    job = snap(pj, kubeflow_pods("pt", 4, group=False)).jobs["default/pt"]
    assert job.invalid is None
    assert job.allowed_sizes() == (2, 4)  # powers of two up to the 4 pods that exist (not 3)
    assert job.cooldown == timedelta(minutes=5)
    assert job.last_scale_time == datetime(2026, 1, 1, 11, 58, tzinfo=UTC)


@pytest.mark.parametrize(
    ("annotation", "value", "field"),
    [
        ("last-scale-time", "yesterday", "metadata.annotations[solver-sched.io/last-scale-time]"),
        ("cooldown", "soon", "metadata.annotations[solver-sched.io/cooldown]"),
        ("size-policy", "odd", "metadata.annotations[solver-sched.io/size-policy]"),
    ],
)
def test_kubeflow_job_without_podgroup_with_a_bad_annotation_is_invalid(
    annotation: str, value: str, field: str
) -> None:
    pj = pytorchjob("pt", workers=4, lo=2, hi=8)
    pj["metadata"]["annotations"] = {f"solver-sched.io/{annotation}": value}
    s = snap(pj, kubeflow_pods("pt", 4, group=False))
    job = s.jobs["default/pt"]
    assert job.invalid is not None
    assert "PyTorchJob default/pt" in job.invalid and field in job.invalid


@pytest.mark.parametrize("group", [False, True], ids=["labels-only", "podgroup"])
def test_pytorchjob_min_above_max_is_invalid_in_the_fields_own_numbers(group: bool) -> None:
    """The gang's min and max count the Master too (5 and 3 here); the error quotes the
    elasticPolicy's numbers, which the user wrote."""
    pj = pytorchjob("pt", workers=3, master=1, lo=4, hi=2)
    pods = kubeflow_pods("pt", 4, group=group)
    s = snap(pj, *pods, *([pod_group("pt", min_member=4)] if group else []))
    job = s.jobs["default/pt"]
    assert job.invalid is not None
    assert "PyTorchJob default/pt" in job.invalid and "spec.elasticPolicy" in job.invalid
    assert "maxReplicas 2 < minReplicas 4" in job.invalid


@pytest.mark.parametrize("group", [False, True], ids=["labels-only", "podgroup"])
@pytest.mark.parametrize("lo", [0, -1])
def test_pytorchjob_min_replicas_that_leave_no_pod_is_invalid(group: bool, lo: int) -> None:
    """A gang of workers only, with minReplicas below 1, has no guaranteed pod: the job is
    reported by its PyTorchJob and field, not planned with a min of 0."""
    objs = [pytorchjob("pt", workers=4, lo=lo, hi=4), *kubeflow_pods("pt", 4, group=group)]
    if group:
        objs.append(pod_group("pt", min_member=4))
    s = snap(objs)
    job = s.jobs["default/pt"]
    assert job.invalid is not None
    assert "PyTorchJob default/pt" in job.invalid
    assert "spec.elasticPolicy.minReplicas" in job.invalid
    assert any("spec.elasticPolicy.minReplicas" in e for e in error_strings(s))


def test_pytorchjob_without_replicas_is_invalid() -> None:
    s = snap(pytorchjob("pt", workers=0), kubeflow_pods("pt", 2, group=False))
    job = s.jobs["default/pt"]
    assert job.invalid is not None
    assert "PyTorchJob default/pt" in job.invalid and "spec.pytorchReplicaSpecs" in job.invalid


def test_a_gang_keeps_its_name_when_a_lone_pod_has_the_same() -> None:
    """A pod of no gang named like a PodGroup took the job's name: the gang became train#sp,
    its status went to the lone pod's row and its cooldown was lost (the PodGroup holding its
    last-scale-time was looked up by the job's name)."""
    group = pod_group("train", min_member=2, last_scale_time="2026-01-01T11:55:00Z")
    members = [pod(f"train-{i}", group="train") for i in range(2)]
    s = snap(group, *members, pod("train"))
    gang_job, lone = s.jobs["default/train"], s.jobs["default/train#pod"]
    assert gang_job.pods == ("default/train-0", "default/train-1")
    assert gang_job.last_scale_time == datetime(2026, 1, 1, 11, 55, tzinfo=UTC)
    assert lone.pods == ("default/train",)


def test_a_podgroup_naming_no_priority_class_is_reported_and_keeps_its_pods_priority() -> None:
    """A typo in the PodGroup's priorityClassName was ignored without a word, even by
    --strict."""
    group = pod_group("g", min_member=1)
    group["spec"]["priorityClassName"] = "hgh"
    classes = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    }
    s = snap(classes, group, pod("g-0", group="g", priority=7))
    assert s.jobs["default/g"].priority == 7 and s.jobs["default/g"].invalid is None
    assert [(e.obj, e.field) for e in s.errors] == [
        ("PodGroup default/g", "spec.priorityClassName")
    ]
    assert "no PriorityClass 'hgh'" in s.errors[0].message


# -- ElasticQuotaTree ------------------------------------------------------------------------


def _tree(**overrides: Any) -> dict[str, Any]:
    team_a = {
        "name": "team-a",
        "namespaces": ["a1", "a2"],
        "min": {"nvidia.com/gpu": "4"},
        "max": {"nvidia.com/gpu": "8", "kube-queue/max-jobs": "2"},
    }
    team_b = {"name": "team-b", "namespaces": ["b1"], "max": {"cpu": "64"}}
    team_a.update(overrides)
    root = {
        "name": "root",
        "max": {"nvidia.com/gpu": "16", "kube-queue/max-jobs": "10"},
        "children": [{"name": "org", "children": [team_a]}, team_b],
    }
    return quota_tree(root)


def test_quota_tree_parsed() -> None:
    s = snap(_tree())
    q = s.quota
    assert set(q.queues) == {"root", "org", "team-a", "team-b"}
    a = q.queues["team-a"]
    assert (a.parent, a.namespaces) == ("org", ("a1", "a2"))
    assert dict(a.min) == {GPU: 4} and dict(a.max) == {GPU: 8}
    assert a.max_jobs == 2 and a.invalid is None
    assert q.queues["root"].max_jobs == 10 and dict(q.queues["root"].max) == {GPU: 16}
    assert dict(q.queues["team-b"].max) == {CPU: 64_000} and q.queues["team-b"].max_jobs is None
    assert q.leaf_for("a2") == "team-a" and q.leaf_for("b1") == "team-b"
    assert q.chain("team-a") == ("team-a", "org", "root")
    assert q.chain("team-b") == ("team-b", "root")
    assert s.errors == ()


def test_a_misspelt_kube_queue_key_holds_its_queue_with_the_field_named() -> None:
    """kube-queue/maxjobs read as a resource nobody requests: team-a ran without its job cap."""
    s = snap(_tree(max={"nvidia.com/gpu": "8", "kube-queue/maxjobs": "2"}))
    assert s.quota.queues["team-a"].invalid == (
        "ElasticQuotaTree kube-system/elasticquotatree: "
        "spec.root.children[0].children[0].max.kube-queue/maxjobs: "
        "unknown kube-queue key (the one read: kube-queue/max-jobs)"
    )
    assert s.quota.queues["team-b"].invalid is None


@pytest.mark.parametrize("newer_first", [False, True])
def test_of_two_trees_the_oldest_is_in_force_in_any_order(newer_first: bool) -> None:
    """A second tree created later (default/a-tree) took over after a restart, when the re-list
    put it first: the queues changed under running work."""
    old = _tree()
    old["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    new = quota_tree({"name": "root", "max": {"kube-queue/max-jobs": "9"}})
    new["metadata"] = {
        "name": "a-tree",
        "namespace": "default",
        "creationTimestamp": "2026-01-02T00:00:00Z",
    }
    s = snap(*([new, old] if newer_first else [old, new]))
    assert set(s.quota.queues) == {"root", "org", "team-a", "team-b"}
    assert [e.message for e in s.errors] == [
        "several trees: kube-system/elasticquotatree, the oldest, is in force; ignored "
        "default/a-tree"
    ]


def test_namespace_in_no_leaf_is_implicit_queue() -> None:
    q = snap(_tree()).quota
    assert q.leaf_for("elsewhere") == IMPLICIT_QUEUE
    assert q.chain(IMPLICIT_QUEUE) == ()


def test_no_tree_means_everything_implicit() -> None:
    assert snap(pod("p")).quota.leaf_for("default") == IMPLICIT_QUEUE


@pytest.mark.parametrize(
    ("overrides", "field", "needle"),
    [
        pytest.param(
            {"min": {"nvidia.com/gpu": "9"}},
            "spec.root.children[0].children[0].min.nvidia.com/gpu",
            "9 > max 8",
            id="min-above-max",
        ),
        pytest.param(
            {"max": {"nvidia.com/gpu": "lots"}},
            "spec.root.children[0].children[0].max.nvidia.com/gpu",
            "'lots'",
            id="unparsable-max",
        ),
        pytest.param(
            {"min": {"cpu": "1.2.3"}},
            "spec.root.children[0].children[0].min.cpu",
            "'1.2.3'",
            id="unparsable-min",
        ),
    ],
)
def test_invalid_queue(overrides: dict[str, Any], field: str, needle: str) -> None:
    s = snap(_tree(**overrides), gang("g", 2, namespace="a1"))
    q = s.quota.queues["team-a"]
    assert q.invalid is not None
    assert "ElasticQuotaTree kube-system/elasticquotatree" in q.invalid
    assert field in q.invalid and needle in q.invalid
    assert [(e.obj, e.field) for e in s.errors] == [
        ("ElasticQuotaTree kube-system/elasticquotatree", field)
    ]
    assert s.quota.invalid_in_chain("team-a") == q.invalid
    assert s.quota.queues["team-b"].invalid is None
    assert s.quota.invalid_in_chain("team-b") is None
    assert "a1/g" in s.jobs  # the job still loads; the planner reports the queue


def test_duplicate_namespace_is_reported() -> None:
    s = snap(_tree(namespaces=["a1", "b1"]))
    assert any("namespace b1 already in queue" in str(e) for e in s.errors)


# -- priority --------------------------------------------------------------------------------

PC_HIGH = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "high"},
    "value": 1000,
}
PC_DEFAULT = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "normal"},
    "value": 7,
    "globalDefault": True,
}


def _with_class(name: str, cls: str | None = None, prio: int | None = None) -> dict[str, Any]:
    p = pod(name, priority=prio)
    if cls:
        p["spec"]["priorityClassName"] = cls
    return p


@pytest.mark.parametrize(
    ("objs", "expected"),
    [
        pytest.param([_with_class("p", prio=42)], 42, id="spec-priority"),
        pytest.param([PC_HIGH, _with_class("p", cls="high")], 1000, id="priority-class"),
        pytest.param(
            [_with_class("p", cls="high"), PC_HIGH], 1000, id="priority-class-listed-after-pod"
        ),
        pytest.param([PC_HIGH, _with_class("p", cls="high", prio=3)], 3, id="spec-priority-wins"),
        pytest.param([_with_class("p", cls="missing")], 0, id="unknown-class"),
        pytest.param([PC_DEFAULT, _with_class("p")], 7, id="global-default"),
        pytest.param([_with_class("p")], 0, id="nothing"),
    ],
)
def test_pod_priority(objs: list[dict[str, Any]], expected: int) -> None:
    s = snap(objs)
    assert s.pods["default/p"].priority == expected
    assert s.jobs["default/p"].priority == expected


def test_job_priority_is_highest_pod_priority() -> None:
    objs = gang("g", 3)
    for i, prio in enumerate((1, 9, 4)):
        objs[1 + i]["spec"]["priority"] = prio
    assert snap(objs).jobs["default/g"].priority == 9


# -- pod order within a job ------------------------------------------------------------------


def _named(
    names: list[str],
    labels: list[dict[str, str]] | None = None,
) -> list[dict[str, Any]]:
    labels = labels or [{} for _ in names]
    return [pod_group("g", min_member=1, max_member=len(names))] + [
        pod(n, group="g", labels=lab) for n, lab in zip(names, labels, strict=True)
    ]


@pytest.mark.parametrize(
    ("objs", "expected"),
    [
        pytest.param(
            _named([f"w-{i}" for i in (10, 9, 1, 0, 2, 11)]),
            ["w-0", "w-1", "w-2", "w-9", "w-10", "w-11"],
            id="trailing-number",
        ),
        pytest.param(
            _named(
                ["a", "b", "c"],
                [
                    {"training.kubeflow.org/replica-index": "2"},
                    {"training.kubeflow.org/replica-index": "0"},
                    {"training.kubeflow.org/replica-index": "1"},
                ],
            ),
            ["b", "c", "a"],
            id="kubeflow-replica-index",
        ),
        pytest.param(
            _named(
                ["x-5", "x-6"],
                [
                    {"batch.kubernetes.io/job-completion-index": "1"},
                    {"batch.kubernetes.io/job-completion-index": "0"},
                ],
            ),
            ["x-6", "x-5"],
            id="job-completion-index-beats-name",
        ),
        pytest.param(
            _named(
                ["s-a", "s-b"],
                [{"apps.kubernetes.io/pod-index": "10"}, {"apps.kubernetes.io/pod-index": "9"}],
            ),
            ["s-b", "s-a"],
            id="statefulset-pod-index",
        ),
        pytest.param(
            _named(
                ["v-a", "v-b"], [{"volcano.sh/task-index": "3"}, {"volcano.sh/task-index": "2"}]
            ),
            ["v-b", "v-a"],
            id="volcano-task-index",
        ),
        pytest.param(
            _named(
                ["pt-worker-0", "pt-master-0", "pt-worker-1"],
                [
                    {
                        "training.kubeflow.org/replica-type": "worker",
                        "training.kubeflow.org/replica-index": "0",
                    },
                    {
                        "training.kubeflow.org/replica-type": "master",
                        "training.kubeflow.org/replica-index": "0",
                    },
                    {
                        "training.kubeflow.org/replica-type": "worker",
                        "training.kubeflow.org/replica-index": "1",
                    },
                ],
            ),
            ["pt-master-0", "pt-worker-0", "pt-worker-1"],
            id="master-first",
        ),
        pytest.param(_named(["zeta", "alpha"]), ["alpha", "zeta"], id="no-number-by-name"),
    ],
)
def test_pod_order(objs: list[dict[str, Any]], expected: list[str]) -> None:
    assert snap(objs).jobs["default/g"].pods == tuple(f"default/{n}" for n in expected)


# -- robustness: bad objects are reported, not raised ----------------------------------------


def test_object_failing_schema_is_reported_and_dropped() -> None:
    bad = node("bad")
    bad["spec"]["taints"] = [{"key": "x"}]  # no effect
    s = snap(bad, node("good"))
    assert set(s.nodes) == {"good"}
    assert any(e.obj == "Node bad" and "effect" in e.field for e in s.errors)


def test_unknown_kinds_are_ignored() -> None:
    s = snap(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}},
        pod("p"),
    )
    assert set(s.jobs) == {"default/p"} and s.errors == ()


@pytest.mark.parametrize(
    "metadata",
    [
        pytest.param("oops", id="metadata-string"),
        pytest.param({"name": 2024}, id="name-int"),
        pytest.param({"name": "p", "namespace": 7}, id="namespace-int"),
    ],
)
def test_bad_metadata_is_reported_not_raised(metadata: Any) -> None:
    s = snap({"apiVersion": "v1", "kind": "Pod", "metadata": metadata}, pod("fine"))
    assert s.errors and "default/fine" in s.jobs


def test_podgroup_without_namespace_matches_pods_without_namespace() -> None:
    pg = pod_group("g", min_member=1)
    p = pod("g-0", group="g")
    del pg["metadata"]["namespace"], p["metadata"]["namespace"]
    assert snap(pg, p).jobs["default/g"].invalid is None


def test_finished_pod_with_bad_request_holds_nothing() -> None:
    p = pod("done", node_name="n1", phase="Succeeded", cpu="lots")
    s = snap(node("n1"), p)
    assert not s.pods["default/done"].bound and "default/done" not in s.jobs


# -- a second load of mostly the same dicts (the controller's two snapshots of a cycle) ------


def test_a_second_load_reuses_what_the_first_parsed_and_reads_changed_dicts_again() -> None:
    objs = [node("n1"), node("n2"), *gang("g", 2, running_on=["n1"]), pod("bad", cpu="lots")]
    parsed = Parsed()
    first = snapshot_from_objects(objs, parsed=parsed)
    moved = copy.deepcopy(objs[4])  # g-worker-1, now bound (an in-flight bind)
    moved["spec"]["nodeName"] = "n2"

    def reads() -> int:
        return sum(1 for key in parsed.entries if key[0] in ("node", "pod"))

    read = reads()  # two nodes, three pods
    second = snapshot_from_objects([*objs[:4], moved, objs[5]], parsed=parsed)
    assert (read, reads()) == (5, 6)  # only the moved pod was read again
    assert second.nodes["n1"] is first.nodes["n1"]
    assert (
        first.pods["default/g-worker-1"].node_name,
        second.pods["default/g-worker-1"].node_name,
    ) == (None, "n2")
    assert second.errors == first.errors != ()  # the bad pod's error is reported by both loads
    fresh = snapshot_from_objects([*objs[:4], moved, objs[5]])
    assert second == fresh


def test_a_pod_is_read_again_when_its_node_changed() -> None:
    """The pod's cluster comes from its node's label: a new node dict means a new read."""
    objs = [node("n1"), pod("p", node_name="n1")]
    parsed = Parsed()
    assert snapshot_from_objects(objs, parsed=parsed).pods["default/p"].cluster == "default"
    relabelled = node("n1", labels={"solver-sched.io/cluster": "east"})
    again = snapshot_from_objects([relabelled, objs[1]], parsed=parsed)
    assert again.pods["default/p"].cluster == "east"


def test_pods_with_equal_requests_share_one_request_object() -> None:
    """Interned when read: queue usage sums a gang's pods per request object (one sum per gang)."""
    s = snap(gang("g", 3, gpus=2), pod("p", gpus=1))
    a, b, c = (s.pods[f"default/g-worker-{i}"].requests for i in range(3))
    assert a is b is c
    assert s.pods["default/p"].requests is not a and dict(s.pods["default/p"].requests) != dict(a)


def test_queue_usage_sums_every_pod_up_the_tree_whether_requests_are_shared_or_not() -> None:
    """Pods sharing a request object and pods with equal, separate ones count the same; a job
    counts once per queue of its chain; a pod without a job of ours counts in its namespace's
    queue, in its resources but not its running jobs (a job the queue did not admit)."""
    s = snap(
        _tree(),
        gang("g", 3, namespace="a1", gpus=2, running_on=["n1", "n1", "n2"]),
        gang("h", 2, namespace="a2", gpus=1, running_on=["n2", "n2"]),
        pod("lone", namespace="b1", gpus=0, cpu="3", node_name="n3", scheduler="other"),
    )
    pods = [p for p in s.pods.values() if p.bound]
    h = [p for p in pods if p.job == "a2/h"]
    assert len(h) == 2 and h[0].requests is h[1].requests
    separate = [replace(p, requests=dict(p.requests)) if p.job == "a2/h" else p for p in pods]
    expected: dict[str, dict[str, int]] = {}
    jobs: dict[str, set[str]] = {}
    for p in pods:  # the reference: per pod, up its leaf's chain
        job = s.jobs.get(p.job)
        leaf = s.queue_of(job) if job else s.quota.leaf_for(p.namespace)
        for q in s.quota.chain(leaf):
            res.add_into(expected.setdefault(q, {}), p.requests)
            jobs.setdefault(q, set()).update([p.job] if job else [])
    for q, names in jobs.items():
        expected[q][MAX_JOBS] = len(names)
    assert expected["root"][GPU] == 8 and expected["root"][MAX_JOBS] == 2
    assert expected["team-b"][MAX_JOBS] == 0 and expected["team-b"]["cpu"] == 3000
    assert s.queue_usage(pods) == expected
    assert s.queue_usage(separate) == expected
    mine = s.bound_usage()  # summed once per snapshot, a copy for each caller
    assert mine == expected and mine["no-such-queue"] == {}
    mine["root"][GPU] = 0
    assert s.bound_usage() == expected


def test_a_misspelt_solver_sched_annotation_is_reported_and_the_rest_read() -> None:
    """solver-sched.io/max-members (for max-member) was ignored unsaid: the gang ran rigid."""
    objs = gang("g", 2, max_member=4)
    objs[0]["metadata"]["annotations"]["solver-sched.io/max-members"] = "8"
    objs[0]["metadata"]["annotations"]["solver-sched.io/cooldown"] = "5m"
    snap = snapshot_from_objects([node("a"), *objs])
    assert [(e.obj, e.field, e.message) for e in snap.errors] == [
        (
            "PodGroup default/g",
            "metadata.annotations[solver-sched.io/max-members]",
            "not an annotation solver-sched reads; did you mean solver-sched.io/max-member?",
        )
    ]
    job = snap.jobs["default/g"]
    assert job.invalid is None and job.max_pods == 4 and job.cooldown == timedelta(minutes=5)


def test_a_validation_error_is_placed_as_kubernetes_writes_paths() -> None:
    """spec.containers[0].resources, not pydantic's spec.containers.0.resources; "a mapping",
    not "a valid dictionary or instance of ResourceReqs"."""
    p = pod("p", gpus=1)
    p["spec"]["containers"][0]["resources"] = "4 GPUs"
    snap = snapshot_from_objects([node("a"), p])
    assert [(e.field, e.message) for e in snap.errors] == [
        ("spec.containers[0].resources", "Input should be a mapping")
    ]
