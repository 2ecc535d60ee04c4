import numpy as np
import pytest

from utils.roofline import Chip, attainable, chip, time_floor
from utils.units import q


def test_h100_ridge_is_about_295():
    c = chip("h100-sxm")
    assert c.ridge.units == q(1, "FLOP/byte").units
    assert c.ridge.m == pytest.approx(989.4e12 / 3.35e12)
    assert 290 < c.ridge.m < 300


def test_attainable_is_flat_past_the_ridge_and_linear_below():
    c = Chip("x", "x", q(100, "FLOP/s"), q(10, "byte/s"))
    got = attainable(np.array([1.0, 10.0, 100.0]) * q(1, "FLOP/byte"), c).to("FLOP/s").m
    assert list(got) == [10.0, 100.0, 100.0]


def test_time_floor_names_the_binding_ceiling():
    c = Chip("x", "x", q(100, "FLOP/s"), q(10, "byte/s"))
    t, bound = time_floor(q(1000, "FLOP"), q(10, "byte"), c)
    assert bound == "compute" and t.to("s").m == pytest.approx(10)
    t, bound = time_floor(q(10, "FLOP"), q(1000, "byte"), c)
    assert bound == "memory" and t.to("s").m == pytest.approx(100)
