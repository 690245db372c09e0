"""Named cluster families (``solver-sched generate --preset NAME``), each at any node count.

Together they span what GPU clusters look like: load 60-98%, fragmentation by other schedulers'
pods and spread placement, one to five priorities, tight and loose quota trees with borrowing
and skewed teams, elastic shares 0-80%, 4- and 8-GPU nodes of two GPU models (as a label or an
extended resource). ``hard`` is the cluster of issue 14: about 85% load, priorities
0/100/1000, 16 leaf queues, 40% elastic power-of-two, some in cooldown; at 512 nodes about 1,000
running and 500 pending gangs. As in the issue's dumps, half the running gangs were spread by
another scheduler and half packed first fit, and the queue holds the traces' in-flight mix
(large gangs wait longest); the running gangs' mix is 80% of the way from the arrivals' to the
in-flight mix, which at 85% gives the issue's 1,000 running gangs (3.5 GPUs each on average).
"""

from __future__ import annotations

from dataclasses import replace

from solver_sched.synthetic.spec import A100_8, L4_4, ClusterSpec, NodeType

SIZES = {"S": 64, "M": 512, "L": 2000, "XL": 10000}

PRESETS: dict[str, ClusterSpec] = {
    "hard": ClusterSpec(
        nodes=512,
        load=0.85,
        spread=0.5,
        blend=0.8,
        pending_blend=1.0,
    ),
    # a quiet cluster: many small gangs, one priority, nothing elastic, room to spare
    "light": ClusterSpec(
        nodes=512,
        load=0.6,
        blend=0.0,
        priorities=((0, 1.0),),
        elastic=0.0,
        cooldown=0.0,
        pending_ratio=0.3,
    ),
    # nearly full, a long queue, tight quotas with max-jobs, five priorities
    "full": ClusterSpec(
        nodes=512,
        load=0.98,
        blend=0.6,
        pending_ratio=1.0,
        priorities=((0, 0.4), (10, 0.2), (100, 0.2), (500, 0.1), (1000, 0.1)),
        elastic=0.2,
        quota="tight",
        max_jobs=True,
    ),
    # partly used nodes: other schedulers' GPU services and CPU pods, half the gangs spread
    "fragmented": ClusterSpec(
        nodes=512,
        load=0.8,
        foreign=0.15,
        foreign_cpu=0.2,
        spread=0.5,
        blend=0.5,
    ),
    # 80% elastic, many in cooldown, two priorities, skewed teams that borrow
    "elastic": ClusterSpec(
        nodes=512,
        load=0.9,
        blend=0.7,
        priorities=((0, 0.7), (100, 0.3)),
        elastic=0.8,
        cooldown=0.4,
        skew=1.0,
    ),
    # 8-GPU A100 and 4-GPU L4 nodes; 40% of gangs ask for a model (label), tight quotas
    "hetero": ClusterSpec(
        nodes=512,
        node_types=(replace(A100_8, share=0.6), replace(L4_4, share=0.4)),
        pinned=0.4,
        load=0.85,
        blend=0.4,
        quota="tight",
        skew=0.5,
    ),
    # the same node types with the GPU model as an extended resource, no quota tree
    "hetero-resource": ClusterSpec(
        nodes=512,
        node_types=(replace(A100_8, share=0.5), replace(L4_4, share=0.5)),
        gpu_model_as="resource",
        pinned=0.5,
        load=0.75,
        blend=0.3,
        quota="none",
        foreign=0.05,
    ),
}


def preset(name: str, nodes: int | None = None) -> ClusterSpec:
    """The named family at ``nodes`` (its own default, 512, when None)."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    spec = PRESETS[name]
    return spec if nodes is None else replace(spec, nodes=nodes)


__all__ = ["PRESETS", "SIZES", "ClusterSpec", "NodeType", "preset"]
