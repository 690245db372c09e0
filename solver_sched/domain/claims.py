"""Per-node claims: what a pod holds on its node that no other pod may hold there too.

Two kinds, as kube-scheduler filters them: a host port (NodePorts: one pod per node and
protocol/port; a host IP is not told apart, so two pods on different IPs of one node are kept
apart too) and a required anti-affinity to pods on the same node (InterPodAffinity with
``topologyKey: kubernetes.io/hostname``: the pods that carry the term and those it selects are
kept apart; pods that carry it but do not match it are kept apart from each other too). The
loader gives each claim the cycle's waiting pods make a resource of 1 on every node and a request
of 1 on every pod that makes it, so the model, greedy, the packer and the checker hold it as they
hold GPUs (io/claims.py).
"""

from __future__ import annotations

HOSTNAME = "kubernetes.io/hostname"
PORT = "hostport:"
ANTI = "anti-affinity:"


def host_port_claim(protocol: str, port: int) -> str:
    return f"{PORT}{protocol}/{port}"


def anti_affinity_claim(namespaces: str, selector: str) -> str:
    """``namespaces``: comma-separated, or ``*``; ``selector`` as ``kubectl`` writes one."""
    return f"{ANTI}{namespaces}/{selector or '(all pods)'}"


def is_claim(resource: str) -> bool:
    return resource.startswith((PORT, ANTI))
