"""The worked-chain helper: each step is a symbol, a sympy formula, the substituted pint quantities and
the result, so a chain renders as a table of formula -> numbers -> answer and every unit is checked.

    ch = Chain("Training compute")
    ch.given("N", q(70e9, "parameter"), "parameters", kind="spec", source="the claim")
    ch.given("D", q(15e12, "token"), "training tokens")
    ch.given("k", q(6, "FLOP/parameter/token"), "FLOPs per parameter per token")
    C = ch.step("C", "k*N*D", "FLOP", "training compute")
    N_gpu = ch.solve("N_gpu", "C = N_gpu*R*u*T", "GPU")   # shows the closed form, then evaluates it
    ch            # in a notebook: the table

Formulas are strings over the symbols already in the chain (sympy parses them, so they render as LaTeX
and can be solved for any unknown); they are evaluated on pint quantities, so a unit slip raises instead of
printing a wrong number. The code sympy prints for each formula is kept in utils/formula_code.json
(utils/formula_code.py), so computing a chain imports no sympy (showing one does) and a scalar chain no numpy.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from utils import formula_code
from utils.units import Q_, fmt


@dataclass
class Row:
    name: str
    value: object                 # pint Quantity
    label: str
    text: str = ""                # the step's formula, or the solved step's equation; "" for an input
    names: tuple = ()             # the chain symbols that text mentions
    solved: bool = False
    kind: str = ""
    source: str = ""
    digits: int = 3

    # sympy is imported only to show a row (a notebook's table, LaTeX), never to compute one.
    @property
    def symbol(self):
        import sympy as sp
        return sp.Symbol(self.name)

    @property
    def formula(self):
        """The step's sympy expression (for a solved step, the solution); None for an input."""
        if not self.text:
            return None
        if self.solved:
            return formula_code.solution(self.text, self.name, self.names)
        return formula_code.parse(self.text, self.names)

    @property
    def equation(self):
        """The equation a solved step was solved from; None otherwise."""
        return formula_code.equation(self.text, self.name, self.names) if self.solved else None


class Chain:
    __slots__ = ("title", "rows", "_values", "data")   # a chapter's extra objects go in `data`, never new attributes

    def __init__(self, title: str = ""):
        self.title = title
        self.rows: list[Row] = []
        self._values: dict[str, object] = {}
        # What the page draws beyond the rows (a simulation's runs, a trace, a sweep), by name: the one declared
        # place for it, so a chapter never bolts attributes onto a Chain.
        self.data: dict[str, object] = {}

    # --- building ---------------------------------------------------------------------------
    def _new(self, name: str) -> str:
        if name in self._values:
            raise ValueError(f"symbol {name!r} is already defined in this chain")
        return name

    def given(self, name: str, value, label: str = "", *, kind: str = "", source: str = "",
              digits: int = 3):
        """An input: a pint quantity (or a plain number) with its label, kind and source. A catalog
        Value (catalog.accelerator("h100-sxm")["bf16_dense"]) brings its own kind and source."""
        if hasattr(value, "source") and hasattr(value, "q"):
            kind, source, value = kind or value.kind, source or value.cite, value.q
        value = value if hasattr(value, "units") else Q_(value, "")
        self.rows.append(Row(self._new(name), value, label, kind=kind, source=source, digits=digits))
        self._values[name] = value
        return value

    def _evaluate(self, code: formula_code.Code, text: str, unit: str | None):
        unknown = [n for n in code.free if n not in self._values]
        if unknown:
            raise ValueError(f"formula {text} uses undefined symbols {unknown}")
        value = formula_code.evaluate(code, self._values)
        value = value if hasattr(value, "units") else Q_(value, "")
        return value.to(unit) if unit is not None else value.to_reduced_units()

    def _symbols(self) -> set:
        return {r.name for r in self.rows}

    def step(self, name: str, formula: str, unit: str | None = None, label: str = "", *,
             digits: int = 3):
        """A derived value: `formula` over earlier symbols, converted to `unit` (checked by pint)."""
        self._new(name)
        code = formula_code.code_for_step(formula, self._symbols())
        value = self._evaluate(code, formula, unit)
        self.rows.append(Row(name, value, label, formula, code.names, digits=digits))
        self._values[name] = value
        return value

    def solve(self, name: str, equation: str, unit: str | None = None, label: str = "", *,
              digits: int = 3):
        """Solve `lhs = rhs` for the new symbol `name`, show the closed form, and evaluate it."""
        self._new(name)
        code = formula_code.code_for_solve(equation, name, self._symbols())
        value = self._evaluate(code, equation, unit)
        self.rows.append(Row(name, value, label, equation, code.names, solved=True, digits=digits))
        self._values[name] = value
        return value

    def value(self, name: str, quantity):
        """A named value the chain's results read but its table does not show (the same number in
        another unit, a count rounded for publishing): readable as chain[name], no row."""
        self._values[self._new(name)] = quantity if hasattr(quantity, "units") else Q_(quantity, "")
        return self._values[name]

    # --- reading ----------------------------------------------------------------------------
    def __getitem__(self, name: str):
        return self._values[name]

    def closed_form(self, name: str):
        """The sympy expression of a step (a solved step's solution)."""
        return next(r.formula for r in self.rows if r.name == name)

    def latex(self, name: str) -> str:
        """LaTeX for one step: the equation (and its solution, for solved steps)."""
        import sympy as sp
        row = next(r for r in self.rows if r.name == name)
        out = sp.latex(sp.Eq(row.symbol, row.formula, evaluate=False), order="none")
        if row.solved:
            out = sp.latex(row.equation) + r" \;\Rightarrow\; " + out
        return out

    def _how(self, row: Row) -> str:
        """A derived row's "how" cell: its formula (a solved step's equation, then its solution), and below it
        the same with every symbol's value substituted; each as pieces of inline math the cell wraps between
        (utils.display.math_pieces), so no formula hides its end behind a scroll bar."""
        import sympy as sp

        from utils.display import LINE_CHARS, math_pieces, seen_width

        def after(head: str, pieces: list[str]) -> list[str]:   # "x =" on the first piece's line if both fit
            return [f"{head} {pieces[0]}", *pieces[1:]] if seen_width(head + pieces[0]) <= LINE_CHARS else [head, *pieces]
        expr, symbol = row.formula, sp.latex(row.symbol)     # the formula parsed once (sympify is not cached)
        digits = {r.name: r.digits for r in self.rows}
        names = {s: r"\text{" + fmt(self._values[s.name], digits=digits[s.name]) + "}"
                 for s in expr.free_symbols if s.name in digits}
        solution = math_pieces(expr, order="none")
        formula = after(f"{symbol} =", solution)
        if row.solved:
            eq = row.equation
            lhs, rhs = math_pieces(eq.lhs, order="none"), math_pieces(eq.rhs, order="none")
            formula = [*lhs[:-1], *after(f"{lhs[-1]} =", rhs), *after(rf"\;\Rightarrow\; {symbol} =", solution)]
        numbers = after("=", math_pieces(expr, symbol_names=names, order="none", mul_symbol="times"))
        return " ".join(f"${p}$" for p in formula) + "<br>" + " ".join(f"${p}$" for p in numbers)

    def _repr_markdown_(self) -> str:
        # The value comes before the derivation, so the number the table exists for is always on
        # screen; the derivation (formula, then the numbers substituted) wraps or scrolls in its own
        # column (book/_static/book.css), and an input's kind and source sit there in small type.
        import sympy as sp
        lines = [f"**{self.title}**\n"] if self.title else []
        lines += ['| <span class="chain-table"></span> | quantity | value | how |', "|---|---|--:|---|"]
        for r in self.rows:
            sym = f"${sp.latex(r.symbol)}$"
            value = fmt(r.value, digits=r.digits)
            if not r.text:
                provenance = " · ".join(x for x in (r.kind, r.source) if x)
                how = f"<small>input · {provenance}</small>" if provenance else "<small>input</small>"
                lines.append(f"| {sym} | {r.label} | {value} | {how} |")
            else:
                lines.append(f"| {sym} | {r.label} | **{value}** | {self._how(r)} |")
        return "\n".join(lines)

    def __repr__(self) -> str:
        width = max((len(r.name) for r in self.rows), default=0)
        lines = [self.title] if self.title else []
        for r in self.rows:
            how = "input" if not r.text else f"= {r.formula}"
            lines.append(f"{r.name:<{width}}  {fmt(r.value, digits=r.digits):>22}  {how}  "
                         f"{r.label}".rstrip())
        return "\n".join(lines)


def as_float(x, unit: str | None = None) -> float:
    """A quantity's magnitude as a plain float, in `unit` if given (for sweeps and asserts)."""
    if hasattr(x, "units"):
        x = x.to(unit) if unit is not None else x
        return float(x.magnitude)
    return float(x)


# --- memoised page functions ---------------------------------------------------------------------------

_MEMOISED: list = []


def memoised(fn):
    """A chain module's expensive, deterministic function (a check that runs a simulation, the claim's own
    chain), computed once per process for each set of arguments. The one cache a chain module keeps:
    `clear_memoised()` empties every one of them (the contract test does, before it watches for draws)."""
    cached = functools.lru_cache(maxsize=None)(fn)
    _MEMOISED.append(cached)
    return cached


def clear_memoised() -> None:
    for fn in _MEMOISED:
        fn.cache_clear()
