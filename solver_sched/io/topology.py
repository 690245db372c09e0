"""Topology at the edge: Kueue ``Topology`` objects, and what a gang asks of the topology from the
1.37 PodGroup (``spec.schedulingConstraints.topology``), Volcano's ``networkTopology`` or Kueue's
pod-set annotations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from solver_sched.domain.cluster import Pod
from solver_sched.domain.topology import HOSTNAME, Mode, Topology, TopologyRequest
from solver_sched.io.context import LoadContext, parse
from solver_sched.io.objects import KueueTopologyObj, PodGroupObj

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
KUEUE_ANNOTATIONS = ((KUEUE_REQUIRED, Mode.REQUIRED), (KUEUE_PREFERRED, Mode.PREFERRED))


def kueue_topologies(b: LoadContext, raws: list[dict[str, Any]]) -> dict[str, Topology]:
    """Kueue Topology objects by name; one that breaks Kueue's rules is reported and left out."""
    out: dict[str, Topology] = {}
    for raw in raws:
        if not str(raw.get("apiVersion", "")).startswith(KUEUE_GROUP + "/"):
            continue  # another API's kind named Topology
        t = parse(b, KueueTopologyObj, raw)
        if t is None:
            continue
        obj = f"Topology {t.metadata.name}"
        levels = tuple(level.node_label for level in t.spec.levels)
        if len(set(levels)) != len(levels):
            b.error(obj, "spec.levels", f"levels must be distinct, got {list(levels)}")
        elif HOSTNAME in levels[:-1]:
            b.error(obj, "spec.levels", f"{HOSTNAME} can only be the last level")
        else:
            out[t.metadata.name] = Topology(levels, obj)
    return out


def podgroup_request(
    b: LoadContext, kind: str, pg: PodGroupObj, obj: str
) -> TopologyRequest | str | None:
    """The PodGroup's own topology constraint: a request, an error message (the job is invalid),
    or None."""
    if kind == "k8s" and pg.spec.scheduling_constraints is not None:
        items = pg.spec.scheduling_constraints.topology
        fld = "spec.schedulingConstraints.topology"
        if len(items) > 1:
            return b.error(obj, fld, f"at most one item (Kubernetes 1.37), got {len(items)}")
        if items:
            if not items[0].key:
                return b.error(obj, f"{fld}[0].key", "empty node label key")
            return TopologyRequest(Mode.REQUIRED, key=items[0].key, source=f"{obj} {fld}")
    if kind == "volcano" and pg.spec.network_topology is not None:
        return _volcano(b, pg.spec.network_topology.model_dump(by_alias=True), obj)
    return None


def _volcano(b: LoadContext, nt: dict[str, Any], obj: str) -> TopologyRequest | str:
    fld = "spec.networkTopology"
    mode = {"hard": Mode.REQUIRED, "soft": Mode.PREFERRED}.get(str(nt.get("mode") or "hard"))
    if mode is None:
        return b.error(obj, f"{fld}.mode", f"must be hard or soft, got {nt.get('mode')!r}")
    tier, name = nt.get("highestTierAllowed"), nt.get("highestTierName")
    source = f"{obj} {fld}"
    if tier is not None and name:
        return b.error(obj, fld, "highestTierAllowed and highestTierName are exclusive")
    if name:  # the tier's name must be one of the topology's level label keys here
        return TopologyRequest(mode, key=str(name), source=source)
    if tier is None:
        if mode is Mode.REQUIRED:
            return b.error(obj, f"{fld}.highestTierAllowed", "hard mode needs a tier")
        return TopologyRequest(mode, tier=1, source=source)  # soft: as close as it fits
    if tier < 1:
        return b.error(obj, f"{fld}.highestTierAllowed", f"must be >= 1, got {tier}")
    return TopologyRequest(mode, tier=int(tier), source=source)


def pod_request(b: LoadContext, pod: str, anns: dict[str, str]) -> TopologyRequest | str | None:
    """A pod's Kueue pod-set annotation (copied from its template): a request, an error, None."""
    for ann, mode in KUEUE_ANNOTATIONS:
        if ann in anns:
            if not anns[ann].strip():
                return b.error(f"Pod {pod}", f"metadata.annotations[{ann}]", "empty level")
            return TopologyRequest(mode, key=anns[ann].strip(), source=f"Pod {pod} {ann}")
    return None


def gang_request(b: LoadContext, pods: Sequence[Pod], job: str) -> TopologyRequest | str | None:
    """The pods' requests, one for the gang: it is planned as a whole, so pods that ask for
    different levels are an error (a required request wins over preferred ones)."""
    asked = {p.topology for p in pods if p.topology is not None}
    required = {r for r in asked if r.mode is Mode.REQUIRED}
    chosen = {(r.mode, r.key) for r in (required or asked)}
    if not chosen:
        return None
    if len(chosen) > 1:
        what = ", ".join(sorted(f"{m} {k}" for m, k in chosen))
        return b.error(
            f"Pod {pods[0].name}", "metadata.annotations", f"pods of {job} ask for {what}"
        )
    return min(required or asked, key=lambda r: r.source)
