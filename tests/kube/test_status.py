"""The status writer: times written to the API server are UTC; an unreachable API server is an
error it logs, never one that aborts the cycle's report; a fenced write never leaves."""

import socket
from datetime import UTC, datetime, timedelta, timezone

import pytest
from kubernetes import client

from solver_sched.kube.api import Fenced, KubeApi, TransportError
from solver_sched.kube.status import StatusWriter, rfc3339
from solver_sched.kube.store import ObjectStore


def test_rfc3339_writes_utc() -> None:
    t = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert rfc3339(t) == "2026-01-01T12:00:00Z"
    assert rfc3339(t.astimezone(timezone(timedelta(hours=2)))) == "2026-01-01T12:00:00Z"


def _unreachable_api() -> KubeApi:
    """A client of a port nobody listens on: every request is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = client.Configuration()
    cfg.host = f"https://127.0.0.1:{port}"
    cfg.verify_ssl = False
    cfg.retries = 0
    return KubeApi(client.ApiClient(cfg))


def test_status_writes_survive_a_refused_connection() -> None:
    store = ObjectStore()
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {},
    }
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns", "uid": "g"},
    }
    store.replace("Pod.v1", [pod])
    store.replace("PodGroup.scheduling.x-k8s.io/v1alpha1", [group])
    writer = StatusWriter(_unreachable_api(), store, "solver-sched", lambda: True)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    # each of these raised urllib3's MaxRetryError out of the cycle's report before
    writer.event(writer.pod_ref("ns/p"), "Scheduled", "bound")
    writer.unschedulable("ns/p", "waiting", now)
    writer.group_status("ns/g", "Running", 1)
    writer.last_scale_time("ns/g", "PodGroup ns/g", "2026-01-01T00:00:00Z")


def test_an_unreachable_server_is_a_transport_error_and_marks_the_api_unhealthy() -> None:
    api = _unreachable_api()
    assert api.health.up_since() is not None
    with pytest.raises(TransportError) as info:
        api.get("/api/v1/nodes")
    assert info.value.status == 0 and "unreachable" in str(info.value)
    assert api.health.up_since() is None  # the controller's acting clock stops


def test_a_fenced_write_is_never_sent() -> None:
    api = _unreachable_api()
    api.fence = lambda: False
    with pytest.raises(Fenced):  # not TransportError: nothing left this process
        api.request("POST", "/api/v1/namespaces/ns/events", body={})
    assert api.health.up_since() is not None
    with pytest.raises(TransportError):  # reads are never fenced: they reach for the server
        api.get("/api/v1/nodes")
