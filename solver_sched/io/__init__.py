"""File adapters: Kubernetes objects (as kubectl writes them) -> ClusterSnapshot."""
