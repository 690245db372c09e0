"""A backend-neutral integer linear model: the rules write it once, each backend translates it.

Keeping one formulation for CP-SAT and MILP means the two backends solve the same model by
construction; tests then check that they agree on the optimum.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Terms = list[tuple[int, int]]  # (variable index, coefficient)


@dataclass(slots=True)
class Constraint:
    name: str
    terms: Terms
    lo: int | None
    hi: int | None


@dataclass
class LinearModel:
    names: list[str] = field(default_factory=list)
    lb: list[int] = field(default_factory=list)
    ub: list[int] = field(default_factory=list)
    constraints: list[Constraint] = field(default_factory=list)
    # objective (maximised) = band * sum(guaranteed terms) + sum(elastic terms)
    guaranteed: dict[str, Terms] = field(default_factory=dict)
    elastic: dict[str, Terms] = field(default_factory=dict)
    band: int = 1

    def var(self, name: str, lb: int, ub: int) -> int:
        self.names.append(name)
        self.lb.append(lb)
        self.ub.append(ub)
        return len(self.names) - 1

    def add(self, name: str, terms: Terms, lo: int | None = None, hi: int | None = None) -> None:
        terms = [(v, c) for v, c in terms if c]
        if not terms:
            if (lo is not None and lo > 0) or (hi is not None and hi < 0):
                self.constraints.append(Constraint(name, [], lo, hi))  # infeasible: keep it visible
            return
        self.constraints.append(Constraint(name, terms, lo, hi))

    def term(self, band: str, name: str, terms: Terms) -> None:
        target = self.guaranteed if band == "guaranteed" else self.elastic
        target.setdefault(name, []).extend((v, c) for v, c in terms if c)

    def objective(self) -> Terms:
        out: dict[int, int] = {}
        for terms in self.guaranteed.values():
            for v, c in terms:
                out[v] = out.get(v, 0) + self.band * c
        for terms in self.elastic.values():
            for v, c in terms:
                out[v] = out.get(v, 0) + c
        return sorted(out.items())

    def evaluate(self, values: list[int]) -> dict[str, int]:
        """Value of each named term (unscaled) for a full assignment."""
        return {
            name: sum(c * values[v] for v, c in terms)
            for name, terms in (*self.guaranteed.items(), *self.elastic.items())
        }

    def objective_value(self, values: list[int]) -> int:
        """The objective of a full assignment (the same integer as summing ``objective()``)."""
        return self.objective_of(self.evaluate(values))

    def objective_of(self, terms: dict[str, int]) -> int:
        """The objective from the term values ``evaluate`` returned."""
        g = sum(terms[name] for name in self.guaranteed)
        return self.band * g + sum(terms[name] for name in self.elastic)

    def violated(self, values: list[int]) -> list[str]:
        """Names of constraints the assignment breaks (used to validate hints in tests)."""
        bad = [
            n
            for n, lo, hi, x in zip(self.names, self.lb, self.ub, values, strict=True)
            if not lo <= x <= hi
        ]
        for con in self.constraints:
            act = sum(c * values[v] for v, c in con.terms)
            if (con.lo is not None and act < con.lo) or (con.hi is not None and act > con.hi):
                bad.append(con.name)
        return bad
