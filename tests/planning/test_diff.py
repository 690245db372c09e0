"""The plan's words: who a break makes room for."""

from __future__ import annotations

from collections.abc import Callable

from solver_sched.config.schema import SchedulerConfig
from solver_sched.domain.cluster import Pod
from solver_sched.formulation.prepare import prepare
from solver_sched.placement.state import PlanState
from solver_sched.planning.diff import diff
from tests.support.builders import NOW, gang, node, snapshot


def test_a_break_names_the_start_that_may_break_it_not_an_equal_that_took_its_room() -> None:
    """v (priority 100) is broken; e (100, equal: it may not preempt v) lands where v ran and h
    (1000, whose start licenses the break) on the other node. The reason named e."""
    snap = snapshot(
        node("n1", gpus=4),
        node("n2", gpus=4),
        gang("v", 4, running_on=["n1"] * 4, priority=100),
        gang("e", 4, priority=100),
        gang("h", 4, priority=1000),
    )
    cfg = SchedulerConfig()
    st = PlanState(snap, prepare(snap, cfg.weights, cfg.settings, NOW))

    def on(node_name: str) -> Callable[[Pod, str], str]:
        return lambda pod, cluster: node_name

    assert st.resize(st.index["default/v"], 0, check_quota=False)
    assert st.resize(st.index["default/h"], 4, chooser=on("n2"), check_quota=False)
    assert st.resize(st.index["default/e"], 4, chooser=on("n1"), check_quota=False)
    (ev,) = diff(snap, st, NOW, []).evictions
    assert ev.reason == "preempted by default/h (priority 1000)"
