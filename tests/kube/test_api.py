"""The API client's transport: a failed request is never sent again by urllib3 behind the fence."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest
import yaml

from solver_sched.kube.api import KubeApi, TransportError, load_client


def test_a_failed_request_is_not_resent_by_the_transport(tmp_path: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[int] = []

    def serve() -> None:  # reads each request and hangs up without an answer
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(1)
            conn.recv(65536)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    api = KubeApi(load_client(str(path)))
    try:
        with pytest.raises(TransportError):
            api.get("/api/v1/pods")  # a read, which urllib3 would resend by default
        assert api.health.unreachable_at is not None
    finally:
        server.close()
    assert len(accepted) == 1
