"""deploy/ on a real API server: the manifests apply server-side, the controller runs as its own
ServiceAccount (so a missing RBAC verb fails here), and `solver-sched dump` replays with whatif."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from solver_sched.cli.main import main
from solver_sched.io import manifests as m
from solver_sched.kube.api import ApiError, KubeApi, load_client
from solver_sched.kube.controller import Controller
from solver_sched.kube.sandbox import sandbox
from tests.integration.conftest import BINARY, TestEnv
from tests.integration.kube import ROOT, Kube, priority_classes, wait_for

pytestmark = pytest.mark.integration


def _apply_dir(kube: Kube, directory: Path) -> list[str]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    applied = []
    for name in kustomization["resources"]:
        for obj in kube.load(directory / name):
            kube.apply(obj)
            applied.append(f"{obj['kind']}/{obj['metadata']['name']}")
    return applied


def _kubeconfig_for(testenv: TestEnv, token: str, path: Path) -> str:
    admin = yaml.safe_load(Path(testenv.kubeconfig).read_text())
    cluster = admin["clusters"][0]
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": cluster["name"], "user": "sa"}}],
        "current-context": "sa",
    }
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _token(kube: Kube, namespace: str, account: str) -> str:
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    out = kube.api.request(
        "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", body=body
    )
    return str(out["status"]["token"])


def test_controller_runs_with_least_privilege_rbac(
    kube: Kube, testenv: TestEnv, tmp_path: Path, start_controller: Callable[..., Controller]
) -> None:
    applied = _apply_dir(kube, ROOT / "deploy" / "base")
    assert "ClusterRole/solver-sched" in applied and "Deployment/solver-sched" in applied
    for sample in _apply_dir(kube, ROOT / "deploy" / "samples"):
        assert sample
    kubeconfig = _kubeconfig_for(
        testenv, _token(kube, "solver-sched", "solver-sched"), tmp_path / "sa.kubeconfig"
    )
    # RBAC is enforced: an account with no role may not even list pods.
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "nobody", "namespace": "solver-sched"},
        }
    )
    nobody = KubeApi(
        load_client(
            _kubeconfig_for(
                testenv, _token(kube, "solver-sched", "nobody"), tmp_path / "nobody.kubeconfig"
            )
        )
    )
    with pytest.raises(ApiError) as denied:
        nobody.get("/api/v1/pods")
    assert denied.value.status == 403
    # The scheduler as its ServiceAccount: every verb of a preemption cycle must be allowed.
    priority_classes(kube)
    kube.create(m.node("n1", gpus=4))
    kube.create_all(
        m.gang("low", 2, running_on=["n1", "n1"], priority_class="low", min_member=1, max_member=2)
    )
    kube.create_all(m.gang("high", 3, priority_class="high"))
    controller = start_controller(
        kubeconfig=kubeconfig, leader_elect=True, identity="solver-sched-0"
    )
    wait_for("high bound", lambda: kube.bound("default", "high-") == 3, timeout=45)
    assert kube.bound("default", "low-") == 1  # scaled in, never below its min
    assert controller.may_act()
    lease = kube.api.get("/apis/coordination.k8s.io/v1/namespaces/solver-sched/leases/solver-sched")
    assert lease["spec"]["holderIdentity"] == "solver-sched-0"
    group = kube.api.get("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/low")
    assert "solver-sched.io/last-scale-time" in group["metadata"]["annotations"]
    # A PyTorchJob without a PodGroup carries its last-scale-time itself (the sample's, here).
    as_scheduler = KubeApi(load_client(kubeconfig))
    as_scheduler.request(
        "PATCH",
        "/apis/kubeflow.org/v1/namespaces/team-b/pytorchjobs/elastic",
        body={
            "metadata": {"annotations": {"solver-sched.io/last-scale-time": "2026-01-01T12:00:00Z"}}
        },
        content_type="application/merge-patch+json",
    )
    assert any(e["reason"] == "Resized" for e in kube.events("default", "low"))


def test_dump_replays_with_whatif(
    kube: Kube, testenv: TestEnv, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kube.create_all(kube.load(ROOT / "models" / "gang-8-on-5.yaml"))
    out = tmp_path / "dump.yaml"
    assert main(["dump", "--kubeconfig", testenv.kubeconfig, "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["whatif", str(out), "-o", "json"]) == 0
    import json

    result = json.loads(capsys.readouterr().out)
    workers = {j["name"]: j["workers"] for j in result["jobs"]}
    assert workers["default/small"] == 4 and workers["default/big"] == 0


def test_check_manifests_online_passes_on_a_fresh_api_server(tmp_path: Path) -> None:
    """deploy/hack/check_manifests.py --kubeconfig (deploy/README): the manifests apply, and
    SubjectAccessReviews find every verb the scheduler uses allowed and the rest denied. Run on
    a server of its own (it installs the CRDs and samples); untested, its list had kept 14 verbs
    the role no longer grants."""
    with sandbox(BINARY, tmp_path / "env", tmp_path / "env.log") as env:
        done = subprocess.run(
            [sys.executable, "deploy/hack/check_manifests.py", "--kubeconfig", env.kubeconfig],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
    failed = [line for line in done.stdout.splitlines() if "FAIL" in line]
    assert done.returncode == 0 and not failed, failed or done.stderr[-2000:]
