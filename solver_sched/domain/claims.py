"""Per-node claims: what a pod holds on its node that keeps some other pods off it.

Two kinds, as kube-scheduler filters them: a host port (NodePorts: one pod per node and
protocol/port; a host IP is not told apart, so two pods on different IPs of one node are kept
apart too) and a required anti-affinity to pods on the same node (InterPodAffinity with
``topologyKey: kubernetes.io/hostname``: the pods that carry the term and those it selects are
kept apart, while the pods it selects may share a node; pods that carry it are kept apart from
each other too, whether or not they match it). The loader gives each claim the cycle's waiting
pods make a resource on every node and a request on every pod that makes it (io/claims.py), so
the model, greedy, the packer and the checker hold it as they hold GPUs.
"""

from __future__ import annotations

HOSTNAME = "kubernetes.io/hostname"
PORT = "hostport:"
ANTI = "anti-affinity:"
# an anti-affinity claim's capacity per node and what a pod carrying the term requests of it (a
# pod the term selects requests 1): more than the pods any node holds
APART = 1024


def host_port_claim(protocol: str, port: int) -> str:
    return f"{PORT}{protocol}/{port}"


def anti_affinity_claim(namespaces: str, selector: str) -> str:
    """``namespaces``: comma-separated, or ``*``; ``selector`` as ``kubectl`` writes one."""
    return f"{ANTI}{namespaces}/{selector or '(all pods)'}"


def is_claim(resource: str) -> bool:
    return resource.startswith((PORT, ANTI))


def is_port(resource: str) -> bool:
    return resource.startswith(PORT)
