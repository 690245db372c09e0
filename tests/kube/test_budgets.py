"""A PodDisruptionBudget's selector as the labelSelector query that lists the pods it selects."""

import pytest

from solver_sched.kube.budgets import selector_query


def test_every_operator_as_the_api_writes_it() -> None:
    selector = {
        "matchLabels": {"app": "low", "tier": "train"},
        "matchExpressions": [
            {"key": "rank", "operator": "In", "values": ["0", "1"]},
            {"key": "zone", "operator": "NotIn", "values": ["a"]},
            {"key": "gpu", "operator": "Exists"},
            {"key": "spot", "operator": "DoesNotExist"},
        ],
    }
    assert selector_query(selector) == ("app=low,tier=train,rank in (0,1),zone notin (a),gpu,!spot")


def test_an_empty_selector_selects_every_pod() -> None:
    assert selector_query({}) == ""


@pytest.mark.parametrize(
    "selector",
    [
        {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
        {"matchExpressions": [{"operator": "Exists"}]},
        {"matchLabels": ["app=low"]},
    ],
)
def test_a_selector_kubernetes_would_refuse_is_not_read(selector: dict[str, object]) -> None:
    assert selector_query(selector) is None
