"""Members from Cluster objects: credentials, errors that name the field, the write fence."""

from __future__ import annotations

import base64
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from solver_sched.domain.snapshot import InputError
from solver_sched.fleet.members import MemberRegistry, MemberSession, MemberSpec, member_spec
from solver_sched.kube.api import Fenced


def cluster(secret: dict[str, Any] | None = None, endpoint: str = "https://10.0.0.1:6443"):
    spec: dict[str, Any] = {"apiEndpoint": endpoint}
    if secret is not None:
        spec["secretRef"] = secret
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "m1"},
        "spec": spec,
    }


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_token_and_ca_from_the_secret() -> None:
    secrets = {("karmada-cluster", "m1"): {"data": {"token": b64("t0k"), "caBundle": b64("PEM")}}}
    spec = member_spec(cluster({"name": "m1"}), lambda ns, n: secrets.get((ns, n)))
    assert spec == MemberSpec("m1", "https://10.0.0.1:6443", token="t0k", ca="PEM")


def test_a_kubeconfig_key_is_used_as_is() -> None:
    secret = {"data": {"kubeconfig": b64("apiVersion: v1\nkind: Config\n")}}
    spec = member_spec(cluster({"namespace": "x", "name": "s"}), lambda ns, n: secret)
    assert isinstance(spec, MemberSpec) and spec.kubeconfig.startswith("apiVersion")


def test_missing_secret_ref_secret_or_credentials_name_the_field() -> None:
    missing = member_spec(cluster(None), lambda ns, n: None)
    assert missing == InputError(
        "Cluster m1", "spec.secretRef", "missing: no credentials for the member"
    )
    gone = member_spec(cluster({"name": "m1"}), lambda ns, n: None)
    assert isinstance(gone, InputError) and "karmada-cluster/m1 not found" in gone.message
    empty = member_spec(cluster({"name": "m1"}), lambda ns, n: {"data": {}})
    assert isinstance(empty, InputError) and "neither token nor kubeconfig" in empty.message
    no_endpoint = member_spec(
        cluster({"name": "m1"}, endpoint=""), lambda ns, n: {"data": {"token": b64("t")}}
    )
    assert isinstance(no_endpoint, InputError) and no_endpoint.field == "spec.apiEndpoint"


@pytest.mark.parametrize(
    "kubeconfig",
    [
        pytest.param("a: [unclosed", id="not-yaml"),
        pytest.param("apiVersion: v1\nkind: Config\n", id="no-context"),
    ],
)
def test_a_kubeconfig_the_client_cannot_use_is_that_clusters_error_only(kubeconfig: str) -> None:
    """The Secret is opaque to the API server: a kubeconfig that does not load is reported on
    its Cluster, and the other members are still connected (it stopped every fleet cycle)."""
    good = "t0k"
    secrets = {
        "good": {"data": {"token": b64(good)}},
        "bad": {"data": {"kubeconfig": b64(kubeconfig)}},
    }
    clusters = []
    for name in ("good", "bad"):
        c = cluster({"name": name}, endpoint="https://127.0.0.1:1")
        c["metadata"]["name"] = name
        clusters.append(c)
    registry = MemberRegistry(probe_interval=60)
    try:
        registry.sync(clusters, lambda ns, n: secrets[n])
        assert set(registry.sessions) == {"good"}
        error = registry.errors["bad"]
        assert (error.obj, error.field) == ("Cluster bad", "spec.secretRef")
        assert error.message.startswith("credentials unusable: ")
    finally:
        registry.close()


def test_a_changed_secret_changes_the_fingerprint() -> None:
    a = MemberSpec("m1", "https://x", token="a")
    assert a.fingerprint != MemberSpec("m1", "https://x", token="b").fingerprint


def test_after_an_outage_a_member_write_waits_for_an_answered_request(tmp_path: Path) -> None:
    """A member that could not be reached gets no write until it answers a request sent after
    that: a write into a restarted server's backlog could be read long after the lease."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    answering = threading.Event()  # off: read each request and hang up without an answer
    seen: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                seen.append(conn.recv(65536).split(b" ", 2)[1])
                if answering.is_set():
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
                    conn.sendall(b"Content-Length: 2\r\nConnection: close\r\n\r\n{}")

    threading.Thread(target=serve, daemon=True).start()
    hub_leads = threading.Event()
    hub_leads.set()
    spec = MemberSpec("m1", f"http://127.0.0.1:{port}", token="t")
    session = MemberSession(spec, tmp_path, 3600.0, 100.0, 10, hub_leads.is_set)
    try:
        deadline = time.monotonic() + 10  # its first probe, at start, finds no answer
        while session.api.health.unreachable_at is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert session.api.health.unreachable_at is not None and seen == [b"/readyz"]
        with pytest.raises(Fenced):  # never sent: the server saw the probe only
            session.api.request("POST", "/api/v1/namespaces/default/pods", body={})
        assert seen == [b"/readyz"]
        answering.set()
        session.api.get("/readyz")  # answered: the member reads requests again
        assert session.api.request("POST", "/api/v1/namespaces/default/pods", body={}) == {}
        hub_leads.clear()  # and the hub's fence still holds every member write
        with pytest.raises(Fenced):
            session.api.request("POST", "/api/v1/namespaces/default/pods", body={})
        assert seen.count(b"/api/v1/namespaces/default/pods") == 1
    finally:
        session.close()
        server.close()
