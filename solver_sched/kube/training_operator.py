"""The real Kubeflow training-operator v1.8.1 (built from Go modules into .cache/bin) against a
local API server (tools/kube-testenv): the controller that turns PyTorchJobs into pods, Services
and PodGroups in `make run` (both scenes) and the fleet integration tests.

The operator's upstream main expects what its Deployment gives it in a cluster: a Secret for its
webhook certificates, the ValidatingWebhookConfiguration its cert rotator injects a CA into, and
the Secret's certificate mounted in /tmp/k8s-webhook-server/serving-certs. A loopback API server
cannot reach a webhook Service (there is no Service network), so the server gets a webhook
configuration of that name with no webhooks, and the mount is stood in for by copying the API
server's own serving pair there once. The controllers that create pods, Services and PodGroups
are the operator's own.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import urllib.request
from pathlib import Path
from typing import Any, Protocol

from solver_sched.kube.api import ApiError, KubeApi, load_client
from solver_sched.kube.sandbox import Kube, wait_for

CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # fixed in the operator (pkg/cert)
OPERATOR_NAMESPACE = "kubeflow"
WEBHOOK_CONFIG = "validator.training-operator.kubeflow.org"


class Server(Protocol):
    """A kube-testenv API server: its kubeconfig and its --dir (which holds pki/)."""

    @property
    def kubeconfig(self) -> str: ...

    @property
    def dir(self) -> Path: ...


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stand_in_cert_mount(pki: Path) -> None:
    """What the kubelet would mount from the operator's Secret: any valid pair will do (nobody
    calls the webhooks). Written once, atomically, so operators started together share it."""
    if (CERT_DIR / "tls.crt").exists() and (CERT_DIR / "tls.key").exists():
        return
    tmp = CERT_DIR.parent / f".certs-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir(parents=True, exist_ok=True)
    shutil.copy(pki / "apiserver.crt", tmp / "tls.crt")
    shutil.copy(pki / "apiserver.key", tmp / "tls.key")
    try:
        tmp.rename(CERT_DIR)
    except OSError:  # another process won the race: its pair is as good
        shutil.rmtree(tmp, ignore_errors=True)


def prepare_cluster(kube: Kube, pki: Path) -> None:
    """What the operator's Deployment would give it (module docstring): its namespace, the
    webhook Secret, an empty webhook configuration of its name, and the certificate mount, from
    the API server's serving pair in ``pki``."""
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
    _stand_in_cert_mount(pki)


def stop_process(proc: subprocess.Popen[Any] | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


class TrainingOperator:
    """The upstream training-operator binary against one API server, gang scheduling with
    solver-sched: it creates each PyTorchJob's scheduler-plugins PodGroup and its pods."""

    def __init__(self, binary: Path, server: Server, log: Path) -> None:
        self.binary, self.server, self.log = binary, server, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.probe_port = 0

    def prepare(self) -> None:
        prepare_cluster(Kube(KubeApi(load_client(self.server.kubeconfig))), self.server.dir / "pki")

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
        wait_for(f"training-operator ready (log {self.log})", self.ready, timeout=timeout)

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
        stop_process(self.proc)
        self.proc = None
