"""Members from the hub's Cluster objects: one connection, watch cache and health probe each.

A Cluster (``cluster.karmada.io/v1alpha1``) names the member's ``spec.apiEndpoint`` and a Secret
(``spec.secretRef``) with ``token`` and ``caBundle`` (Karmada's keys) or a ``kubeconfig``. A Cluster
added, changed or deleted in the hub is picked up at the next cycle without a restart. A member
whose probe fails is unreachable; when it answers again its informers start afresh, so its view
is re-listed before the fleet acts there (a stale copy is then found and removed first).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from solver_sched.domain.snapshot import InputError
from solver_sched.io.fleet_objects import ClusterObj
from solver_sched.kube.api import ApiError, Fence, Health, KubeApi, RateLimiter
from solver_sched.kube.informer import Informer
from solver_sched.kube.resources import NODES, PODS, PYTORCH_JOBS
from solver_sched.kube.store import ObjectStore

log = logging.getLogger(__name__)
MEMBER_WATCHED = (NODES, PODS, PYTORCH_JOBS)
JsonObj = dict[str, Any]


@dataclass(frozen=True)
class MemberSpec:
    """How to reach a member: what a Cluster and its Secret say (compared to reconnect)."""

    name: str
    endpoint: str
    token: str = ""
    ca: str = ""
    kubeconfig: str = ""
    insecure: bool = False

    @property
    def fingerprint(self) -> str:
        text = "|".join((self.endpoint, self.token, self.ca, self.kubeconfig, str(self.insecure)))
        return hashlib.sha256(text.encode()).hexdigest()


def member_spec(
    raw: Mapping[str, Any], secret_of: Callable[[str, str], JsonObj | None]
) -> MemberSpec | InputError:
    """A Cluster object (and its Secret) -> how to connect, or the error naming the field."""
    try:
        c = ClusterObj.model_validate(raw)
    except Exception as exc:  # pydantic: report, never raise
        name = str((raw.get("metadata") or {}).get("name") or "(unnamed)")
        return InputError(f"Cluster {name}", "spec", str(exc).splitlines()[0])
    obj = f"Cluster {c.metadata.name}"
    ref = c.spec.secret_ref
    if ref is None:
        return InputError(obj, "spec.secretRef", "missing: no credentials for the member")
    ns = ref.namespace or "karmada-cluster"
    secret = secret_of(ns, ref.name)
    if secret is None:
        return InputError(obj, "spec.secretRef", f"Secret {ns}/{ref.name} not found")
    data = {k: _b64(v) for k, v in (secret.get("data") or {}).items()}
    data.update(secret.get("stringData") or {})
    if data.get("kubeconfig"):
        return MemberSpec(c.metadata.name, c.spec.api_endpoint, kubeconfig=data["kubeconfig"])
    if not c.spec.api_endpoint:
        return InputError(obj, "spec.apiEndpoint", "missing")
    if not data.get("token"):
        return InputError(
            obj, "spec.secretRef", f"Secret {ns}/{ref.name} has neither token nor kubeconfig"
        )
    return MemberSpec(
        c.metadata.name,
        c.spec.api_endpoint,
        token=data["token"],
        ca=data.get("caBundle", ""),
        insecure=c.spec.insecure_skip_tls_verification,
    )


def _b64(value: str) -> str:
    try:
        return base64.b64decode(value).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


def _client(spec: MemberSpec, workdir: Path, pool_size: int = 16) -> client.ApiClient:
    cfg = client.Configuration()
    if spec.kubeconfig:
        config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
            yaml.safe_load(spec.kubeconfig), client_configuration=cfg
        )
        if spec.endpoint:
            cfg.host = spec.endpoint
    else:
        cfg.host = spec.endpoint
        cfg.api_key = {"BearerToken": spec.token}
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
        if spec.insecure:
            cfg.verify_ssl = False
        elif spec.ca:
            ca_file = workdir / f"{spec.name}-{spec.fingerprint[:12]}-ca.crt"
            ca_file.write_text(spec.ca)
            cfg.ssl_ca_cert = str(ca_file)
    cfg.connection_pool_maxsize = pool_size
    cfg.retries = 0  # a dead member must fail fast: the probe decides, not urllib3
    return client.ApiClient(cfg)


def member_fence(hub: Fence | None, health: Health) -> Fence:
    """A member write goes only while the hub's fence (the fleet's lease) holds and the member
    has answered a request sent after it last could not be reached (``Health.serving``): a write
    sent into a restarted member's backlog before the next probe could be read long after the
    lease that allowed it, and place a second copy of a gang another replica placed meanwhile."""

    def may_write() -> bool:
        return health.serving() and (hub is None or hub())

    return may_write


class MemberSession:
    """One connection epoch to a member: informers into a fresh store, and a probe. A member
    that recovers from an outage gets a new session, so its store is re-listed."""

    def __init__(
        self,
        spec: MemberSpec,
        workdir: Path,
        probe_interval: float,
        qps: float,
        burst: int,
        fence: Fence | None = None,
    ) -> None:
        self.spec = spec
        self.api = KubeApi(_client(spec, workdir), RateLimiter(qps, burst))
        self.api.fence = member_fence(fence, self.api.health)
        self.store = ObjectStore()
        self.stop = threading.Event()
        self.informers: list[Informer] = []
        self.probe_interval = probe_interval
        self.ok = False
        self.down_since: float | None = time.monotonic()  # until the first probe answers
        self.recovered = threading.Event()  # set when the member answers after an outage
        self._started_informers = False
        self._thread = threading.Thread(
            target=self._probe_loop, name=f"member-{spec.name}", daemon=True
        )
        self._thread.start()

    def _probe_loop(self) -> None:
        while not self.stop.is_set():
            ok = self.probe()
            if ok and not self.ok:
                log.info("member %s: reachable", self.spec.name)
                if not self._started_informers:
                    self._start_informers()
                else:
                    self.recovered.set()  # the registry replaces this session
            if not ok and self.ok:
                log.warning("member %s: unreachable", self.spec.name)
            if not ok and self.down_since is None:
                self.down_since = time.monotonic()
            if ok:
                self.down_since = None
            self.ok = ok
            self.stop.wait(self.probe_interval)

    def probe(self) -> bool:
        try:
            self.api.request("GET", "/readyz", timeout=min(2.0, self.probe_interval * 2))
            return True
        except ApiError:
            return False
        except Exception:  # connection refused, timeout, TLS: unreachable
            return False

    def _start_informers(self) -> None:
        self._started_informers = True
        for r in MEMBER_WATCHED:
            inf = Informer(self.api, r, self.store, self.stop)
            self.informers.append(inf)
            inf.start()

    def ready(self) -> bool:
        """Answering, and every informer has listed once (PyTorchJobs only if served)."""
        if not self.ok or not self._started_informers:
            return False
        live = [i.resource.key for i in self.informers if i.thread.is_alive()]
        needed = [NODES.key, PODS.key]
        return all(k in live for k in needed) and self.store.synced(live)

    def objects(self) -> list[JsonObj]:
        return self.store.all_objects()

    def close(self) -> None:
        self.stop.set()


class MemberRegistry:
    """Member sessions kept in step with the hub's Cluster objects."""

    def __init__(
        self,
        probe_interval: float = 2.0,
        qps: float = 20.0,
        burst: int = 40,
        fence: Fence | None = None,
        workdir: Path | None = None,
    ) -> None:
        """``fence``: every write to a member checks it (the fleet's lease) before it is sent."""
        self.probe_interval, self.qps, self.burst = probe_interval, qps, burst
        self.fence = fence
        self._tmp = tempfile.TemporaryDirectory(prefix="solver-sched-fleet-")
        self.workdir = workdir or Path(self._tmp.name)
        self.sessions: dict[str, MemberSession] = {}
        self.errors: dict[str, InputError] = {}  # Cluster name -> why it is not connected

    def sync(
        self,
        clusters: Sequence[Mapping[str, Any]],
        secret_of: Callable[[str, str], JsonObj | None],
    ) -> None:
        wanted: dict[str, MemberSpec] = {}
        self.errors = {}
        for raw in clusters:
            name = str((raw.get("metadata") or {}).get("name") or "")
            spec = member_spec(raw, secret_of)
            if isinstance(spec, InputError):
                self.errors[name] = spec
            else:
                wanted[spec.name] = spec
        for name in list(self.sessions):
            s = self.sessions[name]
            if name not in wanted or wanted[name].fingerprint != s.spec.fingerprint:
                log.info("member %s: %s", name, "removed" if name not in wanted else "changed")
                s.close()
                del self.sessions[name]
            elif s.recovered.is_set():  # back after an outage: watch it afresh
                s.close()
                del self.sessions[name]
        for name, spec in wanted.items():
            if name not in self.sessions:
                try:
                    self.sessions[name] = MemberSession(
                        spec, self.workdir, self.probe_interval, self.qps, self.burst, self.fence
                    )
                except Exception as exc:  # e.g. a kubeconfig the client cannot use
                    first = (str(exc).splitlines() or [""])[0]  # not the rest: it may quote secrets
                    why = f"credentials unusable: {type(exc).__name__}: {first}"
                    self.errors[name] = InputError(f"Cluster {name}", "spec.secretRef", why)

    def close(self) -> None:
        for s in self.sessions.values():
            s.close()
        self.sessions.clear()
        self._tmp.cleanup()
