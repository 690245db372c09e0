"""A gang never spans clusters. With several clusters, w[j,k] picks one and z[j,p,k] carries its
new pods there:

    sum_k w[j,k] = run_j                     z[j,p,k] <= need[j,p] * w[j,k]
    sum_k z[j,p,k] = sum_s new[j,s,p] y[j,s]
    sum_{c in k} x[p,c] = sum_j z[j,p,k]     for each shape p and cluster k

A job with one size to start or grow to (a rigid gang, a partial one) has no z: its new pods in
cluster k are new[j,p] * w[j,k], exactly, and supply takes them from w. For a counted type
(formulation/aggregate.py) w counts its members in k. Running pods pin a job to the cluster of
their nodes (prepare).
"""

from __future__ import annotations

from collections import defaultdict

from solver_sched.formulation.linear import LinearModel, Terms
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.variables import Vars, rigid_size


def add(problem: Problem, model: LinearModel, v: Vars) -> None:
    if len(problem.clusters) <= 1:
        return
    ws: dict[int, Terms] = defaultdict(list)  # per job, in the order of sorted (job, cluster)
    for (j, _k), var in sorted(v.w.items()):
        ws[j].append((var, 1))
    for j, jm in enumerate(problem.jobs):
        model.add(f"cluster[{jm.name}]", ws[j] + [(y, -1) for y in v.y[j][1:]], 0, 0)
    per_job: dict[tuple[int, int], Terms] = defaultdict(list)
    per_cluster: dict[tuple[int, str], Terms] = defaultdict(list)
    for (j, sid, k), var in v.z.items():
        model.add(f"in_cluster[{j},{sid},{k}]", [(var, 1), (v.w[(j, k)], -model.ub[var])], None, 0)
        per_job[(j, sid)].append((var, 1))
        per_cluster[(sid, k)].append((var, -1))
    for j, jm in enumerate(problem.jobs):
        rigid = rigid_size(jm)
        if rigid is not None:  # one size to reach: its new pods in k are new * w[j,k]
            for sid, n in jm.options[rigid].new.items():
                for k in sorted(set(jm.clusters) or set(problem.clusters)):
                    per_cluster[(sid, k)].append((v.w[(j, k)], -n))
            continue
        for opt, o in enumerate(jm.options):
            for sid, n in o.new.items():
                per_job[(j, sid)].append((v.y[j][opt], -n))
    for (j, sid), terms in sorted(per_job.items()):
        model.add(f"place[{problem.jobs[j].name},{sid}]", terms, 0, 0)
    for (sid, cid), var in v.x.items():
        per_cluster[(sid, problem.classes[cid].cluster)].append((var, 1))
    for (sid, k), terms in sorted(per_cluster.items()):
        model.add(f"supply[{sid},{k}]", terms, 0, 0)
