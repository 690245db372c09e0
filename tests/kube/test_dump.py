"""`solver-sched dump`'s reads: a transient refusal is tried again, a real one is not."""

from __future__ import annotations

from typing import Any

import pytest

from solver_sched.kube import dump
from solver_sched.kube.api import ApiError


class _Api:
    def __init__(self, *errors: ApiError) -> None:
        self.errors = list(errors)
        self.calls = 0

    def get(self, path: str) -> dict[str, Any]:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return {"items": []}


def test_a_list_refused_for_too_many_requests_is_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Right after CRDs were installed the server answered 429 once: dump gave up (exit 2)."""
    slept: list[float] = []
    monkeypatch.setattr("solver_sched.kube.dump.time.sleep", slept.append)
    busy = ApiError(429, "TooManyRequests", {"details": {"retryAfterSeconds": 3}})
    api = _Api(busy, ApiError(503, "ServiceUnavailable"))
    assert dump._get(api, "/api/v1/pods") == {"items": []}  # type: ignore[arg-type]
    assert api.calls == 3 and slept == [3.0, 2.0]


def test_a_refusal_that_will_not_pass_is_raised_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("solver_sched.kube.dump.time.sleep", lambda s: None)
    api = _Api(ApiError(403, "Forbidden"))
    with pytest.raises(ApiError, match="Forbidden"):
        dump._get(api, "/api/v1/pods")  # type: ignore[arg-type]
    assert api.calls == 1
    api = _Api(*[ApiError(429, "TooManyRequests")] * dump.RETRIES)
    with pytest.raises(ApiError, match="TooManyRequests"):
        dump._get(api, "/api/v1/pods")  # type: ignore[arg-type]
    assert api.calls == dump.RETRIES
