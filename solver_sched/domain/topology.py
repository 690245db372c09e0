"""Network topology: levels of node labels (broadest first) and the domains they cut the nodes into,
and what a gang asks of them.

A *domain* at a level is the set of nodes that agree on that level's label and on the labels of
every broader level: rack ``r1`` of block ``a`` and rack ``r1`` of block ``b`` are two domains (as
Kueue's Topology counts them). A label key that is no configured level (a 1.37 PodGroup may name
any node label) cuts the nodes by its value alone. A node without the label is in no domain of that
level, so a gang that requires the level cannot use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

HOSTNAME = "kubernetes.io/hostname"

DomainId = tuple[str, ...]


class Mode(StrEnum):
    REQUIRED = "required"  # every pod of the gang in one domain of the level
    PREFERRED = "preferred"  # as few domains as possible, the level first, then broader ones


@dataclass(frozen=True, slots=True)
class Topology:
    """Levels as node label keys, broadest first (e.g. block, rack, hostname)."""

    levels: tuple[str, ...] = ()
    source: str = ""  # where the levels came from, e.g. "Topology default" or "config"

    def __bool__(self) -> bool:
        return bool(self.levels)

    def domain_of(self, labels: Mapping[str, str], key: str) -> DomainId | None:
        """The node's domain at the level ``key`` (None: the node lacks a label it needs)."""
        if key in self.levels:
            out = []
            for level in self.levels[: self.levels.index(key) + 1]:
                value = labels.get(level)
                if value is None:
                    return None
                out.append(value)
            return tuple(out)
        value = labels.get(key)
        return None if value is None else (value,)

    def broader(self, key: str) -> tuple[str, ...]:
        """The levels above ``key``, nearest first (empty for a key that is no level)."""
        if key not in self.levels:
            return ()
        return tuple(reversed(self.levels[: self.levels.index(key)]))

    def tiers(self) -> tuple[str, ...]:
        """The levels that group nodes (hostname excluded), narrowest first: Volcano's tier t is
        ``tiers()[t - 1]``."""
        return tuple(reversed([k for k in self.levels if k != HOSTNAME]))


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    """What a gang asks: a level by node label key, or a Volcano tier resolved against the
    topology's levels (``tier`` counts from the narrowest grouping level, 1 first)."""

    mode: Mode
    key: str | None = None
    tier: int | None = None
    source: str = ""  # the object and field it was read from

    def level(self, topology: Topology) -> str | None:
        """The label key of the level asked for; None when the request constrains nothing (a
        tier above every level spans the whole cluster)."""
        if self.key is not None:
            return self.key
        if self.tier is None:
            return None
        tiers = topology.tiers()
        return tiers[self.tier - 1] if 1 <= self.tier <= len(tiers) else None

    def describe(self, topology: Topology) -> str:
        level = self.level(topology)
        return f"{self.mode} {short(level) if level else 'none'}"


@dataclass(frozen=True, slots=True)
class Ask:
    """A job's request resolved against the cycle's topology: the level and the levels above it."""

    key: str
    mode: Mode
    broader: tuple[str, ...] = ()  # levels above key, nearest first


def ask_of(request: TopologyRequest | None, topology: Topology) -> Ask | None:
    """None when the job asks for nothing, or for a tier above every level."""
    key = request.level(topology) if request is not None else None
    if request is None or key is None:
        return None
    return Ask(key, request.mode, topology.broader(key))


def short(key: str) -> str:
    """A level's name for people: the label key's last segment (``.../topology-rack`` -> rack)."""
    tail = key.rsplit("/", 1)[-1]
    return tail.removeprefix("topology-") or key


def choose(
    levels: Iterable[str], name: str | None, kueue: Mapping[str, Topology]
) -> tuple[Topology, str | None]:
    """The topology a cycle uses: the config's levels if any, else the named Kueue Topology, else
    the only one. Returns a note when the choice is ambiguous or the name is unknown."""
    levels = tuple(levels)
    if levels:
        return Topology(levels, "config"), None
    if name is not None:
        if name in kueue:
            return kueue[name], None
        return Topology(), f"topology.kueueTopology: no Topology named {name!r}"
    if len(kueue) == 1:
        return next(iter(kueue.values())), None
    if kueue:
        return Topology(), (
            f"{len(kueue)} Kueue Topology objects ({', '.join(sorted(kueue))}) and no "
            f"topology.kueueTopology in the config: topology is off"
        )
    return Topology(), None
