"""Store (+ in-flight actions) -> ClusterSnapshot, through the same loader the CLI uses."""

from __future__ import annotations

import copy
from typing import Any

from solver_sched.config.schema import SchedulerConfig
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.kube.assume import Assumed
from solver_sched.kube.resources import CONFIG_MAPS
from solver_sched.kube.store import ObjectStore, object_key

JsonObj = dict[str, Any]


def cluster_objects(store: ObjectStore) -> list[JsonObj]:
    """What a what-if dump holds: every watched object but the scheduler's own ConfigMap."""
    return [o for o in store.all_objects() if o.get("kind") != CONFIG_MAPS.kind]


InFlight = tuple[dict[str, tuple[str, str]], dict[str, str]]  # Assumed.snapshot()


def planning_objects(store: ObjectStore, inflight: InFlight) -> list[JsonObj]:
    """The cluster as it will be once in-flight binds land and in-flight evictions finish."""
    binds, evictions = inflight
    out = []
    for obj in cluster_objects(store):
        if obj.get("kind") == "Pod":
            key, uid = object_key(obj), (obj.get("metadata") or {}).get("uid")
            if evictions.get(key) == uid:
                continue
            bind = binds.get(key)
            if bind is not None and bind[0] == uid and not (obj.get("spec") or {}).get("nodeName"):
                obj = copy.deepcopy(obj)
                obj["spec"]["nodeName"] = bind[1]
        out.append(obj)
    return out


def take_snapshots(
    store: ObjectStore, assumed: Assumed, config: SchedulerConfig, scheduler_name: str
) -> tuple[ClusterSnapshot, ClusterSnapshot]:
    """(to plan on, as it is): the first counts in-flight binds and evictions as done, the second
    is what the API server holds now (the actuator checks real room against it). With nothing in
    flight the two are the same snapshot, parsed once."""
    cooldown = config.settings.cooldown
    inflight = assumed.snapshot()
    plan_on = snapshot_from_objects(planning_objects(store, inflight), scheduler_name, cooldown)
    if not any(inflight):
        return plan_on, plan_on
    return plan_on, snapshot_from_objects(cluster_objects(store), scheduler_name, cooldown)


def live_pods(store: ObjectStore) -> dict[str, tuple[str, str | None]]:
    """pod key -> (uid, nodeName or None), for reconciling assumptions."""
    return {
        object_key(p): (
            str((p.get("metadata") or {}).get("uid")),
            (p.get("spec") or {}).get("nodeName"),
        )
        for p in store.items("Pod.v1")
    }
