"""The live stage: a real control plane with fake nodes and one scheduler stack, all processes on
loopback, started from the binaries `make stage` builds from Go modules into .cache/bin.

- kube-apiserver + etcd (tools/kube-testenv, k8s.io/kubernetes v1.37.2), with an audit log of the
  scheduler stack's own requests (its components get users of their own);
- kube-controller-manager v1.37.2: the Job controller (which, with WorkloadWithJob, makes the
  1.37 Workload and PodGroup of a gang Job), garbage collection, ReplicaSets, PDB status;
- KWOK v0.8.0: N fake nodes of 8 GPUs, made Ready by KWOK's own node Stage; pods become Running
  and Ready when bound (KWOK's pod Stages) and Succeed at the time a pod's
  ``live.solver-sched.io/finish-at`` annotation names (our one Stage, KWOK's pod-complete with a
  different selector and delay), which the study writes once the whole gang runs;
- optionally the Kubeflow training-operator v1.8.1;
- one scheduler stack (``STACKS``):
  ``kube-scheduler`` (default profile), ``kube-gang`` (kube-scheduler with the 1.37 gang
  scheduling of Workload/PodGroup: GenericWorkload on, the GangScheduling plugin in its default
  profile), ``kueue`` (Kueue v0.17.0 admitting suspended Jobs into ClusterQueues, then
  kube-scheduler's default profile places the pods) and ``solver-sched`` (``solver-sched run``
  with its defaults).

    with Stage(StageSpec("kueue", nodes=64), work) as stage:
        ...  # stage.kube, stage.scheduler_cpu_seconds(), stage.requests()

Everything is stopped on exit (SIGTERM, then SIGKILL after 30 s), the API server last.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from solver_sched.kube.api import ApiError, KubeApi, load_client
from solver_sched.kube.sandbox import ApiServer, Kube, Sandbox, install_crds, wait_for
from solver_sched.kube.training_operator import free_port, prepare_cluster

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("SOLVER_SCHED_BIN", ROOT / ".cache" / "bin"))
CACHE = BIN.parent
STACKS = ("kube-scheduler", "kube-gang", "kueue", "solver-sched")
GANG_STACKS = ("kube-gang", "solver-sched")  # Jobs get the in-tree Workload + PodGroup
FINISH_AT = "live.solver-sched.io/finish-at"
NODE_LABEL = "live.solver-sched.io/kwok"
GPU = "nvidia.com/gpu"
# Users of the stage's components (static tokens, bound to cluster-admin). The audit log records
# the requests of SCHEDULER_USERS only: what a stack costs the API server.
SCHEDULER_USERS = ("stage-scheduler", "stage-kueue")
USERS = ("stage-controller-manager", "stage-kwok", "stage-operator", *SCHEDULER_USERS)
CM_CONTROLLERS = (
    "job-controller",
    "garbage-collector-controller",
    "replicaset-controller",
    "disruption-controller",
    "pod-garbage-collector-controller",
    "ttl-after-finished-controller",
    "podgroup-protection-controller",
)
# Kueue's metrics server reads its pair from this fixed path when Kueue does not manage its own
# certificates (cmd/kueue/main.go); a loopback stage has no cert-manager and no kubelet mount.
KUEUE_METRICS_CERTS = Path("/etc/kueue/metrics/certs")


@dataclass(frozen=True)
class Queue:
    """A trace queue: a namespace, Kueue's LocalQueue -> ClusterQueue of ``gpus`` nominal GPUs."""

    name: str
    gpus: int


KUEUE_QPS = 50.0  # Kueue's client rate on a stage in real time (solver-sched's default rate)


@dataclass(frozen=True)
class StageSpec:
    stack: str
    nodes: int = 64
    gpus_per_node: int = 8
    queues: tuple[Queue, ...] = ()  # default: one queue "default" with every GPU
    priorities: tuple[tuple[str, int], ...] = (("low", 0), ("high", 1000))
    operator: bool = False  # also run the Kubeflow training-operator
    kueue_pods_ready_timeout: str = "5m"
    # Kueue's API client rate (requests per wall second; burst twice that). Its own default is 20;
    # the replay scales it with the time compression (``ReplayParams.kueue_qps``)
    kueue_qps: float = KUEUE_QPS
    # kube-scheduler's NodeResourcesFit scoring ("": its default, LeastAllocated). A diagnostic:
    # MostAllocated packs pods as solver-sched's packing term does, to tell packing from the rest
    kube_scoring: str = ""
    extra_apiserver_args: tuple[str, ...] = ()
    defer_stack: bool = False  # start the scheduler stack later (``Stage.start_stack``)

    def all_queues(self) -> tuple[Queue, ...]:
        return self.queues or (Queue("default", self.nodes * self.gpus_per_node),)


def binaries(stack: str, operator: bool = False) -> dict[str, Path]:
    """The binaries a stack needs, by role."""
    out = {
        "apiserver": BIN / "kube-testenv",
        "controller-manager": BIN / "kube-controller-manager",
        "kwok": BIN / "kwok",
    }
    if stack != "solver-sched":
        out["kube-scheduler"] = BIN / "kube-scheduler"
    if stack == "kueue":
        out["kueue"] = BIN / "kueue"
    if operator:
        out["operator"] = BIN / "training-operator"
    return out


def missing(stack: str, operator: bool = False) -> list[str]:
    """Binaries (and copied manifests) the stack lacks: run `make stage` to build them."""
    out = [str(p) for p in binaries(stack, operator).values() if not p.exists()]
    if not (CACHE / "kwok" / "pod-complete.yaml").exists():
        out.append(str(CACHE / "kwok"))
    if stack == "kueue" and not (CACHE / "crds" / "kueue").is_dir():
        out.append(str(CACHE / "crds" / "kueue"))
    return out


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    scheduler: bool = False  # counted in the stack's CPU seconds

    def alive(self) -> bool:
        return self.popen.poll() is None

    def cpu_seconds(self) -> float:
        """utime + stime of the process so far (and of its reaped children)."""
        try:
            fields = Path(f"/proc/{self.popen.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        ticks = os.sysconf("SC_CLK_TCK")
        return sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks

    def stop(self, timeout: float = 30.0) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


@dataclass
class Stage:
    """One stage for one stack; a context manager (``start`` / ``stop``)."""

    spec: StageSpec
    work: Path
    procs: list[Proc] = field(default_factory=list)
    server: ApiServer | None = None
    info: Sandbox | None = None
    tokens: dict[str, str] = field(default_factory=dict)
    cpu_at_start: dict[str, float] = field(default_factory=dict)
    _api: KubeApi | None = field(default=None, repr=False)

    def __enter__(self) -> Stage:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- start -------------------------------------------------------------------------------
    def start(self) -> None:
        if self.spec.stack not in STACKS:
            raise ValueError(f"unknown stack {self.spec.stack!r}; choose one of {STACKS}")
        lacking = missing(self.spec.stack, self.spec.operator)
        if lacking:
            raise FileNotFoundError(f"run `make stage` first; missing: {', '.join(lacking)}")
        self.work.mkdir(parents=True, exist_ok=True)
        self._start_apiserver()
        self._start_controller_manager()
        self._start_kwok()
        self.create_nodes()
        self._priorities()
        for q in self.spec.all_queues():
            self.kube.ensure_namespace(q.name)
        if self.spec.operator:
            self._start_operator()
        if not self.spec.defer_stack:
            self.start_stack()

    def start_stack(self) -> None:
        """The scheduler stack (called by ``start`` unless the spec defers it)."""
        stack = self.spec.stack
        if stack == "kueue":
            self._start_kueue()
        if stack == "solver-sched":
            self._start_solver_sched()
        else:
            self._start_kube_scheduler(gang=stack == "kube-gang")
        self.cpu_at_start = {p.name: p.cpu_seconds() for p in self.procs if p.scheduler}

    @property
    def kube(self) -> Kube:
        return Kube(self.api)

    @property
    def api(self) -> KubeApi:
        """The admin's client, one per started stage."""
        assert self._api is not None, "stage not started"
        return self._api

    def _start_apiserver(self) -> None:
        self.tokens = {u: secrets.token_hex(16) for u in USERS}
        policy = self.work / "audit-policy.yaml"
        policy.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "audit.k8s.io/v1",
                    "kind": "Policy",
                    "omitStages": ["RequestReceived"],
                    "rules": [
                        {"level": "Metadata", "users": list(SCHEDULER_USERS)},
                        {"level": "None"},
                    ],
                }
            )
        )
        args = [f"--extra-user={u}={t}" for u, t in self.tokens.items()]
        args += [
            "--apiserver-arg=--feature-gates=WorkloadWithJob=true",
            f"--apiserver-arg=--audit-policy-file={policy}",
            f"--apiserver-arg=--audit-log-path={self.audit_log}",
            "--apiserver-arg=--audit-log-maxsize=0",
            "--apiserver-arg=--max-requests-inflight=800",
            "--apiserver-arg=--max-mutating-requests-inflight=400",
            *self.spec.extra_apiserver_args,
        ]
        self.server = ApiServer(
            BIN / "kube-testenv", self.work / "env", self.work / "apiserver.log", tuple(args)
        )
        self.info = self.server.start()
        self._api = KubeApi(load_client(self.info.kubeconfig, pool_size=16))
        for user in USERS:
            self.kube.create(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": f"{user}-admin"},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": "cluster-admin",
                    },
                    "subjects": [
                        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}
                    ],
                }
            )

    @property
    def audit_log(self) -> Path:
        return self.work / "audit.log"

    def kubeconfig(self, user: str) -> str:
        """A kubeconfig for one of the stage's users (the admin's is ``info.kubeconfig``)."""
        assert self.info is not None
        path = self.work / f"{user}.kubeconfig"
        if not path.exists():
            ca = (self.info.dir / "pki" / "apiserver.crt").resolve()
            path.write_text(
                yaml.safe_dump(
                    {
                        "apiVersion": "v1",
                        "kind": "Config",
                        "clusters": [
                            {
                                "name": "stage",
                                "cluster": {
                                    "server": self.info.server,
                                    "certificate-authority": str(ca),
                                },
                            }
                        ],
                        "users": [{"name": user, "user": {"token": self.tokens[user]}}],
                        "contexts": [
                            {"name": "stage", "context": {"cluster": "stage", "user": user}}
                        ],
                        "current-context": "stage",
                    }
                )
            )
        return str(path)

    def _spawn(
        self, name: str, args: list[str], scheduler: bool = False, env: dict[str, str] | None = None
    ) -> Proc:
        log = self.work / f"{name}.log"
        with log.open("ab") as out:
            popen = subprocess.Popen(
                args, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
            )
        proc = Proc(name, popen, log, scheduler)
        self.procs.append(proc)
        return proc

    def _start_controller_manager(self) -> None:
        gates = (
            "WorkloadWithJob=true" if self.spec.stack in GANG_STACKS else "WorkloadWithJob=false"
        )
        proc = self._spawn(
            "kube-controller-manager",
            [
                str(BIN / "kube-controller-manager"),
                f"--kubeconfig={self.kubeconfig('stage-controller-manager')}",
                f"--controllers={','.join(CM_CONTROLLERS)}",
                "--leader-elect=false",
                "--secure-port=0",
                "--use-service-account-credentials=false",
                f"--feature-gates=GenericWorkload=true,{gates}",
                "--kube-api-qps=200",
                "--kube-api-burst=400",
                "--concurrent-job-syncs=10",
                "--v=1",
            ],
        )
        time.sleep(1.0)
        if not proc.alive():
            raise RuntimeError(f"kube-controller-manager exited; see {proc.log}")

    def _kwok_config(self) -> Path:
        """KWOK's own fast node and pod Stages from its module, but pods complete when the study
        says: at ``finish-at`` (RFC 3339), once their whole gang runs."""
        docs = []
        for name in ("node-initialize", "pod-ready", "pod-complete", "pod-delete"):
            doc = yaml.safe_load((CACHE / "kwok" / f"{name}.yaml").read_text())
            if name == "pod-complete":
                doc["spec"]["selector"]["matchExpressions"].append(
                    {"key": f'.metadata.annotations["{FINISH_AT}"]', "operator": "Exists"}
                )
                doc["spec"]["delay"] = {
                    "durationMilliseconds": 0,
                    "durationFrom": {"expressionFrom": f'.metadata.annotations["{FINISH_AT}"]'},
                }
            docs.append(doc)
        path = self.work / "kwok-stages.yaml"
        path.write_text(yaml.safe_dump_all(docs))
        return path

    def _start_kwok(self) -> None:
        proc = self._spawn(
            "kwok",
            [
                str(BIN / "kwok"),
                f"--kubeconfig={self.kubeconfig('stage-kwok')}",
                f"--config={self._kwok_config()}",
                f"--manage-nodes-with-label-selector={NODE_LABEL}=true",
                f"--server-address=127.0.0.1:{free_port()}",
                "--cidr=10.128.0.0/9",
                "--node-ip=10.0.0.1",
            ],
        )
        time.sleep(1.0)
        if not proc.alive():
            raise RuntimeError(f"kwok exited; see {proc.log}")

    def create_nodes(self) -> None:
        """N KWOK nodes, created by 8 writers (thousands of them for the scale run)."""
        n = self.spec.nodes
        alloc = {"cpu": "96", "memory": "1024Gi", "pods": "110", GPU: str(self.spec.gpus_per_node)}

        def node(i: int) -> None:
            name = f"kwok-{i:04d}"
            self.kube.create(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": {
                            "kubernetes.io/hostname": name,
                            "type": "kwok",
                            NODE_LABEL: "true",
                        },
                        "annotations": {"kwok.x-k8s.io/node": "fake"},
                    },
                    "status": {"allocatable": alloc, "capacity": dict(alloc)},
                }
            )

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(node, range(n)))

        def ready() -> bool:
            items = self.api.get("/api/v1/nodes", labelSelector=f"{NODE_LABEL}=true")["items"]
            up = sum(
                1
                for node in items
                if any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in node.get("status", {}).get("conditions") or []
                )
            )
            return up >= n

        # listing thousands of nodes every second would load the API server it waits for
        wait_for(f"{n} KWOK nodes Ready", ready, timeout=60 + n / 20, every=max(1.0, n / 1000))

    def _priorities(self) -> None:
        for name, value in self.spec.priorities:
            try:
                self.kube.create(
                    {
                        "apiVersion": "scheduling.k8s.io/v1",
                        "kind": "PriorityClass",
                        "metadata": {"name": name},
                        "value": value,
                    }
                )
            except ApiError as exc:
                if exc.status != 409:
                    raise

    def _start_kube_scheduler(self, gang: bool) -> None:
        config = self.work / "kube-scheduler.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {"kubeconfig": self.kubeconfig("stage-scheduler")},
                    "leaderElection": {"leaderElect": False},
                    **self._kube_profiles(),
                }
            )
        )
        port = free_port()
        gates = "GenericWorkload=true" if gang else "GenericWorkload=false"
        proc = self._spawn(
            "kube-scheduler",
            [
                str(BIN / "kube-scheduler"),
                f"--config={config}",
                f"--secure-port={port}",
                "--bind-address=127.0.0.1",
                f"--authentication-kubeconfig={self.kubeconfig('stage-scheduler')}",
                f"--authorization-kubeconfig={self.kubeconfig('stage-scheduler')}",
                f"--feature-gates={gates}",
                "--v=1",
            ],
            scheduler=True,
        )
        wait_for("kube-scheduler healthy", lambda: _https_ok(proc, port, "/healthz"), timeout=60)

    def _kube_profiles(self) -> dict[str, Any]:
        if not self.spec.kube_scoring:
            return {}
        strategy = {
            "type": self.spec.kube_scoring,
            "resources": [{"name": "cpu", "weight": 1}, {"name": GPU, "weight": 10}],
        }
        args = {"scoringStrategy": strategy}
        fit = {"name": "NodeResourcesFit", "args": args}
        return {"profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [fit]}]}

    def _start_kueue(self) -> None:
        kube = self.kube
        for path in sorted((CACHE / "crds" / "kueue").glob("*.yaml")):
            for obj in kube.load(path):
                if obj.get("kind") == "CustomResourceDefinition":
                    kube.apply(obj)
        wait_for("Kueue CRDs established", lambda: _crds_established(self.api, "kueue.x-k8s.io"))
        kube.ensure_namespace("kueue-system")
        assert self.info is not None
        pki = self.info.dir / "pki"
        certs = self.work / "kueue-certs"
        certs.mkdir(exist_ok=True)
        # Kueue's webhook server needs a pair; nobody calls it (see docs/benchmarks.md)
        for d in (certs, KUEUE_METRICS_CERTS):
            d.mkdir(parents=True, exist_ok=True)
            shutil.copy(pki / "apiserver.crt", d / "tls.crt")
            shutil.copy(pki / "apiserver.key", d / "tls.key")
        probe = free_port()
        config = self.work / "kueue.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                    "kind": "Configuration",
                    "namespace": "kueue-system",
                    "health": {"healthProbeBindAddress": f"127.0.0.1:{probe}"},
                    "metrics": {"bindAddress": "0"},
                    "webhook": {"port": free_port(), "host": "127.0.0.1", "certDir": str(certs)},
                    "leaderElection": {"leaderElect": False},
                    "internalCertManagement": {"enable": False},
                    "clientConnection": {
                        "qps": self.spec.kueue_qps,
                        "burst": int(2 * self.spec.kueue_qps),
                    },
                    "waitForPodsReady": {
                        "timeout": self.spec.kueue_pods_ready_timeout,
                        "blockAdmission": False,
                        "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 1},
                    },
                    "integrations": {"frameworks": ["batch/job"]},
                }
            )
        )
        proc = self._spawn(
            "kueue",
            [
                str(BIN / "kueue"),
                f"--config={config}",
                "--feature-gates=VisibilityOnDemand=false",
                f"--visibility-server-port={free_port()}",
                "--zap-log-level=info",
            ],
            scheduler=True,
            env={"KUBECONFIG": self.kubeconfig("stage-kueue")},
        )
        wait_for("Kueue ready", lambda: _http_ok(proc, probe, "/readyz"), timeout=120)
        self._kueue_queues()

    def _kueue_queues(self) -> None:
        """One ResourceFlavor; per trace queue a ClusterQueue with its GPUs as nominal quota
        (cpu and memory as the whole cluster has), priorities and preemption within the queue,
        in one cohort so idle quota is lent; and the LocalQueue in the queue's namespace."""
        api = "kueue.x-k8s.io/v1beta2"
        self._apply(
            "resourceflavors",
            {"apiVersion": api, "kind": "ResourceFlavor", "metadata": {"name": "gpu"}},
        )
        n = self.spec.nodes
        for q in self.spec.all_queues():
            self._apply(
                "clusterqueues",
                {
                    "apiVersion": api,
                    "kind": "ClusterQueue",
                    "metadata": {"name": q.name},
                    "spec": {
                        "namespaceSelector": {},
                        "cohortName": "stage",
                        "queueingStrategy": "BestEffortFIFO",
                        "preemption": {
                            "withinClusterQueue": "LowerPriority",
                            "reclaimWithinCohort": "Any",
                        },
                        "resourceGroups": [
                            {
                                "coveredResources": ["cpu", "memory", GPU],
                                "flavors": [
                                    {
                                        "name": "gpu",
                                        "resources": [
                                            {"name": "cpu", "nominalQuota": str(96 * n)},
                                            {"name": "memory", "nominalQuota": f"{1024 * n}Gi"},
                                            {"name": GPU, "nominalQuota": str(q.gpus)},
                                        ],
                                    }
                                ],
                            }
                        ],
                    },
                },
            )
            self._apply(
                "localqueues",
                {
                    "apiVersion": api,
                    "kind": "LocalQueue",
                    "metadata": {"name": q.name, "namespace": q.name},
                    "spec": {"clusterQueue": q.name},
                },
            )

    def _apply(self, plural: str, obj: dict[str, Any]) -> None:
        """Server-side apply of a Kueue object (cluster-scoped unless it names a namespace)."""
        meta = obj["metadata"]
        ns = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
        self.api.request(
            "PATCH",
            f"/apis/{obj['apiVersion']}{ns}/{plural}/{meta['name']}",
            body=obj,
            query={"fieldManager": "live-stage", "force": True},
            content_type="application/apply-patch+yaml",
        )

    def _start_solver_sched(self) -> None:
        self.kube.ensure_namespace("solver-sched")
        proc = self._spawn(
            "solver-sched",
            [
                sys.executable,
                "-m",
                "solver_sched.cli.main",
                "run",
                "--kubeconfig",
                self.kubeconfig("stage-scheduler"),
                "--metrics-addr",
                "",
            ],
            scheduler=True,
        )
        time.sleep(2.0)
        if not proc.alive():
            raise RuntimeError(f"solver-sched exited; see {proc.log}")

    def _start_operator(self) -> None:
        assert self.info is not None
        install_crds(self.kube, sorted((CACHE / "crds").glob("*.yaml")))
        prepare_cluster(self.kube, self.info.dir / "pki")
        probe = free_port()
        proc = self._spawn(
            "training-operator",
            [
                str(BIN / "training-operator"),
                "--kubeconfig",
                self.kubeconfig("stage-operator"),
                "--enable-scheme=pytorchjob",
                "--metrics-bind-address=0",
                f"--health-probe-bind-address=127.0.0.1:{probe}",
                f"--webhook-server-port={free_port()}",
            ],
            env={"MY_POD_NAMESPACE": "kubeflow"},
        )
        wait_for("training-operator ready", lambda: _http_ok(proc, probe, "/readyz"), timeout=90)

    # -- measurements ------------------------------------------------------------------------
    def scheduler_cpu_seconds(self) -> float:
        """CPU seconds the stack's scheduling processes used since the stage was ready."""
        return sum(
            p.cpu_seconds() - self.cpu_at_start.get(p.name, 0.0) for p in self.procs if p.scheduler
        )

    def requests(self) -> Counter[str]:
        """API requests of the stack's components so far, by verb (from the audit log; a watch
        counts once)."""
        seen: set[str] = set()
        out: Counter[str] = Counter()
        if not self.audit_log.exists():
            return out
        with self.audit_log.open() as f:
            for line in f:
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line being written
                rid = event.get("auditID", "")
                if rid in seen:
                    continue
                seen.add(rid)
                out[event.get("verb", "?")] += 1
        return out

    def check_alive(self) -> None:
        for p in self.procs:
            if not p.alive():
                raise RuntimeError(f"{p.name} exited (code {p.popen.returncode}); see {p.log}")

    # -- stop --------------------------------------------------------------------------------
    def stop(self) -> None:
        for p in reversed(self.procs):
            p.stop()
        self.procs.clear()
        if self.server is not None:
            self.server.stop()
            self.server = None


def _crds_established(api: KubeApi, group: str) -> bool:
    items = api.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    mine = [i for i in items if i["spec"]["group"] == group]
    return bool(mine) and all(
        any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (i.get("status") or {}).get("conditions") or []
        )
        for i in mine
    )


def _http_ok(proc: Proc, port: int, path: str) -> bool:
    if not proc.alive():
        raise RuntimeError(f"{proc.name} exited; see {proc.log}")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=1) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _https_ok(proc: Proc, port: int, path: str) -> bool:
    if not proc.alive():
        raise RuntimeError(f"{proc.name} exited; see {proc.log}")
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the scheduler's self-signed serving cert on loopback
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", timeout=1, context=ctx) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def _main() -> int:
    """`python -m benchmarks.live.stage STACK [NODES]`: start a stage, print its kubeconfig,
    wait for Ctrl-C, tear down."""
    stack = sys.argv[1] if len(sys.argv) > 1 else "kube-scheduler"
    nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    import tempfile

    with (
        tempfile.TemporaryDirectory(prefix="stage-") as tmp,
        Stage(StageSpec(stack, nodes=nodes), Path(tmp)) as stage,
    ):
        assert stage.info is not None
        print(json.dumps({"stack": stack, "kubeconfig": stage.info.kubeconfig, "work": tmp}))
        try:
            while True:
                stage.check_alive()
                time.sleep(2)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
