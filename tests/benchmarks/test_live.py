"""The live study's pure parts: what each stack is told about a Job, the scale run's gangs, the
ratios and targets read from made-up summaries."""

from benchmarks.live.__main__ import ratios, targets
from benchmarks.live.oracle import row
from benchmarks.live.replay import JobRun, ReplayParams, _pct, shares, stage_spec
from benchmarks.live.scale import gangs_for
from benchmarks.live.summary import floor
from benchmarks.live.windows import MIN_OFFERED, Window, chosen, offered_load
from benchmarks.live.workload import JOB_LABEL, elastic_manifests, job_manifest
from solver_sched.sim.model import TraceJob


def test_each_stack_gets_its_own_signal_and_the_same_pods() -> None:
    plain = job_manifest("kube-scheduler", "j1", "team-a", 4, 8, "high")
    gang = job_manifest("kube-gang", "j1", "team-a", 4, 8, "high")
    ours = job_manifest("solver-sched", "j1", "team-a", 4, 8, "high")
    kueue = job_manifest("kueue", "j1", "team-a", 4, 8, "high")
    assert "scheduling" not in plain["spec"] and "suspend" not in plain["spec"]
    assert gang["spec"]["scheduling"] == {"schedulingPolicy": {"gang": {"minCount": 4}}}
    assert ours["spec"]["scheduling"] == gang["spec"]["scheduling"]
    assert ours["spec"]["template"]["spec"]["schedulerName"] == "solver-sched"
    assert gang["spec"]["template"]["spec"]["schedulerName"] == "default-scheduler"
    assert kueue["spec"]["suspend"] is True
    assert kueue["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    assert "scheduling" not in kueue["spec"]
    for m in (plain, gang, ours, kueue):
        spec = m["spec"]
        assert spec["parallelism"] == spec["completions"] == 4
        pod = spec["template"]["spec"]
        assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
        assert pod["priorityClassName"] == "high"
        assert spec["template"]["metadata"]["labels"] == {JOB_LABEL: "j1"}


def test_scale_gangs_add_up_to_the_pods() -> None:
    assert gangs_for(120) == [8, 16, 32, 64]
    assert gangs_for(130) == [8, 16, 32, 64, 8, 2]
    assert sum(gangs_for(10_000)) == 10_000


def test_p95_is_a_measured_value() -> None:
    xs = [float(i) for i in range(1, 21)]
    assert _pct(xs, 0.95) == 19.0
    assert _pct([3.0], 0.95) == 3.0
    assert _pct([], 0.95) is None


def _s(jct: float, util: float, partial: int = 0, rate: float = 50.0) -> dict[str, object]:
    return {
        "avg_jct_h": jct,
        "p95_jct_h": jct * 2,
        "avg_queue_h": jct / 2,
        "util_alloc": util,
        "util_useful": util,
        "partial_gangs": partial,
        "burst": {"binds_per_s": rate, "first_gang_bind_span_s": 0.5},
    }


def test_ratios_and_targets_against_each_peer() -> None:
    summary = {"kueue": _s(10.0, 0.8), "kube-gang": _s(5.0, 0.9), "solver-sched": _s(4.0, 0.85)}
    r = ratios(summary)
    assert r["kueue"]["avg_jct_h"] == 0.4 and r["kube-gang"]["avg_jct_h"] == 0.8
    lines = targets(summary, 50.0)
    assert "met" in lines[0] and "kueue" in lines[0]
    assert "MISSED" in lines[1]  # 0.8 x, but gang utilization below kube-gang's
    assert lines[2].endswith("met")  # 0 partial gangs
    summary["solver-sched"] = _s(4.0, 0.95, partial=2, rate=40.0)
    lines = targets(summary, 50.0)
    assert lines[1].endswith("met") and "MISSED" in lines[2] and "MISSED" in lines[3]


def test_offered_load_is_the_gpus_held_on_an_unbounded_cluster_over_the_window() -> None:
    jobs = [
        TraceJob("a", arrival=0.0, duration=7200.0, gpus=8),  # the whole hour: 8 GPU-h
        TraceJob("b", arrival=1800.0, duration=900.0, gpus=16),  # 4 GPU-h, inside
        TraceJob("c", arrival=2700.0, duration=3600.0, gpus=4),  # 1 GPU-h of it inside
    ]
    assert offered_load(jobs, 16, 1.0) == (8 + 4 + 1) / 16


def test_the_windows_rule_takes_the_first_candidates_that_must_queue() -> None:
    picked = chosen(1)
    assert [w.trace for w, _ in picked] == ["itp04", "philly"]
    for w, x in picked:
        assert x >= MIN_OFFERED
        assert x == offered_load(w.jobs(), w.nodes * 8, w.window_h)
    first = picked[0][0]
    earlier = Window("itp04", "0")  # the first candidate: too light to build a queue
    assert offered_load(earlier.jobs(), 512, earlier.window_h) < MIN_OFFERED
    assert first.start == str(5 * 86400)


def test_an_elastic_job_is_a_podgroup_of_the_study_and_a_job_of_max_pods() -> None:
    group, job = elastic_manifests("j7", "team-a", 2, 8, 8, "low", "5s")
    anns = group["metadata"]["annotations"]
    assert group["spec"]["schedulingPolicy"]["gang"]["minCount"] == 2
    assert anns["solver-sched.io/max-member"] == "8"
    assert anns["solver-sched.io/size-policy"] == "power-of-two"
    assert anns["solver-sched.io/cooldown"] == "5s"
    spec = job["spec"]
    assert spec["parallelism"] == spec["completions"] == 8
    assert "scheduling" not in spec  # the Job controller makes no gang objects of its own
    assert spec["template"]["spec"]["schedulingGroup"] == {"podGroupName": "j7"}
    assert spec["template"]["spec"]["schedulerName"] == "solver-sched"
    assert spec["successPolicy"] == {"rules": [{"succeededCount": 1}]}


def test_an_elastic_run_trains_at_powers_of_two_with_the_speedup_model() -> None:
    spec = TraceJob("e", 0.0, 3600.0, gpus=32, gpus_per_pod=8, min_pods=4, max_pods=8)
    run = JobRun(spec, "j0", "default", spec.duration, elastic=True)
    assert run.gang == 4
    assert [n for n in range(10) if run.allowed(n)] == [4, 8]
    assert run.speed(4) == 1.0
    assert 1.41 < run.speed(8) < 1.42  # sqrt(2): the trace study's alpha 0.5
    assert run.speed(2) == 0.5


def test_the_floor_is_every_job_run_at_its_shortest_from_arrival() -> None:
    per_job = [
        {"duration_h": 2.0, "min_run_h": 2.0},  # rigid
        {"duration_h": 2.0, "min_run_h": 1.0},  # elastic, at its max
    ]
    assert floor(per_job, 2.0) == 0.75  # mean 1.5 h over the peer's 2 h
    assert floor(per_job, None) is None


def test_kueue_queue_shares_add_up_to_the_cluster() -> None:
    # each trace queue's ClusterQueue gets its share; together exactly the cluster, never more
    for total, parts in ((512, 7), (512, 1), (40, 3), (8, 8)):
        s = shares(total, parts)
        assert sum(s) == total and len(s) == parts and max(s) - min(s) <= 1


def test_kueue_follows_the_trace_clock() -> None:
    # Kueue's PodsReady timeout and its client rate are per trace second: at 10x compression its
    # 600 trace-second timeout is 60 wall seconds and its 50 requests per trace second are 500
    # per wall second (at 50 wall QPS its admitted Jobs stayed suspended past the timeout)
    jobs = [
        TraceJob(f"j{i}", arrival=0.0, duration=60.0, gpus=1, queue=q)
        for i, q in enumerate(("a", "b", "c"))
    ]
    spec = stage_spec("kueue", jobs, 4, ReplayParams(compress=10.0))
    assert spec.kueue_pods_ready_timeout == "60s" and spec.kueue_qps == 500.0
    assert [q.gpus for q in spec.queues] == [11, 11, 10]
    assert stage_spec("kueue", jobs, 4, ReplayParams(compress=10.0, kueue_qps=50.0)).kueue_qps == 50


def test_the_oracle_rows_hold_the_bound_below_every_policy() -> None:
    w = Window("itp04", "3456000", load=32.0)  # 87 jobs: a second
    r = row(w)
    assert r["jobs"] == len(w.jobs())
    assert 0 < r["bound"] <= min(1.0, r["sjf-oracle"])
