"""The rack-preemption study on one development seed: its clusters are what it says (racks full of
low-priority gangs, required gangs pending), and greedy's domain step is what it measures."""

from benchmarks.topology_victims import cluster_objects, run_instance
from solver_sched.config.schema import SchedulerConfig


def test_racks_are_full_and_the_required_gangs_pend() -> None:
    objs = cluster_objects(2)
    nodes = [o for o in objs if o["kind"] == "Node"]
    bound = [o for o in objs if o["kind"] == "Pod" and o["spec"].get("nodeName")]
    used = sum(
        int(o["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]) for o in bound
    )
    assert used == 8 * len(nodes)
    pending = [o for o in objs if o["kind"] == "PodGroup"]
    big = [g for g in pending if g["metadata"]["name"].startswith("big-")]
    assert big and all(g["spec"]["schedulingConstraints"]["topology"] for g in big)


def test_the_domain_step_starts_what_the_search_anywhere_cannot() -> None:
    # a cycle budget no loaded machine cuts: the plan is what is tested, its speed is the study's
    row = run_instance(2, SchedulerConfig.model_validate({"settings": {"cycleSeconds": 60}}))
    assert row["required"] == 6
    assert row["anywhere"]["started"] == 4  # the ablation: victims freed across many racks
    assert row["greedy"]["started"] == 6
    assert row["cycle"]["started"] == 6 and row["cycle"]["violations"] == 0
