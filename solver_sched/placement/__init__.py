"""The tentative plan: job sizes, concrete nodes and queue usage, journaled for rollback.

Between the model and its users: greedy builds its decision in a ``PlanState``, the packer turns
a solver's per-class counts into one, and diff and explain read it. It reads the ``Problem`` but
builds no model.
"""
