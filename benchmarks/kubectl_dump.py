"""Cluster dumps shaped like `kubectl get nodes,pods,podgroups,priorityclasses,elasticquotatrees
-A -o json`, for the what-if benchmark (benchmarks/whatif.py).

A generator of its own, independent of solver_sched/synthetic.py: objects carry what the API server
returns, not only what the scheduler reads, so parsing costs what it costs on a real dump.

- Nodes: 8-GPU (60%), 4-GPU (25%) and CPU-only (15%) types with cloud, NFD and GPU-operator labels,
  annotations, a GPU taint, five status conditions, addresses, node info and ~30 cached images;
  2% cordoned.
- Pods, ~10 per node: DaemonSet pods on every node (kube-proxy, node-exporter, fluent-bit; the
  GPU device plugin and DCGM exporter on GPU nodes), CPU services and notebooks of the default
  scheduler, completed pods of finished jobs, and training gangs of solver-sched with env,
  volumes, probes, ownerReferences, status conditions and container statuses.
- Training gangs: one PodGroup (`scheduling.x-k8s.io/v1alpha1`, with status) each; 1-16 pods of
  1-8 GPUs; running gangs placed until `load` of the GPUs is used, each either spread over the
  emptiest nodes (the default scheduler's LeastAllocated) or bin-packed, so nodes are partly used
  as in a cluster that two schedulers have filled; then half as many pending gangs; 40% elastic
  power-of-two, a quarter of the running ones inside their cooldown; three priority classes; 16
  team namespaces under a two-level ElasticQuotaTree.
- Three profiles (``PROFILES``): ``kubectl`` as printed by `kubectl get -o json`; ``managed``
  with ``metadata.managedFields`` too (`--show-managed-fields`, what an informer receives);
  ``compact``, only what the scheduler reads.

Deterministic for (nodes, seed, profile).

    .venv/bin/python -m benchmarks.kubectl_dump --nodes 2000 --seed 1 -o /tmp/dump.json
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from solver_sched.io.slim import slim

Obj = dict[str, Any]
NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
LEAVES = 16
SCHEDULER = "solver-sched"
PRIORITIES = (
    ("training-low", 0, 0.55),
    ("training-normal", 100, 0.35),
    ("training-high", 1000, 0.1),
)
NODE_TYPES = (  # name, share, gpus, cpu, memory (Ki), gpu product
    ("p4de.24xlarge", 0.60, 8, 96, 1176373196, "NVIDIA-A100-SXM4-80GB"),
    ("g6.12xlarge", 0.25, 4, 48, 195949580, "NVIDIA-L4"),
    ("m6i.16xlarge", 0.15, 0, 64, 261047400, ""),
)
DAEMONS = (  # name, cpu, memory, gpu nodes only
    ("kube-proxy", "100m", "128Mi", False),
    ("node-exporter", "50m", "64Mi", False),
    ("fluent-bit", "100m", "200Mi", False),
    ("nvidia-device-plugin", "50m", "100Mi", True),
    ("dcgm-exporter", "100m", "512Mi", True),
)
IMAGES = [
    f"registry.example.com/{repo}:{tag}"
    for repo in ("pytorch/pytorch", "nvidia/cuda", "ml/trainer", "ml/eval", "ml/tokenizer")
    for tag in ("2.4.0-cuda12.1", "2.3.1-cuda12.1", "12.4.1-runtime", "v1.8.3", "v1.9.0", "latest")
]


class _Ids:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def uid(self) -> str:
        h = f"{self.rng.getrandbits(128):032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def ip(self, prefix: str) -> str:
        return f"{prefix}.{self.rng.randrange(256)}.{self.rng.randrange(1, 255)}"


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _managed(manager: str, operation: str, t: datetime, fields: Obj, sub: str = "") -> Obj:
    entry = {
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
        "manager": manager,
        "operation": operation,
        "time": _ts(t),
    }
    if sub:
        entry["subresource"] = sub
    return entry


def _fields(obj: Any, depth: int = 0) -> Any:
    """A fieldsV1 tree for an object, as the API server tracks it: every key as `f:<key>`,
    lists of named objects by name, other lists atomic."""
    if isinstance(obj, dict) and depth < 6:
        return {f"f:{k}": _fields(v, depth + 1) for k, v in obj.items()}
    if isinstance(obj, list) and obj and isinstance(obj[0], dict) and "name" in obj[0]:
        return {f'k:{{"name":"{o.get("name")}"}}': _fields(o, depth + 1) for o in obj}
    return {}


def _node(ids: _Ids, i: int, kind: tuple[Any, ...], managed: bool) -> Obj:
    itype, _share, gpus, cpu, mem_ki, product = kind
    name = f"ip-10-{i // 250}-{i % 250}-{(i * 7) % 250}.ec2.internal"
    zone = "us-east-1" + "abcd"[i % 4]
    created = NOW - timedelta(days=30 + i % 60)
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": itype,
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": itype,
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": zone,
        "failure-domain.beta.kubernetes.io/zone": zone,
        "eks.amazonaws.com/nodegroup": f"{itype.split('.')[0]}-{i % 3}",
        "eks.amazonaws.com/capacityType": "ON_DEMAND",
        "pool": "gpu" if gpus else "cpu",
    }
    for f in ("avx", "avx2", "avx512f", "avx512bw", "fma3", "sse4.2", "aes", "vmx"):
        labels[f"feature.node.kubernetes.io/cpu-cpuid.{f.upper()}"] = "true"
    labels["feature.node.kubernetes.io/kernel-version.full"] = "6.1.109-118.189.amzn2023.x86_64"
    labels["feature.node.kubernetes.io/system-os_release.ID"] = "amzn"
    alloc = {
        "cpu": f"{cpu * 1000 - 250}m",
        "ephemeral-storage": "95500736762",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": f"{mem_ki - 4200000}Ki",
        "pods": "110" if gpus else "234",
    }
    capacity = {
        **alloc,
        "cpu": str(cpu),
        "memory": f"{mem_ki}Ki",
        "ephemeral-storage": "104845292Ki",
    }
    spec: Obj = {"providerID": f"aws:///{zone}/i-0{ids.rng.getrandbits(60):015x}"}
    if gpus:
        labels.update(
            {
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": product,
                "nvidia.com/gpu.count": str(gpus),
                "nvidia.com/gpu.memory": "81920" if gpus == 8 else "23034",
                "nvidia.com/cuda.driver.major": "550",
                "nvidia.com/mig.strategy": "single",
            }
        )
        alloc["nvidia.com/gpu"] = capacity["nvidia.com/gpu"] = str(gpus)
        spec["taints"] = [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"}]
    if ids.rng.random() < 0.02:
        spec["unschedulable"] = True
        spec.setdefault("taints", []).append(
            {
                "effect": "NoSchedule",
                "key": "node.kubernetes.io/unschedulable",
                "timeAdded": _ts(NOW - timedelta(hours=3)),
            }
        )
    beat = _ts(NOW - timedelta(seconds=ids.rng.randrange(40)))
    conditions = [
        {
            "lastHeartbeatTime": beat,
            "lastTransitionTime": _ts(created),
            "message": msg,
            "reason": reason,
            "status": status,
            "type": ctype,
        }
        for ctype, status, reason, msg in (
            (
                "MemoryPressure",
                "False",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            (
                "PIDPressure",
                "False",
                "KubeletHasSufficientPID",
                "kubelet has sufficient PID available",
            ),
            ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ("NetworkUnavailable", "False", "RouteCreated", "RouteController created a route"),
        )
    ]
    images = [
        {
            "names": [f"{img}@sha256:{ids.rng.getrandbits(256):064x}", img],
            "sizeBytes": ids.rng.randrange(10**8, 10**10),
        }
        for img in ids.rng.sample(IMAGES, 24)
    ]
    address = ids.ip("10.0")
    status = {
        "addresses": [
            {"address": address, "type": "InternalIP"},
            {"address": name, "type": "InternalDNS"},
            {"address": name, "type": "Hostname"},
        ],
        "allocatable": alloc,
        "capacity": capacity,
        "conditions": conditions,
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "images": images,
        "nodeInfo": {
            "architecture": "amd64",
            "bootID": ids.uid(),
            "containerRuntimeVersion": "containerd://1.7.22",
            "kernelVersion": "6.1.109-118.189.amzn2023.x86_64",
            "kubeProxyVersion": "v1.35.4",
            "kubeletVersion": "v1.35.4",
            "machineID": f"{ids.rng.getrandbits(128):032x}",
            "operatingSystem": "linux",
            "osImage": "Amazon Linux 2023.5.20241001",
            "systemUUID": ids.uid(),
        },
    }
    meta: Obj = {
        "annotations": {
            "alpha.kubernetes.io/provided-node-ip": address,
            "csi.volume.kubernetes.io/nodeid": json.dumps(
                {"ebs.csi.aws.com": spec["providerID"][-18:]}
            ),
            "node.alpha.kubernetes.io/ttl": "0",
            "nfd.node.kubernetes.io/feature-labels": ",".join(
                k.split("/", 1)[1] for k in labels if k.startswith("feature.node")
            ),
            "nfd.node.kubernetes.io/master.version": "v0.16.4",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        },
        "creationTimestamp": _ts(created),
        "labels": labels,
        "name": name,
        "resourceVersion": str(ids.rng.randrange(10**6, 10**9)),
        "uid": ids.uid(),
    }
    if managed:
        meta["managedFields"] = [
            _managed("kubelet", "Update", created, _fields({"metadata": {"labels": labels}})),
            _managed(
                "nfd-master",
                "Update",
                created,
                _fields({"metadata": {"annotations": meta["annotations"]}}),
            ),
            _managed("kube-controller-manager", "Update", NOW, _fields({"spec": spec})),
            _managed(
                "kubelet",
                "Update",
                NOW,
                _fields({"status": {k: v for k, v in status.items() if k != "images"}}),
                "status",
            ),
        ]
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}


_TOKEN_MOUNT = {
    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
    "name": "kube-api-access",
    "readOnly": True,
}


def _container(
    name: str, image: str, requests: Obj, limits: Obj, env: int, mounts: list[Obj]
) -> Obj:
    c: Obj = {
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "name": name,
        "resources": {"limits": limits, "requests": requests} if limits else {"requests": requests},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": [*mounts, _TOKEN_MOUNT],
    }
    if env:
        c["env"] = [{"name": f"ENV_{k}", "value": f"value-{k}-{name}"} for k in range(env)]
    return c


def _pod(
    ids: _Ids,
    name: str,
    ns: str,
    *,
    containers: list[Obj],
    owner: tuple[str, str],
    node: str | None,
    phase: str,
    created: datetime,
    scheduler: str = "default-scheduler",
    labels: Obj | None = None,
    priority: tuple[str, int] | None = None,
    tolerations: list[Obj] | None = None,
    node_selector: Obj | None = None,
    managed: bool = False,
    annotations: Obj | None = None,
) -> Obj:
    spec: Obj = {
        "containers": containers,
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": priority[1] if priority else 0,
        "restartPolicy": "Always" if owner[0] != "Job" else "Never",
        "schedulerName": scheduler,
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 30,
        "tolerations": (tolerations or [])
        + [
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "tolerationSeconds": 300,
            },
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "tolerationSeconds": 300,
            },
        ],
        "volumes": [
            {
                "name": "kube-api-access",
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                "name": "kube-root-ca.crt",
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "fieldRef": {
                                            "apiVersion": "v1",
                                            "fieldPath": "metadata.namespace",
                                        },
                                        "path": "namespace",
                                    }
                                ]
                            }
                        },
                    ],
                },
            }
        ],
    }
    if priority:
        spec["priorityClassName"] = priority[0]
    if node:
        spec["nodeName"] = node
    if node_selector:
        spec["nodeSelector"] = node_selector
    start = created + timedelta(seconds=5)
    conditions = [
        {"lastProbeTime": None, "lastTransitionTime": _ts(start), "status": "True", "type": t}
        for t in (
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        )
    ]
    status: Obj = {"phase": phase, "qosClass": "Burstable"}
    if node is None:
        status["conditions"] = [
            {
                "lastProbeTime": None,
                "lastTransitionTime": _ts(created),
                "message": "0/1 nodes are available: waiting for the gang",
                "reason": "Unschedulable",
                "status": "False",
                "type": "PodScheduled",
            }
        ]
    else:
        status.update(
            {
                "conditions": conditions,
                "hostIP": ids.ip("10.0"),
                "podIP": ids.ip("10.8"),
                "podIPs": [{"ip": ids.ip("10.8")}],
                "startTime": _ts(start),
                "containerStatuses": [
                    {
                        "containerID": f"containerd://{ids.rng.getrandbits(256):064x}",
                        "image": c["image"],
                        "imageID": f"{c['image']}@sha256:{ids.rng.getrandbits(256):064x}",
                        "lastState": {},
                        "name": c["name"],
                        "ready": phase == "Running",
                        "restartCount": 0,
                        "started": phase == "Running",
                        "state": (
                            {"running": {"startedAt": _ts(start)}}
                            if phase == "Running"
                            else {
                                "terminated": {
                                    "exitCode": 0,
                                    "reason": "Completed",
                                    "startedAt": _ts(start),
                                    "finishedAt": _ts(start + timedelta(hours=1)),
                                }
                            }
                        ),
                    }
                    for c in containers
                ],
            }
        )
    meta: Obj = {
        "creationTimestamp": _ts(created),
        "generateName": name.rsplit("-", 1)[0] + "-",
        "labels": labels or {},
        "name": name,
        "namespace": ns,
        "ownerReferences": [
            {
                "apiVersion": "apps/v1" if owner[0] != "Job" else "batch/v1",
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": owner[0],
                "name": owner[1],
                "uid": ids.uid(),
            }
        ],
        "resourceVersion": str(ids.rng.randrange(10**6, 10**9)),
        "uid": ids.uid(),
    }
    if annotations:
        meta["annotations"] = annotations
    if managed:
        meta["managedFields"] = [
            _managed(
                "kube-controller-manager",
                "Update",
                created,
                _fields({"metadata": {"labels": meta["labels"]}, "spec": spec}),
            ),
            _managed("kubelet", "Update", start, _fields({"status": status}), "status"),
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


class _Free:
    """Free GPUs per node in buckets by count, so a pod finds its node in a few steps at 10,000
    nodes. ``spread`` takes the node with the most free GPUs (the default scheduler's
    LeastAllocated), else the fullest node that fits (bin packing); entries are checked lazily."""

    def __init__(self, free: list[int]) -> None:
        self.free = free
        self.buckets: list[list[int]] = [[] for _ in range(max(free, default=0) + 1)]
        for n, f in enumerate(free):
            self.buckets[f].append(n)

    def take(self, gpus: int, spread: bool) -> int | None:
        top = len(self.buckets) - 1
        for f in range(top, gpus - 1, -1) if spread else range(gpus, top + 1):
            bucket = self.buckets[f]
            while bucket:
                n = bucket.pop()
                if self.free[n] == f:
                    self.free[n] -= gpus
                    self.buckets[self.free[n]].append(n)
                    return n
        return None

    def give(self, n: int, gpus: int) -> None:
        self.free[n] += gpus
        self.buckets[self.free[n]].append(n)

    def gang(self, pods: int, gpus: int, spread: bool) -> list[int]:
        """Nodes for every pod, or none (a gang that does not fit is submitted as pending)."""
        taken: list[int] = []
        for _ in range(pods):
            n = self.take(gpus, spread)
            if n is None:
                for m in taken:
                    self.give(m, gpus)
                return []
            taken.append(n)
        return taken


def _quota_tree(total_gpus: int, managed: bool) -> Obj:
    parents = []
    for p in range(4):
        leaves = []
        for leaf in range(4):
            i = p * 4 + leaf
            node: Obj = {
                "name": f"team-{i:02d}",
                "namespaces": [f"team-{i:02d}"],
                "min": {"nvidia.com/gpu": str(total_gpus // LEAVES), "cpu": "512", "memory": "4Ti"},
                "max": {"nvidia.com/gpu": str(total_gpus // 4), "kube-queue/max-jobs": "1000"},
            }
            if i % 5 == 4:
                node["max"] = {}  # borrows without a limit of its own
            leaves.append(node)
        parents.append(
            {
                "name": f"org-{p}",
                "min": {"nvidia.com/gpu": str(total_gpus // 4)},
                "max": {"nvidia.com/gpu": str(total_gpus // 2)},
                "children": leaves,
            }
        )
    root = {"name": "root", "max": {"nvidia.com/gpu": str(total_gpus)}, "children": parents}
    meta: Obj = {
        "name": "elasticquotatree",
        "namespace": "kube-system",
        "creationTimestamp": _ts(NOW - timedelta(days=90)),
        "generation": 12,
        "resourceVersion": "4242",
        "uid": "6f1d2c3b-0000-4000-8000-000000000001",
    }
    if managed:
        meta["managedFields"] = [
            _managed("kubectl-client-side-apply", "Update", NOW, _fields({"spec": {}}))
        ]
    return {
        "apiVersion": "scheduling.sigs.k8s.io/v1beta1",
        "kind": "ElasticQuotaTree",
        "metadata": meta,
        "spec": {"root": root},
    }


def _priority_classes() -> list[Obj]:
    out = []
    for name, value, _ in PRIORITIES:
        out.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name, "uid": f"00000000-0000-4000-8000-{value:012d}"},
                "preemptionPolicy": "PreemptLowerPriority",
                "value": value,
                "description": f"{name} training jobs",
            }
        )
    for name, value in (
        ("system-node-critical", 2000001000),
        ("system-cluster-critical", 2000000000),
    ):
        out.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
    return out


def _gang_shape(rng: random.Random) -> tuple[int, int]:
    pods = rng.choices((1, 2, 4, 8, 16), weights=(55, 25, 12, 6, 2))[0]
    gpus = rng.choices((1, 2, 4, 8), weights=(50, 20, 15, 15))[0]
    return pods, gpus


def dump_objects(
    nodes: int, seed: int, managed_fields: bool = True, load: float = 0.85
) -> list[Obj]:
    rng = random.Random(seed)
    ids = _Ids(rng)
    out: list[Obj] = _priority_classes()
    kinds = [
        NODE_TYPES[rng.choices(range(3), weights=[t[1] for t in NODE_TYPES])[0]]
        for _ in range(nodes)
    ]
    node_objs = [_node(ids, i, k, managed_fields) for i, k in enumerate(kinds)]
    out += node_objs
    names = [n["metadata"]["name"] for n in node_objs]
    cordoned = {i for i, n in enumerate(node_objs) if n["spec"].get("unschedulable")}
    gpu_nodes = [i for i, k in enumerate(kinds) if k[2] and i not in cordoned]
    cpu_nodes = [i for i, k in enumerate(kinds) if not k[2]] or list(range(nodes))
    total_gpus = sum(k[2] for k in kinds)
    out.append(_quota_tree(total_gpus, managed_fields))
    gpu_tol = [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}]
    # DaemonSet pods on every node
    for i, name in enumerate(names):
        for dname, cpu, mem, gpu_only in DAEMONS:
            if gpu_only and not kinds[i][2]:
                continue
            out.append(
                _pod(
                    ids,
                    f"{dname}-{ids.rng.getrandbits(20):05x}",
                    "kube-system",
                    containers=[
                        _container(
                            dname,
                            f"registry.k8s.io/{dname}:v1.2.3",
                            {"cpu": cpu, "memory": mem},
                            {"memory": mem},
                            3,
                            [],
                        )
                    ],
                    owner=("DaemonSet", dname),
                    node=name,
                    phase="Running",
                    created=NOW - timedelta(days=10),
                    labels={
                        "app.kubernetes.io/name": dname,
                        "controller-revision-hash": "6b9f8c7d5",
                        "pod-template-generation": "3",
                    },
                    priority=("system-node-critical", 2000001000),
                    tolerations=[{"operator": "Exists"}],
                    managed=managed_fields,
                )
            )
    # CPU services and notebooks of the default scheduler
    for k in range(nodes):
        ns = f"team-{rng.randrange(LEAVES):02d}"
        where = names[rng.choice(cpu_nodes)]
        out.append(
            _pod(
                ids,
                f"svc-{k:06d}-{ids.rng.getrandbits(20):05x}",
                ns,
                containers=[
                    _container(
                        "app",
                        IMAGES[rng.randrange(len(IMAGES))],
                        {"cpu": "2", "memory": "8Gi"},
                        {"memory": "8Gi"},
                        8,
                        [],
                    )
                ],
                owner=("ReplicaSet", f"svc-{k:06d}-7d9f"),
                node=where,
                phase="Running",
                created=NOW - timedelta(hours=rng.randrange(1, 500)),
                labels={"app": f"svc-{k:06d}", "pod-template-hash": "7d9f"},
                managed=managed_fields,
            )
        )
    usable = set(gpu_nodes)
    free = [kinds[i][2] if i in usable else 0 for i in range(nodes)]
    budget = int(load * sum(free))
    pool = _Free(free)
    used, job, running_jobs, misses = 0, 0, 0, 0
    jobs: list[tuple[int, list[int]]] = []
    while used < budget and misses < 50:
        pods, gpus = _gang_shape(rng)
        taken = pool.gang(pods, gpus, spread=rng.random() < 0.5)  # two schedulers' histories
        if not taken:
            misses += 1
            continue
        used += pods * gpus
        jobs.append((gpus, taken))
        running_jobs += 1
    pending = [(_gang_shape(rng)) for _ in range(running_jobs // 2)]
    completed = int(nodes * 0.7)
    for gpus, taken in jobs:
        out += _gang(ids, job, len(taken), gpus, [names[n] for n in taken], managed_fields, gpu_tol)
        job += 1
    for pods, gpus in pending:
        out += _gang(ids, job, pods, gpus, [], managed_fields, gpu_tol)
        job += 1
    for k in range(completed):  # pods of finished jobs stay until cleaned up
        ns = f"team-{rng.randrange(LEAVES):02d}"
        out.append(
            _pod(
                ids,
                f"eval-{k:06d}-{ids.rng.getrandbits(20):05x}",
                ns,
                containers=[
                    _container(
                        "eval",
                        IMAGES[3],
                        {"cpu": "4", "memory": "16Gi"},
                        {"nvidia.com/gpu": "1"},
                        6,
                        [],
                    )
                ],
                owner=("Job", f"eval-{k:06d}"),
                node=names[rng.choice(gpu_nodes)] if gpu_nodes else names[0],
                phase="Succeeded",
                created=NOW - timedelta(hours=rng.randrange(2, 48)),
                labels={
                    "job-name": f"eval-{k:06d}",
                    "batch.kubernetes.io/job-name": f"eval-{k:06d}",
                },
                tolerations=gpu_tol,
                managed=managed_fields,
            )
        )
    return out


def _gang(
    ids: _Ids, k: int, pods: int, gpus: int, placed: list[str], managed: bool, tol: list[Obj]
) -> list[Obj]:
    rng = ids.rng
    ns = f"team-{rng.randrange(LEAVES):02d}"
    name = f"train-{k:06d}"
    prio_name, prio, _ = rng.choices(PRIORITIES, weights=[p[2] for p in PRIORITIES])[0]
    created = NOW - timedelta(minutes=rng.randrange(5, 3000))
    elastic = (pods > 1 and rng.random() < 0.4) or (pods == 1 and rng.random() < 0.2)
    minimum, maximum = pods, pods
    anns: Obj = {}
    if elastic:
        minimum = max(1, pods // 2) if placed else pods
        maximum = pods * 2
        anns["solver-sched.io/max-member"] = str(maximum)
        anns["solver-sched.io/size-policy"] = "power-of-two"
        if placed and rng.random() < 0.25:
            anns["solver-sched.io/last-scale-time"] = _ts(
                NOW - timedelta(minutes=rng.randrange(10))
            )
    existing = maximum if elastic else pods
    meta: Obj = {
        "creationTimestamp": _ts(created),
        "generation": 1,
        "labels": {"app.kubernetes.io/managed-by": "training-operator", "team": ns},
        "name": name,
        "namespace": ns,
        "resourceVersion": str(rng.randrange(10**6, 10**9)),
        "uid": ids.uid(),
    }
    if anns:
        meta["annotations"] = anns
    spec = {"minMember": minimum, "scheduleTimeoutSeconds": 600}
    status = {
        "phase": "Running" if placed else "Pending",
        "running": len(placed),
        "scheduled": len(placed),
    }
    if managed:
        meta["managedFields"] = [
            _managed(
                "training-operator",
                "Update",
                created,
                _fields({"metadata": {"labels": meta["labels"]}, "spec": spec}),
            ),
            _managed(SCHEDULER, "Update", NOW, _fields({"status": status}), "status"),
        ]
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": spec,
        "status": status,
    }
    out = [group]
    product = "NVIDIA-A100-SXM4-80GB" if gpus == 8 else None
    mounts: list[Obj] = [
        {"mountPath": "/dev/shm", "name": "dshm"},
        {"mountPath": "/data", "name": "data", "readOnly": True},
    ]
    for i in range(existing):
        where = placed[i] if i < len(placed) else None
        c = _container(
            "pytorch",
            IMAGES[0],
            {"cpu": str(10 * gpus), "memory": f"{100 * gpus}Gi", "nvidia.com/gpu": str(gpus)},
            {"nvidia.com/gpu": str(gpus), "memory": f"{100 * gpus}Gi"},
            14,
            mounts,
        )
        c["ports"] = [{"containerPort": 23456, "name": "pytorchjob-port", "protocol": "TCP"}]
        c["command"] = [
            "torchrun",
            f"--nnodes={minimum}:{maximum}",
            "--nproc-per-node=auto",
            "train.py",
        ]
        pod = _pod(
            ids,
            f"{name}-worker-{i}",
            ns,
            containers=[c],
            owner=("PyTorchJob", name),
            node=where,
            phase="Running" if where else "Pending",
            created=created,
            scheduler=SCHEDULER,
            labels={
                "scheduling.x-k8s.io/pod-group": name,
                "training.kubeflow.org/job-name": name,
                "training.kubeflow.org/operator-name": "pytorchjob-controller",
                "training.kubeflow.org/replica-index": str(i),
                "training.kubeflow.org/replica-type": "worker",
            },
            priority=(prio_name, prio),
            tolerations=tol,
            node_selector={"nvidia.com/gpu.product": product} if product else None,
            managed=managed,
            annotations={
                "sidecar.istio.io/inject": "false",
                "kubectl.kubernetes.io/default-container": "pytorch",
            },
        )
        pod["spec"]["volumes"] += [
            {"emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}, "name": "dshm"},
            {
                "name": "data",
                "persistentVolumeClaim": {"claimName": f"{ns}-datasets", "readOnly": True},
            },
        ]
        out.append(pod)
    return out


PROFILES = ("compact", "kubectl", "managed")
VERSION = 2  # of what the generator writes: part of a cached dump's name


def profile_objects(nodes: int, seed: int, profile: str) -> list[Obj]:
    """``kubectl``: what `kubectl get -o json` prints; ``managed``: plus managedFields (what
    `--show-managed-fields` prints and an informer receives); ``compact``: only what the
    scheduler reads, as small as the dump of issue 14 (7 KB per node)."""
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r}: choose one of {', '.join(PROFILES)}")
    items = dump_objects(nodes, seed, profile == "managed")
    return [slim(o) for o in items] if profile == "compact" else items


def write_dump(path: Path, nodes: int, seed: int, profile: str = "kubectl") -> int:
    """Writes the dump as one `kind: List` (JSON, indented as kubectl prints it); returns the
    item count."""
    items = profile_objects(nodes, seed, profile)
    doc = {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}
    with path.open("w") as f:
        json.dump(doc, f, indent=4)
    return len(items)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=512)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--profile", choices=PROFILES, default="kubectl")
    p.add_argument("-o", "--out", type=Path, required=True)
    args = p.parse_args(argv)
    count = write_dump(args.out, args.nodes, args.seed, args.profile)
    print(f"wrote {count} objects to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
