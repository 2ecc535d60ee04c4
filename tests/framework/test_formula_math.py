"""utils.formula_math: each function gives numpy's answer, value and unit, on a float, a pint scalar and an array,
and a scalar never needs numpy (the browser's Python has none)."""
import math
import subprocess
import sys

import numpy as np
import pint
import pytest

from utils import formula_math as fm
from utils.units import Q_

SCALARS = [2.5, -2.5, 0.0, 7.0, Q_(2.5, "GPU"), Q_(-0.4, "s"), Q_(2500.0, "W") / Q_(1.0, "kW")]


def _same(ours, theirs):
    if hasattr(theirs, "units"):
        assert hasattr(ours, "units") and ours.units == theirs.units
        ours, theirs = ours.magnitude, theirs.magnitude
    assert type(ours) in (int, float) or isinstance(ours, np.ndarray)
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("x", SCALARS, ids=str)
@pytest.mark.parametrize("name", ["ceil", "floor"])
def test_rounding_keeps_the_unit_and_returns_a_float(name, x):
    ours, theirs = getattr(fm, name)(x), getattr(np, name)(x)
    _same(ours, theirs)
    assert isinstance(getattr(ours, "magnitude", ours), float)


@pytest.mark.parametrize("a, b", [(Q_(3.0, "GPU"), Q_(2.0, "GPU")), (Q_(1.0, "kW"), Q_(1500.0, "W")),
                                  (Q_(2.0, "s"), 0), (0, Q_(2.0, "s")), (Q_(0.5, ""), 0.7), (1.0, 2.0),
                                  (Q_(50.0, "percent"), 0.4)], ids=str)
@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_extremes_answer_in_the_first_quantitys_unit_as_numpy_does(name, a, b):
    _same(getattr(fm, name)(a, b), getattr(np, name)(a, b))


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_a_plain_number_against_a_dimensioned_quantity_is_a_unit_error_unless_zero(name):
    with pytest.raises(pint.DimensionalityError):
        getattr(fm, name)(Q_(2.0, "s"), 3.0)
    assert math.isnan(getattr(fm, name)(math.nan, 1.0)) and math.isnan(getattr(fm, name)(1.0, math.nan))


def test_sqrt_halves_the_units_and_log_takes_only_a_dimensionless_value():
    _same(fm.sqrt(Q_(4.0, "m**2")), np.sqrt(Q_(4.0, "m**2")))
    _same(fm.sqrt(2.0), np.sqrt(2.0))
    assert fm.log(Q_(2500.0, "W") / Q_(1.0, "kW")) == math.log(2.5)
    with pytest.raises(pint.DimensionalityError):
        fm.log(Q_(2.0, "s"))


@pytest.mark.parametrize("name", ["ceil", "floor", "sqrt", "log"])
def test_arrays_go_to_numpy(name):
    x = Q_(np.array([1.5, 2.5, 4.0]), "")
    _same(getattr(fm, name)(x), getattr(np, name)(x))


def test_a_scalar_formula_imports_no_numpy():
    code = ("import sys; sys.modules['numpy'] = None\n"
            "from utils import formula_math as fm\nfrom utils.units import Q_\n"
            "print(fm.ceil(Q_(2.5, 'GPU')), fm.maximum(Q_(1.0, 'kW'), Q_(1500.0, 'W')), fm.log(2.0))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3.0", "GPU", "1.5", "kW", repr(math.log(2.0))]
