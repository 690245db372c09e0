"""`solver-sched dump`: the live cluster's scheduling objects as one what-if input file."""

from __future__ import annotations

from pathlib import Path

import yaml

from solver_sched.kube.api import ApiError, KubeApi, load_client
from solver_sched.kube.resources import WATCHED

_DROP = ("managedFields",)


def dump_cluster(kubeconfig: str | None, out: Path) -> int:
    api = KubeApi(load_client(kubeconfig))
    items = []
    for resource in WATCHED:
        try:
            body = api.get(resource.path())
        except ApiError as exc:
            if exc.status == 404 and resource.optional:
                continue
            raise
        for obj in body.get("items") or []:
            obj.setdefault("kind", resource.kind)
            obj.setdefault("apiVersion", resource.api_version)
            for key in _DROP:
                (obj.get("metadata") or {}).pop(key, None)
            items.append(obj)
    doc = {"apiVersion": "v1", "kind": "List", "items": items}
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return len(items)
