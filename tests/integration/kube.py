"""Re-exports of the sandbox helpers for the integration tests."""

from pathlib import Path

from solver_sched.kube.sandbox import Kube, path_of, wait_for

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["ROOT", "Kube", "path_of", "wait_for"]
