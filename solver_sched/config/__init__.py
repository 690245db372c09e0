"""One configuration schema for the --config file and the ConfigMap, validated with pydantic."""

from solver_sched.config.schema import ObjectiveWeights, PriorityTier, SchedulerConfig, Settings

__all__ = ["ObjectiveWeights", "PriorityTier", "SchedulerConfig", "Settings"]
