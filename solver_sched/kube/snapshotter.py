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


def planning_objects(store: ObjectStore, assumed: Assumed) -> list[JsonObj]:
    """The cluster as it will be once in-flight binds land and in-flight evictions finish."""
    binds, evictions = assumed.snapshot()
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


def take_snapshot(
    store: ObjectStore, assumed: Assumed, config: SchedulerConfig, scheduler_name: str
) -> ClusterSnapshot:
    s = config.settings
    return snapshot_from_objects(planning_objects(store, assumed), scheduler_name, s.cooldown)


def live_pods(store: ObjectStore) -> dict[str, tuple[str, str | None]]:
    """pod key -> (uid, nodeName or None), for reconciling assumptions."""
    return {
        object_key(p): (
            str((p.get("metadata") or {}).get("uid")),
            (p.get("spec") or {}).get("nodeName"),
        )
        for p in store.items("Pod.v1")
    }
