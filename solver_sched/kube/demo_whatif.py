"""The demo's what-if step: the offline CLI on a dump of the live cluster at the moment the live
scheduler is about to plan, so the reader sees that `solver-sched whatif` predicts what the
controller then does. The scheduler process is paused (SIGSTOP) while the moment is dumped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from solver_sched.planning.explain import rfc3339


@dataclass(frozen=True)
class WhatIf:
    now: str
    evicted: frozenset[str]  # ns/pod
    bound: dict[str, int]  # ns/job -> pods bound by the plan
    workers: dict[str, int]  # ns/job -> workers after the plan
    lines: tuple[str, ...]  # the CLI's commands, for the reader


@contextmanager
def paused(pid: int) -> Iterator[None]:
    """The scheduler holds still: nothing it watches is planned until it resumes."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def _cli(*args: str) -> str:
    cmd = [sys.executable, "-m", "solver_sched.cli.main", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def whatif_now(kubeconfig: str, work: Path) -> WhatIf:
    """`solver-sched dump` of the live cluster, then `solver-sched whatif` of it at this moment."""
    dump = work / "moment.yaml"
    now = rfc3339(datetime.now(UTC))
    _cli("dump", "--kubeconfig", kubeconfig, "-o", str(dump))
    plan: dict[str, Any] = json.loads(_cli("whatif", str(dump), "--now", now, "-o", "json"))
    bound: dict[str, int] = {}
    for b in plan["binds"]:
        ns, pod = b["pod"].split("/")
        job = f"{ns}/{pod.rsplit('-worker-', 1)[0]}"
        bound[job] = bound.get(job, 0) + 1
    return WhatIf(
        now=now,
        evicted=frozenset(p for e in plan["evictions"] for p in e["pods"]),
        bound=bound,
        workers={j["name"]: j["workers"] for j in plan["jobs"]},
        lines=(
            f"solver-sched dump --kubeconfig {kubeconfig} -o {dump}",
            f"solver-sched whatif {dump} --now {now} -o json",
        ),
    )
