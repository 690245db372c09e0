"""Topology: required gangs in one domain, preferred gangs in few, whole domains kept free.

For a gang j with a request at level L (domains D of L; a counted type never has one):
    z[j,p,D] <= need[j,p] * d[j,D]                       its new pods of shape p in D
    sum_D z[j,p,D] = sum_s new[j,s,p] y[j,s]             all of them somewhere
    required:   sum_D d[j,D] = run_j                     one domain (its running pods' one,
                                                         even with no class there for new pods)
    preferred:  d[j,D] <= b[j,E]  for E above D          the broader domains it touches
                zo[j,p] new pods on nodes the level does not label (placement puts them
                there when no domain has room), supplied by the classes of such nodes,
                each costing 2W like a new domain (band: as many domains as pods)
A required gang whose running pods are in no one domain (split before the request, or on
nodes outside every domain) gets no d: y[j,s] = 0 for every size s > 0 but its size now and
the shrinks that keep it in one domain (``Problem.split``), as placement and the checker allow.
and for every asked level L', domain E of it and shape p, the classes of E supply the pods the
gangs placed inside E:
    sum_{c in E} x[p,c] >= sum_{j, D inside E} z[j,p,D]
Elastic band: topology_spread  -2W d[j,D] - W b[j,E] (domains it did not hold already: the
first one costs too, so of two gangs of equal value the one that needs fewer domains wins), and
fragmentation  +F GPUs(E) e[E] for each domain E free now, with
    sum_{p, c in E} gpus[p] x[p,c] + GPUs(E) e[E] <= GPUs(E)   (e[E] = 1 only if E stays empty).
"""

from __future__ import annotations

from collections import defaultdict

from solver_sched.domain import resources as res
from solver_sched.domain.topology import Mode
from solver_sched.formulation.linear import LinearModel, Terms
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.variables import Vars, demand


def add(problem: Problem, model: LinearModel, v: Vars) -> None:
    need = demand(problem)
    index = {jm.name: j for j, jm in enumerate(problem.jobs)}
    inside: dict[tuple[int, str, tuple[str, ...]], Terms] = defaultdict(list)  # (p, L', E)
    # per (shape, level): the domains of the classes it may use, in one pass over x (a scan of
    # x per gang was 6 of the XL model's seconds with topology on)
    usable: dict[tuple[int, str], set[tuple[str, ...]]] = defaultdict(set)
    outside: dict[tuple[int, str], Terms] = defaultdict(list)  # (p, L): classes in no domain
    levels = {a.key for a in problem.asks.values() if a.mode is Mode.PREFERRED}
    for (sid, cid), var in v.x.items():
        held_by = problem.class_domain.get(cid, {})
        for level, dom in held_by.items():
            usable[(sid, level)].add(dom)
        for level in levels - held_by.keys():
            outside[(sid, level)].append((var, 1))
    placed_outside: dict[tuple[int, str], Terms] = defaultdict(list)
    for name, ask in sorted(problem.asks.items()):
        j = index.get(name)
        split = problem.split.get(name)
        if j is not None and split is not None:  # in no one domain: only the sizes it allows
            jm = problem.jobs[j]
            sizes = [o.size for o in jm.options]
            barred = [(v.y[j][k], 1) for k, s in enumerate(sizes) if s and s not in split]
            if barred:
                model.add(f"split[{name}]", barred, 0, 0)
            continue
        if j is None or not need.get(j):
            continue
        jm = problem.jobs[j]
        run = [(y, -1) for y in v.y[j][1:]]
        held = problem.held.get(name, frozenset())
        reach = set().union(*(usable.get((sid, ask.key), ()) for sid in need[j]))
        if ask.mode is Mode.REQUIRED and held:
            # its running pods' one domain, even where no class of it takes new pods (a
            # cordoned node's rack): one_domain then keeps it there, at most at its size now
            reach = {d for d in held if d is not None}
        per_shape: dict[int, Terms] = defaultdict(list)
        ds: Terms = []
        for d in sorted(reach):
            dv = model.var(f"d[{name},{'/'.join(d)}]", 0, 1)
            v.d[(j, d)] = dv
            ds.append((dv, 1))
            for sid, n in sorted(need[j].items()):
                z = model.var(f"zt[{name},{sid},{'/'.join(d)}]", 0, n)
                v.zt[(j, sid, d)] = z
                model.add(f"in_domain[{name},{sid},{'/'.join(d)}]", [(z, 1), (dv, -n)], None, 0)
                per_shape[sid].append((z, 1))
                inside[(sid, ask.key, d)].append((z, -1))
                for key in ask.broader:
                    e = _within(problem, key, ask.key, d)
                    if e is not None:
                        inside[(sid, key, e)].append((z, -1))
            if ask.mode is Mode.PREFERRED:
                if d not in held:
                    model.term("elastic", "topology_spread", [(dv, -2 * problem.spread_weight)])
                for key in ask.broader:
                    e = _within(problem, key, ask.key, d)
                    if e is None:
                        continue
                    if (j, key, e) not in v.b:
                        bv = v.b[(j, key, e)] = model.var(f"b[{name},{'/'.join(e)}]", 0, 1)
                        if not any(h is not None and h[: len(e)] == e for h in held):
                            model.term("elastic", "topology_spread", [(bv, -problem.spread_weight)])
                    model.add(
                        f"above[{name},{'/'.join(d)}]", [(dv, 1), (v.b[(j, key, e)], -1)], None, 0
                    )
        if ask.mode is Mode.PREFERRED:  # soft: a pod may go to a node the level does not label
            for sid, n in sorted(need[j].items()):
                if (sid, ask.key) in outside:
                    zo = v.zo[(j, sid)] = model.var(f"zo[{name},{sid}]", 0, n)
                    per_shape[sid].append((zo, 1))
                    placed_outside[(sid, ask.key)].append((zo, -1))
                    # each pod there costs what a new domain does: it is in none of them
                    model.term("elastic", "topology_spread", [(zo, -2 * problem.spread_weight)])
        for k, o in enumerate(jm.options):
            for sid, n in o.new.items():
                per_shape[sid].append((v.y[j][k], -n))
        for sid, terms in sorted(per_shape.items()):
            model.add(f"place_domain[{name},{sid}]", terms, 0, 0)
        if ask.mode is Mode.REQUIRED:
            model.add(f"one_domain[{name}]", ds + run, 0, 0)
    # the classes' x per (shape, level, domain), in one pass (a scan per row was quadratic: 7 s
    # of the XL model with topology on)
    x_in: dict[tuple[int, str, tuple[str, ...]], list[int]] = defaultdict(list)
    x_of: dict[tuple[str, tuple[str, ...]], Terms] = defaultdict(list)  # (level, domain): GPUs
    for (sid, cid), var in v.x.items():
        for key, e in problem.class_domain.get(cid, {}).items():
            x_in[(sid, key, e)].append(var)
            x_of[(key, e)].append((var, problem.shapes[sid].requests.get(res.GPU, 0)))
    for (sid, key, e), terms in sorted(inside.items()):
        supply = [(var, 1) for var in x_in.get((sid, key, e), ())]
        model.add(f"domain_supply[{sid},{'/'.join(e)}]", supply + terms, 0, None)
    for (sid, key), terms in sorted(placed_outside.items()):
        model.add(f"outside_supply[{sid},{key}]", outside[(sid, key)] + terms, 0, None)
    for key, e, gpus in problem.free_domains:
        if not problem.fragmentation_weight:
            break
        used = x_of.get((key, e), [])
        ev = v.e[(key, e)] = model.var(f"e[{'/'.join(e)}]", 0, 1)
        model.add(f"whole[{'/'.join(e)}]", [*used, (ev, gpus)], None, gpus)
        model.term("elastic", "fragmentation", [(ev, problem.fragmentation_weight * gpus)])


def _within(problem: Problem, broader: str, key: str, d: tuple[str, ...]) -> tuple[str, ...] | None:
    """The domain of the broader level that domain d of level key lies in (levels nest)."""
    levels = problem.topology.levels
    if broader not in levels or key not in levels:
        return None
    return d[: levels.index(broader) + 1]
