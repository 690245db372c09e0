"""Binding throughput on a real API server: many gangs decided in one cycle, bound at the configured
QPS, the most urgent gang first, while scheduling goes on.

    python -m benchmarks.binding [--pods 1024] [--gang 64] [--qps 50] [--burst 100] [--runs 3]

Each run starts a fresh kube-testenv API server, creates ``pods / gang`` gangs of ``gang`` one-GPU
pods (all but one at low priority; the high-priority gang is named to sort last) and the nodes to
hold them, then starts the controller with its defaults. A pod watch records when each pod is
bound. Reported per run, from the start of the first cycle: that cycle's duration (the scheduling
thread), when the high-priority gang was fully bound, when every pod was, and the bind rate after
the burst as a ratio of the configured QPS. The baseline is the token bucket itself: a gang that
fits in the burst binds at once, the rest at ``qps`` per second.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from solver_sched.io import manifests as m
from solver_sched.kube.api import ApiError, KubeApi, load_client
from solver_sched.kube.controller import Controller, RunOptions
from solver_sched.kube.sandbox import ApiServer, Kube, wait_for

ROOT = Path(__file__).resolve().parents[1]
BINARY = ROOT / ".cache" / "bin" / "kube-testenv"


def _crds(kube: Kube) -> None:
    for path in sorted((ROOT / "deploy" / "crds").glob("*.yaml")):
        for obj in kube.load(path):
            if obj.get("kind") == "CustomResourceDefinition":
                kube.apply(obj)
    time.sleep(2)  # Established


def _watch_binds(api: KubeApi, seen: dict[str, float], stop: threading.Event) -> None:
    version = api.get("/api/v1/namespaces/default/pods")["metadata"]["resourceVersion"]
    while not stop.is_set():
        try:
            query = {"resourceVersion": version, "timeoutSeconds": 5}
            for event in api.watch("/api/v1/namespaces/default/pods", query, timeout=30):
                obj = event.get("object") or {}
                version = obj.get("metadata", {}).get("resourceVersion", version)
                name = obj.get("metadata", {}).get("name", "")
                if obj.get("spec", {}).get("nodeName") and name not in seen:
                    seen[name] = time.monotonic()
        except ApiError:
            time.sleep(0.1)


def one_run(pods: int, gang: int, qps: float, burst: int, work: Path) -> dict[str, Any]:
    server = ApiServer(BINARY, work / "env", work / "apiserver.log")
    info = server.start()
    api = KubeApi(load_client(info.kubeconfig))
    kube = Kube(api)
    try:
        _crds(kube)
        for name, value in (("low", 0), ("high", 1000)):
            kube.create(
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                }
            )
        for i in range(-(-pods // 8)):
            kube.create(m.node(f"n{i:04d}", gpus=8, cpu="64", memory="512Gi"))
        gangs = pods // gang
        for g in range(gangs - 1):
            kube.create_all(
                m.gang(f"low-{g:03d}", gang, cpu="1", memory="1Gi", priority_class="low")
            )
        kube.create_all(m.gang("zz-high", gang, cpu="1", memory="1Gi", priority_class="high"))
        seen: dict[str, float] = {}
        stop = threading.Event()
        watcher = threading.Thread(target=_watch_binds, args=(api, seen, stop), daemon=True)
        watcher.start()
        controller = Controller(
            RunOptions(kubeconfig=info.kubeconfig, qps=qps, burst=burst, cycle_interval=2.0)
        )
        cycles: list[tuple[float, float]] = []
        real_cycle = controller.cycle

        def timed_cycle() -> Any:
            t = time.monotonic()
            out = real_cycle()
            cycles.append((t, time.monotonic()))
            return out

        controller.cycle = timed_cycle  # type: ignore[method-assign]
        controller.start()
        total = gangs * gang
        wait_for("every pod bound", lambda: len(seen) >= total, timeout=60 + 2 * total / qps)
        stop.set()
        controller.shutdown()
        start = cycles[0][0]
        high = max(t for n, t in seen.items() if n.startswith("zz-high-"))
        times = sorted(seen.values())
        after_burst = times[burst:] if len(times) > burst + 1 else times
        rate = (len(after_burst) - 1) / max(1e-9, after_burst[-1] - after_burst[0])
        return {
            "first_cycle_s": cycles[0][1] - cycles[0][0],
            "cycles_while_binding": sum(1 for t0, _ in cycles if t0 < times[-1]),
            "high_gang_bound_s": high - start,
            "high_gang_ideal_s": max(0, gang - burst) / qps,
            "all_bound_s": times[-1] - start,
            "all_ideal_s": max(0, total - burst) / qps,
            "rate_vs_qps": rate / qps,
        }
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pods", type=int, default=1024, help="pods in all (gangs of --gang)")
    p.add_argument("--gang", type=int, default=64, help="pods per gang")
    p.add_argument("--qps", type=float, default=50.0, help="the controller's --qps")
    p.add_argument("--burst", type=int, default=100, help="the controller's --burst")
    p.add_argument("--runs", type=int, default=3, help="fresh API servers, one after another")
    p.add_argument("--out", type=Path, help="write the runs as JSON here")
    args = p.parse_args(argv)
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(one_run(args.pods, args.gang, args.qps, args.burst, Path(tmp)))
        print(f"run {i + 1}: " + ", ".join(f"{k} {v:.3g}" for k, v in runs[-1].items()))
    what = f"{args.pods} pods, qps {args.qps}, burst {args.burst}"
    print(f"\nmedian (worst) over {len(runs)} runs, {what}")
    for key in runs[0]:
        values = [r[key] for r in runs]
        worst = min(values) if key == "rate_vs_qps" else max(values)
        print(f"  {key:22s} {statistics.median(values):8.3f}  ({worst:.3f})")
    if args.out:
        args.out.write_text(json.dumps(runs, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
