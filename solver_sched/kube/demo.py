"""`solver-sched demo`: the seed scenarios, live, on a local API server.

Starts the sandbox API server, installs the CRDs, creates two simulated 8-GPU nodes, starts the
Kubeflow training-operator v1.8.1 (it runs the elastic job, a PyTorchJob: its pods, its PodGroup,
its status) and `solver-sched run` (the real secondary scheduler) as separate processes, and
submits the seed workloads one after another, printing what the scheduler and the operator do and
why, as read from the cluster. Stops everything at the end.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from solver_sched.io import manifests as m
from solver_sched.kube.api import KubeApi, load_client
from solver_sched.kube.demo_whatif import paused, whatif_now
from solver_sched.kube.sandbox import Kube, install_crds, sandbox, wait_for
from solver_sched.kube.status import waiting_reason
from solver_sched.kube.training_operator import TrainingOperator
from solver_sched.planning.explain import rfc3339

# Events of these reasons are posted on each evicted pod and once on its group: the demo prints
# the group's, with the pods it names (one event per resize, not one per pod).
PER_POD_TOO = ("Resized", "Preempted")

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "default"}}
PYTORCH_JOBS = "/apis/kubeflow.org/v1/namespaces/{ns}/pytorchjobs"
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups"
REPLICA_INDEX = "training.kubeflow.org/replica-index"


def say(out: Callable[[str], None], text: str) -> None:
    """A line with the wall-clock time in RFC 3339, as the events and reasons write it."""
    out(f"[{rfc3339(datetime.now(UTC))}] {text}")


def controller_of(pod: dict[str, Any]) -> str:
    """`Kind ns/name` of the pod's controller (its ownerReference), or 'no controller'."""
    meta = pod["metadata"]
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller"):
            return f"{ref['kind']} {meta.get('namespace')}/{ref['name']}"
    return "no controller"


def creator(pod: dict[str, Any]) -> str:
    """The field manager that wrote the pod's ownerReferences, i.e. created it, as the API server
    recorded it (the training-operator writes as `training-operator`)."""
    for entry in pod["metadata"].get("managedFields") or []:
        if "f:ownerReferences" in ((entry.get("fieldsV1") or {}).get("f:metadata") or {}):
            return str(entry.get("manager", "?"))
    return "?"


class Demo:
    def __init__(
        self, kube: Kube, out: Callable[[str], None], kubeconfig: str, pid: int, work: Path
    ) -> None:
        self.kube, self.out = kube, out
        self.kubeconfig, self.scheduler_pid, self.work = kubeconfig, pid, work
        self.log = work / "scheduler.log"
        self.log_read = 0  # bytes of the scheduler log counted by cycles()
        self.log_cycles = 0
        self.seen_events: set[str] = set()
        self.printed: list[tuple[str, str]] = []  # (reason, object name) of the events printed
        self.pods_of: dict[tuple[str, str], list[str]] = {}  # (reason, message) -> pod names

    def cycles(self) -> int:
        """Completed scheduler cycles, from the log lines written since the last call."""
        with self.log.open("rb") as f:
            f.seek(self.log_read)
            chunk = f.read()
        done = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written counts next time
        self.log_read += len(done)
        self.log_cycles += sum(1 for line in done.splitlines() if b": cycle " in line)
        return self.log_cycles

    def settle(self) -> None:
        """Print what the scheduler's next completed cycle posts: the last step's late events
        (a status write after its binds) belong under that step's header, not the next one's."""
        seen = self.cycles()
        wait_for("a scheduler cycle", lambda: self.cycles() > seen, timeout=30, every=0.3)
        self.events()

    def step(self, title: str, story: str, settle: bool = True) -> None:
        if settle and self.printed:
            self.settle()
        self.out("")
        self.out(f"== {title}")
        self.out(f"   {story}")

    def jobs(self, namespace: str, *prefixes: str) -> None:
        pods = self.kube.api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
        for prefix in prefixes:
            mine = [
                p
                for p in pods
                if p["metadata"]["name"].startswith(prefix + "-worker")
                and not p["metadata"].get("deletionTimestamp")
            ]
            bound = [p for p in mine if p["spec"].get("nodeName")]
            nodes = sorted({p["spec"]["nodeName"] for p in bound})
            reason = next((r for p in reversed(mine) if (r := waiting_reason(p))), "")
            line = f"   {namespace}/{prefix}: {len(bound)}/{len(mine)} workers running"
            if nodes:
                line += f" on {', '.join(nodes)}"
            if reason and len(bound) < len(mine):
                line += f"  -- waiting: {reason}"
            self.out(line)

    def events(self) -> None:
        items = [e for ns in ("default", "team-a") for e in self.kube.events(ns)]
        items.sort(key=lambda e: e.get("lastTimestamp") or "")
        for e in items:
            uid = e["metadata"]["name"]
            if (
                uid in self.seen_events
                or (e.get("source") or {}).get("component") != "solver-sched"
            ):
                continue
            self.seen_events.add(uid)
            obj = e["involvedObject"]
            if obj["kind"] == "Pod" and e["reason"] == "Unschedulable":
                continue
            if obj["kind"] == "Pod" and e["reason"] in PER_POD_TOO:
                self.pods_of.setdefault((e["reason"], e["message"]), []).append(obj["name"])
                continue
            self.printed.append((e["reason"], obj["name"]))
            pods = sorted(self.pods_of.pop((e["reason"], e["message"]), []))
            line = f"{obj['kind']} {obj.get('namespace')}/{obj['name']}: {e['message']}"
            if pods:
                line += f" (evicted {len(pods)} pods: {', '.join(pods)})"
            say(self.out, f"event {e['reason']:<13} {line}")

    def wait(
        self,
        what: str,
        probe: Callable[[], object],
        timeout: float = 60,
        expect: tuple[tuple[str, str], ...] = (),
    ) -> None:
        """Until ``probe`` holds and the step's events (``expect``: reason, object name) were
        printed, so that a step's outcome prints under its own header, not the next one's."""
        start = len(self.printed)

        def check() -> bool:
            self.events()
            return bool(probe()) and all(x in self.printed[start:] for x in expect)

        wait_for(what, check, timeout=timeout, every=0.5)

    def bound(self, prefix: str, namespace: str = "default") -> int:
        return self.kube.bound(namespace, prefix + "-")

    def pods(self, namespace: str = "default") -> dict[str, dict[str, Any]]:
        """The namespace's pods that are not being deleted, by name."""
        items = self.kube.api.get(f"/api/v1/namespaces/{namespace}/pods")["items"]
        return {
            p["metadata"]["name"]: p for p in items if not p["metadata"].get("deletionTimestamp")
        }

    def pytorch_job(self, name: str, namespace: str = "default") -> dict[str, Any]:
        return self.kube.api.get(f"{PYTORCH_JOBS.format(ns=namespace)}/{name}")

    def owned(self, job: str, namespace: str = "default") -> list[dict[str, Any]]:
        """The pods whose controller is PyTorchJob ``job``, by replica index."""
        mine = [
            p
            for p in self.pods(namespace).values()
            if controller_of(p) == f"PyTorchJob {namespace}/{job}"
        ]
        return sorted(mine, key=lambda p: int(p["metadata"]["labels"].get(REPLICA_INDEX, 0)))

    def created_by_operator(self, job: str, namespace: str = "default") -> None:
        """What the training-operator made of the PyTorchJob: its pods and PodGroup, and the
        elastic range solver-sched plans with, as the API server has them."""
        pods = self.owned(job, namespace)
        group = pods[0]["metadata"]["labels"].get("scheduling.x-k8s.io/pod-group", "")
        pg = self.kube.api.get(f"{PODGROUPS.format(ns=namespace)}/{group}")
        spec = self.pytorch_job(job, namespace)["spec"]
        ep = spec.get("elasticPolicy") or {}
        say(
            self.out,
            f"PyTorchJob {namespace}/{job}: {', '.join(sorted({creator(p) for p in pods}))} "
            f"created {len(pods)} pods ({pods[0]['metadata']['name']} .. "
            f"{pods[-1]['metadata']['name']}) and PodGroup {namespace}/{group} (minMember "
            f"{pg['spec'].get('minMember')}), all controlled by the PyTorchJob; solver-sched "
            f"plans it from {ep.get('minReplicas')} to {ep.get('maxReplicas')} workers "
            "(its elasticPolicy)",
        )

    def operator_status(self, job: str, active: int, namespace: str = "default") -> None:
        """The PyTorchJob's status once the training-operator counts ``active`` running
        workers."""

        def counted() -> dict[str, Any] | None:
            status = self.pytorch_job(job, namespace).get("status") or {}
            worker = (status.get("replicaStatuses") or {}).get("Worker") or {}
            return status if worker.get("active", 0) == active else None

        status = wait_for(f"{job}'s status: {active} active", counted, timeout=30)
        true = [c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"]
        replicas = self.pytorch_job(job, namespace)["spec"]["pytorchReplicaSpecs"]["Worker"]
        self.out(
            f"   PyTorchJob {namespace}/{job} status (written by the training-operator): "
            f"{true[-1] if true else 'no condition'}, Worker {active} active of "
            f"{replicas['replicas']} replicas"
        )

    def recreated(self, job: str, evicted: dict[str, str], namespace: str = "default") -> None:
        """Until every evicted pod (name -> UID) exists again as a new pod, and say who made
        them and where they are, as the API server has them."""

        def back() -> list[dict[str, Any]] | None:
            pods = self.pods(namespace)
            new = [
                pods[n]
                for n, uid in evicted.items()
                if n in pods and pods[n]["metadata"]["uid"] != uid
            ]
            return new if len(new) == len(evicted) else None

        pods = wait_for(f"{job}'s evicted pods recreated", back, timeout=30)
        names = ", ".join(sorted(p["metadata"]["name"] for p in pods))
        waiting = sum(1 for p in pods if not p["spec"].get("nodeName"))
        group = pods[0]["metadata"]["labels"].get("scheduling.x-k8s.io/pod-group", "")
        say(
            self.out,
            f"{namespace}/{job}: {', '.join(sorted({creator(p) for p in pods}))} recreated the "
            f"{len(pods)} evicted pods ({names}: new UIDs, controlled by "
            f"{', '.join(sorted({controller_of(p) for p in pods}))}); {waiting} of them wait "
            f"pending in PodGroup {namespace}/{group}",
        )

    def complete(self, job: str, namespace: str = "default") -> None:
        """Play the kubelet: the PyTorchJob's running workers exit 0; say what the operator then
        does, as the cluster shows it."""
        pods = self.owned(job, namespace)
        pending = sum(1 for p in pods if p["status"]["phase"] == "Pending")
        for p in pods:
            if p["status"]["phase"] == "Running":
                self.kube.exit(f"{namespace}/{p['metadata']['name']}")

        def succeeded() -> dict[str, Any] | None:
            status = self.pytorch_job(job, namespace).get("status") or {}
            done = next(
                (
                    c
                    for c in status.get("conditions") or []
                    if c["type"] == "Succeeded" and c["status"] == "True"
                ),
                None,
            )
            left = [p for p in self.owned(job, namespace) if p["status"]["phase"] == "Pending"]
            return done if done and not left else None

        done = wait_for(f"{job} succeeded", succeeded, timeout=30)

        def group_gone() -> bool:  # the operator deletes it after the pods
            groups = self.kube.api.get(PODGROUPS.format(ns=namespace))["items"]
            return not any(g["metadata"]["name"] == job for g in groups)

        try:
            wait_for(f"{job}'s PodGroup gone", group_gone, timeout=10)
            group = "deleted"
        except AssertionError:
            group = "kept"
        policy = self.pytorch_job(job, namespace)["spec"].get("runPolicy", {}).get("cleanPodPolicy")
        say(
            self.out,
            f"PyTorchJob {namespace}/{job}: {done['reason']}: {done['message']} The "
            f"training-operator deleted its {pending} pending pods (cleanPodPolicy {policy}); "
            f"its PodGroup: {group}",
        )

    def finish(self, prefix: str, namespace: str = "default") -> None:
        """Play the kubelet: the job's pods complete and are deleted."""
        for name in list(self.kube.pods(namespace)):
            if name == prefix or name.startswith(prefix + "-"):
                self.kube.delete({**POD, "metadata": {"namespace": namespace}}, name)


def run_demo(testenv: Path, operator: Path, root: Path, out: Callable[[str], None] = print) -> int:
    if not operator.exists():
        out(f"{operator} is missing: `make run` builds it (tools/training-operator)")
        return 1
    work = Path(tempfile.mkdtemp(prefix="solver-sched-demo-"))
    out(f"starting a local kube-apiserver + etcd ({testenv}) ...")
    with sandbox(testenv, work / "env", work / "apiserver.log") as env:
        api = KubeApi(load_client(env.kubeconfig))
        kube = Kube(api)
        out(f"API server ready at {env.server} (kubeconfig {env.kubeconfig})")
        # the operator's own PyTorchJob and PodGroup CRDs (.cache/crds) over deploy/crds' stand-ins
        upstream = sorted((root / ".cache" / "crds").glob("*.yaml"))
        ours = sorted((root / "deploy" / "crds").glob("*.yaml"))
        install_crds(kube, [p for p in ours if p.name not in {u.name for u in upstream}] + upstream)
        for ns in ("infra", "team-a", "solver-sched"):
            kube.ensure_namespace(ns)
        kube.create(m.node("gpu-a", gpus=8))
        kube.create(m.node("gpu-b", gpus=8))
        kube.create(
            m.pod(
                "infra-0",
                namespace="infra",
                gpus=3,
                node_name="gpu-a",
                scheduler="default-scheduler",
            )
        )
        kube.create(
            m.pod(
                "infra-1",
                namespace="infra",
                gpus=8,
                node_name="gpu-b",
                scheduler="default-scheduler",
            )
        )
        out("cluster: nodes gpu-a and gpu-b (8 GPUs each); another scheduler's pods hold 11 GPUs")
        trainer = TrainingOperator(operator, env, work / "training-operator.log")
        trainer.prepare()
        trainer.start()
        assert trainer.proc is not None
        out(
            f"training-operator v1.8.1 started (pid {trainer.proc.pid}, log {trainer.log}): "
            "it runs the PyTorchJobs, gang-scheduled by solver-sched"
        )
        log = work / "scheduler.log"
        sched = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "solver_sched.cli.main",
                "run",
                "--kubeconfig",
                env.kubeconfig,
                "--namespace",
                "solver-sched",
                "--cycle-interval",
                "2",
                "--metrics-addr",
                "",
                "--eviction-grace-seconds",
                "0",
            ],
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        out(f"scheduler started: solver-sched run (pid {sched.pid}, log {log})")
        try:
            _story(Demo(kube, out, env.kubeconfig, sched.pid, work))
        except AssertionError as exc:
            out(f"demo step failed: {exc}")
            return 1
        finally:
            sched.terminate()
            sched.wait(timeout=30)
            trainer.stop()
        out("")
        out(f"scheduler stopped (exit {sched.returncode}); last scheduler log lines:")
        for line in log.read_text().splitlines()[-3:]:
            out(f"   {log_line(line)}")
    shutil.rmtree(work, ignore_errors=True)
    out("API server stopped. Done.")
    return 0


def log_line(line: str) -> str:
    """A scheduler log line with its time (Python logging's local 'YYYY-MM-DD HH:MM:SS,mmm') in
    RFC 3339, as every other time the demo prints."""
    try:
        t = datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").astimezone(UTC)
    except ValueError:
        return line
    return f"{rfc3339(t)}{line[23:]}"


def _story(d: Demo) -> None:
    kube = d.kube
    d.step(
        "1. Gang all-or-nothing: 8 workers on 5 free GPUs",
        "`big` needs 8 x 1 GPU; only 5 are free, so it gets nothing (no stranded GPUs).",
    )
    kube.create_all(m.gang("big", 8))
    d.wait(
        "big's reason",
        lambda: "needs 8 x" in kube.waiting_reason("big-worker-0"),
        expect=(("Unschedulable", "big"),),
    )
    d.jobs("default", "big")
    d.step("   ... and the 5 free GPUs stay usable", "`small` (4 x 1 GPU) arrives and runs.")
    kube.create_all(m.gang("small", 4))
    d.wait("small bound", lambda: d.bound("small") == 4, expect=(("Scheduled", "small"),))
    d.jobs("default", "big", "small")
    d.step("   ... until room appears", "The other scheduler's 8-GPU pod finishes: `big` starts.")
    d.finish("infra-1", "infra")
    d.wait("big bound", lambda: d.bound("big") == 8, expect=(("Scheduled", "big"),))
    d.jobs("default", "big", "small")
    d.finish("big")
    d.finish("small")

    d.step(
        "2. Elastic fill by powers of two",
        "`elastic`, a PyTorchJob (16 workers, elasticPolicy min 2 / max 16, power-of-two) on 13 "
        "idle GPUs -> 8 workers. The training-operator creates its pods and PodGroup (the "
        "scheduler is paused until all 16 exist).",
    )
    # The operator creates the pods one by one: a cycle in between would start the job at the
    # size of the pods that exist so far (4) and grow it the next (4 -> 8). Paused until all 16
    # exist, the scheduler's first plan sees the whole job.
    with paused(d.scheduler_pid):
        kube.create(
            m.pytorch_job(
                "elastic",
                16,
                min_replicas=2,
                max_replicas=16,
                annotations={
                    "solver-sched.io/size-policy": "power-of-two",
                    "solver-sched.io/cooldown": "20s",
                },
                clean_pod_policy="Running",
            )
        )
        wait_for("the operator's 16 pods", lambda: len(d.owned("elastic")) == 16, timeout=30)
    d.created_by_operator("elastic")
    d.wait("elastic 8", lambda: d.bound("elastic") == 8, expect=(("Scheduled", "elastic"),))
    kube.kubelet("default", "elastic-")  # the bound workers start
    d.jobs("default", "elastic")
    d.operator_status("elastic", active=8)

    d.step(
        "3. What-if first: a guaranteed gang arrives",
        "`trainer` (8 x 1 GPU) arrives; 5 GPUs are free. The live scheduler is paused at this "
        "moment; the offline CLI plans a dump of it.",
    )
    with paused(d.scheduler_pid):
        kube.create_all(m.gang("trainer", 8))
        plan = whatif_now(d.kubeconfig, d.work)
        for line in plan.lines:
            d.out(f"   $ {line}")
        d.out(
            f"   what-if plan: evict {', '.join(sorted(plan.evicted))}; bind "
            + ", ".join(f"{j} {n} pods" for j, n in sorted(plan.bound.items()))
            + "; after it "
            + ", ".join(f"{j} {n} workers" for j, n in sorted(plan.workers.items()))
        )
        before = {n: p["metadata"]["uid"] for n, p in d.pods().items()}
        d.step(
            "   ... the live scheduler does what the what-if planned",
            "It resumes: the elastic job shrinks 8 -> 4 (job-level eviction of its highest-index "
            "workers) and trainer starts. The training-operator sees its workers gone.",
            settle=False,  # paused: the scheduler has nothing to settle
        )
    d.wait(
        "trainer bound",
        lambda: d.bound("trainer") == 8,
        expect=(("Resized", "elastic"), ("Scheduled", "trainer")),
    )
    uids = {p["metadata"]["uid"] for p in d.pods().values()}
    gone = {n: uid for n, uid in before.items() if uid not in uids}
    evicted = {f"default/{n}" for n in gone}
    assert evicted == plan.evicted, f"the controller evicted {evicted}, the what-if {plan.evicted}"
    assert plan.bound == {"default/trainer": 8}, plan.bound
    d.out(f"   the controller evicted the same {len(evicted)} pods and bound trainer's 8")
    d.recreated("elastic", gone)
    d.jobs("default", "elastic", "trainer")
    d.operator_status("elastic", active=4)

    d.step(
        "4. Cooldown stops flapping",
        "`trainer` finishes: 9 GPUs are idle, but `elastic` was resized moments ago and its "
        "cooldown is 20s, so it waits, then grows back to 8.",
    )
    d.finish("trainer")
    d.wait("cooldown reason", lambda: "cooldown until" in kube.waiting_reason("elastic-worker-8"))
    d.jobs("default", "elastic")
    d.wait(
        "elastic back to 8",
        lambda: d.bound("elastic") == 8,
        timeout=60,
        expect=(("Resized", "elastic"), ("Scheduled", "elastic")),
    )
    kube.kubelet("default", "elastic-")
    d.jobs("default", "elastic")
    d.operator_status("elastic", active=8)
    d.step(
        "   ... and the PyTorchJob completes",
        "Its running workers exit 0 (the demo plays the kubelet); the training-operator decides "
        "what that means for the job and its pending pods.",
    )
    d.complete("elastic")

    d.step(
        "5. Queues with quotas: kube-queue/max-jobs 1",
        "An ElasticQuotaTree gives team-a at most 1 running job; two 2-GPU gangs arrive.",
    )
    kube.create(
        m.quota_tree(
            {
                "name": "root",
                "children": [
                    {
                        "name": "team-a",
                        "namespaces": ["team-a"],
                        "max": {"nvidia.com/gpu": "16", "kube-queue/max-jobs": "1"},
                    }
                ],
            }
        )
    )
    kube.create_all(m.gang("first", 2, namespace="team-a"))
    d.wait("first bound", lambda: d.bound("first", "team-a") == 2, expect=(("Scheduled", "first"),))
    kube.create_all(m.gang("second", 2, namespace="team-a"))
    d.wait(
        "second's reason",
        lambda: "max-jobs" in kube.waiting_reason("second-worker-0", "team-a"),
        expect=(("Unschedulable", "second"),),
    )
    d.jobs("team-a", "first", "second")

    d.step(
        "6. Topology: a gang that requires one rack",
        "Three 4-GPU nodes join in two racks (rack-1: one node, rack-2: two). `wide` (2 x 4 GPUs, "
        "Kueue's podset-required-topology: rack) goes to rack-2 whole; `wider` (3 x 4 GPUs) "
        "waits: no rack has 12 free.",
    )
    rack = "example.com/rack"
    for name, r in (("rack1-a", "rack-1"), ("rack2-a", "rack-2"), ("rack2-b", "rack-2")):
        kube.create(m.node(name, gpus=4, labels={rack: r}))
    required = {"kueue.x-k8s.io/podset-required-topology": rack}
    kube.create_all(m.gang("wide", 2, gpus=4, annotations=required))
    d.wait("wide bound", lambda: d.bound("wide") == 2, expect=(("Scheduled", "wide"),))
    kube.create_all(m.gang("wider", 3, gpus=4, annotations=required))
    d.wait(
        "wider's reason",
        lambda: "in one rack" in kube.waiting_reason("wider-worker-0"),
        expect=(("Unschedulable", "wider"),),
    )
    d.jobs("default", "wide", "wider")
