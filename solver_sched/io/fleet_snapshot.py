"""Hub objects + each member's nodes and pods -> one ClusterSnapshot of the whole fleet.

The core already keeps a gang in one cluster (``solver-sched.io/cluster`` on nodes), so a fleet
is planned as one cluster whose nodes are the members' nodes, labelled with their member. Each hub
PyTorchJob that a valid PropagationPolicy selects becomes a gang through the same loader as a
single cluster's objects:

- queued: pending pods derived from its replica templates (requests, nodeSelector, affinity,
  tolerations, priorityClassName), restricted to the members its policy and past failovers allow;
- dispatched: the real pods of its copy in the member, and, for replicas whose pod is not bound
  there yet, the nodes reserved when it was dispatched (so the next cycle does not give that room
  away); in an unreachable member only the reservation counts, for quota.

The hub's quota tree and PriorityClasses apply fleet-wide. Pods of a member that belong to no
current copy only take node capacity. The planner's binds of a queued job name its member."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import partial
from typing import Any

from solver_sched.domain.quota import IMPLICIT_QUEUE
from solver_sched.domain.snapshot import ClusterSnapshot, InputError
from solver_sched.io.fleet_hub import HubJob, hub_jobs, parse_policy
from solver_sched.io.fleet_members import (
    Copy,
    FleetCache,
    MemberState,
    is_current,
    kept,
    member_copies,
    member_objects,
    readable,
)
from solver_sched.io.fleet_pods import allowed_key, fleet_pytorchjob, job_pods, queued_pods
from solver_sched.io.kube_snapshot import snapshot_from_objects
from solver_sched.io.quantity import parse_quantity

BIG_GANG = 10_000  # pods: a queued job above it is built only if some member could hold it
MAX_NODE_PODS = 10_000  # a node's pods counted at most (a what-if file may say 1e400)


@dataclass(frozen=True)
class FleetSnapshot:
    snapshot: ClusterSnapshot
    jobs: Mapping[str, HubJob]  # every hub PyTorchJob a policy selects, by ns/name
    copies: Mapping[str, tuple[Copy, ...]]  # reachable member -> its copies of hub jobs
    stale: Mapping[str, tuple[Copy, ...]]  # reachable member -> copies to delete
    node_member: Mapping[str, tuple[str, str]]  # fleet node -> (member, node)
    synthetic: Mapping[str, tuple[str, str]]  # queued job's pod key -> (hub job, suffix)
    reachable: tuple[str, ...]
    unreachable: tuple[str, ...]
    errors: tuple[InputError, ...] = ()

    def current_copy(self, job: HubJob) -> Copy | None:
        if job.placement is None:
            return None
        for c in self.copies.get(job.placement.cluster, ()):
            if c.uid == job.uid and c.generation == job.placement.generation:
                return c
        return None


def copy_name(job: HubJob, generation: int) -> str:
    """Deterministic: the same hub job and generation always name the same copy, so a retried
    create is refused (409) instead of making a second copy. Short enough for the operator's
    Service names (``<copy>-worker-NN`` within 63 characters)."""
    return f"{job.name[:36].rstrip('-.')}-{job.uid[:8]}-g{generation}"


def build_fleet(
    hub_objects: Iterable[Mapping[str, Any]],
    members: Sequence[MemberState],
    scheduler_name: str = "solver-sched",
    default_cooldown: timedelta = timedelta(minutes=10),
    cache: FleetCache | None = None,
) -> FleetSnapshot:
    """``cache``: what the previous build of mostly the same objects derived (a controller
    keeps one across cycles); a fresh one by default."""
    cache = cache or FleetCache()
    errors: list[InputError] = []
    by_kind: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for obj in hub_objects:
        by_kind[str(obj.get("kind", ""))].append(obj)
    policies = [p for raw in by_kind["PropagationPolicy"] if (p := parse_policy(raw, errors))]
    jobs = hub_jobs(by_kind["PyTorchJob"], policies, errors)
    by_uid = {j.uid: j for j in jobs.values()}
    objects: list[dict[str, Any]] = [
        dict(o) for kind in ("PriorityClass", "ElasticQuotaTree") for o in by_kind[kind]
    ]
    copies: dict[str, tuple[Copy, ...]] = {}
    stale: dict[str, tuple[Copy, ...]] = {}
    node_member: dict[str, tuple[str, str]] = {}
    copy_pods: dict[str, dict[str, dict[str, Any]]] = {}  # hub job -> suffix -> bound pod
    unknown: dict[str, set[str]] = {}  # member -> nodes whose room an unreadable pod hides
    reachable = []
    for m in members:
        if m.reachable:
            m, unknown[m.name] = readable(m, errors, cache)
            reachable.append(m)
    for m in reachable:
        mine = member_copies(m)
        copies[m.name] = tuple(mine)
        current = {c.name: by_uid[c.uid] for c in mine if is_current(c, by_uid)}
        stale[m.name] = tuple(
            c for c in mine if c.name not in current and not kept(c, by_uid.get(c.uid))
        )
        # pods of a finished job (workers still up after the master succeeded) take capacity
        # only: they are no job of the queue any more. A copy of a job the fleet cannot judge
        # (its policy or placement unreadable now) stays, and stays its queue's: a held job
        active = {n: j for n, j in current.items() if not j.finished}
        for c in mine:
            if (job := by_uid.get(c.uid)) is not None and job.invalid and not job.finished:
                active[c.name] = job
        blocked = bool(stale[m.name])
        objects += member_objects(
            m, active, blocked, node_member, copy_pods, cache, scheduler_name, unknown[m.name]
        )
    synthetic: dict[str, tuple[str, str]] = {}
    _hold_too_large(jobs, reachable, errors)
    for job in jobs.values():
        if job.finished:
            continue
        if job.invalid:  # held; placed, the nodes reserved for its unbound replicas stay taken
            if job.placement is not None:
                objects += job_pods(job, scheduler_name, copy_pods.get(job.key, {}), synthetic)
            continue
        objects.append(cache.get(job.raw, ("job", job.key), partial(fleet_pytorchjob, job)))
        real = copy_pods.get(job.key, {})
        if job.placement is None:  # the bulk of a queue: derived once per version of the job
            key = ("pods", job.key, allowed_key(job), scheduler_name)
            pods, mine = cache.get(job.raw, key, partial(queued_pods, job, scheduler_name))
            objects += pods
            synthetic.update(mine)
        else:
            objects += job_pods(job, scheduler_name, real, synthetic)
    snap = snapshot_from_objects(objects, scheduler_name, default_cooldown, cache.parsed)
    cache.prune()
    snap = _finish(snap, jobs, synthetic, errors)
    return FleetSnapshot(
        snapshot=snap,
        jobs=jobs,
        copies=copies,
        stale=stale,
        node_member=node_member,
        synthetic=synthetic,
        reachable=tuple(m.name for m in reachable),
        unreachable=tuple(m.name for m in members if not m.reachable),
        errors=tuple(errors),
    )


def _hold_too_large(
    jobs: dict[str, HubJob], members: Sequence[MemberState], errors: list[InputError]
) -> None:
    """A queued job's pods are built one by one: one of more pods than any member holds (and
    than BIG_GANG) is held before they are."""
    most = max([BIG_GANG, *(_pod_room(m) for m in members)])
    for key, job in list(jobs.items()):
        pods = sum(max(0, n) for _, n in job.replicas)
        if job.placement is None and not job.invalid and pods > most:
            why = f"{pods} pods: more than any member holds ({most})"
            jobs[key] = replace(job, invalid=f"PyTorchJob {key}: {why}")
            errors.append(InputError(f"PyTorchJob {key}", "spec.pytorchReplicaSpecs", why))


def _pod_room(m: MemberState) -> int:
    """The pods a member's nodes allow in all (``status.allocatable.pods``; 110 where unread)."""
    total = 0
    for raw in m.objects:
        if raw.get("kind") == "Node":
            status = raw.get("status")
            alloc = status.get("allocatable") if isinstance(status, dict) else None
            try:
                total += min(MAX_NODE_PODS, parse_quantity((alloc or {}).get("pods", 110), "pods"))
            except (AttributeError, ValueError):
                total += 110
    return total


def _finish(
    snap: ClusterSnapshot,
    jobs: Mapping[str, HubJob],
    synthetic: Mapping[str, tuple[str, str]],
    errors: list[InputError],
) -> ClusterSnapshot:
    """Jobs whose policy does not queue them skip the hub's quota tree; errors about derived
    pods name the hub job's replica template."""
    changed = {}
    for name, job in snap.jobs.items():
        hub = jobs.get(name)
        if hub is not None and hub.invalid and not job.invalid:  # its copy's pods: held
            changed[name] = replace(job, invalid=hub.invalid)
        elif hub is not None and hub.policy is not None and not hub.policy.queued:
            changed[name] = replace(job, queue=IMPLICIT_QUEUE)
    remapped = []
    for e in snap.errors:
        key = e.obj.removeprefix("Pod ")
        if e.obj.startswith("Pod ") and key in synthetic:
            hub = jobs[synthetic[key][0]]
            rtype = synthetic[key][1].rsplit("-", 1)[0]
            real = next((t for t, _ in hub.replicas if t.lower() == rtype), rtype)
            fld = f"spec.pytorchReplicaSpecs.{real}.template.{e.field}"
            e = InputError(f"PyTorchJob {hub.key}", fld, e.message)
        if e not in remapped:
            remapped.append(e)
    return replace(
        snap,
        jobs={**snap.jobs, **changed},
        errors=(*errors, *remapped),
    )
