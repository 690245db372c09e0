"""Assume/forget bookkeeping (pure: no API server)."""

from solver_sched.kube.assume import Assumed


def test_a_bind_is_forgotten_once_the_watch_shows_it() -> None:
    a = Assumed()
    a.bound("ns/p", "uid-1", "n1")
    a.reconcile({"ns/p": ("uid-1", None)})
    assert a.snapshot()[0] == {"ns/p": ("uid-1", "n1")}  # not confirmed yet: still assumed
    a.reconcile({"ns/p": ("uid-1", "n1")})
    assert a.snapshot()[0] == {}


def test_a_recreated_pod_of_the_same_name_is_not_hidden() -> None:
    a = Assumed()
    a.evicted("ns/worker-0", "uid-old")
    a.reconcile({"ns/worker-0": ("uid-old", "n1")})  # still terminating: stays assumed gone
    assert a.snapshot()[1] == {"ns/worker-0": "uid-old"}
    a.reconcile({"ns/worker-0": ("uid-new", None)})  # its controller made a new one
    assert a.snapshot()[1] == {}


def test_entries_expire() -> None:
    a = Assumed(bind_ttl=0.0, evict_ttl=0.0)
    a.bound("ns/p", "u", "n1")
    a.evicted("ns/q", "v")
    a.reconcile({"ns/p": ("u", None), "ns/q": ("v", "n1")})
    assert a.snapshot() == ({}, {})
