"""A backend-neutral integer linear model: the rules write it once, each backend translates it.

Keeping one formulation for CP-SAT and MILP means the two backends solve the same model by
construction; tests then check that they agree on the optimum.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

Terms = list[tuple[int, int]]  # (variable index, coefficient)

# The largest magnitude a row may reach (|coefficient| x |bound| summed over its terms, and each
# side): both backends then hold it exactly. HiGHS rejects matrix values from 1e15 on and doubles
# are exact to 2^53; CP-SAT needs every activity inside int64. Kubernetes quantities have no upper
# bound (a quota of 100000000Gi is 1.1e17 bytes), so rows past it are rescaled (``_fit``).
LIMIT = 2**49


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
    fitted: list[Constraint] = field(default_factory=list)  # rows read so far (``constraints``)
    # objective (maximised) =
    #   tie_band * (band * sum(guaranteed terms) + sum(elastic terms)) + sum(tie terms)
    # The tie band only orders plans of equal value (rules/nomination.py).
    guaranteed: dict[str, Terms] = field(default_factory=dict)
    elastic: dict[str, Terms] = field(default_factory=dict)
    tie: dict[str, Terms] = field(default_factory=dict)
    band: int = 1
    tie_band: int = 1
    # per variable, the larger magnitude of its bounds: what a coefficient can reach (``_span``)
    reach: list[int] = field(default_factory=list, repr=False, compare=False)
    # Rows as the rules wrote them, and writers of rows (``later``), in order; fitted (``_fit``)
    # when ``constraints`` is first read after them. A cycle that searches nothing values its
    # plans with the variables and terms alone: the rows were 2/3 of the XL model's build.
    _written: list[Constraint | Callable[[], None]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if len(self.reach) != len(self.names):  # a model made from another's variables
            self.reach = [max(abs(lo), abs(hi)) for lo, hi in zip(self.lb, self.ub, strict=True)]

    def var(self, name: str, lb: int, ub: int) -> int:
        self.names.append(name)
        self.lb.append(lb)
        self.ub.append(ub)
        self.reach.append(max(abs(lb), abs(ub)))
        return len(self.names) - 1

    def add(self, name: str, terms: Terms, lo: int | None = None, hi: int | None = None) -> None:
        self._written.append(Constraint(name, list(terms), lo, hi))  # the caller's list may change

    def later(self, write: Callable[[], None]) -> None:
        """``write`` adds rows (only rows: no variable, no term) when ``constraints`` is first
        read; they take their place among the others as if it had run now."""
        self._written.append(write)

    @property
    def constraints(self) -> list[Constraint]:
        """Every row, zero coefficients dropped and each within LIMIT (``_fit``)."""
        self.write_rows()
        return self.fitted

    def write_rows(self) -> None:
        """Fits the rows written so far and runs the writers ``later`` holds, in order."""
        written, self._written = self._written, []
        for item in written:
            if isinstance(item, Constraint):
                if (con := self._clean(item)) is not None:
                    self.fitted.append(con)
            else:
                item()  # its rows, fitted before the rest
                self.write_rows()

    def _clean(self, con: Constraint) -> Constraint | None:
        terms = [(v, c) for v, c in con.terms if c]
        if terms:
            return self._fit(Constraint(con.name, terms, con.lo, con.hi))
        lo, hi = con.lo, con.hi
        if (lo is not None and lo > 0) or (hi is not None and hi < 0):
            return Constraint(con.name, [], lo, hi)  # infeasible: keep it visible
        return None

    def _span(self, con: Constraint) -> int:
        per_var = self.reach
        reach = sum([abs(c) * per_var[v] for v, c in con.terms])
        return max(reach, abs(con.lo or 0), abs(con.hi or 0))

    def _fit(self, con: Constraint) -> Constraint:
        """The row, within LIMIT. Steps, each only while the row is still too large:

        1. a bound past what the terms can reach is clamped to it (the row means the same);
        2. a common factor of the coefficients divides out, the bounds rounded inwards (the same
           integer points);
        3. coarser units: coefficients divided and rounded up, both bounds rounded down. A plan
           that meets the scaled row meets the original's upper bound (the side the checker
           verifies: node fit, quota max), and every plan that meets the original's lower bound
           meets the scaled one (a queue's floor): no plan today's usage allows is cut off, and
           the floor may be missed by less than a unit of the scale per term.
        """
        if self._span(con) <= LIMIT:
            return con
        lo, hi, terms = con.lo, con.hi, con.terms
        low = sum(c * (self.lb[v] if c > 0 else self.ub[v]) for v, c in terms)
        high = sum(c * (self.ub[v] if c > 0 else self.lb[v]) for v, c in terms)
        if hi is not None:
            hi = max(min(hi, high), low - 1)
        if lo is not None:
            lo = min(max(lo, low), high + 1)
        g = math.gcd(*(c for _, c in terms))
        if g > 1:
            terms = [(v, c // g) for v, c in terms]
            hi = None if hi is None else hi // g
            lo = None if lo is None else -(-lo // g)
        con = Constraint(con.name, terms, lo, hi)
        span = self._span(con)
        if span <= LIMIT or lo == hi or any(self.lb[v] < 0 for v, _ in terms):
            return con  # an equality or a signed variable has no safe rounding: left as it is
        scale = 1 << (span // LIMIT).bit_length()
        terms = [(v, -(-c // scale)) for v, c in terms]
        hi = None if hi is None else hi // scale
        lo = None if lo is None else lo // scale
        return Constraint(con.name, [(v, c) for v, c in terms if c], lo, hi)

    def term(self, band: str, name: str, terms: Terms) -> None:
        bands = {"guaranteed": self.guaranteed, "elastic": self.elastic, "tie": self.tie}
        if band not in bands:
            raise ValueError(f"objective term {name}: no band {band!r}")
        target = bands[band]
        target.setdefault(name, []).extend((v, c) for v, c in terms if c)

    def objective(self) -> Terms:
        out: dict[int, int] = {}
        for terms in self.guaranteed.values():
            for v, c in terms:
                out[v] = out.get(v, 0) + self.tie_band * self.band * c
        for terms in self.elastic.values():
            for v, c in terms:
                out[v] = out.get(v, 0) + self.tie_band * c
        for terms in self.tie.values():
            for v, c in terms:
                out[v] = out.get(v, 0) + c
        return sorted(out.items())

    def evaluate(self, values: list[int]) -> dict[str, int]:
        """Value of each named term (unscaled) for a full assignment."""
        return {
            name: sum(c * values[v] for v, c in terms)
            for name, terms in (*self.guaranteed.items(), *self.elastic.items(), *self.tie.items())
        }

    def objective_value(self, values: list[int]) -> int:
        """The objective of a full assignment (the same integer as summing ``objective()``)."""
        return self.objective_of(self.evaluate(values))

    def objective_of(self, terms: dict[str, int]) -> int:
        """The objective from the term values ``evaluate`` returned."""
        g = sum(terms[name] for name in self.guaranteed)
        e = sum(terms[name] for name in self.elastic)
        return self.tie_band * (self.band * g + e) + sum(terms[name] for name in self.tie)

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
