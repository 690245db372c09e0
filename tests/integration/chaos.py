"""The stage of the fencing and chaos tests: a dedicated API server with an audit log and one user
per scheduler replica, replicas as real `solver-sched run` processes (kill -9 and SIGSTOP are real),
a pod watch that checks GPU over-commit at every change, and the audit checks: no pod bound twice,
no write by a replica that does not hold the Lease."""

from __future__ import annotations

import json
import os
import random
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from solver_sched.io import manifests as m
from solver_sched.kube.api import ApiError, KubeApi, load_client
from solver_sched.kube.sandbox import ApiServer, Kube
from tests.integration.kube import ROOT, priority_classes, wait_for

LEASE = {"duration": 4.0, "renew": 3.0, "retry": 0.5}
NAMESPACE = "solver-sched"
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    verbs: ["get", "list", "watch"]
  - level: Request
    resources:
      - group: coordination.k8s.io
        resources: ["leases"]
      - group: ""
        resources: ["pods/binding"]
  - level: Metadata
"""


def _gpus(pod: dict[str, Any]) -> int:
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        value = (res.get("requests") or {}).get("nvidia.com/gpu") or (res.get("limits") or {}).get(
            "nvidia.com/gpu"
        )
        total += int(value or 0)
    return total


class Stage:
    """The API server (restartable), its admin client, and credentials for each replica."""

    def __init__(self, binary: Path, work: Path, replicas: tuple[str, ...]) -> None:
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        self.audit_log = work / "audit.log"
        policy = work / "audit-policy.yaml"
        policy.write_text(AUDIT_POLICY)
        self.tokens = {name: secrets.token_hex(16) for name in replicas}
        args = [
            f"--apiserver-arg=--audit-policy-file={policy}",
            f"--apiserver-arg=--audit-log-path={self.audit_log}",
            *(f"--extra-user={name}={token}" for name, token in self.tokens.items()),
        ]
        self.server = ApiServer(binary, work / "env", work / "apiserver.log", tuple(args))
        info = self.server.start()
        self.kubeconfig = info.kubeconfig
        self.api = KubeApi(load_client(info.kubeconfig))
        self.kube = Kube(self.api)

    def setup(self, install_crds: Any) -> None:
        install_crds(self.api)
        self.kube.ensure_namespace(NAMESPACE)
        priority_classes(self.kube)
        for path in ("deploy/base/clusterrole.yaml", "deploy/base/role.yaml"):
            for obj in self.kube.load(ROOT / path):
                self.kube.apply(obj)
        for user in self.tokens:
            subject = [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]
            role = {"apiGroup": "rbac.authorization.k8s.io", "name": "solver-sched"}
            self.kube.apply(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": f"solver-sched-{user}"},
                    "roleRef": {**role, "kind": "ClusterRole"},
                    "subjects": subject,
                }
            )
            self.kube.apply(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "RoleBinding",
                    "metadata": {"name": f"solver-sched-{user}", "namespace": NAMESPACE},
                    "roleRef": {**role, "kind": "Role"},
                    "subjects": subject,
                }
            )

    def user_kubeconfig(self, user: str) -> Path:
        doc = yaml.safe_load(Path(self.kubeconfig).read_text())
        for u in doc["users"]:
            u["user"] = {"token": self.tokens[user]}
        path = self.work / f"kubeconfig-{user}"
        path.write_text(yaml.safe_dump(doc))
        return path

    def holder(self) -> str | None:
        try:
            lease = self.api.get(
                f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/solver-sched"
            )
        except ApiError:
            return None
        return (lease.get("spec") or {}).get("holderIdentity") or None

    def close(self) -> None:
        self.server.stop()


class Replica:
    """One `solver-sched run --leader-elect` process, as a Deployment's pod would run it."""

    def __init__(self, stage: Stage, name: str, *extra: str) -> None:
        self.stage, self.name, self.extra = stage, name, extra
        self.log = stage.work / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.paused = False

    def start(self) -> None:
        exe = Path(sys.executable).with_name("solver-sched")
        args = [
            str(exe),
            "run",
            "--kubeconfig",
            str(self.stage.user_kubeconfig(self.name)),
            "--leader-elect",
            "--identity",
            self.name,
            "--namespace",
            NAMESPACE,
            "--lease-duration",
            str(LEASE["duration"]),
            "--renew-deadline",
            str(LEASE["renew"]),
            "--retry-period",
            str(LEASE["retry"]),
            "--cycle-interval",
            "1",
            "--metrics-addr",
            "",
            "--eviction-grace-seconds",
            "0",
            *self.extra,
        ]
        with self.log.open("ab") as out:
            env = {**os.environ, "PYTHONUNBUFFERED": "1"}
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
        self.paused = False

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()

    def pause(self) -> None:
        if self.alive and self.proc is not None:
            self.proc.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.alive and self.proc is not None:
            self.proc.send_signal(signal.SIGCONT)
        self.paused = False

    def stop(self) -> None:
        if self.alive and self.proc is not None:
            self.resume()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@dataclass
class PodWatch:
    """Watches every pod; after each change, no node may hold more GPUs than it has. The watch
    resumes from its last resourceVersion across API-server restarts (a re-list only if etcd
    compacted it away, which is counted)."""

    api: KubeApi
    capacity: dict[str, int]
    violations: list[str] = field(default_factory=list)
    relists: int = 0
    events: int = 0
    _pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=40)

    def _list(self) -> str:
        body = self.api.get("/api/v1/pods")
        self._pods = {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in body["items"]
        }
        self._check("list")
        return str(body["metadata"]["resourceVersion"])

    def _run(self) -> None:
        version = ""
        while not self._stop.is_set():
            try:
                if not version:
                    version = self._list()
                    self.relists += 1
                query = {
                    "resourceVersion": version,
                    "allowWatchBookmarks": True,
                    "timeoutSeconds": 5,
                }
                for event in self.api.watch("/api/v1/pods", query, timeout=35):
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        version = ""  # 410 Gone: list again
                        break
                    version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                    if event.get("type") == "BOOKMARK":
                        continue
                    key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
                    old = self._pods.get(key)
                    if event.get("type") == "DELETED":
                        self._pods.pop(key, None)
                    else:
                        was = (old or {}).get("spec", {}).get("nodeName")
                        now = obj.get("spec", {}).get("nodeName")
                        if was and now != was:
                            self.violations.append(f"{key} moved from {was} to {now}")
                        self._pods[key] = obj
                    self.events += 1
                    self._check(f"rv {version}")
            except ApiError:
                self._stop.wait(0.2)  # the API server is restarting: resume from `version`

    def _check(self, at: str) -> None:
        used: dict[str, int] = defaultdict(int)
        for p in self._pods.values():
            node = (p.get("spec") or {}).get("nodeName")
            if node and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                used[node] += _gpus(p)
        for node, gpus in used.items():
            if gpus > self.capacity.get(node, 0):
                self.violations.append(
                    f"{node} holds {gpus} of {self.capacity.get(node)} GPUs at {at}"
                )


def _time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass
class AuditReport:
    writes: int
    binds: int
    lease_writes: int
    double_binds: list[str]
    unfenced: list[str]  # writes by a replica that did not hold the Lease at that moment


def read_audit(path: Path, users: set[str], lease_seconds: float) -> AuditReport:
    """The API server's own record of who wrote what, and who held the Lease when."""
    events = []
    for line in path.read_text().splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue  # a line cut by a kill -9 of the API server
        if e.get("stage") == "ResponseComplete" and e.get("user", {}).get("username") in users:
            events.append(e)
    lease: list[tuple[float, str]] = []  # (committed by, holder) of each successful lease write
    writes: list[tuple[float, str, str]] = []
    bound: dict[str, int] = defaultdict(int)
    for e in events:
        ref, code = e.get("objectRef") or {}, (e.get("responseStatus") or {}).get("code", 0)
        if e["verb"] in ("get", "list", "watch"):
            continue
        who = e["user"]["username"]
        if ref.get("resource") == "leases":
            if 200 <= code < 300:
                holder = ((e.get("requestObject") or {}).get("spec") or {}).get("holderIdentity")
                lease.append((_time(e["stageTimestamp"]), holder or ""))
            continue
        obj = f"{ref.get('resource')}/{ref.get('subresource', '')}"
        what = f"{e['verb']} {obj} {ref.get('namespace')}/{ref.get('name')} -> {code}"
        writes.append((_time(e["requestReceivedTimestamp"]), who, what))
        if ref.get("subresource") == "binding" and 200 <= code < 300:
            bound[f"{ref.get('namespace')}/{ref.get('name')}"] += 1
    lease.sort()
    unfenced = []
    for t, who, what in writes:
        before = [entry for entry in lease if entry[0] <= t]
        if not before or before[-1][1] != who or t - before[-1][0] >= lease_seconds:
            held = (
                f"held by {before[-1][1]!r} since {t - before[-1][0]:.2f}s"
                if before
                else "no lease"
            )
            unfenced.append(f"{who}: {what} ({held})")
    return AuditReport(
        writes=len(writes),
        binds=sum(bound.values()),
        lease_writes=len(lease),
        double_binds=[f"{pod} bound {n} times" for pod, n in bound.items() if n > 1],
        unfenced=unfenced,
    )


class Workload:
    """A steady stream of gangs, and the kubelet's part: bound pods start running, finished gangs
    are deleted. Every call tolerates the API server being away."""

    def __init__(self, kube: Kube, seed: int) -> None:
        self.kube, self.rng = kube, random.Random(seed)
        self.created = 0
        self.finished = 0
        self._ends: dict[str, float] = {}  # gang -> when it finishes, once all its pods run
        self._sizes: dict[str, int] = {}

    def submit(self) -> None:
        name = f"g{self.created:04d}"
        size = self.rng.choice((1, 2, 2, 4, 4, 6, 8))
        gpus = self.rng.choice((1, 1, 2))
        prio = self.rng.choice(("low", "low", "high"))
        objs = m.gang(name, size, gpus=gpus, priority_class=prio, cpu="1", memory="1Gi")
        objs[0]["spec"]["scheduleTimeoutSeconds"] = 10
        try:
            self.kube.create_all(objs)
        except ApiError:
            return
        self._sizes[name] = size
        self.created += 1

    def tick(self, finish: bool = True) -> None:
        try:
            pods = self.kube.api.get("/api/v1/namespaces/default/pods")["items"]
        except ApiError:
            return
        running: dict[str, int] = defaultdict(int)
        for p in pods:
            meta, spec = p["metadata"], p["spec"]
            gang = meta["labels"].get("scheduling.x-k8s.io/pod-group", "")
            if spec.get("nodeName") and (p.get("status") or {}).get("phase") != "Running":
                try:
                    self.kube.set_running(f"default/{meta['name']}")
                except ApiError:
                    continue
            if spec.get("nodeName"):
                running[gang] += 1
        now = time.monotonic()
        for gang, size in list(self._sizes.items()):
            if running.get(gang, 0) == size and gang not in self._ends:
                self._ends[gang] = now + self.rng.uniform(5, 25)
            if finish and gang in self._ends and now > self._ends[gang]:
                self._delete(gang, size)

    def _delete(self, gang: str, size: int) -> None:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "default"}}
        group = {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"namespace": "default"},
        }
        try:
            for i in range(size):
                self.kube.delete(pod, f"{gang}-worker-{i}")
            self.kube.delete(group, gang)
        except ApiError:
            return
        del self._sizes[gang]
        self._ends.pop(gang, None)
        self.finished += 1


def partial_gangs(kube: Kube) -> list[str]:
    """Gangs with some but not all of their minMember pods bound."""
    pods = kube.api.get("/api/v1/namespaces/default/pods")["items"]
    groups = kube.api.get("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups")[
        "items"
    ]
    bound: dict[str, int] = defaultdict(int)
    for p in pods:
        if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp"):
            bound[p["metadata"]["labels"].get("scheduling.x-k8s.io/pod-group", "")] += 1
    return [
        f"{g['metadata']['name']}: {bound[g['metadata']['name']]}/{g['spec']['minMember']}"
        for g in groups
        if 0 < bound[g["metadata"]["name"]] < g["spec"]["minMember"]
    ]


def settle(kube: Kube, timeout: float = 90.0) -> list[str]:
    """Wait for a moment with no partial gang; the partial gangs of the last look otherwise."""
    last: list[str] = []

    def none_partial() -> bool:
        nonlocal last
        try:
            last = partial_gangs(kube)
        except ApiError:
            return False
        return not last

    try:
        wait_for("no partial gang", none_partial, timeout=timeout, every=1.0)
    except AssertionError:
        return last
    return []
