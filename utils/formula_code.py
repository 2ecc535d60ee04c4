"""The code of every chain formula, printed once by sympy and kept in utils/formula_code.json, so a
re-derivation evaluates a chain without importing sympy (a third of a second a call, before any arithmetic).

A chain step is a formula string over the chain's symbols; a solved step is an equation and the unknown it is
solved for. sympy parses the formula (or solves the equation) and its NumPyPrinter writes the expression as
Python; its functions (ceil, maximum, ...) are taken from utils.formula_math, which computes a scalar with
Python's math and pint and imports numpy only for an array, so a closed-form chapter evaluates without numpy
(in the reader's browser too). That code is what the chain evaluates on pint quantities. The printed code depends only on
the formula's text and on which of its names are the chain's symbols, so it is stored under that key:

    code_for_step("k*N*D", {"k", "N", "D"})                  # -> Code(text="k*N*D", imports=(), free=(...))
    code_for_solve("C = N_gpu*R*u*T", "N_gpu", {"C", "R", "u", "T"})

A key not in the file (a formula a reader's own chain writes) is printed by sympy on the spot: the result is
the same, only slower. `python -m utils.tools.write_formula_code` rebuilds the file from every chapter's chain
(its defaults and its claims); tests/framework/test_formula_code.py checks each stored entry against sympy's output
today and that every chapter's defaults need no sympy.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import keyword
import re
import sys
import types
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from utils import formula_math

FILE = Path(__file__).with_name("formula_code.json")
_MODULE = {"numpy": "utils.formula_math"}  # NumPyPrinter's module -> where the book's code takes those names
_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
MISSES: list[str] = []          # keys not in the file, each time one is asked for (the completeness test reads it)
_USE_FILE = True                # False while rebuilding the file
_PRINTED: dict = {}             # key -> entry sympy printed in this process, so a key missing from the file is
                                # printed once, not at every evaluation of its step


@dataclass(frozen=True)
class Code:
    text: str                   # Python over utils.formula_math's names, as sympy's NumPyPrinter writes them
    imports: tuple              # ((module, (name, ...)), ...) the code uses
    free: tuple                 # the chain symbols the code reads, sorted
    names: tuple                # the chain symbols the formula's text mentions (the key's), sorted


def names_in(text: str, symbols) -> list[str]:
    """The chain symbols a formula's text mentions, sorted (the rest of its names are sympy's: Min, ceiling)."""
    return sorted(set(_NAME.findall(text)) & set(symbols))


def key(kind: str, text: str, unknown: str, names) -> str:
    return json.dumps([kind, text, unknown, list(names)])


@lru_cache(maxsize=1)
def _stored() -> dict:
    try:
        return json.loads(FILE.read_text())
    except FileNotFoundError:
        return {}


def _entry(k: str, names: list, make) -> Code:
    entry = _stored().get(k) if _USE_FILE else None
    if entry is None:
        MISSES.append(k)
        if k not in _PRINTED:
            _PRINTED[k] = make()
        entry = _PRINTED[k]
    return Code(entry["code"], tuple((m, tuple(n)) for m, n in entry["imports"]), tuple(entry["free"]),
                tuple(names))


def code_for_step(text: str, symbols) -> Code:
    names = names_in(text, symbols)
    return _entry(key("step", text, "", names), names, lambda: _print(parse(text, names)))


def code_for_solve(equation: str, unknown: str, symbols) -> Code:
    names = names_in(equation, set(symbols) - {unknown})
    return _entry(key("solve", equation, unknown, names), names,
                  lambda: _print(solution(equation, unknown, names)))


def evaluate(code: Code, values: dict):
    """The code run on the chain's values (pint quantities), in a namespace of only the names it uses."""
    namespace = {name: getattr(importlib.import_module(module), name) for module, names in code.imports
                 for name in names}
    return eval(code.text, namespace, {n: values[n] for n in code.free})  # noqa: S307 - printed by sympy


# --- sympy: parsing, solving, printing (imported only here, and only when needed) ---------------------------

def parse(text: str, names):
    """The formula as sympy reads it; evaluate=False keeps it as written (k N D, not D N k) for display."""
    import sympy as sp
    return sp.sympify(text, locals={n: sp.Symbol(n) for n in names}, evaluate=False)


def equation(text: str, unknown: str, names):
    import sympy as sp
    lhs, rhs = text.split("=")
    local = {n: sp.Symbol(n) for n in (*names, unknown)}
    return sp.Eq(sp.sympify(lhs, locals=local), sp.sympify(rhs, locals=local))


@lru_cache(maxsize=None)
def _solve(text: str, unknown: str, names: tuple):
    import sympy as sp
    # check=False: sympy's own back-substitution check costs a third of a solve; the chain evaluates the
    # solution with units right after, and more than one usable solution still raises.
    with _no_sympy_units():
        solutions = [s for s in sp.solve(equation(text, unknown, names), sp.Symbol(unknown), check=False)
                     if not (s.is_number and s.is_negative)]
    if len(solutions) != 1:
        raise ValueError(f"{text} has {len(solutions)} usable solutions for {unknown}")
    return solutions[0]


def solution(text: str, unknown: str, names):
    """The one usable solution of `lhs = rhs` for `unknown` (a ValueError where there are none or several)."""
    return _solve(text, unknown, tuple(names))


def _print(expr) -> dict:
    from sympy.printing.numpy import NumPyPrinter
    free = sorted(s.name for s in expr.free_symbols)
    if not all(n.isidentifier() and not keyword.iskeyword(n) for n in free):
        raise ValueError(f"chain symbols must be Python identifiers: {free}")
    printer = NumPyPrinter({"fully_qualified_modules": False, "inline": True, "allow_unknown_functions": True,
                            "user_functions": {}})
    code = printer.doprint(expr)
    imports = sorted([_MODULE.get(m, m), sorted(n)] for m, n in printer.module_imports.items())
    missing = sorted(set(next((n for m, n in imports if m == _MODULE["numpy"]), ())) - set(formula_math.__all__))
    if missing:
        raise ValueError(f"utils.formula_math lacks {missing}, which the formula {code} calls: add them there")
    return {"code": code, "imports": imports, "free": free}


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


# --- the stored file ------------------------------------------------------------------------------------

def fresh(k: str) -> dict:
    """What sympy prints today for a stored key."""
    kind, text, unknown, names = json.loads(k)
    return _print(parse(text, names) if kind == "step" else solution(text, unknown, names))
