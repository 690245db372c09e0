"""A local fleet: a hub and member API servers (tools/kube-testenv), each member with the real
Kubeflow training-operator v1.8.1 (`solver_sched.kube.training_operator`) and `solver-sched run`.
Used by the fleet demo and the fleet integration tests."""

from __future__ import annotations

import base64
import json
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from solver_sched.kube.api import KubeApi, load_client
from solver_sched.kube.sandbox import Kube, install_crds
from solver_sched.kube.training_operator import TrainingOperator, free_port, stop_process

SECRETS_NAMESPACE = "karmada-cluster"


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


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


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
            stop_process(self.scheduler)
            self.scheduler = None
        if self.operator.proc is None:
            self.operator.start()
        if self.scheduler is None:
            self.scheduler = scheduler_process(self.server.kubeconfig, self.log)

    def stop_server(self) -> None:
        """The member goes away at once (its operator and scheduler keep retrying)."""
        self.server.stop(kill=True)

    def stop(self, kill: bool = False) -> None:
        stop_process(self.scheduler)
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
            to = TrainingOperator(operator, server, work / f"{name}-training-operator.log")
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
