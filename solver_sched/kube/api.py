"""A thin raw-JSON layer over the official client's ApiClient.

Why raw: the scheduler reads objects of many kinds (core, CRDs) as plain dicts and feeds them to the
same loader the CLI uses; and the typed client mis-parses the pods/binding response (a Status where
the spec says Binding). Requests go through the client's configuration (auth, TLS) and a token
bucket, since the Python client has no client-side QPS limit.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import urllib3
from kubernetes import client, config

JsonObj = dict[str, Any]
Fence = Callable[[], bool]  # true while this process may write (it holds the lease)


class ApiError(Exception):
    def __init__(self, status: int, reason: str, body: JsonObj | None = None) -> None:
        super().__init__(f"HTTP {status}: {reason}" if status else reason)
        self.status = status
        self.reason = reason
        self.body = body or {}


class TransportError(ApiError):
    """The API server could not be reached (refused, reset, timed out): status 0. Callers that
    handle ApiError handle this too, so an outage is a logged condition, never a traceback."""

    def __init__(self, reason: str) -> None:
        super().__init__(0, f"API server unreachable: {reason}")


class Fenced(ApiError):
    """A write was not sent because the fence was down (leadership lost, or shutting down)."""

    def __init__(self) -> None:
        super().__init__(0, "fenced: not the leader")


class RateLimiter:
    """Token bucket: ``qps`` tokens per second, at most ``burst`` at once (client-go semantics)."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps, self.burst = qps, burst
        self._tokens = float(burst)
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def acquire(self, fence: Fence | None = None) -> bool:
        """Wait for a token; give up (False) as soon as ``fence`` goes down while waiting."""
        while True:
            if fence is not None and not fence():
                return False
            with self._lock:
                now = time.monotonic()
                self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
                self._last = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return True
                wait = (1 - self._tokens) / self.qps
            time.sleep(min(wait, 0.1))


class KubeconfigError(Exception):
    """No client could be configured: the kubeconfig is missing or unreadable, or, without one,
    the process does not run in a cluster. The CLI reports it and exits 2."""


def load_client(kubeconfig: str | None, pool_size: int = 32) -> client.ApiClient:
    """From a kubeconfig file, or the in-cluster service account when none is given."""
    cfg = client.Configuration()
    try:
        if kubeconfig:
            config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, client_configuration=cfg
            )
        else:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError) as exc:
        where = (
            f"kubeconfig {kubeconfig}"
            if kubeconfig
            else "no --kubeconfig given (nor KUBECONFIG) and not in a cluster's pod"
        )
        raise KubeconfigError(f"{where}: {exc}") from exc
    cfg.connection_pool_maxsize = pool_size  # watches hold connections; binds run in a pool
    cfg.retries = 0  # urllib3 would resend a failed write later, past the fence: callers retry
    return client.ApiClient(cfg)


class Health:
    """When the API server last failed to answer (transport error or 5xx) and since when it has
    answered again, by the monotonic clock: the controller counts gang timeouts only over time in
    which it could act. ``unreachable_at`` leaves 5xx out (an answer): the leader's write fence
    wants a renewal after it (leader.py), a member's write fence any request sent after it and
    answered (``serving``)."""

    def __init__(self) -> None:
        self.healthy_since = time.monotonic()
        self.last_failure: float | None = None
        self.unreachable_at: float | None = None  # the last failure that got no answer at all
        self._answered_sent = -math.inf  # when the latest answered request was sent
        self._lock = threading.Lock()

    def failed(self) -> None:
        """A request got no answer (refused, reset, timed out)."""
        with self._lock:
            self.last_failure = self.unreachable_at = time.monotonic()

    def answered(self, sent: float, error: bool = False) -> None:
        """A request sent at ``sent`` was answered; ``error``: with a 5xx, a failure for the
        gang-timeout clock all the same."""
        with self._lock:
            self._answered_sent = max(self._answered_sent, sent)
            if error:
                self.last_failure = time.monotonic()
            elif self.last_failure is not None and self.last_failure >= self.healthy_since:
                self.healthy_since = time.monotonic()

    def serving(self) -> bool:
        """Whether the server has answered a request sent after it last could not be reached. A
        restarted server accepts connections before it reads them: a write sent into that
        backlog may be read long after it was checked, so a write fence waits for this proof."""
        with self._lock:
            return self.unreachable_at is None or self._answered_sent > self.unreachable_at

    def up_since(self) -> float | None:
        """Start of the current healthy stretch, or None while the last request failed."""
        with self._lock:
            if self.last_failure is not None and self.last_failure >= self.healthy_since:
                return None
            return self.healthy_since


class KubeApi:
    """Raw JSON requests. Writes (every method but GET) wait for the token bucket ``limiter``,
    then check ``fence`` immediately before they are sent: a write that waited for a token, or
    whose process was paused, is never sent once the fence is down. Lease writes opt out of both
    (``limited=False``). Every answer and every failure to get one is recorded in ``health``."""

    def __init__(
        self,
        api_client: client.ApiClient,
        limiter: RateLimiter | None = None,
        fence: Fence | None = None,
        health: Health | None = None,
    ) -> None:
        self.api_client = api_client
        self.limiter = limiter
        self.fence = fence
        self.health = health or Health()

    def with_budget(self, limiter: RateLimiter) -> KubeApi:
        """The same client, connections, fence and health, with its own write budget."""
        return KubeApi(self.api_client, limiter, self.fence, self.health)

    def _send(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None,
        body: Any,
        content_type: str | None,
        timeout: float | tuple[float, float] | None,
        fenced: bool = False,
    ) -> Any:
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        elif body is not None:
            headers["Content-Type"] = "application/json"
        params = [(k, _q(v)) for k, v in (query or {}).items() if v is not None]
        request = self.api_client.param_serialize(
            method=method,
            resource_path=path,
            query_params=params,
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        if fenced and self.fence is not None and not self.fence():
            raise Fenced()  # checked last, right before the request leaves this process
        sent = time.monotonic()
        try:
            resp = self.api_client.call_api(*request, _request_timeout=timeout)
        except client.ApiException as exc:
            self.health.answered(sent, error=(exc.status or 0) >= 500)
            raise ApiError(exc.status or 0, str(exc.reason), _json(exc.body)) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            self.health.failed()
            raise TransportError(_short(exc)) from None
        self.health.answered(sent, error=resp.status >= 500)
        return resp

    def request(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float = 30.0,
        limited: bool = True,
        fenced: bool | None = None,
    ) -> JsonObj:
        """One call; returns the decoded body, raises ApiError on a non-2xx status (TransportError
        when the server cannot be reached, Fenced when a write may not be sent). A write waits
        for a token when ``limited`` and checks the fence when ``fenced`` (default: as
        ``limited``; the binder takes its tokens itself, the lease elector neither)."""
        write = method != "GET"
        if limited and write and self.limiter is not None and not self.limiter.acquire(self.fence):
            raise Fenced()
        check = write and (limited if fenced is None else fenced)
        resp = self._send(method, path, query, body, content_type, timeout, check)
        try:
            data = resp.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            self.health.failed()
            raise TransportError(_short(exc)) from None
        decoded = _json(data)
        if not 200 <= resp.status <= 299:
            raise ApiError(resp.status, str(decoded.get("reason") or resp.reason), decoded)
        return decoded

    def get(self, path: str, **query: Any) -> JsonObj:
        return self.request("GET", path, query)

    def watch(self, path: str, query: dict[str, Any], timeout: float) -> Iterator[JsonObj]:
        """Watch events as dicts (``type``, ``object``); ends when the server closes the stream."""
        q = dict(query, watch="true")
        resp = self._send("GET", path, q, None, None, (10.0, timeout))
        if not 200 <= resp.status <= 299:
            decoded = _json(resp.read())
            raise ApiError(resp.status, str(decoded.get("reason") or resp.reason), decoded)
        raw = resp.response
        buffer = b""
        try:
            try:
                for chunk in raw.stream(16384, decode_content=False):
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        if line.strip():
                            yield json.loads(line)
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                self.health.failed()
                raise TransportError(_short(exc)) from None
        finally:
            raw.close()  # a half-read stream must not go back to the pool


def _short(exc: BaseException) -> str:
    """urllib3 wraps the cause several times over; the innermost reason reads best."""
    reason = getattr(exc, "reason", None)
    return str(reason or exc)[:300]


def _q(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _json(data: Any) -> JsonObj:
    if not data:
        return {}
    try:
        out = json.loads(data)
    except (ValueError, TypeError):
        return {"message": str(data)[:500]}
    return out if isinstance(out, dict) else {"items": out}
