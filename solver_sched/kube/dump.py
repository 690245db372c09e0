"""`solver-sched dump`: the live cluster's scheduling objects as one what-if input file."""

from __future__ import annotations

import json
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
    with out.open("w") as f:
        if out.suffix == ".json":  # what `kubectl get -o json` writes; the fastest to read back
            json.dump(doc, f, indent=2)
        else:  # libyaml's emitter when PyYAML has it: the pure one takes minutes at 10,000 nodes
            yaml.dump(doc, f, Dumper=_YAML_DUMPER, sort_keys=False)
    return len(items)


_YAML_DUMPER: type[yaml.SafeDumper | yaml.CSafeDumper] = getattr(
    yaml, "CSafeDumper", yaml.SafeDumper
)
