"""Command line: `solver-sched whatif|generate` (the controller's `run` and `dump` come later)."""
