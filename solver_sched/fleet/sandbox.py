"""A local fleet: a hub and member API servers (tools/kube-testenv), each member with the real
Kubeflow training-operator v1.8.1 (built from Go modules into .cache/bin) and `solver-sched run`.
Used by the fleet demo and the fleet integration tests.

The operator's upstream main expects what its Deployment gives it in a cluster: a Secret for its
webhook certificates, the ValidatingWebhookConfiguration its cert rotator injects a CA into, and
the Secret's certificate mounted in /tmp/k8s-webhook-server/serving-certs. A loopback API server
cannot reach a webhook Service (there is no Service network), so the members get a webhook
configuration of that name with no webhooks, and the mount is stood in for by copying the member
API server's own serving pair there once. The controllers that create pods, Services and PodGroups
are the operator's own.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solver_sched.kube.api import ApiError, KubeApi, load_client
from solver_sched.kube.sandbox import Kube, wait_for

CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # fixed in the operator (pkg/cert)
OPERATOR_NAMESPACE = "kubeflow"
WEBHOOK_CONFIG = "validator.training-operator.kubeflow.org"
SECRETS_NAMESPACE = "karmada-cluster"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ApiServer:
    """kube-testenv on a fixed port, token and data dir: stopped and started again, it comes back
    with its etcd data and certificates (a member that goes away and returns)."""

    def __init__(self, binary: Path, workdir: Path, name: str, extra: tuple[str, ...] = ()):
        self.binary, self.name, self.extra = binary, name, extra
        self.dir = workdir / name
        self.log = workdir / f"{name}-apiserver.log"
        self.port = free_port()
        self.token = secrets.token_hex(24)
        self.proc: subprocess.Popen[str] | None = None
        self.info: dict[str, str] = {}

    def start(self, timeout: float = 120.0) -> None:
        with self.log.open("a") as err:
            self.proc = subprocess.Popen(
                [
                    str(self.binary),
                    "--dir",
                    str(self.dir),
                    "--port",
                    str(self.port),
                    "--token",
                    self.token,
                    *self.extra,
                ],
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
            )
        line: list[str] = []
        proc = self.proc
        reader = threading.Thread(
            target=lambda: line.append(proc.stdout.readline() if proc.stdout else ""), daemon=True
        )
        reader.start()
        reader.join(timeout=timeout)
        if not line or not line[0].strip():
            self.proc.kill()
            raise RuntimeError(f"kube-testenv {self.name} did not start; see {self.log}")
        self.info = json.loads(line[0])

    def stop(self, kill: bool = False) -> None:
        """SIGTERM (a clean shutdown, which drains for up to 30 s), or SIGKILL: the server is
        gone at once, as in a crash; its etcd data survives in the page cache for a restart."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def kubeconfig(self) -> str:
        return self.info["kubeconfig"]

    @property
    def server(self) -> str:
        return self.info["server"]

    @property
    def ca(self) -> str:
        return (self.dir / "pki" / "apiserver.crt").read_text()

    def kube(self) -> Kube:
        return Kube(KubeApi(load_client(self.kubeconfig)))


def install_crds(kube: Kube, paths: list[Path]) -> None:
    for path in paths:
        for obj in kube.load(path):
            if obj.get("kind") == "CustomResourceDefinition":
                kube.apply(obj)
    names = {o["metadata"]["name"] for p in paths for o in kube.load(p)}

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


def _stand_in_cert_mount(server: ApiServer) -> None:
    """What the kubelet would mount from the operator's Secret: any valid pair will do (nobody
    calls the webhooks). Written once, atomically, so operators started together share it."""
    if (CERT_DIR / "tls.crt").exists() and (CERT_DIR / "tls.key").exists():
        return
    tmp = CERT_DIR.parent / f".certs-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(server.dir / "pki" / "apiserver.crt", tmp / "tls.crt")
    shutil.copy(server.dir / "pki" / "apiserver.key", tmp / "tls.key")
    try:
        tmp.rename(CERT_DIR)
    except OSError:  # another process won the race: its pair is as good
        shutil.rmtree(tmp, ignore_errors=True)


class TrainingOperator:
    """The upstream training-operator binary against one member API server."""

    def __init__(self, binary: Path, server: ApiServer, workdir: Path) -> None:
        self.binary, self.server = binary, server
        self.log = workdir / f"{server.name}-training-operator.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.probe_port = 0

    def prepare(self) -> None:
        kube = self.server.kube()
        kube.ensure_namespace(OPERATOR_NAMESPACE)
        for obj in (
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {
                    "name": "training-operator-webhook-cert",
                    "namespace": OPERATOR_NAMESPACE,
                },
            },
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": WEBHOOK_CONFIG},
                "webhooks": [],
            },
        ):
            path = (
                f"/api/v1/namespaces/{OPERATOR_NAMESPACE}/secrets"
                if obj["kind"] == "Secret"
                else "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
            )
            try:
                kube.api.request("POST", path, body=obj)
            except ApiError as exc:
                if exc.status != 409:
                    raise
        _stand_in_cert_mount(self.server)

    def start(self, timeout: float = 90.0) -> None:
        self.probe_port = free_port()
        env = {**os.environ, "MY_POD_NAMESPACE": OPERATOR_NAMESPACE}
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    str(self.binary),
                    "--kubeconfig",
                    self.server.kubeconfig,
                    "--enable-scheme=pytorchjob",
                    "--gang-scheduler-name=solver-sched",
                    "--metrics-bind-address=0",
                    f"--health-probe-bind-address=127.0.0.1:{self.probe_port}",
                    f"--webhook-server-port={free_port()}",
                    "--zap-log-level=info",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
            )
        wait_for(f"training-operator of {self.server.name} ready", self.ready, timeout=timeout)

    def ready(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            raise RuntimeError(f"training-operator exited; see {self.log}")
        try:
            url = f"http://127.0.0.1:{self.probe_port}/readyz"
            with urllib.request.urlopen(url, timeout=1) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        _stop(self.proc)
        self.proc = None


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _stop(proc: subprocess.Popen[Any] | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def scheduler_process(kubeconfig: str, log: Path, cycle: float = 1.0) -> subprocess.Popen[bytes]:
    """`solver-sched run` for one member (or any cluster), as a separate process."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "solver_sched.cli.main",
            "run",
            "--kubeconfig",
            kubeconfig,
            "--cycle-interval",
            str(cycle),
            "--metrics-addr",
            "",
            "--eviction-grace-seconds",
            "0",
        ],
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


@dataclass
class Member:
    name: str
    server: ApiServer
    operator: TrainingOperator
    log: Path
    scheduler: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """API server, then the operator and `solver-sched run`. When the API server comes
        back, both start afresh, as a member's control plane does on its return (their own
        watches would otherwise back off for up to 30 s)."""
        if not self.server.running:
            self.server.start()
            self.operator.stop()
            _stop(self.scheduler)
            self.scheduler = None
        if self.operator.proc is None:
            self.operator.start()
        if self.scheduler is None:
            self.scheduler = scheduler_process(self.server.kubeconfig, self.log)

    def stop_server(self) -> None:
        """The member goes away at once (its operator and scheduler keep retrying)."""
        self.server.stop(kill=True)

    def stop(self, kill: bool = False) -> None:
        _stop(self.scheduler)
        self.scheduler = None
        self.operator.stop()
        self.server.stop(kill)

    def cluster_objects(self) -> list[dict[str, Any]]:
        """The hub's view of this member: a Karmada Cluster and its Secret (token, caBundle)."""
        return [
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": self.name, "namespace": SECRETS_NAMESPACE},
                "data": {"token": _b64(self.server.token), "caBundle": _b64(self.server.ca)},
            },
            {
                "apiVersion": "cluster.karmada.io/v1alpha1",
                "kind": "Cluster",
                "metadata": {"name": self.name},
                "spec": {
                    "apiEndpoint": self.server.server,
                    "secretRef": {"namespace": SECRETS_NAMESPACE, "name": self.name},
                    "syncMode": "Push",
                },
            },
        ]


@dataclass
class Fleet:
    hub: ApiServer
    members: dict[str, Member] = field(default_factory=dict)

    def join(self, member: str) -> None:
        """Register a member in the hub (Secret + Cluster)."""
        kube = self.hub.kube()
        kube.ensure_namespace(SECRETS_NAMESPACE)
        for obj in self.members[member].cluster_objects():
            kube.apply(obj)

    def leave(self, member: str) -> None:
        kube = self.hub.kube()
        for obj in self.members[member].cluster_objects():
            kube.delete(obj, obj["metadata"]["name"])


@contextmanager
def fleet_sandbox(
    testenv: Path,
    operator: Path,
    crds: Path,
    work: Path,
    members: tuple[str, ...] = ("member-1", "member-2"),
    hub_crds: tuple[Path, ...] = (),
) -> Iterator[Fleet]:
    """Hub + members, each member with its training-operator and scheduler; all stopped on exit.
    ``crds`` holds the CRDs copied from the operator's modules (.cache/crds)."""
    work.mkdir(parents=True, exist_ok=True)
    member_crds = sorted(crds.glob("*.yaml"))
    fleet = Fleet(ApiServer(testenv, work, "hub"))
    try:
        fleet.hub.start()
        install_crds(fleet.hub.kube(), [crds / "kubeflow.org_pytorchjobs.yaml", *hub_crds])
        for name in members:
            server = ApiServer(testenv, work, name)
            to = TrainingOperator(operator, server, work)
            member = Member(name, server, to, work / f"{name}-scheduler.log")
            fleet.members[name] = member
            server.start()
            install_crds(server.kube(), member_crds)
            member.operator.prepare()
            member.start()
        yield fleet
    finally:
        for member in fleet.members.values():  # throw-away servers: no need to drain
            member.stop(kill=True)
        fleet.hub.stop(kill=True)
