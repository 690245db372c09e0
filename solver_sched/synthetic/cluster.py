"""A cluster of a ``ClusterSpec`` as Kubernetes objects (what ``kubectl get -o json`` lists).

1. Nodes of the spec's types, their GPU model as the ``nvidia.com/gpu.product`` label (and, with
   ``gpu_model_as="resource"``, as an extended resource too).
2. Other schedulers' pods: 1-2 GPU services and CPU-only pods on random nodes (fragmentation).
3. Running gangs, first fit over the nodes in order (``spread`` of them on the emptiest nodes,
   as the default scheduler's LeastAllocated places them), all pods or none, each within its
   queue's limits, until the load is reached.
4. Pending gangs, ``pending_ratio`` per running one, sized by the traces' mixes too.

Deterministic for (spec, seed, now).
"""

from __future__ import annotations

import heapq
import random
from datetime import datetime, timedelta
from typing import Any

from solver_sched.io import manifests as m
from solver_sched.synthetic.gangs import GangShape, draw_gpus, draw_shape, mix
from solver_sched.synthetic.quota import Limits, quota_tree
from solver_sched.synthetic.spec import GPU_PRODUCT, MODEL_RESOURCE, ClusterSpec, NodeType

CPU_PER_GPU = 10  # cores a training pod asks per GPU
MEM_PER_GPU = 100  # GiB
GIVE_UP = 200  # consecutive running gangs that find no room: the cluster is as full as it gets
LARGEST_SHARE = 8  # no gang takes more than 1/8 of the cluster's GPUs (a small cluster's cap)


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _slug(model: str) -> str:
    return model.lower().replace("_", "-")


class _Nodes:
    """Free GPUs, CPU and memory per node; first fit through one heap of node indexes per (node
    type, pod GPUs). Free capacity only shrinks while gangs are placed (an undone gang pushes its
    nodes back), so a node that cannot take a pod of g GPUs now never will."""

    def __init__(self, types: list[NodeType]) -> None:
        self.types = types
        self.gpus = [t.gpus for t in types]
        self.cpu = [t.cpu for t in types]
        self.mem = [t.memory_gi for t in types]
        self._heaps: dict[tuple[str, int], list[int]] = {}
        top = max(self.gpus, default=0)
        self._buckets: dict[str, list[list[int]]] = {}  # model -> free GPUs -> nodes (lazy)
        for n, t in enumerate(types):
            self._buckets.setdefault(t.model, [[] for _ in range(top + 1)])[t.gpus].append(n)

    def fits(self, n: int, gpus: int, cpu: int, mem: int) -> bool:
        return self.gpus[n] >= gpus and self.cpu[n] >= cpu and self.mem[n] >= mem

    def take(self, n: int, gpus: int, cpu: int, mem: int, sign: int = 1) -> None:
        self.gpus[n] -= sign * gpus
        self.cpu[n] -= sign * cpu
        self.mem[n] -= sign * mem
        self._buckets[self.types[n].model][self.gpus[n]].append(n)
        if sign < 0:
            for (model, g), heap in self._heaps.items():
                if self.types[n].model == model and self.gpus[n] >= g:
                    heapq.heappush(heap, n)

    def emptiest(self, model: str, gpus: int, cpu: int, mem: int) -> int | None:
        """The node with the most free GPUs that holds the pod (the default scheduler's
        LeastAllocated spreads pods so)."""
        buckets = self._buckets[model]
        for f in range(len(buckets) - 1, gpus - 1, -1):
            bucket = buckets[f]
            for k in range(len(bucket) - 1, -1, -1):
                n = bucket[k]
                if self.gpus[n] != f:
                    bucket.pop(k)  # a stale entry: the node moved to another bucket
                elif self.fits(n, gpus, cpu, mem):
                    return n
        return None

    def first_fit(self, model: str, gpus: int, cpu: int, mem: int) -> int | None:
        key = (model, gpus)
        heap = self._heaps.get(key)
        if heap is None:
            heap = self._heaps[key] = [
                n for n, t in enumerate(self.types) if t.model == model and t.gpus >= gpus
            ]
        while heap:
            n = heap[0]
            if self.fits(n, gpus, cpu, mem):
                return n
            heapq.heappop(heap)
        return None


def _node_types(spec: ClusterSpec, rng: random.Random) -> list[NodeType]:
    """The spec's types in their shares, shuffled over the node indexes."""
    counts = [round(t.share * spec.nodes) for t in spec.node_types]
    counts[0] += spec.nodes - sum(counts)
    out = [t for t, c in zip(spec.node_types, counts, strict=True) for _ in range(c)]
    rng.shuffle(out)
    return out


def _node_object(spec: ClusterSpec, i: int, t: NodeType) -> dict[str, Any]:
    obj = m.node(
        f"node-{i:05d}",
        gpus=t.gpus,
        cpu=str(t.cpu),
        memory=f"{t.memory_gi}Gi",
        labels={GPU_PRODUCT: t.model, "pool": "a" if i % 2 else "b"},
    )
    if spec.gpu_model_as == "resource":
        for key in ("allocatable", "capacity"):
            obj["status"][key][MODEL_RESOURCE + _slug(t.model)] = str(t.gpus)
    return obj


def cluster_objects(spec: ClusterSpec, seed: int, now: datetime) -> list[dict[str, Any]]:
    return _Generator(spec, seed, now).objects()


class _Generator:
    def __init__(self, spec: ClusterSpec, seed: int, now: datetime) -> None:
        self.spec, self.now = spec, now
        self.rng = random.Random(seed)
        self.types = _node_types(spec, self.rng)
        self.nodes = _Nodes(self.types)
        self.total = sum(t.gpus for t in self.types)
        self.largest = max(1, min(64, self.total // LARGEST_SHARE))
        self.models = [t.model for t in spec.node_types]
        self.model_share = [t.share for t in spec.node_types]
        popularity = [1 / (i + 1) ** spec.skew for i in range(spec.leaves)]
        self.rng.shuffle(popularity)
        self.popularity = popularity
        self.objs: list[dict[str, Any]] = []
        self.jobs = 0

    def objects(self) -> list[dict[str, Any]]:
        spec = self.spec
        tree, limits = quota_tree(spec, self.total)
        if tree is not None:
            self.objs.append(tree)
        self.objs += [_node_object(spec, i, t) for i, t in enumerate(self.types)]
        used = self._foreign()
        running = self._running(limits, used)
        for _ in range(round(spec.pending_ratio * running)):
            self._pending()
        return self.objs

    # -- other schedulers' pods ------------------------------------------------------------
    def _foreign(self) -> int:
        """GPU services and CPU-only pods of the default scheduler; returns the GPUs they hold."""
        spec, rng, nodes = self.spec, self.rng, self.nodes
        gpus_used, cpu_used, k = 0, 0, 0
        total_cpu = sum(t.cpu for t in self.types)
        tries = 0
        while tries < 20 * spec.nodes and (
            gpus_used < spec.foreign * self.total or cpu_used < spec.foreign_cpu * total_cpu
        ):
            tries += 1
            gpu_pod = gpus_used < spec.foreign * self.total
            g = rng.choice((1, 1, 2)) if gpu_pod else 0
            cpu = 4 * g if gpu_pod else rng.choice((4, 8, 16))
            mem = 32 * g if gpu_pod else 4 * cpu
            n = rng.randrange(spec.nodes)
            if not nodes.fits(n, g, cpu, mem):
                continue
            nodes.take(n, g, cpu, mem)
            gpus_used += g
            cpu_used += cpu
            self.objs.append(
                m.pod(
                    f"svc-{k:06d}",
                    namespace="serving",
                    gpus=g,
                    cpu=str(cpu),
                    memory=f"{mem}Gi",
                    node_name=f"node-{n:05d}",
                    scheduler="default-scheduler",
                    created=_ts(self.now - timedelta(days=1)),
                )
            )
            k += 1
        return gpus_used

    # -- training gangs --------------------------------------------------------------------
    def _running(self, limits: Limits, used: int) -> int:
        spec, rng = self.spec, self.rng
        weights = mix(spec.blend)
        placed, misses = 0, 0
        while used < spec.load * self.total and misses < GIVE_UP:
            gpus = draw_gpus(rng, weights, self.largest)
            model = self._model()
            shape = draw_shape(rng, gpus, self._node_gpus(model), self._elastic(), running=True)
            leaf = self._leaf()
            total = shape.pods * shape.gpus
            where = self._place(shape, model) if limits.admit(leaf, total) else None
            if where is None:
                misses += 1
                continue
            misses = 0
            limits.add(leaf, total)
            used += total
            placed += 1
            self._gang(shape, leaf, model, where)
        return placed

    def _pending(self) -> None:
        gpus = draw_gpus(self.rng, mix(self.spec.pending_blend), self.largest)
        model = self._model()
        shape = draw_shape(self.rng, gpus, self._node_gpus(model), self._elastic(), running=False)
        self._gang(shape, self._leaf(), model, [])

    def _model(self) -> str | None:
        """The GPU model a gang asks for, or None (any)."""
        choice = len(self.models) > 1 or self.spec.gpu_model_as == "resource"
        if choice and self.rng.random() < self.spec.pinned:
            return self.rng.choices(self.models, weights=self.model_share)[0]
        return None

    def _node_gpus(self, model: str | None) -> int:
        types = [t for t in self.spec.node_types if model is None or t.model == model]
        return max(t.gpus for t in types)

    def _elastic(self) -> bool:
        return self.rng.random() < self.spec.elastic

    def _leaf(self) -> int:
        return self.rng.choices(range(self.spec.leaves), weights=self.popularity)[0]

    def _place(self, shape: GangShape, model: str | None) -> list[int] | None:
        """Nodes for the gang's running pods, all or none."""
        g = shape.gpus
        cpu, mem = CPU_PER_GPU * g, MEM_PER_GPU * g
        models = [model] if model is not None else self.models
        spread = self.rng.random() < self.spec.spread
        taken: list[int] = []
        for _ in range(shape.pods):
            if spread:
                fits = [self.nodes.emptiest(md, g, cpu, mem) for md in models]
                found = [f for f in fits if f is not None]
                n = max(found, key=lambda f: self.nodes.gpus[f]) if found else None
            else:
                fits = [self.nodes.first_fit(md, g, cpu, mem) for md in models]
                n = min((f for f in fits if f is not None), default=None)
            if n is None:
                for t in taken:
                    self.nodes.take(t, g, cpu, mem, sign=-1)
                return None
            self.nodes.take(n, g, cpu, mem)
            taken.append(n)
        return taken

    def _gang(self, shape: GangShape, leaf: int, model: str | None, where: list[int]) -> None:
        spec, rng, now = self.spec, self.rng, self.now
        name = f"job-{self.jobs:06d}"
        self.jobs += 1
        prio = rng.choices([p for p, _ in spec.priorities], weights=[w for _, w in spec.priorities])
        last = None
        if where and shape.elastic and rng.random() < spec.cooldown:
            last = now - timedelta(minutes=rng.randrange(0, 10))
        age = timedelta(minutes=rng.randrange(60, 2880) if where else rng.randrange(1, 360))
        objs = m.gang(
            name,
            shape.max_pods if shape.elastic else shape.pods,
            namespace=f"team-{leaf:02d}",
            gpus=shape.gpus,
            min_member=shape.min_pods,
            max_member=shape.max_pods if shape.elastic else None,
            size_policy="power-of-two" if shape.elastic else None,
            running_on=[f"node-{n:05d}" for n in where] or None,
            priority=prio[0],
            cpu=str(CPU_PER_GPU * shape.gpus),
            memory=f"{MEM_PER_GPU * shape.gpus}Gi",
            last_scale_time=_ts(last) if last else None,
            created=_ts(now - age),
        )
        if model is not None:
            for pod in objs[1:]:
                if spec.gpu_model_as == "resource":
                    limits = pod["spec"]["containers"][0]["resources"]["limits"]
                    limits[MODEL_RESOURCE + _slug(model)] = str(shape.gpus)
                else:
                    pod["spec"]["nodeSelector"] = {GPU_PRODUCT: model}
        self.objs += objs
