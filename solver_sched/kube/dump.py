"""`solver-sched dump`: the live cluster's scheduling objects as one what-if input file."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml

from solver_sched.kube.api import ApiError, KubeApi, load_client
from solver_sched.kube.resources import WATCHED

_DROP = ("managedFields",)
RETRIES = 5  # per list: 1 + 2 + 4 + 8 s of waits at most, unless the server asks for more


def dump_cluster(kubeconfig: str | None, out: Path) -> int:
    api = KubeApi(load_client(kubeconfig))
    items = []
    for resource in WATCHED:
        try:
            body = _get(api, resource.path())
        except ApiError as exc:
            if exc.status == 404 and resource.optional:
                continue
            raise ApiError(
                exc.status, f"{resource.kind}.{resource.api_version}: {exc.reason}"
            ) from exc
        for obj in body.get("items") or []:
            obj.setdefault("kind", resource.kind)
            obj.setdefault("apiVersion", resource.api_version)
            for key in _DROP:
                (obj.get("metadata") or {}).pop(key, None)
            items.append(obj)
    doc = {"apiVersion": "v1", "kind": "List", "items": items}
    with out.open("w") as f:
        if out.suffix == ".json":  # what `kubectl get -o json` writes; the fastest to read back
            json.dump(doc, f, indent=2)
        else:  # libyaml's emitter when PyYAML has it: the pure one takes minutes at 10,000 nodes
            yaml.dump(doc, f, Dumper=_YAML_DUMPER, sort_keys=False)
    return len(items)


def _get(api: KubeApi, path: str, tries: int = RETRIES) -> dict[str, Any]:
    """A list, tried again after a transient refusal (429 TooManyRequests, seen right after
    CRDs were installed; 5xx; the server away), waiting as the server asks (30 s at most) or
    1 s, doubling."""
    wait = 1.0
    for _ in range(tries - 1):
        try:
            return api.get(path)
        except ApiError as exc:
            if not (exc.status in (0, 429) or exc.status >= 500):
                raise
            after = (exc.body.get("details") or {}).get("retryAfterSeconds")
            asked = float(after) if isinstance(after, int | float) and after > 0 else None
            time.sleep(min(asked, 30.0) if asked else wait)
            wait *= 2
    return api.get(path)


_YAML_DUMPER: type[yaml.SafeDumper | yaml.CSafeDumper] = getattr(
    yaml, "CSafeDumper", yaml.SafeDumper
)
