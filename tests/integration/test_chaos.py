"""Two scheduler replicas as real processes, against a real API server that records every write in
its audit log: a paused leader never writes after it lost the Lease, and under random kill -9,
SIGSTOP/SIGCONT and API-server restarts no GPU is ever over-committed, no pod is bound twice, no
replica writes without the Lease, no gang stays partial and no replica prints a traceback."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from solver_sched.io import manifests as m
from tests.integration.chaos import (
    LEASE,
    PodWatch,
    Replica,
    Stage,
    Workload,
    read_audit,
    settle,
)
from tests.integration.conftest import BINARY, install_crds
from tests.integration.kube import wait_for

pytestmark = pytest.mark.integration
USERS = ("replica-a", "replica-b")


@pytest.fixture
def stage(tmp_path: Path) -> Iterator[Stage]:
    s = Stage(BINARY, tmp_path, USERS)
    try:
        s.setup(install_crds)
        yield s
    finally:
        s.close()


def _nodes(stage: Stage, n: int, gpus: int) -> dict[str, int]:
    for i in range(n):
        stage.kube.create(m.node(f"n{i}", gpus=gpus, cpu="64"))
    return {f"n{i}": gpus for i in range(n)}


def _check(stage: Stage, watch: PodWatch, replicas: list[Replica]) -> None:
    audit = read_audit(stage.audit_log, set(USERS), LEASE["duration"])
    assert audit.binds > 0 and audit.lease_writes > 0  # the record is there to be checked
    assert watch.events > 0
    assert not watch.violations, watch.violations[:5]
    assert not audit.double_binds, audit.double_binds[:5]
    assert not audit.unfenced, audit.unfenced[:5]
    for r in replicas:
        assert "Traceback" not in r.text(), f"{r.name} printed a traceback"


def test_a_paused_leader_never_writes_after_it_lost_the_lease(stage: Stage) -> None:
    capacity = _nodes(stage, 1, 8)
    watch = PodWatch(stage.api, capacity)
    watch.start()
    a = Replica(stage, "replica-a", "--qps", "1", "--burst", "1")
    b = Replica(stage, "replica-b")
    a.start()
    wait_for("a leads", lambda: stage.holder() == "replica-a", timeout=60)
    b.start()
    try:
        stage.kube.create_all(m.gang("x", 8, priority_class="low"))
        wait_for("x 2/8 bound", lambda: stage.kube.bound("default", "x-") >= 2, timeout=60)
        a.pause()  # binds 3-8 wait for A's rate limiter
        wait_for("b takes over", lambda: stage.holder() == "replica-b", timeout=30)
        stage.kube.create_all(m.gang("high", 8, priority_class="high"))
        wait_for("high bound", lambda: stage.kube.bound("default", "high-") == 8, timeout=60)
        a.resume()  # before the fence, A sent its queued binds now: 9+ GPUs on n0
        wait_for("a noticed", lambda: "lost leadership" in a.text(), timeout=30)
        time.sleep(3)
        assert stage.kube.bound("default", "high-") == 8
        assert stage.kube.bound("default", "x-") == 0
    finally:
        a.stop()
        b.stop()
        watch.stop()
    _check(stage, watch, [a, b])


def test_chaos_two_replicas_kill_pause_and_api_server_restarts(stage: Stage) -> None:
    seed = random.randrange(1 << 30)
    print(f"chaos seed {seed}")  # shown when the test fails: replay with this seed
    rng = random.Random(seed)
    capacity = _nodes(stage, 8, 8)
    watch = PodWatch(stage.api, capacity)
    watch.start()
    replicas = [Replica(stage, name, "--qps", "20", "--burst", "20") for name in USERS]
    for r in replicas:
        r.start()
    work = Workload(stage.kube, seed)
    actions: list[str] = []
    try:
        wait_for("a leader", lambda: stage.holder() is not None, timeout=60)
        # 150 s, and at least five faults: an API-server SIGTERM takes 30 s or more (it drains
        # the replicas' 300 s watches until stop() kills it), so two of them left room for 4
        last = time.monotonic() + 300
        end = time.monotonic() + 150
        next_chaos = time.monotonic() + rng.uniform(6, 12)
        next_submit = time.monotonic()
        while (time.monotonic() < end or len(actions) < 5) and time.monotonic() < last:
            now = time.monotonic()
            if now >= next_submit:
                work.submit()
                next_submit = now + rng.uniform(0.8, 2.0)
            if now >= next_chaos:
                actions.append(_disrupt(stage, replicas, rng))
                next_chaos = time.monotonic() + rng.uniform(6, 14)
            work.tick()
            time.sleep(0.3)
        for r in replicas:  # the end of chaos: everyone back up
            if r.paused:
                r.resume()
            if not r.alive:
                r.start()
        if not stage.server.running:
            stage.server.start()
        partial = settle(stage.kube)
        for _ in range(10):  # the kubelet's part goes on while the last gangs settle
            work.tick(finish=False)
    finally:
        for r in replicas:
            r.stop()
        watch.stop()
    print(f"actions: {actions}; gangs created {work.created}, finished {work.finished}")
    assert work.finished > 10 and len(actions) >= 5  # the stage was really exercised
    assert not partial, partial
    _check(stage, watch, replicas)


def _disrupt(stage: Stage, replicas: list[Replica], rng: random.Random) -> str:
    """One fault: kill -9 the leader (restarted like a pod), pause it, or restart the API server."""
    holder = stage.holder()
    leader = next((r for r in replicas if r.name == holder), rng.choice(replicas))
    kind = rng.choice(("kill", "pause", "pause", "apiserver"))
    if kind == "kill":
        leader.kill()
        time.sleep(rng.uniform(0.5, 3))
        leader.start()
        return f"kill -9 {leader.name}"
    if kind == "pause":
        seconds = rng.uniform(1, 10)
        leader.pause()
        time.sleep(seconds)
        leader.resume()
        return f"SIGSTOP {leader.name} {seconds:.1f}s"
    hard = rng.random() < 0.5
    if hard:
        stage.server.kill()
    else:
        stage.server.stop()
    seconds = rng.uniform(1, 6)
    time.sleep(seconds)
    stage.server.start()
    return f"API server {'kill -9' if hard else 'SIGTERM'} {seconds:.1f}s"
