"""Where a start's victims are sought: anywhere, or, for a gang that requires one topology domain
and finds none that way, inside one domain at a time, so that a domain actually empties instead
of room freed all over the cluster that no one domain adds up to."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from solver_sched.domain.topology import Mode
from solver_sched.formulation.sizes import change_to
from solver_sched.placement.nodes import Fence
from solver_sched.placement.state import PlanState
from solver_sched.solvers.room import Freed

# A gang that must sit in one domain, when the search anywhere fails, searches inside one domain
# at a time: the first DOMAINS_TRIED domains the victims, in the search's order, free enough in.
DOMAINS_TRIED = 3


def fences(
    st: PlanState,
    j: int,
    target: int,
    need: int,
    released: Freed,
    steps: Callable[[], Iterable[tuple[int, int]]],
) -> Iterator[Fence | None]:
    """Where the victims of j's start are sought, in turn: anywhere (None); for a gang that
    requires one domain, anywhere first, then the domain its kept pods are in or else the
    domains ``domains_to_try`` finds over ``steps()``, the search's victims in its order
    (walked only once the search anywhere has failed).
    Anywhere first: where that succeeds, the room it frees beyond the gang's domain is either
    given back (minimize_evictions) or used by later starts, which the model values (on
    rack16 and rack32 dev seeds, fenced first lost 2.5-3.5% of the objective on 2 of 24
    instances); where it fails, one domain at a time."""
    name = st.problem.jobs[j].name
    ask = st.problem.asks.get(name)
    if ask is None or ask.mode is not Mode.REQUIRED:
        yield None
        return
    keep = change_to(st.snapshot, st.snapshot.jobs[name], target, st.order_of(name)).keep
    kept = [n for p in keep if (n := st.placed.get(p.name) or p.node_name) is not None]
    if kept:
        found = st.domains.domains_of(ask.key, kept)
        held = [d for d in found if d is not None]
        if len(found) != 1 or len(held) != 1:
            return  # split (or outside every domain): placement grows it nowhere
        yield None
        if (ask.key, held[0]) in st.domains.members:  # not a domain of cordoned nodes only
            yield (ask.key, held[0])
        return
    yield None
    yield from domains_to_try(st, released, ask.key, need, steps())


def domains_to_try(
    st: PlanState, released: Freed, key: str, need: int, steps: Iterable[tuple[int, int]]
) -> list[Fence]:
    """The domains of level ``key`` where a start of ``need`` GPUs seeks its victims: walking the
    victims in the search's order (cheapest first), the first DOMAINS_TRIED domains whose free
    GPUs plus what the victims so far free there reach ``need``. So the domain whose room costs
    the cheapest victims comes first, and the search empties one domain rather than freeing room
    across many. An estimate (per node fit is left to the search)."""
    of = st.domains.of.get(key, {})
    room = {d: st.nodes.domain_gpus((key, d)) for d in st.domains.domains(key)}
    freed: dict[tuple[tuple[str, ...], int], int] = {}  # (domain, victim) -> GPUs freed there
    found: list[Fence] = []
    for v, size in steps:
        here: dict[tuple[str, ...], int] = {}
        for node, g in released(v, size).items():
            d = of.get(node)
            if d is not None:
                here[d] = here.get(d, 0) + g
        for d, g in here.items():
            before = freed.get((d, v), 0)  # a smaller size of v frees what a larger one did
            if d in room and g > before:
                freed[(d, v)] = g
                room[d] += g - before
                if room[d] >= need:
                    del room[d]
                    found.append((key, d))
                    if len(found) == DOMAINS_TRIED:
                        return found
    return found
