"""The independent feasibility checker. Every plan passes it before it is emitted.

Written from the rules in the issue, not from the model: it reads only the snapshot and the plan
(never solver variables, never the formulation), recomputes the cluster after the plan pod by pod,
and returns one line per violation. An empty list means the plan may be emitted.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from solver_sched.domain import resources as res
from solver_sched.domain.cluster import Job
from solver_sched.domain.plan import Plan
from solver_sched.domain.quota import MAX_JOBS
from solver_sched.domain.snapshot import ClusterSnapshot
from solver_sched.domain.topology import Mode, Topology, choose


def check(
    snapshot: ClusterSnapshot,
    plan: Plan,
    now: datetime,
    priority_preemption: bool = True,
    queue_reclaim: bool = True,
    topology: Topology | None = None,
) -> list[str]:
    """``topology``: the levels the cycle used (default: the snapshot's only Kueue Topology)."""
    if topology is None:
        topology = choose((), None, snapshot.topologies)[0]
    bad: list[str] = []
    bound_to = _binds(snapshot, plan, bad)
    evicted = _evictions(snapshot, plan, bad)
    after = {
        name: node
        for name, pod in snapshot.pods.items()
        if (node := bound_to.get(name) or (pod.node_name if pod.bound else None)) is not None
        and name not in evicted
    }
    _node_fit(snapshot, after, bound_to, bad)
    before_size = {n: len(snapshot.running_pods(j)) for n, j in snapshot.jobs.items()}
    after_size = {n: sum(p in after for p in j.pods) for n, j in snapshot.jobs.items()}
    started = [n for n, j in snapshot.jobs.items() if before_size[n] < j.min_pods <= after_size[n]]
    usage_before = snapshot.bound_usage()
    usage_after = snapshot.queue_usage(snapshot.pods[p] for p in after)
    starts = _Starts(snapshot, started, usage_before)
    with_binds = {b.job for b in plan.binds}
    frozen = {  # jobs no plan may change
        name
        for name, job in snapshot.jobs.items()
        if job.invalid or job.succeeded or snapshot.quota.invalid_in_chain(snapshot.queue_of(job))
    }
    irregular: list[str] = []  # jobs at a size they may not keep (partial or irregular)
    for name, job in snapshot.jobs.items():
        touched = before_size[name] != after_size[name] or name in with_binds
        if name in frozen:
            if touched:
                bad.append(f"job {name}: invalid, completing or in an invalid queue, yet changed")
            continue
        regular = _job_rules(
            snapshot,
            job,
            before_size[name],
            after_size[name],
            evicted,
            starts,
            now,
            priority_preemption,
            queue_reclaim,
            bad,
        )
        if not regular:
            irregular.append(name)
        if name in with_binds and any(p in evicted for p in job.pods):
            bad.append(f"job {name}: evicts and binds in one plan (running pods never move)")
        clusters = {
            snapshot.nodes[after[p]].cluster
            for p in job.pods
            if p in after and after[p] in snapshot.nodes
        }
        if len(clusters) > 1 and name in with_binds:  # (one that ran split may stay so)
            bad.append(f"job {name}: spans clusters {sorted(clusters)}")
        if touched or any(p in evicted for p in job.pods):
            _required_topology(snapshot, topology, job, after, bad)
    _quota(snapshot, usage_before, usage_after, irregular, bad)
    licences = _Licences(
        snapshot, starts, [*irregular, *frozen], priority_preemption, queue_reclaim
    )
    licences.check(before_size, after_size, after, usage_before, usage_after, bad)
    return bad


def _required_topology(
    snapshot: ClusterSnapshot,
    topology: Topology,
    job: Job,
    after: dict[str, str],
    bad: list[str],
) -> None:
    """A gang that requires a level and that the plan changes ends with every pod in one domain
    of that level (an untouched gang that was split before is left alone: running pods never
    move)."""
    asked = job.topology
    key = asked.level(topology) if asked is not None and asked.mode is Mode.REQUIRED else None
    if key is None:
        return
    domains: set[tuple[str, ...]] = set()
    for p in job.pods:
        node = snapshot.nodes.get(after.get(p, ""))
        if node is None:
            continue
        domain = topology.domain_of(node.labels, key)
        if domain is None:
            bad.append(f"job {job.name}: requires {key} but pod {p} is on {node.name}, without it")
            return
        domains.add(domain)
    if len(domains) > 1:
        shown = sorted("/".join(d) for d in domains)
        bad.append(f"job {job.name}: requires one {key} domain, its pods are in {shown}")


def _binds(snapshot: ClusterSnapshot, plan: Plan, bad: list[str]) -> dict[str, str]:
    bound_to: dict[str, str] = {}
    for b in plan.binds:
        pod = snapshot.pods.get(b.pod)
        node = snapshot.nodes.get(b.node)
        if pod is None or node is None:
            bad.append(f"bind {b.pod} -> {b.node}: unknown pod or node")
            continue
        if b.pod in bound_to:
            bad.append(f"bind {b.pod}: bound twice")
        if pod.node_name is not None or pod.terminated:
            bad.append(f"bind {b.pod}: not a pending pod (running pods never move)")
        if pod.scheduler_name != snapshot.scheduler_name:
            bad.append(f"bind {b.pod}: schedulerName {pod.scheduler_name} is not ours")
        if not node.schedulable:
            bad.append(f"bind {b.pod} -> {b.node}: node is cordoned or invalid")
        unmet = pod.constraints.unmet(node.labels, node.taints, node.name)
        if unmet:
            bad.append(f"bind {b.pod} -> {b.node}: {unmet}")
        if pod.job != b.job:
            bad.append(f"bind {b.pod}: belongs to {pod.job}, not {b.job}")
        bound_to[b.pod] = b.node
    return bound_to


def _evictions(snapshot: ClusterSnapshot, plan: Plan, bad: list[str]) -> set[str]:
    evicted: set[str] = set()
    for ev in plan.evictions:
        for name in ev.pods:
            pod = snapshot.pods.get(name)
            if pod is None or not pod.bound:
                bad.append(f"evict {name}: not a running pod")
            elif pod.job != ev.job:
                bad.append(f"evict {name}: belongs to {pod.job}, not {ev.job}")
            if name in evicted:
                bad.append(f"evict {name}: evicted twice")
            evicted.add(name)
    return evicted


def _node_fit(
    snapshot: ClusterSnapshot,
    after: dict[str, str],
    bound_to: dict[str, str],
    bad: list[str],
) -> None:
    """Every resource a bound pod requests fits its node after the plan (as the kubelet admits:
    resources the new pods do not request may already be overcommitted by others)."""
    targets = set(bound_to.values())
    used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for pod_name, node in after.items():
        if node in targets:
            for r, q in snapshot.pods[pod_name].requests.items():
                used[node][r] += q
    requested: dict[str, set[str]] = defaultdict(set)
    for pod_name, node in bound_to.items():
        requested[node].update(r for r, q in snapshot.pods[pod_name].requests.items() if q)
    for node in sorted(targets):
        alloc = snapshot.nodes[node].allocatable
        for r in sorted(requested[node]):
            if used[node][r] > alloc.get(r, 0):
                bad.append(
                    f"node {node}: {r} {used[node][r]} requested > {alloc.get(r, 0)} allocatable"
                )


def _job_rules(
    snapshot: ClusterSnapshot,
    job: Job,
    before: int,
    after: int,
    evicted: set[str],
    starts: _Starts,
    now: datetime,
    priority_preemption: bool,
    queue_reclaim: bool,
    bad: list[str],
) -> bool:
    """Appends what the job breaks; returns whether it ran at an allowed size."""
    allowed = job.allowed_sizes()
    name = job.name
    # a job at a size it may not keep stays there when its budgets refuse evicting it whole
    kept = after == before and job.kept_whole(before)
    if after and after not in allowed and not kept:
        bad.append(f"job {name}: ends with {after} pods, allowed sizes are {list(allowed)} or 0")
    running = snapshot.running_pods(job)
    gone = [p.name for p in running if p.name in evicted]
    if gone and after and running[0].name in gone:
        bad.append(f"job {name}: evicts its first pod {running[0].name} but keeps running")
    rest = running[1:]
    tail = [p.name for p in running[len(running) - len(gone) :]]
    if gone != tail and any(p.requests != rest[0].requests for p in rest):  # only equal ones
        bad.append(f"job {name}: evicts {gone}, not its highest-index pods")
    until = job.cooldown_until()
    regular = before in allowed
    if job.disruptions is not None and len(gone) > job.disruptions:
        bad.append(
            f"job {name}: evicts {len(gone)} running pods, its PodDisruptionBudgets allow "
            f"{job.disruptions}"
        )
    if until is not None and now < until and regular and after > before:
        bad.append(f"job {name}: scales out {before} -> {after} during its cooldown")
    if not regular or after >= before:
        return regular
    # A job that shrinks or breaks ran at an allowed size, so it is not among the gangs starting.
    if after > 0 and not starts.names:
        bad.append(f"job {name}: scaled in {before} -> {after} with no guaranteed gang starting")
    if after == 0:
        queue = snapshot.queue_of(job)
        ok = priority_preemption and starts.top_priority.get(queue, job.priority) > job.priority
        if not ok and queue_reclaim and starts.borrowing(queue):
            ok = bool(starts.reclaiming - {queue})
        if not ok:
            bad.append(
                f"job {name}: gang broken with no higher-priority gang of its queue "
                f"(or reclaiming queue) starting"
            )
    return True


class _Starts:
    """The guaranteed gangs a plan starts, and the queues' usage before it, summarised once for
    the per-job break rules."""

    def __init__(
        self, snapshot: ClusterSnapshot, started: list[str], usage: dict[str, dict[str, int]]
    ) -> None:
        self.snapshot, self.usage = snapshot, usage
        self.names = set(started)
        self.top_priority: dict[str, int] = {}  # queue -> highest priority starting there
        self.reclaiming: set[str] = set()  # queues below their min with a gang starting
        for s in started:
            job = snapshot.jobs[s]
            queue = snapshot.queue_of(job)
            if job.preempts:  # preemptionPolicy Never licenses no priority break
                self.top_priority[queue] = max(
                    self.top_priority.get(queue, job.priority), job.priority
                )
            if _below_min(snapshot, queue, usage):
                self.reclaiming.add(queue)
        self.guaranteed = {  # resources some queue of the tree has a min of
            r for q in snapshot.quota.queues.values() for r, m in q.min.items() if m
        }

    def borrowing(self, queue: str) -> bool:
        """Whether the queue used more than its min of a resource that some queue of the tree
        is guaranteed; a min the queue does not list is 0 (Kueue, ElasticQuota)."""
        q = self.snapshot.quota.queues.get(queue)
        return q is not None and any(
            self.usage[queue].get(r, 0) > q.min.get(r, 0) for r in self.guaranteed
        )


def _below_min(snapshot: ClusterSnapshot, queue: str, usage: dict[str, dict[str, int]]) -> bool:
    q = snapshot.quota.queues.get(queue)
    return q is not None and any(usage[queue].get(r, 0) < m for r, m in q.min.items())


def _quota(
    snapshot: ClusterSnapshot,
    before: dict[str, dict[str, int]],
    after: dict[str, dict[str, int]],
    irregular: list[str],
    bad: list[str],
) -> None:
    """Max: no queue grows past its max (a lowered max stops growth, it evicts nothing). Min: a
    queue using more than its min keeps at least its min, or what it used if less once the gangs
    that must change anyway are left out, so reclaim and preemption take only what it borrows."""
    forced = snapshot.queue_usage(  # partial gangs and irregular sizes change whatever the floor
        pod for name in irregular for pod in snapshot.running_pods(snapshot.jobs[name])
    )
    for name, q in sorted(snapshot.quota.queues.items()):
        limits = dict(q.max)
        if q.max_jobs is not None:
            limits[MAX_JOBS] = q.max_jobs
        for r, m in sorted(limits.items()):
            a, b = after[name].get(r, 0), before[name].get(r, 0)
            if a > max(m, b):
                bad.append(f"queue {name}: {r} {a} in use > max {m}")
        for r, m in sorted(q.min.items()):
            b, a = before[name].get(r, 0), after[name].get(r, 0)
            floor = min(m, b - forced[name].get(r, 0))
            if b > m and a < floor:
                bad.append(f"queue {name}: {r} {a} in use < {floor}, its min {m} (borrowing {b})")


class _Licences:
    """Rule 3b, from the rules themselves: what breaking a gang frees in a queue's max belongs
    to the starts that may break it. Every other job of the queue must fit with each broken
    gang counted at its smallest allowed size. Only ever looser than the model's rows: a job
    counts as licensed when it may break any gang of the queue that ran at an allowed size."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        starts: _Starts,
        irregular: list[str],
        priority_preemption: bool,
        queue_reclaim: bool,
    ) -> None:
        self.snapshot, self.starts = snapshot, starts
        self.pp, self.qr = priority_preemption, queue_reclaim
        self.irregular = set(irregular)  # not at an allowed size before, or frozen
        self.queue_of: dict[str, str] = {}
        self.chain: dict[str, set[str]] = {}

    def check(
        self,
        before_size: dict[str, int],
        after_size: dict[str, int],
        after: dict[str, str],
        usage_before: dict[str, dict[str, int]],
        usage_after: dict[str, dict[str, int]],
        bad: list[str],
    ) -> None:
        jobs = self.snapshot.jobs
        regular = [n for n in jobs if n not in self.irregular and before_size[n] > 0]
        broken = [n for n in regular if after_size[n] == 0]
        if not broken or not self.snapshot.quota.queues:
            return
        self.queue_of = {n: self.snapshot.queue_of(j) for n, j in jobs.items()}
        self.chain = {q: set(self.snapshot.quota.chain(q)) for q in set(self.queue_of.values())}
        lowest: dict[str, int] = {}  # leaf -> lowest priority of its regular gangs
        for n in regular:
            leaf = self.queue_of[n]
            lowest[leaf] = min(lowest.get(leaf, jobs[n].priority), jobs[n].priority)
        borrowing = {leaf for leaf in lowest if self.starts.borrowing(leaf)}
        # the jobs not running at an allowed size that the plan places: their leaf, whether they
        # outrank a gang of it (a licence in every queue above), whether it may reclaim
        placed = [
            (
                n,
                leaf,
                self.pp
                and jobs[n].preempts
                and lowest.get(leaf, jobs[n].priority) < jobs[n].priority,
            )
            for n in jobs
            if after_size[n] and (n in self.irregular or not before_size[n])
            for leaf in (self.queue_of[n],)
        ]
        reclaims = {
            leaf
            for _, leaf, _ in placed
            if self.qr and _below_min(self.snapshot, leaf, self.starts.usage)
        }
        used: dict[str, res.Resources] = {}  # what a placed job uses after, once asked
        for name, q in sorted(self.snapshot.quota.queues.items()):
            limits = dict(q.max)
            if q.max_jobs is not None:
                limits[MAX_JOBS] = q.max_jobs
            mine = [g for g in broken if name in self.chain[self.queue_of[g]]]
            if not limits or not mine:
                continue
            borrowers = {leaf for leaf in borrowing if name in self.chain[leaf]}
            view = dict(usage_after[name])
            for h, leaf, outranks in placed:
                if name not in self.chain[leaf]:
                    continue
                if outranks or (leaf in reclaims and bool(borrowers - {leaf})):
                    if h not in used:
                        pods = (self.snapshot.pods[p] for p in jobs[h].pods if p in after)
                        used[h] = res.total(p.requests for p in pods)
                    res.add_into(view, used[h], -1)
                    view[MAX_JOBS] = view.get(MAX_JOBS, 0) - 1
            for g in mine:
                job = jobs[g]
                held = self.snapshot.running_pods(job)[: min(job.allowed_sizes())]
                res.add_into(view, res.total(p.requests for p in held))
                view[MAX_JOBS] = view.get(MAX_JOBS, 0) + 1
            for r, m in sorted(limits.items()):
                if view.get(r, 0) > max(m, usage_before[name].get(r, 0)):
                    bad.append(
                        f"queue {name}: {r} {view.get(r, 0)} > max {m} with broken gangs "
                        f"{sorted(mine)} counted at their smallest size: a start that may not "
                        f"break them uses what they freed"
                    )
