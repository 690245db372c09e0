"""snapshot + config + now -> Problem (index sets, coefficients) -> LinearModel (backend-neutral)."""
