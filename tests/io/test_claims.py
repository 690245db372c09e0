"""Per-node claims as the loader makes them (io/claims.py): which pods request which claim, and
what each claim is called. Plans on every backend: tests/formulation/rules/test_claims.py."""

from __future__ import annotations

from typing import Any

from solver_sched.domain.claims import APART
from solver_sched.io import manifests as m
from tests.support.builders import node, other, snapshot

HOSTNAME = "kubernetes.io/hostname"


def _term(selector: dict[str, Any] | None, key: str = HOSTNAME, **scope: Any) -> dict[str, Any]:
    term: dict[str, Any] = {"topologyKey": key, **scope}
    if selector is not None:
        term["labelSelector"] = selector
    return term


def _carrying(pod: dict[str, Any], *terms: dict[str, Any]) -> dict[str, Any]:
    pod["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}
    }
    return pod


def _labelled(pod: dict[str, Any], **labels: str) -> dict[str, Any]:
    pod["metadata"].setdefault("labels", {}).update(labels)
    return pod


def test_a_claim_is_named_by_its_scope_and_its_selector_as_kubectl_writes_it() -> None:
    """The name is the claim's identity: two different selectors must never share one."""
    selector = {
        "matchLabels": {"tier": "x", "app": "g"},
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["b", "a"]},
            {"key": "team", "operator": "NotIn", "values": ["q"]},
            {"key": "gpu", "operator": "Exists"},
            {"key": "spot", "operator": "DoesNotExist"},
        ],
    }
    p = _carrying(m.pod("p", gpus=1), _term(selector))
    claims = snapshot(node("a", gpus=8), p).pods["default/p"].claims
    assert claims == ("anti-affinity:default/!spot,app=g,gpu,team notin (q),tier=x,zone in (a,b)",)
    q = _carrying(m.pod("q", gpus=1), _term({}, namespaces=["b", "a"]))
    r = _carrying(m.pod("r", gpus=1), _term({"matchLabels": {"app": "g"}}, namespaceSelector={}))
    snap = snapshot(node("a", gpus=8), q, r)
    assert snap.pods["default/q"].claims == ("anti-affinity:a,b/(all pods)",)
    assert snap.pods["default/r"].claims == ("anti-affinity:*/app=g",)


def test_carriers_request_all_of_a_claim_and_selected_pods_one() -> None:
    carrier = _labelled(
        _carrying(m.pod("c", gpus=1), _term({"matchLabels": {"app": "w"}})), app="c"
    )
    selected = _labelled(other("s", "a", gpus=1, namespace="default"), app="w")
    snap = snapshot(node("a", gpus=8), carrier, selected)
    claim = "anti-affinity:default/app=w"
    assert snap.pods["default/c"].requests[claim] == APART
    assert snap.pods["default/s"].requests[claim] == 1
    assert snap.pods["default/s"].claims == (claim,)
    assert snap.nodes["a"].allocatable[claim] == APART


def test_a_term_is_its_namespaces_own() -> None:
    """Two gangs' pods with the same self anti-affinity in two namespaces are two claims: a pod
    of one may share a node with a pod of the other."""
    pods = [
        _labelled(
            _carrying(m.pod(f"p{ns}", gpus=1, namespace=ns), _term({"matchLabels": {"app": "x"}})),
            app="x",
        )
        for ns in ("a", "b")
    ]
    snap = snapshot(node("n", gpus=8), *pods)
    assert snap.pods["a/pa"].claims != snap.pods["b/pb"].claims


def test_terms_the_model_does_not_hold_make_no_claim_on_running_pods() -> None:
    """A running pod's anti-affinity over a zone, or by namespace labels, is not modelled (it is
    not obeyed either, as docs/operators-guide.md says): no claim is made of it."""
    selector = {"matchLabels": {"app": "w"}}
    zone = _carrying(other("z", "a", gpus=1, namespace="default"), _term(selector, key="zone"))
    by_labels = _carrying(
        other("l", "a", gpus=1, namespace="default"),
        _term(selector, namespaceSelector={"matchLabels": {"team": "t"}}),
    )
    waiting = _labelled(m.pod("w", gpus=1), app="w")
    snap = snapshot(node("a", gpus=8), zone, by_labels, waiting)
    assert not any(r.startswith("anti-affinity:") for r in snap.nodes["a"].allocatable)


def test_a_running_term_makes_a_claim_only_when_a_waiting_pod_is_in_it() -> None:
    """A carrier and its selected pod both running, and a waiting pod outside the term: no
    claim (the step costs nothing); the waiting pod selected: the claim."""
    carrier = _carrying(
        other("c", "a", gpus=1, namespace="default"), _term({"matchLabels": {"app": "w"}})
    )
    selected = _labelled(other("s", "a", gpus=0, namespace="default"), app="w")
    outside = _labelled(m.pod("o", gpus=1), app="other")
    snap = snapshot(node("a", gpus=8), carrier, selected, outside)
    assert not any(r.startswith("anti-affinity:") for r in snap.nodes["a"].allocatable)
    inside = _labelled(m.pod("i", gpus=1), app="w")
    done = other("done", "a", gpus=1, namespace="default")
    done["status"]["phase"] = "Succeeded"  # read first, and passed over: not the scan's end
    snap = snapshot(node("a", gpus=8), done, outside, carrier, selected, inside)
    assert snap.pods["default/i"].requests["anti-affinity:default/app=w"] == 1
    assert snap.pods["default/c"].requests["anti-affinity:default/app=w"] == APART


def test_a_term_not_modelled_leaves_the_pods_next_terms_read() -> None:
    """A running pod's terms: over a zone (not modelled), with no selector (selects nothing),
    then one over the hostname: the last is its claim."""
    selector = {"matchLabels": {"app": "w"}}
    running = _carrying(
        other("r", "a", gpus=1, namespace="default"),
        _term(selector, key="zone"),
        _term(None),
        _term(selector),
    )
    waiting = _labelled(m.pod("w", gpus=1), app="w")
    snap = snapshot(node("a", gpus=8), running, waiting)
    assert snap.pods["default/r"].claims == ("anti-affinity:default/app=w",)
