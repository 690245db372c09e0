"""A local sandbox cluster: the real kube-apiserver + etcd of tools/kube-testenv, and helpers to
create objects, play the kubelet and wait for state. Used by `solver-sched demo` and the
integration tests (no kubelet or controllers run there: this is what stands in for them)."""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from solver_sched.kube.api import ApiError, KubeApi
from solver_sched.kube.resources import Resource
from solver_sched.kube.status import waiting_reason

T = TypeVar("T")

TEST_NAMESPACES = ("default", "team-a", "team-b", "infra", "solver-sched")
CLUSTER_SCOPED = {
    "Node",
    "Namespace",
    "PriorityClass",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "Cluster",
}
PLURALS = {
    "Node": "nodes",
    "Pod": "pods",
    "Namespace": "namespaces",
    "ConfigMap": "configmaps",
    "PodGroup": "podgroups",
    "Workload": "workloads",
    "ElasticQuotaTree": "elasticquotatrees",
    "PyTorchJob": "pytorchjobs",
    "PriorityClass": "priorityclasses",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "Lease": "leases",
    "CustomResourceDefinition": "customresourcedefinitions",
    "ServiceAccount": "serviceaccounts",
    "ClusterRole": "clusterroles",
    "ClusterRoleBinding": "clusterrolebindings",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "Deployment": "deployments",
    "Service": "services",
    "Event": "events",
    "Job": "jobs",
    "Secret": "secrets",
    "Cluster": "clusters",
    "PropagationPolicy": "propagationpolicies",
}


def path_of(obj: dict[str, Any], name: str | None = None) -> str:
    kind = obj["kind"]
    ns = (obj.get("metadata") or {}).get("namespace") or (
        None if kind in CLUSTER_SCOPED else "default"
    )
    coll = Resource(kind, obj["apiVersion"], PLURALS[kind]).path(ns)
    return f"{coll}/{name}" if name else coll


def wait_for(
    what: str, probe: Callable[[], T | None], timeout: float = 30.0, every: float = 0.2
) -> T:
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


class Kube:
    def __init__(self, api: KubeApi) -> None:
        self.api = api

    # -- objects -----------------------------------------------------------------------------
    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.api.request("POST", path_of(obj), body=obj)

    def apply(self, obj: dict[str, Any], manager: str = "solver-sched-tests") -> dict[str, Any]:
        """Server-side apply, as `kubectl apply --server-side` does."""
        name = obj["metadata"]["name"]
        return self.api.request(
            "PATCH",
            path_of(obj, name),
            body=obj,
            query={"fieldManager": manager, "force": True},
            content_type="application/apply-patch+yaml",
        )

    def create_all(self, objs: list[dict[str, Any]]) -> None:
        order = {
            "Namespace": 0,
            "PriorityClass": 1,
            "Node": 2,
            "ElasticQuotaTree": 3,
            "PodGroup": 4,
            "PyTorchJob": 4,
        }
        for obj in sorted(objs, key=lambda o: order.get(o["kind"], 9)):
            if obj["kind"] == "Namespace":
                self.ensure_namespace(obj["metadata"]["name"])
                continue
            created = self.create(obj)
            if obj["kind"] == "Pod" and (obj.get("status") or {}).get("phase") == "Running":
                self.set_running(
                    f"{created['metadata']['namespace']}/{created['metadata']['name']}"
                )

    def load(self, path: Path) -> list[dict[str, Any]]:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        return [i for d in docs for i in (d["items"] if d.get("kind") == "List" else [d])]

    def ensure_namespace(self, name: str) -> None:
        try:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        except ApiError as exc:
            if exc.status != 409:
                raise

    def get(self, obj: dict[str, Any], name: str) -> dict[str, Any]:
        return self.api.get(path_of(obj, name))

    def patch(
        self, obj: dict[str, Any], name: str, body: dict[str, Any], sub: str = ""
    ) -> dict[str, Any]:
        return self.api.request(
            "PATCH",
            path_of(obj, name) + sub,
            body=body,
            content_type="application/merge-patch+json",
        )

    # -- pods --------------------------------------------------------------------------------
    def pods(self, namespace: str = "default") -> dict[str, str | None]:
        body = self.api.get(f"/api/v1/namespaces/{namespace}/pods")
        return {
            p["metadata"]["name"]: p["spec"].get("nodeName")
            for p in body["items"]
            if not p["metadata"].get("deletionTimestamp")
        }

    def bound(self, namespace: str, prefix: str) -> int:
        return sum(1 for n, node in self.pods(namespace).items() if n.startswith(prefix) and node)

    def set_running(self, pod: str) -> None:
        """Play the kubelet: the pod runs and is Ready (PDBs only guard Running pods)."""
        ns, name = pod.split("/")
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status = {
            "status": {
                "phase": "Running",
                "conditions": [
                    {"type": "Ready", "status": "True", "lastTransitionTime": now},
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
                ],
            }
        }
        self.api.request(
            "PATCH",
            f"/api/v1/namespaces/{ns}/pods/{name}/status",
            body=status,
            content_type="application/strategic-merge-patch+json",
        )

    def kubelet(self, namespace: str, prefix: str = "") -> int:
        """Play the kubelet: bound pods (of names starting with ``prefix``) that are still
        Pending start running; returns how many such pods are bound."""
        bound = 0
        for p in self.api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]:
            meta = p["metadata"]
            if not meta["name"].startswith(prefix) or meta.get("deletionTimestamp"):
                continue
            if p["spec"].get("nodeName"):
                bound += 1
                if (p.get("status") or {}).get("phase") == "Pending":
                    self.set_running(f"{namespace}/{meta['name']}")
        return bound

    def exit(self, pod: str, code: int = 0, container: str = "pytorch") -> None:
        """Play the kubelet: the pod's container exits with ``code`` (Succeeded if 0, else
        Failed), as a workload controller reads it."""
        ns, name = pod.split("/")
        reason = "Completed" if code == 0 else "Error"
        self.api.request(
            "PATCH",
            f"/api/v1/namespaces/{ns}/pods/{name}/status",
            body={
                "status": {
                    "phase": "Succeeded" if code == 0 else "Failed",
                    "containerStatuses": [
                        {
                            "name": container,
                            "image": "",
                            "imageID": "",
                            "ready": False,
                            "restartCount": 0,
                            "state": {"terminated": {"exitCode": code, "reason": reason}},
                        }
                    ],
                }
            },
            content_type="application/merge-patch+json",
        )

    def delete(self, obj: dict[str, Any], name: str) -> None:
        try:
            self.api.request(
                "DELETE",
                path_of(obj, name),
                body={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0},
            )
        except ApiError as exc:
            if exc.status != 404:
                raise

    def waiting_reason(self, pod: str, namespace: str = "default") -> str:
        """The scheduler's message on a pod that waits ('' if none, or no such pod)."""
        try:
            return waiting_reason(self.api.get(f"/api/v1/namespaces/{namespace}/pods/{pod}"))
        except ApiError:
            return ""

    def events(self, namespace: str, name: str | None = None) -> list[dict[str, Any]]:
        items = self.api.get(f"/api/v1/namespaces/{namespace}/events")["items"]
        return [e for e in items if name is None or e["involvedObject"].get("name") == name]

    def reset(self) -> None:
        """Delete what earlier tests left: workloads, nodes, queues, config, leases."""
        for ns in TEST_NAMESPACES:
            self.ensure_namespace(ns)
            for kind, api in (
                ("Pod", "v1"),
                ("ConfigMap", "v1"),
                ("PodDisruptionBudget", "policy/v1"),
                ("Event", "v1"),
                ("PodGroup", "scheduling.x-k8s.io/v1alpha1"),
                ("PodGroup", "scheduling.volcano.sh/v1beta1"),
                ("PodGroup", "scheduling.k8s.io/v1beta1"),
                ("Workload", "scheduling.k8s.io/v1beta1"),
                ("Lease", "coordination.k8s.io/v1"),
            ):
                probe = {"apiVersion": api, "kind": kind, "metadata": {"namespace": ns}}
                try:
                    items = self.api.get(path_of(probe))["items"]
                except ApiError:
                    continue
                for item in items:
                    if kind == "ConfigMap" and item["metadata"]["name"] == "kube-root-ca.crt":
                        continue
                    self.delete(probe, item["metadata"]["name"])
        for kind, api in (("Node", "v1"), ("ElasticQuotaTree", "scheduling.sigs.k8s.io/v1beta1")):
            probe = {
                "apiVersion": api,
                "kind": kind,
                "metadata": {"namespace": "kube-system"} if kind != "Node" else {},
            }
            try:
                items = self.api.get(path_of(probe))["items"]
            except ApiError:
                continue
            for item in items:
                self.delete(probe, item["metadata"]["name"])


def install_crds(kube: Kube, paths: list[Path]) -> None:
    """Apply the CRDs in ``paths`` (other objects there are skipped) and wait until they are
    established."""
    crds = [
        obj
        for path in paths
        for obj in kube.load(path)
        if obj.get("kind") == "CustomResourceDefinition"
    ]
    for obj in crds:
        kube.apply(obj)
    names = {o["metadata"]["name"] for o in crds}

    def established() -> bool:
        items = kube.api.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
        ok = {
            i["metadata"]["name"]
            for i in items
            if any(
                c["type"] == "Established" and c["status"] == "True"
                for c in (i.get("status") or {}).get("conditions") or []
            )
        }
        return names <= ok

    wait_for("CRDs established", established, timeout=60)


@dataclass(frozen=True)
class Sandbox:
    __test__ = False  # not a pytest class

    kubeconfig: str
    server: str
    token: str
    dir: Path


class ApiServer:
    """One kube-testenv process that can be stopped (SIGTERM), killed (SIGKILL) and started again
    on the same port, etcd data and credentials: an API-server restart, as clients see one."""

    def __init__(
        self, binary: Path, work: Path, log: Path, extra_args: tuple[str, ...] = ()
    ) -> None:
        self.binary, self.work, self.log, self.extra_args = binary, work, log, extra_args
        self.token = secrets.token_hex(16)
        self.port = 0  # picked by the first start, kept by the later ones
        self.proc: subprocess.Popen[str] | None = None
        self.info: Sandbox | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = 120.0) -> Sandbox:
        args = [
            str(self.binary),
            "--dir",
            str(self.work),
            "--port",
            str(self.port),
            "--token",
            self.token,
            *self.extra_args,
        ]
        with self.log.open("a") as err:
            proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, text=True)
        self.proc = proc
        line: list[str] = []
        reader = threading.Thread(
            target=lambda: line.append(proc.stdout.readline() if proc.stdout else ""), daemon=True
        )
        reader.start()
        reader.join(timeout=timeout)
        if not line or not line[0].strip():
            proc.kill()
            raise RuntimeError(f"kube-testenv did not start; see {self.log}")
        info = json.loads(line[0])
        self.port = int(info["server"].rsplit(":", 1)[1])
        self.info = Sandbox(info["kubeconfig"], info["server"], info["token"], Path(info["dir"]))
        return self.info

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


@contextmanager
def sandbox(
    binary: Path,
    work: Path,
    log: Path,
    extra_args: tuple[str, ...] = (),
    start_timeout: float = 120.0,
) -> Iterator[Sandbox]:
    """Start the API server, yield its coordinates, stop it (SIGTERM) on exit."""
    log.write_text("")
    server = ApiServer(binary, work, log, extra_args)
    info = server.start(start_timeout)
    try:
        yield info
    finally:
        server.stop()
