"""solver-sched: a global, optimization-based gang scheduler for distributed training."""

__version__ = "0.1.0"
