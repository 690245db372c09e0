"""Weights and settings. One schema for the CLI's --config file and the controller's ConfigMap.

The objective has two bands (see docs/formulation.md): the guaranteed band (guaranteed placement by
priority tier, queue-min coverage, waiting time, gang breaks) and the elastic band (elastic pods,
elastic evictions, packing). The model multiplies the guaranteed band by a factor computed per
instance that exceeds the largest possible elastic band, so rule 4 (guaranteed before elastic) holds
for any weights given here; validation rejects weights that would break the ordering *inside* a
band (negative weights, a tier weighing less than a lower-priority tier, a waiting bonus that could
outweigh placing a gang).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from solver_sched.config.yaml_text import yaml_error
from solver_sched.domain.topology import HOSTNAME

_MAX_DURATION_S = (2**63 - 1) // 10**9  # Go's time.Duration, int64 nanoseconds: about 292 years
_DURATION = re.compile(r"^(?:([0-9]+)h)?(?:([0-9]+)m(?!s))?(?:([0-9]+)s)?$")


def parse_duration(text: str) -> timedelta:
    """Go-style durations as used in annotations: ``30s``, ``10m``, ``1h30m`` (no fractions)."""
    m = _DURATION.match(text.strip()) if text else None
    if not m or not any(m.groups()):
        raise ValueError(f"invalid duration {text!r} (expected e.g. 30s, 10m, 1h30m)")
    h, mi, s = (int(g) if g else 0 for g in m.groups())
    if (h * 60 + mi) * 60 + s > _MAX_DURATION_S:
        raise ValueError(f"duration {text!r} out of range (at most {_MAX_DURATION_S // 3600}h)")
    return timedelta(hours=h, minutes=mi, seconds=s)


def bonus_step_short(weights: Iterable[int], gang_start: int) -> tuple[int, int] | None:
    """The first step between distinct tier weights (lowest first) that does not carry the start
    bonus, or None. Per GPU, 1-unit gangs of a tier are worth (1 + gangStart) x its weight and a
    large gang of the next tier about its own weight, so each step must be at least that factor,
    or small lower-priority gangs would outrank a large higher-priority one. The one rule for
    both places that apply it: validation rejects an explicit ``gangStart`` that breaks it, and a
    cycle whose tiers break it (past the tier cap the top tiers are squeezed together, or the
    tiers given are too close for the default bonus) leaves the bonus out."""
    need = 1 + gang_start
    ordered = sorted(set(weights))
    return next(((lo, hi) for lo, hi in itertools.pairwise(ordered) if hi < need * lo), None)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class PriorityTier(_Strict):
    """Jobs with priority >= min_priority (and below the next tier) weigh ``weight`` per unit."""

    min_priority: int = Field(alias="minPriority")
    weight: int = Field(ge=1, le=10**9)


class ObjectiveWeights(_Strict):
    """Per-unit weights of the named objective terms. A unit is one GPU (or a pod without GPUs)."""

    guaranteed: int = Field(default=1000, ge=1, le=10**9, description="per guaranteed unit placed")
    tier_factor: int = Field(
        default=4,
        alias="tierFactor",
        ge=1,
        le=1000,
        description="when no tiers are given: each distinct priority weighs this factor more",
    )
    tiers: tuple[PriorityTier, ...] = Field(default=(), description="explicit priority tiers")
    gang_break: int = Field(default=500, alias="gangBreak", ge=0, le=10**9)
    gang_start: int = Field(
        default=1,
        alias="gangStart",
        ge=0,
        le=64,
        description=(
            "a gang that starts is worth this many more guaranteed units of its tier: of two "
            "ways to fill the same GPUs, the one that starts more gangs wins (shorter average wait)"
        ),
    )
    quota_min: int = Field(
        default=20000,
        alias="quotaMin",
        ge=0,
        le=10**9,
        description="per GPU of a queue's min in use: reclaim outranks priority across queues",
    )
    waiting: int = Field(default=1, ge=0, le=10**6, description="per hour a placed gang waited")
    waiting_cap_hours: int = Field(default=48, alias="waitingCapHours", ge=0, le=10**4)
    elastic: int = Field(default=100, ge=0, le=10**6, description="per elastic unit placed")
    elastic_eviction: int = Field(default=50, alias="elasticEviction", ge=0, le=10**6)
    packing: int = Field(
        default=1, ge=0, le=10**4, description="per GPU x free GPUs on target node"
    )
    topology_spread: int = Field(
        default=400,
        alias="topologySpread",
        ge=0,
        le=10**6,
        description=(
            "per extra domain a gang with a preferred topology spans, at its level (twice this) "
            "and at each broader level"
        ),
    )
    fragmentation: int = Field(
        default=2,
        ge=0,
        le=10**4,
        description="per GPU of a free topology domain (rack, block) that the plan leaves whole",
    )

    @field_validator("tiers")
    @classmethod
    def _tiers_ordered(cls, tiers: tuple[PriorityTier, ...]) -> tuple[PriorityTier, ...]:
        ordered = sorted(tiers, key=lambda t: t.min_priority)
        for low, high in itertools.pairwise(ordered):
            if low.min_priority == high.min_priority:
                raise ValueError(f"two tiers with minPriority {low.min_priority}")
            if high.weight < low.weight:
                raise ValueError(
                    f"tier minPriority {high.min_priority} weighs {high.weight} < "
                    f"{low.weight} of lower tier minPriority {low.min_priority}"
                )
        return tuple(ordered)

    @model_validator(mode="after")
    def _start_bonus_keeps_priorities(self) -> ObjectiveWeights:
        """``bonus_step_short`` on the configured tiers (or one step of ``tierFactor``). Only a
        bonus given explicitly is rejected: with the default one, tiers too close to carry it
        leave it out of the cycles they meet (formulation/prepare.py), so a config that tunes
        only the tiers stays valid."""
        if not self.gang_start or "gang_start" not in self.model_fields_set:
            return self
        need = 1 + self.gang_start
        if self.tiers:
            short = bonus_step_short([t.weight for t in self.tiers], self.gang_start)
            if short is not None:
                low, high = (next(t for t in self.tiers if t.weight == w) for w in short)
                raise ValueError(
                    f"tier minPriority {high.min_priority} weighs {high.weight}, less than "
                    f"(1 + gangStart) = {need} x {low.weight} of the tier below: small "
                    f"lower-priority gangs would outrank it; raise it or lower gangStart"
                )
        elif bonus_step_short([1, self.tier_factor], self.gang_start) is not None:
            raise ValueError(
                f"gangStart {self.gang_start} needs tierFactor >= {need}: otherwise small "
                f"lower-priority gangs would outrank a large higher-priority one"
            )
        return self

    @model_validator(mode="after")
    def _break_dominates_wait(self) -> ObjectiveWeights:
        if self.gang_break and self.waiting * self.waiting_cap_hours >= self.guaranteed:
            raise ValueError(
                "waiting x waitingCapHours must stay below guaranteed, or waiting time would "
                "outweigh placing a gang"
            )
        return self


class Settings(_Strict):
    scheduler_name: str = Field(default="solver-sched", alias="schedulerName", min_length=1)
    default_cooldown: str = Field(default="10m", alias="defaultCooldown")
    solver: Literal["cpsat", "milp", "greedy"] = "cpsat"
    time_limit_seconds: float = Field(default=10.0, alias="timeLimitSeconds", gt=0, le=3600)
    # the whole cycle's wall time; None: by cluster size (solvers/budget.py)
    cycle_seconds: float | None = Field(default=None, alias="cycleSeconds", gt=0, le=3600)
    workers: int = Field(default=1, ge=1, le=64, description="CP-SAT search workers")
    linearization_level: int = Field(default=2, alias="linearizationLevel", ge=0, le=2)
    random_seed: int = Field(default=0, alias="randomSeed", ge=0, le=2**31 - 1)  # CP-SAT's int32
    priority_preemption: bool = Field(default=True, alias="priorityPreemption")
    queue_reclaim: bool = Field(default=True, alias="queueReclaim")
    lp_guide: bool = Field(
        default=True,
        alias="lpGuide",
        description="also try greedy starting gangs in the order of the LP relaxation",
    )

    @field_validator("default_cooldown")
    @classmethod
    def _cooldown(cls, v: str) -> str:
        parse_duration(v)
        return v

    @property
    def cooldown(self) -> timedelta:
        return parse_duration(self.default_cooldown)


class TopologyConfig(_Strict):
    """The topology levels, broadest first (e.g. block, rack, ``kubernetes.io/hostname``). Empty:
    a Kueue ``Topology`` object is used (the one named, or the only one)."""

    levels: tuple[str, ...] = Field(default=(), max_length=16)
    kueue_topology: str | None = Field(default=None, alias="kueueTopology", min_length=1)

    @field_validator("levels")
    @classmethod
    def _levels(cls, levels: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(levels)) != len(levels):
            raise ValueError(f"levels must be distinct, got {list(levels)}")
        if any(not key for key in levels):
            raise ValueError("a level is an empty label key")
        if HOSTNAME in levels[:-1]:
            raise ValueError(f"{HOSTNAME} can only be the last (narrowest) level")
        return levels


class SchedulerConfig(_Strict):
    weights: ObjectiveWeights = ObjectiveWeights()
    settings: Settings = Settings()
    topology: TopologyConfig = TopologyConfig()


class ConfigError(Exception):
    """A config that failed validation; the message names the source and the field."""


_MODEL_NAME = re.compile(r"a valid dictionary or instance of \w+")


def field_path(loc: Iterable[object], at: str = "") -> str:
    """A pydantic error's location as Kubernetes writes one: ``spec.containers[0].resources``
    (pydantic's ``spec.containers.0.resources`` elsewhere), below ``at`` when given."""
    out = at
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def plain(msg: str) -> str:
    """A validation message without the model class pydantic names ("a valid dictionary or
    instance of ObjectiveWeights"): users write YAML, not Python."""
    return _MODEL_NAME.sub("a mapping", msg)


def config_from_mapping(data: object, source: str) -> SchedulerConfig:
    try:
        # only an empty document means "all defaults"; [] or 0 is not a mapping
        return SchedulerConfig.model_validate({} if data is None else data)
    except ValidationError as exc:
        details = "; ".join(
            f"{field_path(err['loc']) or '(root)'}: {plain(err['msg'])}" for err in exc.errors()
        )
        raise ConfigError(f"{source}: {details}") from None


def load_config(path: Path) -> SchedulerConfig:
    try:
        with path.open(encoding="utf-8") as f:  # a stream: YAML errors name the file
            data = yaml.safe_load(f)
    except yaml.YAMLError as exc:
        raise ConfigError(yaml_error(path, exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return config_from_mapping(data, str(path))
