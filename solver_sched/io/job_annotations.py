"""The solver-sched.io annotations of the object that defines a job (a PodGroup, or a PyTorchJob
that has none): size policy, cooldown and last scale time. A PodGroup's max-member annotation is
read with its minMember (``gangs``)."""

from __future__ import annotations

from datetime import datetime
from difflib import get_close_matches
from typing import Any

from solver_sched.config.schema import parse_duration
from solver_sched.domain.cluster import SizePolicy, is_power_of_two
from solver_sched.io.context import LoadContext
from solver_sched.io.fleet_hub import (
    ANN_CLUSTER,
    ANN_FAILED,
    ANN_FAILOVER,
    ANN_FAILOVER_SINCE,
    ANN_GENERATION,
    ANN_HUB_JOB,
    ANN_NODES,
    ANN_TROUBLE,
)

ANN = "solver-sched.io/"
# what solver-sched reads or writes on the object that defines a job (a fleet's hub job and
# member copy included): any other key under ANN is a typo, reported (it was ignored unsaid)
KNOWN = frozenset(
    {
        *(ANN + k for k in ("size-policy", "cooldown", "last-scale-time", "max-member")),
        ANN_CLUSTER,
        ANN_GENERATION,
        ANN_NODES,
        ANN_FAILED,
        ANN_FAILOVER,
        ANN_TROUBLE,
        ANN_FAILOVER_SINCE,
        ANN_HUB_JOB,
    }
)


def job_scaling(
    b: LoadContext, obj: str, anns: dict[str, str], min_member: int, fld: str, invalid: str | None
) -> tuple[dict[str, Any], str | None]:
    """size_policy, cooldown and last_scale_time from the solver-sched.io annotations of the
    object that defines the job (a PodGroup, or a PyTorchJob that has none), and the first error."""
    for key in sorted(k for k in anns if k.startswith(ANN) and k not in KNOWN):
        near = get_close_matches(key, KNOWN, n=1)
        hint = f"; did you mean {near[0]}?" if near else ""
        b.error(obj, f"metadata.annotations[{key}]", f"not an annotation solver-sched reads{hint}")
    policy = SizePolicy.ANY
    text = anns.get(f"{ANN}size-policy", "any")
    try:
        policy = SizePolicy(text)
    except ValueError:
        invalid = invalid or b.error(
            obj,
            f"metadata.annotations[{ANN}size-policy]",
            f"{text!r} is not one of power-of-two, any",
        )
    if policy is SizePolicy.POWER_OF_TWO and not is_power_of_two(min_member) and not invalid:
        invalid = b.error(
            obj, fld, f"{min_member} is not a power of two ({ANN}size-policy: power-of-two)"
        )
    cooldown = b.cooldown
    if f"{ANN}cooldown" in anns:
        try:
            cooldown = parse_duration(anns[f"{ANN}cooldown"])
        except ValueError as exc:
            invalid = invalid or b.error(obj, f"metadata.annotations[{ANN}cooldown]", str(exc))
    last = None
    if f"{ANN}last-scale-time" in anns:
        try:
            last = datetime.fromisoformat(anns[f"{ANN}last-scale-time"].replace("Z", "+00:00"))
            if last.tzinfo is None:
                raise ValueError("no time zone")
        except ValueError:
            invalid = invalid or b.error(
                obj,
                f"metadata.annotations[{ANN}last-scale-time]",
                f"not RFC 3339: {anns[f'{ANN}last-scale-time']!r}",
            )
    return {"size_policy": policy, "cooldown": cooldown, "last_scale_time": last}, invalid
