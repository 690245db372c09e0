"""Synthetic GPU clusters for benchmarks and large tests, as Kubernetes objects.

``classic``: the first generator (one family, ``solver-sched generate --nodes ...``).
``presets``: named families (``solver-sched generate --preset NAME``) built by ``cluster`` from a
``spec.ClusterSpec``, with gang sizes calibrated on public traces (``gangs``).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from solver_sched.synthetic.classic import synthetic_objects, write_cluster
from solver_sched.synthetic.cluster import cluster_objects
from solver_sched.synthetic.presets import PRESETS, SIZES, preset


def preset_objects(name: str, seed: int, now: datetime, nodes: int | None = None) -> list[Any]:
    return cluster_objects(preset(name, nodes), seed, now)


def write_preset(path: Path, name: str, seed: int, now: datetime, nodes: int | None = None) -> int:
    """Writes the preset's cluster as a List; returns the number of objects."""
    objs = preset_objects(name, seed, now, nodes)
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    return len(objs)


__all__ = [
    "PRESETS",
    "SIZES",
    "cluster_objects",
    "preset",
    "preset_objects",
    "synthetic_objects",
    "write_cluster",
    "write_preset",
]
