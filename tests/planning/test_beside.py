"""The forked child beside the cycle: what it sends arrives, it never outlives ``stop``, and
without fork nothing runs."""

from __future__ import annotations

import os
import time

import pytest

from solver_sched.planning.beside import Beside, Send
from tests.support.processes import gone


def test_what_the_child_sends_arrives_in_order() -> None:
    def work(send: Send) -> None:
        for k in range(3):
            send((k, {"pod": "node"}))

    beside = Beside(work)
    got: list[object] = []
    while len(got) < 3:
        more = beside.arrived(wait=30.0)
        assert more, "the child sent nothing more"
        got += more
    assert got == [(k, {"pod": "node"}) for k in range(3)]
    assert beside.arrived() == []  # the child has left: nothing more, no error
    pid = beside.pid
    assert pid is not None
    beside.stop()
    assert beside.pid is None and gone(pid)


def test_stop_kills_a_child_still_working_and_reaps_it() -> None:
    def work(send: Send) -> None:
        send("started")
        time.sleep(3600)

    beside = Beside(work)
    assert beside.arrived(wait=30.0) == ["started"]
    pid = beside.pid
    assert pid is not None and not gone(pid)
    beside.stop()
    assert gone(pid)
    assert beside.arrived() == []
    beside.stop()  # twice is harmless


def test_a_child_that_fails_sends_what_it_had_and_ends() -> None:
    def work(send: Send) -> None:
        send("first")
        raise RuntimeError("a pass failed")

    beside = Beside(work)
    assert beside.arrived(wait=30.0) == ["first"]
    pid = beside.pid
    assert pid is not None
    _, status = os.waitpid(pid, 0)  # the child left on its own, with its error's exit code
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1
    assert beside.arrived(wait=1.0) == []
    beside.stop()


def test_without_fork_nothing_runs_beside(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[bool] = []
    monkeypatch.delattr(os, "fork")
    beside = Beside(lambda send: ran.append(True))
    assert beside.pid is None and beside.arrived(wait=0.1) == [] and ran == []
    beside.stop()
