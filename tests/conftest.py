"""Shared fixtures; integration fixtures (real kube-apiserver) live in tests/integration/."""
