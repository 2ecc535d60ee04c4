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
and can be solved for any unknown); they are evaluated with numpy on pint quantities, so a unit slip
raises instead of printing a wrong number.
"""
from __future__ import annotations

import contextlib
import importlib
import keyword
import sys
import types
from dataclasses import dataclass

import numpy as np
import sympy as sp
from sympy.printing.numpy import NumPyPrinter

from utils.units import Q_, fmt


@dataclass
class Row:
    symbol: sp.Symbol
    value: object                 # pint Quantity
    label: str
    formula: sp.Expr | None = None
    equation: sp.Eq | None = None  # for solved steps: the equation before solving
    kind: str = ""
    source: str = ""
    digits: int = 3


class Chain:
    def __init__(self, title: str = ""):
        self.title = title
        self.rows: list[Row] = []
        self._symbols: dict[str, sp.Symbol] = {}
        self._values: dict[str, object] = {}

    # --- building ---------------------------------------------------------------------------
    def _symbol(self, name: str) -> sp.Symbol:
        if name in self._symbols:
            raise ValueError(f"symbol {name!r} is already defined in this chain")
        sym = sp.Symbol(name)
        self._symbols[name] = sym
        return sym

    def given(self, name: str, value, label: str = "", *, kind: str = "", source: str = "",
              digits: int = 3):
        """An input: a pint quantity (or a plain number) with its label, kind and source. A catalog
        Value (catalog.accelerator("h100-sxm")["bf16_dense"]) brings its own kind and source."""
        if hasattr(value, "source") and hasattr(value, "q"):
            kind, source, value = kind or value.kind, source or value.cite, value.q
        value = value if hasattr(value, "units") else Q_(value, "")
        self.rows.append(Row(self._symbol(name), value, label, kind=kind, source=source, digits=digits))
        self._values[name] = value
        return value

    def _parse(self, text: str) -> sp.Expr:
        # evaluate=False keeps the formula as written (k N D, not D N k) for display.
        return sp.sympify(text, locals=dict(self._symbols), evaluate=False)

    def _evaluate(self, expr: sp.Expr, unit: str | None):
        free = sorted(expr.free_symbols, key=lambda s: s.name)
        unknown = [s.name for s in free if s.name not in self._values]
        if unknown:
            raise ValueError(f"formula {expr} uses undefined symbols {unknown}")
        value = _numeric(expr, {s.name: self._values[s.name] for s in free})
        value = value if hasattr(value, "units") else Q_(value, "")
        return value.to(unit) if unit is not None else value.to_reduced_units()

    def step(self, name: str, formula: str, unit: str | None = None, label: str = "", *,
             digits: int = 3):
        """A derived value: `formula` over earlier symbols, converted to `unit` (checked by pint)."""
        expr = self._parse(formula)
        value = self._evaluate(expr, unit)
        self.rows.append(Row(self._symbol(name), value, label, formula=expr, digits=digits))
        self._values[name] = value
        return value

    def solve(self, name: str, equation: str, unit: str | None = None, label: str = "", *,
              digits: int = 3):
        """Solve `lhs = rhs` for the new symbol `name`, show the closed form, and evaluate it."""
        unknown = sp.Symbol(name)
        lhs, rhs = equation.split("=")
        local = {**self._symbols, name: unknown}
        eq = sp.Eq(sp.sympify(lhs, locals=local), sp.sympify(rhs, locals=local))
        # check=False: sympy's own back-substitution check costs a third of a re-derivation; the chain
        # evaluates the solution with units right after, and more than one usable solution still raises.
        with _no_sympy_units():
            solutions = [s for s in sp.solve(eq, unknown, check=False) if not (s.is_number and s.is_negative)]
        if len(solutions) != 1:
            raise ValueError(f"{equation} has {len(solutions)} usable solutions for {name}")
        value = self._evaluate(solutions[0], unit)
        self._symbols[name] = unknown
        self.rows.append(Row(unknown, value, label, formula=solutions[0], equation=eq, digits=digits))
        self._values[name] = value
        return value

    def value(self, name: str, quantity):
        """A named value the chain's results read but its table does not show (the same number in
        another unit, a count rounded for publishing): readable as chain[name], no row."""
        if name in self._values:
            raise ValueError(f"{name!r} is already defined in this chain")
        self._values[name] = quantity if hasattr(quantity, "units") else Q_(quantity, "")
        return self._values[name]

    # --- reading ----------------------------------------------------------------------------
    def __getitem__(self, name: str):
        return self._values[name]

    def closed_form(self, name: str) -> sp.Expr:
        return next(r.formula for r in self.rows if r.symbol.name == name)

    def latex(self, name: str) -> str:
        """LaTeX for one step: the equation (and its solution, for solved steps)."""
        row = next(r for r in self.rows if r.symbol.name == name)
        out = sp.latex(sp.Eq(row.symbol, row.formula, evaluate=False), order="none")
        if row.equation is not None:
            out = sp.latex(row.equation) + r" \;\Rightarrow\; " + out
        return out

    def _substituted(self, row: Row) -> str:
        names = {s: r"\text{" + fmt(self._values[s.name], digits=r.digits) + "}"
                 for s in row.formula.free_symbols
                 for r in self.rows if r.symbol == s}
        return sp.latex(row.formula, symbol_names=names, order="none", mul_symbol="times")

    def _repr_markdown_(self) -> str:
        # The value comes before the derivation, so the number the table exists for is always on
        # screen; the derivation (formula, then the numbers substituted) wraps or scrolls in its own
        # column (book/_static/book.css), and an input's kind and source sit there in small type.
        lines = [f"**{self.title}**\n"] if self.title else []
        lines += ['| <span class="chain-table"></span> | quantity | value | how |', "|---|---|--:|---|"]
        for r in self.rows:
            sym = f"${sp.latex(r.symbol)}$"
            value = fmt(r.value, digits=r.digits)
            if r.formula is None:
                provenance = " · ".join(x for x in (r.kind, r.source) if x)
                how = f"<small>input · {provenance}</small>" if provenance else "<small>input</small>"
                lines.append(f"| {sym} | {r.label} | {value} | {how} |")
            else:
                lines.append(f"| {sym} | {r.label} | **{value}** | ${self.latex(r.symbol.name)}$<br>"
                             f"$= {self._substituted(r)}$ |")
        return "\n".join(lines)

    def __repr__(self) -> str:
        width = max((len(r.symbol.name) for r in self.rows), default=0)
        lines = [self.title] if self.title else []
        for r in self.rows:
            how = "input" if r.formula is None else f"= {r.formula}"
            lines.append(f"{r.symbol.name:<{width}}  {fmt(r.value, digits=r.digits):>22}  {how}  "
                         f"{r.label}".rstrip())
        return "\n".join(lines)


@contextlib.contextmanager
def _no_sympy_units():
    """sympy's simplify imports sympy.physics.units (a tenth of a second, once per process) only to ask
    whether the expression holds a sympy Quantity or Unit; a chain's never does (its units are pint's). For the
    length of a solve, that import finds a stand-in whose Quantity and Unit nothing is an instance of; the stand-in
    is removed afterwards, so a later `import sympy.physics.units` gets the real module."""
    name = "sympy.physics.units"
    if name in sys.modules:
        yield
        return
    stand_in = types.ModuleType(name)
    stand_in.Quantity = type("Quantity", (), {})
    stand_in.Unit = type("Unit", (), {})
    sys.modules[name] = stand_in
    try:
        yield
    finally:
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]


def _numeric(expr: sp.Expr, values: dict):
    """`expr` evaluated on `values`, from the code `sympy.lambdify(..., modules="numpy")` would write (so the
    same operations in the same order), run in a namespace of only the numpy names that code uses: lambdify's
    own namespace is `from numpy import *`, which imports numpy.f2py and costs a fifth of a re-derivation."""
    if not all(name.isidentifier() and not keyword.iskeyword(name) for name in values):
        return sp.lambdify(list(map(sp.Symbol, values)), expr, modules="numpy")(*values.values())
    printer = NumPyPrinter({"fully_qualified_modules": False, "inline": True, "allow_unknown_functions": True,
                            "user_functions": {}})
    code = printer.doprint(expr)
    namespace = {name: getattr(importlib.import_module(module), name)
                 for module, names in printer.module_imports.items() for name in names}
    return eval(code, namespace, dict(values))  # noqa: S307 - code printed by sympy from the chain's own formula


def as_float(x, unit: str | None = None) -> float:
    """A quantity's magnitude as a plain float, in `unit` if given (for numpy sweeps and asserts)."""
    if hasattr(x, "units"):
        x = x.to(unit) if unit is not None else x
        return float(np.asarray(x.magnitude))
    return float(x)
