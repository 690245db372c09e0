"""Times written to the API server are UTC, whatever the time zone of the datetime given."""

from datetime import UTC, datetime, timedelta, timezone

from solver_sched.kube.status import rfc3339


def test_rfc3339_writes_utc() -> None:
    t = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert rfc3339(t) == "2026-01-01T12:00:00Z"
    assert rfc3339(t.astimezone(timezone(timedelta(hours=2)))) == "2026-01-01T12:00:00Z"
