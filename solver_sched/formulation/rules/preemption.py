"""Rules 4-6, when running work may be taken back.

- Breaking a running gang (size -> 0) needs one of its triggers to fire: a pending gang of strictly
  higher priority in its queue starts, or (reclaim) a gang of a queue below its min starts while
  this queue borrows:  y[j,0] <= sum_{h in triggers(j)} run_h.  With no trigger, y[j,0] = 0.
- Scaling in an elastic job (size below its current allowed size) needs some guaranteed gang to
  start:  y[j,s] <= any_start  for s < current, with  any_start <= sum_{h starting} run_h.
Partial gangs and jobs at a size the policy no longer allows are free to change (rule 8).
"""

from __future__ import annotations

from solver_sched.formulation.linear import LinearModel
from solver_sched.formulation.problem import Problem
from solver_sched.formulation.triggers import ANY_START
from solver_sched.formulation.variables import Vars


def add(problem: Problem, model: LinearModel, v: Vars) -> dict[str, int]:
    """Returns the trigger variables created (name -> var) so hints can fill them."""
    fired: dict[str, int] = {}

    def trigger(key: str) -> int | None:
        if key not in fired:
            starters = problem.triggers.get(key, ())
            if not starters:
                return None
            t = model.var(f"fires[{key}]", 0, 1)
            terms = [(t, 1)] + [(y, -1) for h in starters for y in v.y[h][1:]]
            model.add(f"trigger[{key}]", terms, None, 0)
            fired[key] = t
        return fired[key]

    for j, jm in enumerate(problem.jobs):
        if not jm.running_ok:
            continue
        brk = v.y[j][0]
        ts = [t for key in jm.break_needs if (t := trigger(key)) is not None]
        model.add(f"break[{jm.name}]", [(brk, 1)] + [(t, -1) for t in ts], None, 0)
        if jm.shrink_needs_start:
            shrink = [v.y[j][k] for k, o in enumerate(jm.options) if 0 < o.size < jm.current]
            if shrink:
                t = trigger(ANY_START)
                terms = [(y, 1) for y in shrink] + ([(t, -1)] if t is not None else [])
                model.add(f"shrink[{jm.name}]", terms, None, 0)
    return fired
