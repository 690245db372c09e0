"""Pure value types: what the cluster is and what a plan does. No solver, no I/O."""
