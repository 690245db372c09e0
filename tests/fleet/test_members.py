"""Members from Cluster objects: credentials, and errors that name the field."""

from __future__ import annotations

import base64
from typing import Any

from solver_sched.domain.snapshot import InputError
from solver_sched.fleet.members import MemberSpec, member_spec


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


def test_a_changed_secret_changes_the_fingerprint() -> None:
    a = MemberSpec("m1", "https://x", token="a")
    assert a.fingerprint != MemberSpec("m1", "https://x", token="b").fingerprint
