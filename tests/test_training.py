"""utils.training's fleet arithmetic: the fleet equation, power-of-two rounding, whole nodes, headroom."""
import pytest

from utils.chain import Chain
from utils.training import (
    fat_tree_sizes,
    fleet_equation,
    free_headroom,
    next_power_of_two,
    rounding_orders,
    six_nd,
    whole_nodes,
    with_headroom,
)
from utils.units import q


def test_next_power_of_two():
    assert [next_power_of_two(x) for x in (0.3, 1, 2, 3, 4096, 4097, 7130.0)] == [1, 1, 2, 4, 4096, 8192, 8192]
    assert next_power_of_two(8192.0000000001) == 8192          # floating-point residue is not a GPU
    assert next_power_of_two(q(1543.2, "GPU")) == 2048
    with pytest.raises(ValueError):
        next_power_of_two(0)


def test_whole_nodes_and_headroom():
    assert whole_nodes(7012.6, 8) == 7016 and whole_nodes(q(16, "GPU"), 8) == 16
    assert with_headroom(1000, 0.15) == pytest.approx(1150)


def test_the_order_of_operations_matters():
    orders = rounding_orders(6141.5, 0.15, 8)
    assert orders["headroom, then the next power of two (the plan)"] == 8192
    assert orders["the next power of two, then headroom, then round again"] == 16384
    assert orders["headroom, then whole nodes"] == 7064
    assert free_headroom(6144) == pytest.approx(8192 / 6144 - 1)


def test_fleet_equation_solves_for_the_count_and_is_inverse_in_time():
    def count(days):
        ch = Chain()
        six_nd(ch, 70e9, 15e12)
        return fleet_equation(ch, q(989.4e12, "FLOP/s"), 0.4, days).to("GPU").m
    assert count(30.0) == pytest.approx(6.3e24 / (989.4e12 * 0.4 * 30 * 86400), rel=1e-12)
    assert count(60.0) == pytest.approx(count(30.0) / 2, rel=1e-12)


def test_fat_tree_sizes():
    assert fat_tree_sizes(64) == {1: 32, 2: 2048, 3: 65536}
