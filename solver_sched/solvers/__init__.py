"""Backends that solve the LinearModel (CP-SAT, MILP) and the greedy heuristic."""
