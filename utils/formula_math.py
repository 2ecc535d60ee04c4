"""The functions a chain's stored formula code calls (ceil, floor, maximum, minimum, sqrt, log), for scalars
with Python's `math` and pint, for arrays with numpy, which is imported only when an array arrives.

sympy prints a chain formula once (utils/formula_code.py) with these names, as numpy spells them; a scalar
formula then evaluates without numpy, which is what lets a closed-form chapter re-derive in the reader's browser
(Pyodide has the standard library and pint, no numpy). Each keeps units as numpy's ufuncs do on pint quantities:
ceil and floor of a quantity round its magnitude in its own unit, maximum and minimum give the answer in the
first argument's unit, sqrt halves the unit's powers, log takes only a dimensionless value. Results are floats,
as numpy's are (math.ceil returns an int), so a value prints the same either way.
"""
from __future__ import annotations

import math

__all__ = ["ceil", "floor", "maximum", "minimum", "sqrt", "log"]


def _is_array(x) -> bool:
    m = getattr(x, "magnitude", x)
    return not isinstance(m, (int, float)) and hasattr(m, "__len__")


def _numpy(name: str, *args):
    import numpy as np
    return getattr(np, name)(*args)


def _rounded(fn, x):
    if hasattr(x, "units"):
        return type(x)(float(fn(x.magnitude)), x.units)
    return float(fn(x))


def ceil(x):
    return _numpy("ceil", x) if _is_array(x) else _rounded(math.ceil, x)


def floor(x):
    return _numpy("floor", x) if _is_array(x) else _rounded(math.floor, x)


def _extreme(pick, name: str, a, b):
    if _is_array(a) or _is_array(b):
        return _numpy(name, a, b)
    if hasattr(b, "units") and not hasattr(a, "units"):
        return _extreme(pick, name, b, a)       # symmetric: answer in the quantity's unit
    if hasattr(a, "units"):
        return type(a)(_pick(pick, a.magnitude, _magnitude_in(b, a)), a.units)
    return _pick(pick, a, b)


def _magnitude_in(b, a) -> float:
    """b's magnitude in a's unit; a plain zero (or NaN) goes with any unit, as pint lets it in numpy's ufuncs,
    any other plain number only with a dimensionless a."""
    if hasattr(b, "units"):
        return b.to(a.units).magnitude
    if b == 0 or b != b:
        return b
    return type(a)(b, "").to(a.units).magnitude


def _pick(pick, a, b):
    """max or min of two numbers, NaN if either is (as numpy's maximum and minimum)."""
    if a != a or b != b:
        return math.nan
    return pick(a, b)


def maximum(a, b):
    return _extreme(max, "maximum", a, b)


def minimum(a, b):
    return _extreme(min, "minimum", a, b)


def sqrt(x):
    if _is_array(x):
        return _numpy("sqrt", x)
    if hasattr(x, "units"):
        return type(x)(math.sqrt(x.magnitude), x.units ** 0.5)
    return math.sqrt(x)


def log(x):
    if _is_array(x):
        return _numpy("log", x)
    if hasattr(x, "units"):
        x = x.to("").magnitude                  # a DimensionalityError for anything with a unit, as numpy's
    return math.log(x)
