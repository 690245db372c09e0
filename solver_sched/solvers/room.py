"""The room take-backs open, node by node: what a set of them frees where, which nodes that
opens for a gang's pod, and which shrinks are known to open none (greedy's victim search,
``victims.py``, asks)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from solver_sched.domain import resources as res

Freed = Callable[[int, int], dict[str, int]]  # (victim, size) -> GPUs freed per node
Vectors = Mapping[str, Mapping[str, int]]  # node -> resources freed there


class NoRoom:
    """For one pod shape (and fence), the take-backs (job, size) that opened no room for it
    alone, with the nodes they free. One stays known while none of its nodes got room back and
    its job did not grow: room elsewhere only shrinks (pods were bound), and what a take-back
    frees only shrinks as its job does (the pods it no longer frees left room on their nodes,
    given back); a job that grows (a bind, or a rollback restoring its pods) frees more.
    ``open``: every other shrink; ``shut``: the breaks (size 0) known (at XL, thousands of
    failed starts each tested the same few hundred breaks again)."""

    def __init__(
        self, smaller: Mapping[int, list[int]], given: list[str], grown: list[int]
    ) -> None:
        self.open = {(v, s): None for v, ss in smaller.items() for s in ss}
        self.shut: set[tuple[int, int]] = set()
        self.smaller = smaller  # jobs in the walk's order, each one's sizes largest first
        self.by_node: dict[str, list[tuple[int, int]]] = {}
        self.by_job: dict[int, list[tuple[int, int]]] = {}
        self.given, self.grown = given, grown  # NodeState.given, PlanState.grown
        self.seen = len(self.given), len(self.grown)  # how far both records were read

    def add(self, pair: tuple[int, int], nodes: Iterable[str]) -> None:
        if pair[1] == 0:
            known = pair in self.shut
            self.shut.add(pair)
        else:
            known = self.open.pop(pair, 0) is not None
        if not known:
            for n in nodes:
                self.by_node.setdefault(n, []).append(pair)
            self.by_job.setdefault(pair[0], []).append(pair)

    def known(self, v: int, size: int) -> bool:
        """A take-back known to open no room alone now (the records read first)."""
        if self.stale():
            self.sync()
        return (v, size) in self.shut if not size else (v, size) not in self.open

    def stale(self) -> bool:
        """Whether a node got room back or a job grew since the records were last read."""
        return (len(self.given), len(self.grown)) != self.seen

    def walk(
        self, size: Mapping[str, int], names: Sequence[str], visit: Callable[[int, int], bool]
    ) -> Iterator[tuple[int, int]]:
        """The open shrinks below their job's size (``size`` by ``names``) that ``visit`` lets
        through, in the order of ``smaller`` (lowest priority first, each job's sizes largest
        first); while it walks, a node given room back (or a job grown) reopens shrinks, and
        those ahead of the walk are walked too. Lazily: a walk usually stops after a take-back
        or two, out of thousands of shrinks, most of them at or above their job's size.
        ``visit`` must not change for the shrinks ahead while the walk is under way (the caller
        only shrinks the job it was just given, whose smaller sizes come next and stay below
        its size)."""
        open_ = self.open
        for v, sizes in self.smaller.items():
            now = size[names[v]]
            for s in sizes:
                if s < now and (v, s) in open_ and visit(v, s):
                    yield v, s
                    if self.stale():  # the caller's take-back gave nodes room back
                        self.sync()

    def sync(self) -> list[tuple[int, int]]:
        """Reopen the shrinks with a node given room back, or whose job grew, since last read;
        those reopened."""
        out = []
        given, grown = self.seen
        pairs = [p for n in self.given[given:] for p in self.by_node.pop(n, ())]
        pairs += [p for v in self.grown[grown:] for p in self.by_job.pop(v, ())]
        for pair in pairs:
            if not pair[1]:
                self.shut.discard(pair)
            elif pair not in self.open:
                self.open[pair] = None
                out.append(pair)
        self.seen = len(self.given), len(self.grown)
        return out


def smallest(steps: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Victim -> the smallest size these take-backs take it to (where it frees the most)."""
    out: dict[int, int] = {}
    for v, size in steps:
        out[v] = min(size, out.get(v, size))
    return out


def most_freed(
    least: Mapping[int, int],
    released: Callable[[int, int], Vectors],
    only: set[str] | None = None,
) -> dict[str, dict[str, int]]:
    """Node -> what these victims free there, each at its size in ``least`` (``smallest`` of
    a set of take-backs), on the nodes ``only`` names (None: every node)."""
    return summed([released(v, size) for v, size in least.items()], only)


def summed(parts: Iterable[Vectors], only: set[str] | None = None) -> dict[str, dict[str, int]]:
    """Node -> the sum of ``parts`` there (each: node -> resources), on the nodes ``only``
    names (None: every node)."""
    most: dict[str, dict[str, int]] = {}
    for freed in parts:
        for node in freed if only is None else only.intersection(freed):
            res.add_into(most.setdefault(node, {}), freed[node])
    return most


def near_room(
    least: Mapping[int, int],
    released: Freed,
    free: Mapping[str, Mapping[str, int]],
    per_pod: int,
) -> set[str]:
    """The nodes where the GPUs free now plus those these victims free (each at its size in
    ``least``) reach ``per_pod``: the only ones where they may open room together."""
    gpus: dict[str, int] = {}
    for v, size in least.items():
        for node, g in released(v, size).items():
            gpus[node] = gpus.get(node, 0) + g
    return {n for n, g in gpus.items() if free[n].get(res.GPU, 0) + g >= per_pod}


def grouped(
    steps: list[tuple[int, int]],
    released: Freed,
    room: Callable[[Vectors], list[str]],
    most: Vectors,
) -> list[tuple[int, int]]:
    """Deferred take-backs that together open room for the gang's largest pod on a node it may
    use (``room``: the nodes where what is freed opens room; ``most``: what all of them free per
    node, most_freed; ``released``: cached by Victims): every deferred victim with pods there,
    on the node where that means the fewest breaks, then the fewest victims; each at the largest
    deferred size that frees as much there."""
    nodes = room(most)
    if not nodes:
        return []
    sizes: dict[int, list[int]] = {}
    for v, size in steps:
        sizes.setdefault(v, []).append(size)
    groups: dict[str, list[tuple[int, int]]] = {n: [] for n in nodes}
    for v, ss in sizes.items():  # by victim, over the nodes it frees, not every victim per node
        for node, top in released(v, min(ss)).items():
            if top and node in groups:
                groups[node].append((v, max(s for s in ss if released(v, s).get(node, 0) == top)))
    best: tuple[tuple[int, int, str], list[tuple[int, int]]] | None = None
    for node in nodes:
        group = groups[node]
        cost = (sum(size == 0 for _, size in group), len(group), node)
        if best is None or cost < best[0]:
            best = (cost, group)
    return best[1] if best else []
