"""Adapters from files to the core: Kubernetes objects (as kubectl writes them) -> ClusterSnapshot."""
