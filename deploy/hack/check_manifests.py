#!/usr/bin/env python3
"""Checks the manifests under deploy/ (kubectl/kustomize are not needed).

Offline (always):
  * every YAML file parses;
  * every kustomization's resources and patches exist, and it renders (a small kustomize subset:
    resources, directories with a kustomization, JSON 6902 patches) without duplicate objects;
  * the ConfigMap's config.yaml equals the defaults of solver_sched/config/schema.py, key for key;
  * the Deployment and Dockerfile agree on image, user, port and arguments;
  * the generated ElasticQuotaTree CRD is up to date;
  * the samples load into solver-sched's snapshot with the intended gangs, sizes and queues.

Against an API server (--kubeconfig): server-side applies deploy/crds, waits until every CRD is
Established, then applies deploy/base and deploy/samples (and the dev overlay as a dry run), runs
the Deployment's pod template through admission as a dry run (Pod Security "restricted"), and
checks the ServiceAccount's RBAC with SubjectAccessReviews: every verb the scheduler needs is
allowed and a list of things it must not do is denied.

    .venv/bin/python deploy/hack/check_manifests.py
    .venv/bin/python deploy/hack/check_manifests.py --kubeconfig /tmp/ktest/kubeconfig
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parent.parent
REPO = DEPLOY.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

FIELD_MANAGER = "solver-sched-check"
SA = "system:serviceaccount:solver-sched:solver-sched"

failures: list[str] = []


def check(ok: bool, what: str) -> bool:
    print(("  ok    " if ok else "  FAIL  ") + what)
    if not ok:
        failures.append(what)
    return ok


# -- offline ----------------------------------------------------------------------------------


def load_docs(path: Path) -> list[Any]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def parse_all() -> None:
    print("YAML parses")
    for path in sorted(DEPLOY.rglob("*.yaml")):
        try:
            docs = load_docs(path)
            check(bool(docs), f"{path.relative_to(DEPLOY)}: {len(docs)} document(s)")
        except yaml.YAMLError as exc:
            check(False, f"{path.relative_to(DEPLOY)}: {exc}")


def _split_path(p: str) -> list[str]:
    return [part.replace("~1", "/").replace("~0", "~") for part in p.split("/")[1:]]


def json6902(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """add / replace / remove, enough for the overlays here."""
    obj = copy.deepcopy(obj)
    for op in ops:
        *parents, last = _split_path(op["path"])
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        key: Any = int(last) if isinstance(node, list) and last != "-" else last
        if op["op"] in ("add", "replace"):
            if isinstance(node, list) and op["op"] == "add":
                node.insert(len(node) if key == "-" else key, op["value"])
            else:
                node[key] = op["value"]
        elif op["op"] == "remove":
            del node[key]
        else:
            raise ValueError(f"unsupported JSON patch op {op['op']}")
    return obj


def _matches(obj: dict[str, Any], target: dict[str, Any]) -> bool:
    group, _, version = obj["apiVersion"].rpartition("/")
    meta = obj.get("metadata", {})
    want = {
        "group": group,
        "version": version,
        "kind": obj.get("kind"),
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
    }
    return all(want[k] == v for k, v in target.items() if k in want)


def render(kdir: Path) -> list[dict[str, Any]]:
    """Objects of a kustomization directory; raises on a missing file."""
    kust = yaml.safe_load((kdir / "kustomization.yaml").read_text())
    objs: list[dict[str, Any]] = []
    for res in kust.get("resources", []):
        p = (kdir / res).resolve()
        if p.is_dir():
            if not (p / "kustomization.yaml").exists():
                raise FileNotFoundError(f"{p} has no kustomization.yaml")
            objs += render(p)
        elif p.is_file():
            objs += load_docs(p)
        else:
            raise FileNotFoundError(str(p))
    for patch in kust.get("patches", []):
        ops = load_docs(kdir / patch["path"])[0]
        if not isinstance(ops, list):
            raise ValueError(f"{patch['path']}: only JSON 6902 patches are supported here")
        hits = [i for i, o in enumerate(objs) if _matches(o, patch.get("target", {}))]
        if len(hits) != 1:
            raise ValueError(f"{patch['path']}: target matches {len(hits)} objects")
        objs[hits[0]] = json6902(objs[hits[0]], ops)
    return objs


def obj_id(o: dict[str, Any]) -> str:
    meta = o.get("metadata", {})
    ns = meta.get("namespace")
    return f"{o['kind']} {o['apiVersion']} {ns + '/' if ns else ''}{meta.get('name')}"


def check_kustomizations() -> dict[str, list[dict[str, Any]]]:
    print("kustomizations")
    rendered = {}
    for kfile in sorted(DEPLOY.rglob("kustomization.yaml")):
        kdir = kfile.parent
        rel = str(kdir.relative_to(DEPLOY))
        kust = yaml.safe_load(kfile.read_text())
        for res in kust.get("resources", []):
            p = kdir / res
            check(p.exists(), f"{rel}: resource {res} exists")
        for patch in kust.get("patches", []):
            check((kdir / patch["path"]).exists(), f"{rel}: patch {patch['path']} exists")
        listed = {(kdir / r).resolve() for r in kust.get("resources", [])}
        listed |= {(kdir / p["path"]).resolve() for p in kust.get("patches", [])}
        for f in sorted(kdir.glob("*.yaml")):
            if f.name != "kustomization.yaml":
                check(f.resolve() in listed, f"{rel}: {f.name} is listed in the kustomization")
        try:
            objs = render(kdir)
        except (OSError, ValueError, KeyError) as exc:
            check(False, f"{rel}: renders ({exc})")
            continue
        ids = [obj_id(o) for o in objs]
        check(len(ids) == len(set(ids)), f"{rel}: renders {len(objs)} objects, no duplicates")
        rendered[rel] = objs
    return rendered


def find(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name)


def check_configmap(base: list[dict[str, Any]]) -> None:
    print("ConfigMap solver-sched-config vs solver_sched/config/schema.py")
    from solver_sched.config.schema import SchedulerConfig, config_from_mapping

    cm = find(base, "ConfigMap", "solver-sched-config")
    check(set(cm["data"]) == {"config.yaml"}, "one key, config.yaml")
    data = yaml.safe_load(cm["data"]["config.yaml"])
    parsed = config_from_mapping(data, "ConfigMap solver-sched/solver-sched-config")
    check(parsed == SchedulerConfig(), "validates and equals the built-in defaults")
    defaults = SchedulerConfig().model_dump(by_alias=True, mode="json")
    check(data == defaults, "every field present with the schema's alias and default value")


def check_deployment(base: list[dict[str, Any]], dev: list[dict[str, Any]] | None) -> None:
    print("Deployment / Service / Dockerfile")
    dep = find(base, "Deployment", "solver-sched")
    spec = dep["spec"]["template"]["spec"]
    c = spec["containers"][0]
    check(dep["spec"]["replicas"] == 2, "2 replicas")
    check(
        c["args"]
        == [
            "run",
            "--leader-elect",
            "--config-map",
            "solver-sched-config",
            "--namespace",
            "solver-sched",
            "--metrics-addr",
            ":8080",
        ],
        "args: run --leader-elect --config-map solver-sched-config --namespace solver-sched "
        "--metrics-addr :8080",
    )
    check(c["image"] == "solver-sched:0.1.0", "image solver-sched:0.1.0")
    sc = c["securityContext"]
    check(
        sc["runAsNonRoot"]
        and sc["runAsUser"] == 65532
        and sc["readOnlyRootFilesystem"]
        and sc["allowPrivilegeEscalation"] is False
        and sc["capabilities"]["drop"] == ["ALL"]
        and sc["seccompProfile"]["type"] == "RuntimeDefault",
        "container securityContext hardened",
    )
    env = {e["name"]: e for e in c["env"]}
    check(
        env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name",
        "POD_NAME from metadata.name",
    )
    port = {p["name"]: p["containerPort"] for p in c["ports"]}
    check(port == {"metrics": 8080}, "container port metrics 8080")
    check(
        c["livenessProbe"]["httpGet"]["path"] == "/healthz"
        and c["readinessProbe"]["httpGet"]["path"] == "/readyz",
        "probes /healthz and /readyz",
    )
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    vols = {v["name"]: v for v in spec["volumes"]}
    check("emptyDir" in vols.get(mounts.get("/tmp", ""), {}), "/tmp is an emptyDir")
    check(spec["serviceAccountName"] == "solver-sched", "runs as ServiceAccount solver-sched")
    svc = find(base, "Service", "solver-sched-metrics")
    sel = svc["spec"]["selector"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    check(all(labels.get(k) == v for k, v in sel.items()), "Service selects the scheduler pods")
    check(
        svc["spec"]["ports"]
        == [{"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}],
        "Service port 8080 named metrics",
    )
    docker = (DEPLOY / "Dockerfile").read_text()
    check("USER 65532:65532" in docker, "Dockerfile runs as 65532")
    check(
        'ENTRYPOINT ["solver-sched"]' in docker and 'CMD ["run"]' in docker,
        "Dockerfile ENTRYPOINT solver-sched, CMD run",
    )
    check(
        "FROM ${PYTHON_IMAGE} AS build" in docker and "ARG PYTHON_IMAGE=python:3.11-slim" in docker,
        "Dockerfile multi-stage on python:3.11-slim",
    )
    if dev is not None:
        d = find(dev, "Deployment", "solver-sched")
        dc = d["spec"]["template"]["spec"]["containers"][0]
        check(
            d["spec"]["replicas"] == 1 and "--leader-elect" not in dc["args"],
            "dev overlay: 1 replica, no leader election",
        )


def check_generated_crd() -> None:
    print("generated CRD")
    import gen_elasticquotatree_crd as gen

    check(gen.main(["--check"]) == 0, "scheduling.sigs.k8s.io_elasticquotatrees.yaml is up to date")


def _pods_from(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods the Job and the Training Operator would create for the samples."""
    pods = []
    for o in objs:
        ns = o["metadata"].get("namespace", "default")
        name = o["metadata"]["name"]
        if o["kind"] == "Job":
            tmpl, n, label = (
                o["spec"]["template"],
                o["spec"]["completions"],
                "batch.kubernetes.io/job-completion-index",
            )
            groups = [(f"{name}-{i}", tmpl, {label: str(i), "job-name": name}) for i in range(n)]
        elif o["kind"] == "PyTorchJob":
            groups = []
            for rtype, rs in o["spec"]["pytorchReplicaSpecs"].items():
                for i in range(rs["replicas"]):
                    groups.append(
                        (
                            f"{name}-{rtype.lower()}-{i}",
                            rs["template"],
                            {
                                "training.kubeflow.org/job-name": name,
                                "training.kubeflow.org/replica-type": rtype.lower(),
                                "training.kubeflow.org/replica-index": str(i),
                            },
                        )
                    )
        else:
            continue
        for pod_name, tmpl, extra in groups:
            meta = copy.deepcopy(tmpl.get("metadata", {}))
            meta.update(name=pod_name, namespace=ns, creationTimestamp="2026-01-01T11:00:00Z")
            meta["labels"] = {**meta.get("labels", {}), **extra}
            pods.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": meta,
                    "spec": copy.deepcopy(tmpl["spec"]),
                    "status": {"phase": "Pending"},
                }
            )
    return pods


def check_samples(samples: list[dict[str, Any]]) -> None:
    print("samples load into solver-sched's snapshot")
    from solver_sched.io.kube_snapshot import snapshot_from_objects

    snap = snapshot_from_objects(samples + _pods_from(samples))
    check(not snap.errors, f"no input errors {list(snap.errors) if snap.errors else ''}")
    trainer = snap.jobs.get("team-a/trainer")
    check(
        trainer is not None and (trainer.min_pods, trainer.max_pods) == (8, 8),
        "team-a/trainer: rigid gang of 8",
    )
    el = snap.jobs.get("team-b/elastic")
    check(
        el is not None
        and (el.min_pods, el.max_pods) == (2, 256)
        and el.size_policy.value == "power-of-two"
        and el.cooldown.total_seconds() == 600,
        "team-b/elastic: 2..256 workers, power-of-two, cooldown 10m",
    )
    q = snap.quota.queues if hasattr(snap.quota, "queues") else {}
    check(set(q) == {"root", "team-a", "team-b"}, "quota tree: root, team-a, team-b")
    if "team-a" in q:
        check(q["team-a"].max_jobs == 1, "team-a max-jobs 1")
        check(q["team-b"].max.get("nvidia.com/gpu") == 4, "team-b max 4 GPUs")


# -- against an API server --------------------------------------------------------------------


class Server:
    def __init__(self, kubeconfig: str) -> None:
        from kubernetes import client, config
        from kubernetes.dynamic import DynamicClient

        config.load_kube_config(kubeconfig)
        self.client = client
        self.api = client.ApiClient()
        self.dyn = DynamicClient(self.api)

    def resource(self, obj: dict[str, Any]) -> Any:
        return self.dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])

    def apply(self, obj: dict[str, Any], dry_run: bool = False) -> None:
        kw: dict[str, Any] = {"field_manager": FIELD_MANAGER, "force_conflicts": True}
        if dry_run:
            kw["dry_run"] = "All"
        res = self.resource(obj)
        self.dyn.server_side_apply(res, body=obj, namespace=obj["metadata"].get("namespace"), **kw)

    def apply_all(self, label: str, objs: list[dict[str, Any]], dry_run: bool = False) -> None:
        print(f"server-side apply {label}{' (dry run)' if dry_run else ''}")
        for o in objs:
            try:
                self.apply(o, dry_run)
                check(True, f"accepted: {obj_id(o)}")
            except Exception as exc:  # ApiException, ResourceNotFoundError, ...
                body = getattr(exc, "body", None) or str(exc)
                check(False, f"rejected: {obj_id(o)}: {str(body)[:600]}")

    def wait_established(self, crds: list[dict[str, Any]], timeout: float = 30) -> None:
        ext = self.client.ApiextensionsV1Api(self.api)
        for crd in crds:
            name = crd["metadata"]["name"]
            deadline = time.monotonic() + timeout
            conds: dict[str, str] = {}
            while time.monotonic() < deadline:
                got = ext.read_custom_resource_definition(name)
                conds = {c.type: c.status for c in (got.status.conditions or [])}
                if conds.get("Established") == "True":
                    break
                time.sleep(0.2)
            check(conds.get("Established") == "True", f"{name} Established {conds}")
            check(conds.get("NonStructuralSchema") is None, f"{name} has a structural schema")
        self.dyn.resources.invalidate_cache()

    def pod_admission(self, dep: dict[str, Any]) -> None:
        print("the Deployment's pod template through admission (dry run, Pod Security restricted)")
        tmpl = dep["spec"]["template"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                **tmpl["metadata"],
                "name": "solver-sched-dryrun",
                "namespace": dep["metadata"]["namespace"],
            },
            "spec": tmpl["spec"],
        }
        core = self.client.CoreV1Api(self.api)
        try:
            _, _, headers = core.create_namespaced_pod_with_http_info(
                dep["metadata"]["namespace"], pod, dry_run="All"
            )
            warning = headers.get("Warning") if headers else None
            check(not warning, f"pod admitted without warnings {warning or ''}")
        except Exception as exc:
            check(False, f"pod rejected: {getattr(exc, 'body', exc)}")
        # and a pod that breaks "restricted" must be refused in this namespace
        bad = copy.deepcopy(pod)
        bad["metadata"]["name"] = "solver-sched-dryrun-root"
        bad["spec"]["securityContext"] = {}
        bad["spec"]["containers"][0]["securityContext"] = {"privileged": True}
        try:
            core.create_namespaced_pod(dep["metadata"]["namespace"], bad, dry_run="All")
            check(False, "a privileged pod is refused in namespace solver-sched")
        except Exception as exc:
            check(
                getattr(exc, "status", None) == 403,
                "a privileged pod is refused in namespace solver-sched (PodSecurity)",
            )

    def can(
        self,
        verb: str,
        resource: str,
        group: str = "",
        namespace: str | None = None,
        subresource: str | None = None,
        name: str | None = None,
    ) -> bool:
        c = self.client
        attrs = c.V1ResourceAttributes(
            verb=verb,
            resource=resource,
            group=group,
            namespace=namespace,
            subresource=subresource,
            name=name,
        )
        review = c.V1SubjectAccessReview(
            spec=c.V1SubjectAccessReviewSpec(
                user=SA,
                groups=[
                    "system:serviceaccounts",
                    "system:serviceaccounts:solver-sched",
                    "system:authenticated",
                ],
                resource_attributes=attrs,
            )
        )
        got = c.AuthorizationV1Api(self.api).create_subject_access_review(review)
        return bool(got.status.allowed)

    def rbac(self) -> None:
        print(f"RBAC of {SA}")
        sp_groups = [
            "scheduling.x-k8s.io",
            "scheduling.sigs.k8s.io",
            "scheduling.volcano.sh",
            "scheduling.k8s.io",
        ]
        allowed: list[tuple[str, str, str, str | None, str | None, str | None]] = []
        # (verb, group, resource, subresource, namespace, name)
        for v in ("get", "list", "watch"):
            allowed += [
                (v, "", "pods", None, None, None),
                (v, "", "pods", None, "team-a", None),
                (v, "", "nodes", None, None, None),
                (v, "scheduling.k8s.io", "priorityclasses", None, None, None),
                (v, "scheduling.sigs.k8s.io", "elasticquotatrees", None, None, None),
                (v, "kubeflow.org", "pytorchjobs", None, None, None),
                (v, "kueue.x-k8s.io", "topologies", None, None, None),
            ]
        allowed += [
            ("create", "", "pods", "binding", "team-a", "p"),
            ("create", "", "pods", "eviction", "team-a", "p"),
            ("patch", "", "pods", "status", "team-a", "p"),
            ("patch", "kubeflow.org", "pytorchjobs", None, "team-a", "j"),  # last-scale-time
            ("get", "policy", "poddisruptionbudgets", None, "team-a", None),  # a job's budgets
            ("list", "policy", "poddisruptionbudgets", None, "team-a", None),
            ("watch", "policy", "poddisruptionbudgets", None, "team-a", None),  # planned on
        ]
        allowed.append(("create", "", "events", None, "team-a", None))
        for g in sp_groups:
            for v in ("get", "list", "watch", "patch"):
                allowed.append((v, g, "podgroups", None, "team-a", None))
            allowed.append(("patch", g, "podgroups", "status", "team-a", "pg"))
        allowed += [("create", "coordination.k8s.io", "leases", None, "solver-sched", None)]
        for v in ("get", "update", "patch"):
            allowed.append(
                (v, "coordination.k8s.io", "leases", None, "solver-sched", "solver-sched")
            )
        allowed += [
            ("get", "", "configmaps", None, "solver-sched", "solver-sched-config"),
            ("list", "", "configmaps", None, "solver-sched", None),
            ("watch", "", "configmaps", None, "solver-sched", None),
        ]
        for v, g, r, sub, ns, name in allowed:
            check(
                self.can(v, r, g, ns, sub, name),
                f"allowed: {v} {r}{'/' + sub if sub else ''}{'.' + g if g else ''}"
                f"{' in ' + ns if ns else ''}{' ' + name if name else ''}",
            )
        denied = [
            ("create", "", "pods", None, "team-a", None),
            ("delete", "", "pods", None, "team-a", "p"),
            ("update", "", "pods", None, "team-a", "p"),
            ("patch", "", "pods", None, "team-a", "p"),
            ("update", "", "pods", "status", "team-a", "p"),
            ("patch", "", "nodes", None, None, "n"),
            ("get", "", "secrets", None, "solver-sched", None),
            ("list", "", "secrets", None, None, None),
            ("get", "", "configmaps", None, "solver-sched", "other"),
            ("get", "", "configmaps", None, "team-a", "solver-sched-config"),
            ("list", "", "configmaps", None, None, None),
            ("update", "", "configmaps", None, "solver-sched", "solver-sched-config"),
            ("get", "coordination.k8s.io", "leases", None, "solver-sched", "other"),
            ("update", "coordination.k8s.io", "leases", None, "solver-sched", "other"),
            ("create", "coordination.k8s.io", "leases", None, "kube-system", None),
            ("delete", "coordination.k8s.io", "leases", None, "solver-sched", "solver-sched"),
            ("create", "scheduling.x-k8s.io", "podgroups", None, "team-a", None),
            ("delete", "scheduling.x-k8s.io", "podgroups", None, "team-a", "pg"),
            ("patch", "scheduling.sigs.k8s.io", "elasticquotatrees", None, "kube-system", "t"),
            ("update", "kubeflow.org", "pytorchjobs", None, "team-a", "j"),
            ("update", "kubeflow.org", "pytorchjobs", "scale", "team-a", "j"),
            ("create", "apiextensions.k8s.io", "customresourcedefinitions", None, None, None),
            ("create", "policy", "poddisruptionbudgets", None, "team-a", None),
            ("update", "policy", "poddisruptionbudgets", None, "team-a", "pdb"),
            ("create", "rbac.authorization.k8s.io", "clusterrolebindings", None, None, None),
            ("delete", "", "events", None, "team-a", "e"),
            # verbs the scheduler never uses (the role was trimmed to those it does)
            ("patch", "", "events", None, "team-a", "e"),
            ("create", "events.k8s.io", "events", None, "team-a", None),
            ("update", "scheduling.x-k8s.io", "podgroups", None, "team-a", "pg"),
            ("update", "scheduling.x-k8s.io", "podgroups", "status", "team-a", "pg"),
            ("get", "apiextensions.k8s.io", "customresourcedefinitions", None, None, None),
        ]
        for v, g, r, sub, ns, name in denied:
            check(
                not self.can(v, r, g, ns, sub, name),
                f"denied:  {v} {r}{'/' + sub if sub else ''}{'.' + g if g else ''}"
                f"{' in ' + ns if ns else ''}{' ' + name if name else ''}",
            )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--kubeconfig", help="also apply to this API server and check RBAC")
    args = ap.parse_args()

    parse_all()
    rendered = check_kustomizations()
    base = rendered.get("base", [])
    check_configmap(base)
    check_deployment(base, rendered.get("overlays/dev"))
    check_generated_crd()
    check_samples(rendered.get("samples", []))

    if args.kubeconfig:
        srv = Server(args.kubeconfig)
        crds = rendered.get("crds", [])
        srv.apply_all("deploy/crds", crds)
        srv.wait_established(crds)
        srv.apply_all("deploy/base", base)
        srv.apply_all("deploy/overlays/dev", rendered.get("overlays/dev", []), dry_run=True)
        srv.apply_all("deploy/samples", rendered.get("samples", []))
        srv.pod_admission(find(base, "Deployment", "solver-sched"))
        srv.rbac()

    print()
    if failures:
        print(f"{len(failures)} check(s) failed:")
        for f in failures:
            print("  - " + f)
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
