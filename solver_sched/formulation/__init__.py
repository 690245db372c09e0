"""snapshot + config + now -> Problem (index sets, coefficients) -> LinearModel (any backend)."""
