"""A real kube-apiserver + etcd (tools/kube-testenv, built by `make test`) for the session, and a
clean cluster plus controllers for each test. Tests run one at a time: nodes are cluster-scoped."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from solver_sched.kube.api import KubeApi, load_client
from solver_sched.kube.controller import Controller, RunOptions
from solver_sched.kube.sandbox import Kube, Sandbox, sandbox, wait_for
from tests.integration.kube import ROOT

BINARY = Path(os.environ.get("KUBE_TESTENV", ROOT / ".cache" / "bin" / "kube-testenv"))


TestEnv = Sandbox
FAILED = pytest.StashKey[bool]()  # set on a test whose call failed, for its fixtures' teardown


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.failed:
        item.stash[FAILED] = True
    return report


@pytest.fixture(scope="session")
def testenv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    if not BINARY.exists():
        pytest.fail(f"{BINARY} is missing: run `make test` (it builds tools/kube-testenv)")
    work = tmp_path_factory.mktemp("kube")
    # configmaps bypass the watch cache and etcd compacts every few seconds, so a watch from an
    # old resourceVersion gets a real 410 Gone (see test_watch_410_relists).
    args = (
        "--apiserver-arg=--etcd-compaction-interval=3s",
        "--apiserver-arg=--watch-cache-sizes=configmaps#0",
    )
    with sandbox(BINARY, work / "env", work / "testenv.log", args) as env:
        yield env
        # informer threads of stopped controllers may still notice the server going away:
        # keep their log lines out of the end of the test report
        logging.disable(logging.CRITICAL)


@pytest.fixture(scope="session")
def admin_api(testenv: TestEnv) -> KubeApi:
    return KubeApi(load_client(testenv.kubeconfig))


@pytest.fixture(scope="session")
def crds(admin_api: KubeApi) -> None:
    install_crds(admin_api)


def install_crds(admin_api: KubeApi) -> None:
    """The CRDs from deploy/crds, as for a cluster that lacks them."""
    kube = Kube(admin_api)
    for path in sorted((ROOT / "deploy" / "crds").glob("*.yaml")):
        for obj in kube.load(path):
            if obj.get("kind") == "CustomResourceDefinition":
                kube.apply(obj)

    def established() -> bool:
        items = admin_api.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
        return all(
            any(
                c["type"] == "Established" and c["status"] == "True"
                for c in (i.get("status") or {}).get("conditions") or []
            )
            for i in items
        )

    wait_for("CRDs established", established, timeout=30)


@pytest.fixture
def kube(admin_api: KubeApi, crds: None) -> Kube:
    k = Kube(admin_api)
    k.reset()
    return k


@pytest.fixture
def start_controller(testenv: TestEnv) -> Iterator[Callable[..., Controller]]:
    started: list[Controller] = []

    def start(**overrides: Any) -> Controller:
        fault = overrides.pop("fault", None)
        opts = RunOptions(
            kubeconfig=testenv.kubeconfig,
            namespace="solver-sched",
            cycle_interval=1.0,
            debounce=0.2,
            eviction_grace_seconds=0,
            retry_period=0.5,
            lease_duration=4.0,
            renew_deadline=3.0,
            discovery_interval=2.0,
        )
        for key, value in overrides.items():
            setattr(opts, key, value)
        controller = Controller(opts, fault=fault)
        controller.start()
        started.append(controller)
        return controller

    yield start
    for c in started:
        c.shutdown()
