"""The fleet scene of `make run`: a hub and two members (three real API servers), each member
with the Kubeflow training-operator v1.8.1 and `solver-sched run`, and `solver-sched fleet` as a
separate process. The fleet seed (models/fleet): the second job waits for max-jobs, the first
goes where its pods fit, runs there, and fails over when that member stops."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from solver_sched.fleet.sandbox import Fleet, fleet_sandbox
from solver_sched.io.fleet_hub import ANN_CLUSTER, ANN_GENERATION
from solver_sched.kube.api import ApiError
from solver_sched.kube.demo import say
from solver_sched.kube.sandbox import Kube, wait_for

JOBS = "/apis/kubeflow.org/v1/namespaces/team-a/pytorchjobs"


class Scene:
    def __init__(self, fleet: Fleet, out: Callable[[str], None]) -> None:
        self.fleet, self.out = fleet, out
        self.hub = fleet.hub.kube()

    def job(self, name: str) -> dict[str, Any]:
        return self.hub.api.get(f"{JOBS}/{name}")

    def placement(self, name: str) -> str | None:
        return (self.job(name)["metadata"].get("annotations") or {}).get(ANN_CLUSTER)

    def condition(self, name: str, kind: str) -> dict[str, Any]:
        for c in (self.job(name).get("status") or {}).get("conditions") or []:
            if c.get("type") == kind:
                return dict(c)
        return {}

    def member(self, name: str) -> Kube:
        return self.fleet.members[name].server.kube()

    def pods(self, member: str) -> list[tuple[str, str | None]]:
        items = self.member(member).api.get("/api/v1/namespaces/team-a/pods")["items"]
        return sorted(
            (p["metadata"]["name"], p["spec"].get("nodeName"))
            for p in items
            if not p["metadata"].get("deletionTimestamp")
        )

    def kubelet(self, member: str) -> None:
        self.member(member).kubelet("team-a")


def _story(s: Scene, models: Path) -> None:
    s.out("")
    s.out("== fleet: one model places each gang whole on one member")
    s.out("   member-1: four 8-GPU nodes with 3 GPUs free each (12 in sum); member-2: two idle")
    s.out("   8-GPU nodes. Queue team-a lets one job out at a time (kube-queue/max-jobs 1).")
    s.hub.ensure_namespace("team-a")
    s.hub.create_all([o for o in s.hub.load(models / "hub.yaml") if o["kind"] != "PyTorchJob"])
    jobs = {o["metadata"]["name"]: o for o in s.hub.load(models / "hub.yaml")}
    for o in jobs.values():
        o["metadata"].pop("uid", None)
        o["metadata"].pop("creationTimestamp", None)
    s.hub.create(jobs["train-1"])
    say(s.out, "submitted team-a/train-1 (1 master + 2 workers x 4 GPUs)")
    first = wait_for("train-1 placed", lambda: s.placement("train-1"), timeout=60)
    event = next(
        e["message"]
        for e in wait_for("event", lambda: s.hub.events("team-a", "train-1"), timeout=30)
        if e["reason"] == "ScheduleBindingSucceed"
    )
    say(s.out, f"train-1 -> {first}: ScheduleBindingSucceed  {event}")
    s.hub.create(jobs["train-2"])
    say(s.out, "submitted team-a/train-2, the same shape")
    wait_for("train-2 queued", lambda: s.condition("train-2", "Scheduled").get("message"), 30)
    say(s.out, f"train-2 waits: {s.condition('train-2', 'Scheduled')['message']}")
    wait_for("pods bound", lambda: sum(1 for _, n in s.pods(first) if n) == 3, timeout=60)
    s.kubelet(first)
    for name, node in s.pods(first):
        say(s.out, f"   {first}: pod {name} on {node} (created by the training-operator)")
    wait_for(
        "Running mirrored",
        lambda: s.condition("train-1", "Running").get("status") == "True",
        timeout=30,
    )
    say(s.out, "hub: train-1 Running (mirrored from the member's PyTorchJob)")
    other = "member-1" if first == "member-2" else "member-2"
    kube = s.member(other)
    for p in kube.api.get("/api/v1/namespaces/infra/pods")["items"]:
        kube.delete(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "infra"}},
            p["metadata"]["name"],
        )
    say(s.out, f"{other}: the other workloads finished; its nodes are idle now")
    s.out("")
    s.out(f"== failover: {first} stops; after tolerationSeconds (30 s) train-1 is placed again")
    s.fleet.members[first].stop_server()
    say(s.out, f"{first}'s API server is gone (killed)")
    wait_for("failover", lambda: s.placement("train-1") == other, timeout=90)
    gen = s.job("train-1")["metadata"]["annotations"][ANN_GENERATION]
    say(s.out, f"train-1 -> {other} (placement generation {gen}); train-2 still waits for max-jobs")
    wait_for("pods bound", lambda: sum(1 for _, n in s.pods(other) if n) == 3, timeout=60)
    s.kubelet(other)
    for name, node in s.pods(other):
        say(s.out, f"   {other}: pod {name} on {node}")
    s.fleet.members[first].start()
    say(s.out, f"{first} is back, holding its old copy of train-1")
    wait_for(
        "stale copy deleted",
        lambda: not s.member(first).api.get(JOBS)["items"],
        timeout=60,
    )
    say(s.out, f"{first}: the stale copy was deleted before anything else happened there")


def run_fleet_demo(
    testenv: Path, operator: Path, root: Path, out: Callable[[str], None] = print
) -> int:
    if not operator.exists():
        out(f"{operator} is missing: `make run` builds it (tools/training-operator)")
        return 1
    work = Path(tempfile.mkdtemp(prefix="solver-sched-fleet-demo-"))
    hub_crds = (
        *sorted((root / "deploy" / "fleet" / "crds").glob("*_*.yaml")),
        root / "deploy" / "crds" / "scheduling.sigs.k8s.io_elasticquotatrees.yaml",
    )
    out(f"starting a hub and two members (logs in {work}) ...")
    with fleet_sandbox(testenv, operator, root / ".cache" / "crds", work, hub_crds=hub_crds) as f:
        for name, member in f.members.items():
            kube = member.server.kube()
            kube.ensure_namespace("infra")
            kube.create_all(kube.load(root / "models" / "fleet" / f"{name}.yaml"))
            f.join(name)
        log = work / "fleet.log"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "solver_sched.cli.main",
                "fleet",
                "--kubeconfig",
                f.hub.kubeconfig,
                "--cycle-interval",
                "1",
                "--probe-interval",
                "0.5",
                "--delete-grace-seconds",
                "0",
                "--metrics-addr",
                "",
            ],
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        out(f"fleet controller started: solver-sched fleet (pid {proc.pid}, log {log})")
        try:
            _story(Scene(f, out), root / "models" / "fleet")
        except (AssertionError, ApiError) as exc:
            out(f"fleet demo step failed: {exc} (logs kept in {work})")
            return 1
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    shutil.rmtree(work, ignore_errors=True)  # three API servers' etcd data: hundreds of MB
    out("fleet stopped. Done.")
    return 0
