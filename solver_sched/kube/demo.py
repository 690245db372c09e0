"""`solver-sched demo`: the seed scenarios, live, on a local API server.

Starts the sandbox API server, installs the CRDs, creates two simulated 8-GPU nodes, starts
`solver-sched run` as a separate process (the real secondary scheduler) and submits the seed
workloads one after another, printing what the scheduler does and why. Stops everything at the end.
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
from solver_sched.kube.sandbox import Kube, sandbox, wait_for
from solver_sched.kube.status import waiting_reason
from solver_sched.planning.explain import rfc3339

# Events of these reasons are posted on each evicted pod and once on its group: the demo prints
# the group's, with the pods it names (one event per resize, not one per pod).
PER_POD_TOO = ("Resized", "Preempted")

PG = {
    "apiVersion": "scheduling.x-k8s.io/v1alpha1",
    "kind": "PodGroup",
    "metadata": {"namespace": "default"},
}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "default"}}


class Demo:
    def __init__(
        self, kube: Kube, out: Callable[[str], None], kubeconfig: str, pid: int, work: Path
    ) -> None:
        self.kube, self.out = kube, out
        self.kubeconfig, self.scheduler_pid, self.work = kubeconfig, pid, work
        self.log = work / "scheduler.log"
        self.seen_events: set[str] = set()
        self.printed: list[tuple[str, str]] = []  # (reason, object name) of the events printed
        self.pods_of: dict[tuple[str, str], list[str]] = {}  # (reason, message) -> pod names
        self.made: dict[str, list[dict[str, Any]]] = {}

    def say(self, text: str) -> None:
        """Each line with the wall-clock time in RFC 3339, as the events and reasons write it."""
        self.out(f"[{rfc3339(datetime.now(UTC))}] {text}")

    def cycles(self) -> int:
        return sum(1 for line in self.log.read_text().splitlines() if ": cycle " in line)

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
            self.say(f"event {e['reason']:<13} {line}")

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

    def recreate_evicted(self, prefix: str, workers: int, namespace: str = "default") -> None:
        """Play the job's controller: a workload controller (a Job, the training-operator for a
        PyTorchJob) recreates the pods the scheduler evicted; they wait, pending, for a size that
        uses them. Bare pods in a sandbox have no controller, so the demo stands in for it."""
        have = self.kube.pods(namespace)
        gone = [i for i in range(workers) if f"{prefix}-worker-{i}" not in have]
        group = next(o for o in self.made[prefix] if o["kind"] == "PodGroup")
        for obj in self.made[prefix]:
            if obj["kind"] == "Pod" and int(obj["metadata"]["name"].rsplit("-", 1)[1]) in gone:
                self.kube.create(obj)
        self.say(
            f"{namespace}/{prefix}: its controller recreates the {len(gone)} evicted pods "
            f"(workers {', '.join(map(str, gone))}); they wait pending in PodGroup "
            f"{group['metadata']['name']}"
        )

    def submit(self, objs: list[dict[str, Any]]) -> None:
        """Create a gang's PodGroup and pods, and remember them for its controller."""
        name = str(next(o for o in objs if o["kind"] == "PodGroup")["metadata"]["name"])
        self.made[name] = objs
        self.kube.create_all(objs)

    def finish(self, prefix: str, namespace: str = "default") -> None:
        """Play the kubelet: the job's pods complete and are deleted."""
        for name in list(self.kube.pods(namespace)):
            if name == prefix or name.startswith(prefix + "-"):
                self.kube.delete({**POD, "metadata": {"namespace": namespace}}, name)


def run_demo(binary: Path, root: Path, out: Callable[[str], None] = print) -> int:
    work = Path(tempfile.mkdtemp(prefix="solver-sched-demo-"))
    out(f"starting a local kube-apiserver + etcd ({binary}) ...")
    with sandbox(binary, work / "env", work / "apiserver.log") as env:
        api = KubeApi(load_client(env.kubeconfig))
        kube = Kube(api)
        out(f"API server ready at {env.server} (kubeconfig {env.kubeconfig})")
        for path in sorted((root / "deploy" / "crds").glob("*.yaml")):
            for obj in kube.load(path):
                if obj.get("kind") == "CustomResourceDefinition":
                    kube.apply(obj)
        wait_for("CRDs", lambda: _established(api), timeout=30)
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
        "`elastic` (min 2, max 256, power-of-two, 16 pods) on 13 idle GPUs -> 8 workers.",
    )
    d.submit(
        m.gang(
            "elastic", 16, min_member=2, max_member=256, size_policy="power-of-two", cooldown="20s"
        )
    )
    d.wait("elastic 8", lambda: d.bound("elastic") == 8, expect=(("Scheduled", "elastic"),))
    d.jobs("default", "elastic")

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
        before = set(kube.pods("default"))
        d.step(
            "   ... the live scheduler does what the what-if planned",
            "It resumes: the elastic job shrinks 8 -> 4 (job-level eviction of its highest-index "
            "workers) and trainer starts.",
            settle=False,  # paused: the scheduler has nothing to settle
        )
    d.wait(
        "trainer bound",
        lambda: d.bound("trainer") == 8,
        expect=(("Resized", "elastic"), ("Scheduled", "trainer")),
    )
    evicted = {f"default/{p}" for p in before - set(kube.pods("default"))}
    assert evicted == plan.evicted, f"the controller evicted {evicted}, the what-if {plan.evicted}"
    assert plan.bound == {"default/trainer": 8}, plan.bound
    d.out(f"   the controller evicted the same {len(evicted)} pods and bound trainer's 8")
    d.recreate_evicted("elastic", 16)
    d.jobs("default", "elastic", "trainer")

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
    d.jobs("default", "elastic")
    d.finish("elastic")

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
    d.wait(
        "first bound", lambda: d.bound("first", "team-a") == 2, expect=(("Scheduled", "first"),)
    )
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


def _established(api: KubeApi) -> bool:
    items = api.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
    return bool(items) and all(
        any(
            c["type"] == "Established" and c["status"] == "True"
            for c in (i.get("status") or {}).get("conditions") or []
        )
        for i in items
    )
