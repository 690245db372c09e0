"""Assume/forget bookkeeping (pure: no API server)."""

from solver_sched.kube.assume import Assumed, InFlight


def test_a_bind_is_forgotten_once_the_watch_shows_it() -> None:
    a = Assumed()
    a.bound("ns/p", "uid-1", "n1")
    a.reconcile({"ns/p": ("uid-1", None)})
    assert a.snapshot().binds == {"ns/p": ("uid-1", "n1")}  # not confirmed yet: still assumed
    a.reconcile({"ns/p": ("uid-1", "n1")})
    assert a.snapshot().binds == {}


def test_a_recreated_pod_of_the_same_name_is_not_hidden() -> None:
    a = Assumed()
    a.evicted("ns/worker-0", "uid-old")
    a.reconcile({"ns/worker-0": ("uid-old", "n1")})  # still terminating: stays assumed gone
    assert a.snapshot().evictions == {"ns/worker-0": "uid-old"}
    a.reconcile({"ns/worker-0": ("uid-new", None)})  # its controller made a new one
    assert a.snapshot().evictions == {}


def test_entries_expire() -> None:
    a = Assumed(bind_ttl=0.0, evict_ttl=0.0)
    a.bound("ns/p", "u", "n1")
    a.evicted("ns/q", "v")
    a.reconcile({"ns/p": ("u", None), "ns/q": ("v", "n1")})
    assert not a.snapshot()


def test_a_reservation_holds_until_its_bind_is_confirmed_or_forgotten() -> None:
    a = Assumed(bind_ttl=0.0)
    a.reserve("ns/p", "u", "n1")
    a.reconcile({"ns/p": ("u", None)})  # queued for minutes: a reservation never expires
    assert a.snapshot().binds == {"ns/p": ("u", "n1")}
    a.forget_bind("ns/p", "other-uid")  # a stale failure of another pod of that name
    assert a.snapshot().binds
    a.forget_bind("ns/p", "u")
    assert not a.snapshot()


def test_a_cooldown_stamp_is_held_until_the_object_shows_it() -> None:
    a = Assumed()
    a.stamp("PodGroup ns/g", "2026-01-01T12:00:00Z")
    a.reconcile({}, {"PodGroup ns/g": "2026-01-01T11:00:00Z"})  # an older stamp: keep ours
    assert a.snapshot().stamps == {"PodGroup ns/g": "2026-01-01T12:00:00Z"}
    a.reconcile({}, {"PodGroup ns/g": "2026-01-01T12:00:00Z"})
    assert not a.snapshot()


def test_a_bind_is_forgotten_once_its_pod_is_gone_or_recreated() -> None:
    a = Assumed()
    a.bound("ns/gone", "u1", "n1")
    a.bound("ns/again", "u2", "n1")
    a.bound("ns/kept", "u3", "n1")
    a.reconcile({"ns/again": ("u2-new", None), "ns/kept": ("u3", None)})
    assert a.snapshot().binds == {"ns/kept": ("u3", "n1")}


def test_forgetting_what_was_never_assumed_changes_nothing() -> None:
    """Even with an empty UID or stamp (a stale failure of an object never held)."""
    a = Assumed()
    a.forget_bind("ns/p", "")
    a.forget_stamp("PodGroup ns/g", "")
    assert not a.snapshot()


def test_a_cooldown_stamp_is_forgotten_only_as_written() -> None:
    """The stamp's PATCH failed: forget it, unless a newer stamp of the same object replaced it."""
    a = Assumed()
    a.stamp("PodGroup ns/g", "2026-01-01T12:00:00Z")
    a.forget_stamp("PodGroup ns/g", "2026-01-01T11:00:00Z")
    assert a.snapshot().stamps == {"PodGroup ns/g": "2026-01-01T12:00:00Z"}
    a.forget_stamp("PodGroup ns/h", "2026-01-01T12:00:00Z")
    assert a.snapshot().stamps
    a.forget_stamp("PodGroup ns/g", "2026-01-01T12:00:00Z")
    assert not a.snapshot()


def test_anything_in_flight_makes_it_non_empty() -> None:
    for held in (
        InFlight(binds={"ns/p": ("u", "n1")}),
        InFlight(evictions={"ns/p": "u"}),
        InFlight(stamps={"PodGroup ns/g": "2026-01-01T12:00:00Z"}),
    ):
        assert held
    assert not InFlight()
