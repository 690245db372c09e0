"""The controllers' flags are checked before anything starts: a rate of 0 divided by zero in
every bind worker and left a gang half bound; 0 bind workers or a burst of 0 bound nothing."""

from __future__ import annotations

import pytest

from solver_sched.cli.main import main
from solver_sched.kube.leader import default_identity


@pytest.mark.parametrize(
    ("command", "flag", "value", "says"),
    [
        ("run", "--qps", "0", "must be above 0"),
        ("run", "--qps", "nan", "must be above 0"),
        ("run", "--qps", "inf", "must be above 0"),
        ("run", "--burst", "0", "must be above 0"),
        ("run", "--bind-workers", "0", "must be above 0"),
        ("run", "--status-qps", "-1", "must be above 0"),
        ("run", "--status-burst", "0", "must be above 0"),
        ("run", "--cycle-interval", "0", "must be above 0"),
        ("run", "--eviction-grace-seconds", "-1", "must be 0 or more"),
        ("run", "--bind-workers", "two", "not a number"),
        ("fleet", "--qps", "0", "must be above 0"),
        ("fleet", "--burst", "0", "must be above 0"),
        ("fleet", "--probe-interval", "0", "must be above 0"),
        ("fleet", "--delete-grace-seconds", "-5", "must be 0 or more"),
    ],
)
def test_a_bad_number_is_refused_with_the_flag_named(
    command: str, flag: str, value: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([command, flag, value])
    assert exit_.value.code == 2
    assert f"argument {flag}: {says}" in capsys.readouterr().err


def test_two_replicas_on_one_host_get_different_identities() -> None:
    """Without $POD_NAME both were the bare host name, and both read as the Lease's holder."""
    one, two = default_identity(), default_identity()
    assert one != two and one.split("_")[0] == two.split("_")[0]


@pytest.mark.parametrize("command", [["run"], ["fleet"], ["dump", "-o", "out.yaml"]])
def test_no_kubeconfig_is_a_message_not_a_traceback(
    command: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a cluster and without a kubeconfig the kubernetes client raised ConfigException
    out of every command (exit 1, which means "no plan passed the checker")."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.chdir(str(pytest.importorskip("tempfile").mkdtemp()))
    assert main([*command, "--kubeconfig", "/nonexistent/kubeconfig"]) == 2
    assert "kubeconfig /nonexistent/kubeconfig:" in capsys.readouterr().err
    assert main([*command, "--kubeconfig", ""]) == 2
    assert "not in a cluster's pod" in capsys.readouterr().err
