"""deploy/ stays true to the code: the offline half of deploy/hack/check_manifests.py (the
ConfigMap written out equals the schema's defaults, field by field; kustomizations render; the
Deployment, generated CRDs and samples are what the code expects). A config field added without
its line in the ConfigMap went unnoticed: the script was only run by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_manifests_match_the_code() -> None:
    run = subprocess.run(
        [sys.executable, "deploy/hack/check_manifests.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
