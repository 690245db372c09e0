"""When the control loop runs its next cycle (pure: no API server; the loop's thread on a store
that the test changes)."""

import threading

import pytest

from solver_sched.kube import loop as loop_module
from solver_sched.kube.api import ApiError, TransportError
from solver_sched.kube.loop import ControlLoop, LoopOptions
from solver_sched.kube.resources import PYTORCH_JOBS
from solver_sched.metrics import Metrics

POD = "Pod.v1"


class _Api:
    """What ControlLoop needs of a KubeApi when it never talks to a server."""

    fence = None


class _Loop(ControlLoop):
    """Cycle 1 sees a watch event land while it runs (after its snapshot); cycle 2 stops."""

    def __init__(self) -> None:
        opts = LoopOptions(cycle_interval=3600.0, debounce=0.0, discovery_interval=3600.0)
        super().__init__(opts, _Api(), Metrics())  # type: ignore[arg-type]
        self.seen: list[int] = []

    def ready(self) -> bool:
        return True

    def cycle(self) -> object:
        self.seen.append(len(self.store.items(POD)))  # the cycle's snapshot
        if len(self.seen) == 1:
            pod = {"kind": "Pod", "metadata": {"name": "late", "namespace": "default"}}
            self.store.apply(POD, "ADDED", pod)  # arrives during the cycle
        else:
            self.stop.set()
        return None


def test_a_change_that_lands_during_a_cycle_starts_the_next_one() -> None:
    loop = _Loop()
    thread = threading.Thread(target=loop._loop, daemon=True)
    thread.start()
    # The interval is an hour: only the change can start cycle 2. Without it the thread would
    # still be waiting when the join gives up (a bound on the test, not a measured time).
    thread.join(timeout=60)
    loop.stop.set()
    assert loop.seen == [0, 1]


class _Away:
    """An API server that cannot be reached twice, then serves no PyTorchJob API."""

    fence = None

    def __init__(self) -> None:
        self.calls = 0

    def get(self, path: str) -> object:
        self.calls += 1
        if self.calls <= 2:
            raise TransportError("connection refused")
        raise ApiError(404, "NotFound")


class _Discovering(ControlLoop):
    watched = (PYTORCH_JOBS,)

    def __init__(self, api: _Away) -> None:
        opts = LoopOptions(cycle_interval=3600.0, debounce=0.0, discovery_interval=3600.0)
        super().__init__(opts, api, Metrics())  # type: ignore[arg-type]

    def ready(self) -> bool:
        if self._discovered:
            self.stop.set()
        return False


def test_discovery_the_api_server_refuses_is_logged_and_retried_soon(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An API server away at start raised out of start() (`run` and `fleet` exited with a
    traceback); now discovery is retried after DISCOVERY_RETRY, doubling, not after the hour
    of ``discovery_interval``."""
    monkeypatch.setattr(loop_module, "DISCOVERY_RETRY", 0.01)
    api = _Away()
    loop = _Discovering(api)
    assert loop._try_discover() is False  # what start() does first: no exception
    thread = threading.Thread(target=loop._loop, daemon=True)
    thread.start()
    thread.join(timeout=60)  # (a bound on the test: the hour's interval would outlast it)
    loop.stop.set()
    assert loop._discovered and api.calls == 3
