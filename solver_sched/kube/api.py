"""A thin raw-JSON layer over the official client's ApiClient.

Why raw: the scheduler reads objects of many kinds (core, CRDs) as plain dicts and feeds them to the
same loader the CLI uses; and the typed client mis-parses the pods/binding response (a Status where
the spec says Binding). Requests go through the client's configuration (auth, TLS) and a token
bucket, since the Python client has no client-side QPS limit.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

from kubernetes import client, config

JsonObj = dict[str, Any]


class ApiError(Exception):
    def __init__(self, status: int, reason: str, body: JsonObj | None = None) -> None:
        super().__init__(f"HTTP {status}: {reason}")
        self.status = status
        self.reason = reason
        self.body = body or {}


class RateLimiter:
    """Token bucket: ``qps`` tokens per second, at most ``burst`` at once (client-go semantics)."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps, self.burst = qps, burst
        self._tokens = float(burst)
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def acquire(self) -> None:
        while True:
            with self._lock:
                now = time.monotonic()
                self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
                self._last = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                wait = (1 - self._tokens) / self.qps
            time.sleep(wait)


def load_client(kubeconfig: str | None, pool_size: int = 32) -> client.ApiClient:
    """From a kubeconfig file, or the in-cluster service account when none is given."""
    cfg = client.Configuration()
    if kubeconfig:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, client_configuration=cfg
        )
    else:
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    cfg.connection_pool_maxsize = pool_size  # watches hold connections; binds run in a pool
    return client.ApiClient(cfg)


class KubeApi:
    def __init__(self, api_client: client.ApiClient, limiter: RateLimiter | None = None) -> None:
        self.api_client = api_client
        self.limiter = limiter

    def _send(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None,
        body: Any,
        content_type: str | None,
        timeout: float | tuple[float, float] | None,
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
        try:
            return self.api_client.call_api(*request, _request_timeout=timeout)
        except client.ApiException as exc:
            raise ApiError(exc.status or 0, str(exc.reason), _json(exc.body)) from None

    def request(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str | None = None,
        timeout: float = 30.0,
        limited: bool = True,
    ) -> JsonObj:
        """One call; returns the decoded body, raises ApiError on a non-2xx status."""
        if limited and self.limiter is not None and method != "GET":
            self.limiter.acquire()
        resp = self._send(method, path, query, body, content_type, timeout)
        data = resp.read()
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
            for chunk in raw.stream(16384, decode_content=False):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            raw.close()  # a half-read stream must not go back to the pool


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
