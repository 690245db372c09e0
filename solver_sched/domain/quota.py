"""The hierarchical quota tree (ElasticQuotaTree): queues with min (guaranteed) and max.

The special resource ``kube-queue/max-jobs`` caps running jobs. Leaves own namespaces; a namespace
in no leaf belongs to the implicit, unlimited queue ``IMPLICIT_QUEUE``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from solver_sched.domain.resources import Resources

MAX_JOBS = "kube-queue/max-jobs"
IMPLICIT_QUEUE = "(none)"


@dataclass(frozen=True, slots=True)
class Queue:
    name: str
    parent: str | None = None
    namespaces: tuple[str, ...] = ()
    min: Resources = field(default_factory=dict)
    max: Resources = field(default_factory=dict)  # a resource absent from max is unlimited
    max_jobs: int | None = None
    invalid: str | None = None


@dataclass(frozen=True, slots=True)
class QuotaTree:
    queues: Mapping[str, Queue] = field(default_factory=dict)
    # namespace -> owning queue, built on first use (asked per job and per lone pod)
    _owner: dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)
    # queue -> its chain, kept once asked (asked per job by the model, greedy and the checker)
    _chains: dict[str, tuple[str, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def leaf_for(self, namespace: str) -> str:
        if not self._owner and self.queues:
            for q in reversed(list(self.queues.values())):  # the first queue listing it wins
                for ns in q.namespaces:
                    self._owner[ns] = q.name
        return self._owner.get(namespace, IMPLICIT_QUEUE)

    def chain(self, queue: str) -> tuple[str, ...]:
        """The queue and its ancestors, leaf first (empty for the implicit queue)."""
        known = self._chains.get(queue)
        if known is not None:
            return known
        out: list[str] = []
        seen: set[str] = set()
        cur: str | None = queue
        while cur is not None and cur in self.queues and cur not in seen:
            seen.add(cur)
            out.append(cur)
            cur = self.queues[cur].parent
        self._chains[queue] = found = tuple(out)
        return found

    def first_invalid(self, queue: str) -> Queue | None:
        """The first invalid queue on the chain: its jobs depend on it, so they are held."""
        for name in self.chain(queue):
            if self.queues[name].invalid:
                return self.queues[name]
        return None

    def invalid_in_chain(self, queue: str) -> str | None:
        bad = self.first_invalid(queue)
        return bad.invalid if bad is not None else None
