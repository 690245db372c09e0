"""When the control loop runs its next cycle (pure: no API server; the loop's thread on a store
that the test changes)."""

import threading

from solver_sched.kube.loop import ControlLoop, LoopOptions
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
