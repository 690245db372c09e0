"""The controller's guarantees against a real API server: preemption, restarts, leader failover,
bad config, watch expiry (PodDisruptionBudgets: test_budgets.py)."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from solver_sched import cycle as cycle_module
from solver_sched.io import manifests as m
from solver_sched.kube.api import ApiError, KubeApi
from solver_sched.kube.controller import Controller
from solver_sched.kube.informer import Informer
from solver_sched.kube.leader import LeaderElector
from solver_sched.kube.resources import CONFIG_MAPS
from solver_sched.kube.store import ObjectStore
from solver_sched.planning import clock
from solver_sched.planning.beside import Beside
from tests.integration.kube import Kube, priority_classes, wait_for
from tests.support.processes import gone
from tests.support.searches import finds_nothing

pytestmark = pytest.mark.integration
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "default"}}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "solver-sched"}}


def _running_gang(kube: Kube, name: str, n: int, node: str, priority: str = "low") -> None:
    priority_classes(kube)
    kube.create_all(m.gang(name, n, running_on=[node] * n, priority_class=priority))
    for i in range(n):
        kube.set_running(f"default/{name}-worker-{i}")


def test_priority_preemption(kube: Kube, start_controller: Callable[..., Controller]) -> None:
    kube.create(m.node("n1", gpus=4))
    _running_gang(kube, "low", 4, "n1")
    kube.create_all(m.gang("equal", 4, priority_class="low"))
    controller = start_controller()
    wait_for("cycles", lambda: controller.cycles >= 2)
    assert kube.bound("default", "low-") == 4  # equal priority never preempts
    kube.create_all(m.gang("high", 4, priority_class="high"))
    wait_for("high bound", lambda: kube.bound("default", "high-") == 4)
    assert kube.bound("default", "low-") == 0
    assert kube.bound("default", "equal-") == 0
    preempted = [e for e in kube.events("default", "low-worker-0") if e["reason"] == "Preempted"]
    assert preempted and "default/high" in preempted[0]["message"]


def _already_bound(c: Controller) -> float:
    return float(c.metrics.bind_failures.labels("already bound")._value.get())


def test_restart_mid_actuation_never_double_binds(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    kube.create(m.node("n1", gpus=8))
    kube.create_all(m.gang("g", 4))
    calls: list[str] = []
    crash = threading.Event()

    def fault(action: str) -> None:  # after two binds went out the process "dies"
        calls.append(action)
        if len(calls) > 2:
            crash.set()
            raise RuntimeError("simulated crash")

    first = start_controller(fault=fault, bind_workers=1)
    wait_for("crash", crash.is_set)
    first.stop.set()  # dies: no further cycle, nothing cleaned up
    wait_for("the two binds landed", lambda: kube.bound("default", "g-") == 2)
    second = start_controller()
    wait_for("gang completed", lambda: kube.bound("default", "g-") == 4)
    wait_for("a settled cycle", lambda: second.cycles >= 3)
    assert _already_bound(first) == 0 and _already_bound(second) == 0


def test_partial_gang_is_rolled_back_after_its_timeout(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    kube.create(m.node("n1", gpus=8))  # room to complete: only failing binds keep it partial
    objs = m.gang("g", 4, running_on=["n1", "n1"])
    objs[0]["spec"]["scheduleTimeoutSeconds"] = 2
    kube.create_all(objs)

    def fault(action: str) -> None:
        if action.startswith("bind default/g-"):
            raise RuntimeError("API server refuses the bind")

    controller = start_controller(fault=fault)
    wait_for("rolled back", lambda: kube.bound("default", "g-") == 0, timeout=30)
    assert controller.metrics.rollbacks._value.get() >= 1

    def rolled_back() -> list[dict[str, Any]]:  # posted right after the evictions: may lag them
        return [e for e in kube.events("default", "g") if e["reason"] == "RolledBack"]

    wait_for("the RolledBack event", lambda: bool(rolled_back()), timeout=10)
    assert rolled_back()[0]["type"] == "Warning"
    refused = wait_for(  # the binds' failure says why
        "the FailedScheduling event",
        lambda: [e for e in kube.events("default", "g") if e["reason"] == "FailedScheduling"],
        timeout=10,
    )
    assert refused[0]["type"] == "Warning"
    assert "Binding rejected for 2 of 2 pod(s)" in refused[0]["message"]
    assert "API server refuses the bind" in refused[0]["message"]


def test_leader_failover(kube: Kube, start_controller: Callable[..., Controller]) -> None:
    kube.create(m.node("n1", gpus=8))
    a = start_controller(leader_elect=True, identity="replica-a")
    wait_for("a leads", a.may_act)
    b = start_controller(leader_elect=True, identity="replica-b")
    kube.create_all(m.gang("first", 2))
    wait_for("first bound", lambda: kube.bound("default", "first-") == 2)
    assert not b.may_act()
    assert a.leader is not None

    def cut_off() -> bool:  # a is alive but can no longer reach the Lease
        raise ConnectionError("network partition")

    a.leader.try_acquire_or_renew = cut_off  # type: ignore[method-assign]
    cut = time.monotonic()
    wait_for("a fences itself", lambda: not a.may_act(), timeout=10)
    fenced_after = time.monotonic() - cut
    wait_for("b takes over", b.may_act, timeout=20)
    took = time.monotonic() - cut
    assert fenced_after < took  # a stops acting before b may start
    assert took < 4.0 + 10.0  # the lease duration plus generous slack for a 2-core machine
    kube.create_all(m.gang("second", 2))
    wait_for("second bound by b", lambda: kube.bound("default", "second-") == 2)
    assert not a.may_act()


def test_bad_configmap_keeps_last_good(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    good = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "solver-sched-config", "namespace": "solver-sched"},
        "data": {"config.yaml": "settings:\n  timeLimitSeconds: 3\n"},
    }
    kube.create(good)
    controller = start_controller()
    wait_for("good config", lambda: controller.configs.current.settings.time_limit_seconds == 3)
    kube.patch(CM, "solver-sched-config", {"data": {"config.yaml": "weights:\n  elastic: -5\n"}})
    wait_for("error counted", lambda: controller.configs.errors >= 1)
    assert controller.configs.current.settings.time_limit_seconds == 3
    events = wait_for(
        "warning event",
        lambda: [
            e
            for e in kube.events("solver-sched", "solver-sched-config")
            if e["reason"] == "InvalidConfig"
        ],
    )
    assert "weights.elastic" in events[0]["message"] and events[0]["type"] == "Warning"
    assert b"solver_sched_config_errors_total 1.0" in controller.metrics.render()


def test_a_replica_that_takes_over_reports_the_bad_config_it_read_as_a_standby(
    kube: Kube, admin_api: KubeApi, start_controller: Callable[..., Controller]
) -> None:
    """The ConfigMap is judged once per version: a standby's InvalidConfig Event was fenced and
    lost, and the replica that took over never sent one (only its log and metric said it)."""
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "solver-sched-config", "namespace": "solver-sched"},
            "data": {"config.yaml": "weights:\n  elastic: -5\n"},
        }
    )
    holder = LeaderElector(admin_api, "solver-sched", "solver-sched", "old", 4.0, 3.0, 0.5)
    assert holder.try_acquire_or_renew()
    standby = start_controller(leader_elect=True, identity="new")
    wait_for("the error counted", lambda: standby.configs.errors >= 1)
    assert not standby.may_act()
    wait_for("it takes over", standby.may_act, timeout=20)  # the holder renews no more
    events = wait_for(
        "the Event, sent once it leads",
        lambda: [
            e
            for e in kube.events("solver-sched", "solver-sched-config")
            if e["reason"] == "InvalidConfig"
        ],
    )
    assert "weights.elastic" in events[0]["message"]


def test_watch_410_relists(kube: Kube, admin_api: KubeApi) -> None:
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "w", "namespace": "default"},
            "data": {"v": "0"},
        }
    )
    old = admin_api.get("/api/v1/namespaces/default/configmaps")["metadata"]["resourceVersion"]
    for i in range(1, 4):
        kube.patch({**CM, "metadata": {"namespace": "default"}}, "w", {"data": {"v": str(i)}})
    store, stop = ObjectStore(), threading.Event()
    informer = Informer(admin_api, CONFIG_MAPS, store, stop, namespace="default")

    def watch_from_old() -> bool:  # etcd compacts every 3 s in the test env
        path = "/api/v1/namespaces/default/configmaps"
        try:
            for event in admin_api.watch(path, {"resourceVersion": old, "timeoutSeconds": 1}, 5):
                if event.get("type") == "ERROR":
                    return bool((event.get("object") or {}).get("code") == 410)
        except ApiError as exc:
            return exc.status == 410
        return False

    wait_for("a real 410 Gone", watch_from_old, timeout=20, every=1.0)
    real_list = informer._list
    stale = iter([old])

    def list_once_stale() -> str:  # the first list answers with a compacted version
        version = real_list()
        return next(stale, version)

    informer._list = list_once_stale  # type: ignore[method-assign]
    informer.start()  # the real loop: its watch gets 410, it lists again, then serves v=3
    wait_for("relisted", lambda: informer.relists >= 2)
    wait_for(
        "current state",
        lambda: (store.get(CONFIG_MAPS.key, "default/w") or {}).get("data", {}).get("v") == "3",
    )
    stop.set()


def test_metrics_and_probes(kube: Kube, start_controller: Callable[..., Controller]) -> None:
    controller = start_controller(metrics_addr="127.0.0.1:0")
    wait_for("ready", controller.ready)
    assert controller._server is not None
    base = f"http://127.0.0.1:{controller._server.server_address[1]}"
    assert urllib.request.urlopen(f"{base}/healthz").status == 200
    assert urllib.request.urlopen(f"{base}/readyz").status == 200
    body = urllib.request.urlopen(f"{base}/metrics").read()
    assert b"solver_sched_cycle_duration_seconds" in body


def test_dry_run_changes_nothing(kube: Kube, start_controller: Callable[..., Controller]) -> None:
    kube.create(m.node("n1", gpus=4))
    kube.create_all(m.gang("g", 2))
    controller = start_controller(dry_run=True)
    wait_for(
        "planned",
        lambda: controller.last_result is not None and len(controller.last_result.plan.binds) == 2,
    )
    wait_for("more cycles", lambda: controller.cycles >= 3)
    assert kube.bound("default", "g-") == 0
    assert not kube.events("default")


def test_invalid_podgroup_gets_an_event_and_the_rest_is_scheduled(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    kube.create(m.node("n1", gpus=8))
    bad = m.gang("bad", 2, min_member=4, max_member=2)
    kube.create_all(bad + m.gang("good", 2))
    start_controller()
    wait_for("good bound", lambda: kube.bound("default", "good-") == 2)
    events = wait_for(
        "InvalidSpec",
        lambda: [e for e in kube.events("default", "bad") if e["reason"] == "InvalidSpec"],
    )
    assert "max-member" in events[0]["message"] and events[0]["type"] == "Warning"
    assert kube.bound("default", "bad-") == 0


def test_greedys_passes_beside_in_a_forked_child_under_the_controllers_threads(
    kube: Kube, start_controller: Callable[..., Controller], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cycle forks its child beside greedy's passes while the controller's informers,
    leader election and HTTP server run on other threads (every model counts as large here, and
    no search takes the second core): the preemption still happens, and every child the cycles
    forked is gone after its cycle."""
    pids: list[int] = []

    class Counted(Beside):
        def __init__(self, work: Any) -> None:
            super().__init__(work)
            assert self.pid is not None
            pids.append(self.pid)

    monkeypatch.setattr(cycle_module, "SMALL_MODEL", 0)
    monkeypatch.setattr(clock, "SEARCH_NEEDS", 1e9)
    monkeypatch.setattr(cycle_module, "Beside", Counted)
    kube.create(m.node("n1", gpus=4))
    _running_gang(kube, "low", 4, "n1")
    controller = start_controller()
    wait_for("cycles", lambda: controller.cycles >= 2)
    kube.create_all(m.gang("high", 4, priority_class="high"))
    wait_for("high bound", lambda: kube.bound("default", "high-") == 4)
    assert kube.bound("default", "low-") == 0
    cycles = controller.cycles
    wait_for("another cycle", lambda: controller.cycles > cycles)
    assert pids and all(gone(pid) for pid in pids[:-1])


def test_the_controller_keeps_its_search_history_between_cycles(
    kube: Kube, start_controller: Callable[..., Controller], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search that found no solution in its whole window (rackXL's) is not run in the next
    cycle: the controller keeps one history for all its cycles (planning/history.py), and the
    candidates still schedule what fits."""

    finds_nothing(monkeypatch)
    kube.create(m.node("n1", gpus=8))
    kube.create_all(m.gang("g", 4))
    kube.create_all(m.gang("never", 16))  # never fits: every cycle has work
    controller = start_controller()
    wait_for("g bound", lambda: kube.bound("default", "g-") == 4)

    def ruled_out() -> bool:
        result = controller.last_result
        return result is not None and "in an earlier cycle" in result.stats.detail

    wait_for("a search ruled out by an earlier cycle's", ruled_out)
    assert controller.search_history.failed


def test_a_gang_waits_for_its_pods_scheduling_gates(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    """A pod with spec.schedulingGates (Kueue's admission gate) cannot be bound: the gang's other
    pods were bound and rolled back every timeout. Nothing is bound until the gate goes."""
    kube.create(m.node("n1", gpus=4))
    objs = m.gang("g", 2)
    for o in objs:
        if o["kind"] == "Pod" and o["metadata"]["name"] == "g-worker-1":
            o["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    kube.create_all(objs)
    controller = start_controller()
    wait_for("cycles", lambda: controller.cycles >= 3)
    assert kube.bound("default", "g-") == 0
    reason = wait_for("the reason", lambda: kube.waiting_reason("g-worker-0"))
    assert "wait behind scheduling gates (kueue.x-k8s.io/admission)" in reason
    kube.patch(POD, "g-worker-1", {"spec": {"schedulingGates": None}})
    wait_for("bound once the gate is gone", lambda: kube.bound("default", "g-") == 2)


def test_a_gang_that_lost_a_pod_waits_for_its_replacement(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    """A worker is deleted and its controller recreates it a few seconds later: the plan, which
    must decide a partial gang, evicted the other three at once. A partial gang is rolled back
    only after scheduleTimeoutSeconds; until then the plan may complete it, not evict it."""
    kube.create(m.node("n1", gpus=8))
    _running_gang(kube, "g", 4, "n1")
    controller = start_controller()
    wait_for("cycles", lambda: controller.cycles >= 2)
    kube.delete(POD, "g-worker-3")
    cycles = controller.cycles
    wait_for("cycles on the partial gang", lambda: controller.cycles >= cycles + 3, timeout=30)
    assert kube.bound("default", "g-") == 3  # the three kept
    replacement = next(
        o for o in m.gang("g", 4, priority_class="low") if o["metadata"]["name"] == "g-worker-3"
    )
    kube.create(replacement)
    wait_for("completed", lambda: kube.bound("default", "g-") == 4)


def test_a_scale_in_keeps_its_cooldown_through_a_clean_shutdown(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    """The last-scale-time went out with the cycle's report, behind the status writes of a busy
    cluster: a shutdown right after the evictions dropped it, and the job grew back as soon as
    the scheduler ran again."""
    kube.create(m.node("n1", gpus=8))
    priority_classes(kube)
    elastic = m.gang(
        "e",
        8,
        min_member=2,
        max_member=8,
        size_policy="power-of-two",
        cooldown="10m",
        running_on=["n1"] * 8,
        priority_class="low",
    )
    kube.create_all(elastic)
    for i in range(8):
        kube.set_running(f"default/e-worker-{i}")
    for i in range(30):  # fit nowhere: their conditions keep the status writer busy
        kube.create(m.pod(f"lone-{i}", gpus=16, priority_class="low"))
    controller = start_controller(status_qps=2.0, status_burst=1)
    wait_for("cycles", lambda: controller.cycles >= 2)
    kube.create_all(m.gang("h", 4, priority_class="high"))
    wait_for("e shrunk", lambda: kube.bound("default", "e-") == 4, timeout=60)
    time.sleep(2)  # the cycle that evicted ends (the report's 30+ writes take 15 s at 2/s)
    controller.shutdown()
    group = kube.api.get("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/e")
    assert "solver-sched.io/last-scale-time" in group["metadata"].get("annotations", {})


def test_host_network_workers_go_one_per_node(
    kube: Kube, start_controller: Callable[..., Controller]
) -> None:
    """hostNetwork pods with the training-operator's port: the API server defaults each
    hostPort to its containerPort, and the controller binds one such pod per node (the kubelet
    rejects a second); a gang that needs a third node for the port waits, saying so."""
    for n in ("n1", "n2"):
        kube.create(m.node(n, gpus=8))
    for name in ("g", "h"):
        objs = m.gang(name, 2)
        for o in objs[1:]:
            o["spec"]["hostNetwork"] = True
            o["spec"]["containers"][0]["ports"] = [{"containerPort": 23456}]
        kube.create_all(objs)
        if name == "g":
            start_controller()
            wait_for("g bound", lambda: kube.bound("default", "g-") == 2)
    pods = kube.pods("default")
    assert {pods["g-worker-0"], pods["g-worker-1"]} == {"n1", "n2"}
    reason = ""

    def told() -> bool:
        nonlocal reason
        pod = kube.api.get("/api/v1/namespaces/default/pods/h-worker-0")
        conditions = pod.get("status", {}).get("conditions") or []
        reason = next((c.get("message", "") for c in conditions if c["type"] == "PodScheduled"), "")
        return "hostport:TCP/23456" in reason

    wait_for("h told why it waits", told)
    assert kube.bound("default", "h-") == 0, reason
