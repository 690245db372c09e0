"""The controller's pure helpers (its live behaviour: tests/integration/test_controller.py)."""

from solver_sched.kube.binder import ABANDONED, GangResult
from solver_sched.kube.controller import _refused


def test_only_binds_the_api_server_refused_are_reported_as_refused() -> None:
    result = GangResult(
        "default/g",
        failed={
            "default/g-0": "admission webhook denied the request",
            "default/g-1": "cancelled: the job was re-planned",
            "default/g-2": ABANDONED,
            "default/g-3": "fenced",
            "default/g-4": "already bound",
            "default/g-5": "pod replaced (UID precondition)",
        },
    )
    assert _refused(result) == {"default/g-0": "admission webhook denied the request"}
