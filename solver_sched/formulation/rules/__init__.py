"""One module per rule; each adds its constraints (and objective terms) to the LinearModel."""
