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


# --- MFU bases and ZeRO stages -----------------------------------------------------------
def test_flops_per_token_on_each_basis():
    from utils.training import flops_per_token, mfu_to_6n
    n, L, d, T = 1e9, 10, 1000, 2000
    assert flops_per_token("6N", n) == 6e9
    assert flops_per_token("6N+attention", n, L, d, T) == 6e9 + 12 * L * d * T     # PaLM Appendix B
    assert flops_per_token("6N+causal-attention", n, L, d, T) == 6e9 + 6 * L * d * T
    assert flops_per_token("hardware", n) == 8e9
    assert mfu_to_6n(0.4, "6N", n) == 0.4 and mfu_to_6n(0.4, "hardware", n) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="basis"):
        flops_per_token("6ND", n)


def test_megatron_equation_3_against_its_own_terms():
    """96 B s l h^2 (1 + s/6h + V/16lh) per token is 4 forward passes (fwd, recompute, 2x bwd) of 24 l h^2
    plus attention's 4 s l h and a logit layer 6 V h that is not recomputed."""
    from utils.training import megatron_flops_per_token
    l, h, s, V = 128, 25600, 2048, 51200
    assert megatron_flops_per_token(l, h, s, V) == pytest.approx(96 * l * h**2 + 16 * s * l * h + 6 * V * h)


def test_zero_bytes_per_param_each_stage():
    from utils.training import zero_bytes_per_param, zero_comm_volume
    nd = 64
    assert zero_bytes_per_param(0, nd) == 16
    assert zero_bytes_per_param(1, nd) == 4 + 12 / nd
    assert zero_bytes_per_param(2, nd) == 2 + 14 / nd
    assert zero_bytes_per_param(3, nd) == 16 / nd
    assert all(zero_bytes_per_param(s, 1) == 16 for s in range(4))     # one GPU: nothing to partition
    assert [zero_comm_volume(s) for s in range(4)] == [2, 2, 2, 3]
    with pytest.raises(ValueError):
        zero_bytes_per_param(4, nd)
    with pytest.raises(ValueError):
        zero_bytes_per_param(1, 0)


def test_the_counts_per_parameter_and_token_are_sympy_s_quotients():
    """flops_per_parameter_token and attention_flops_per_token read the products at size one; the symbolic
    quotients, taken over arbitrary sizes, are the same constants."""
    import sympy as sp

    from utils import training
    b, m, n = sp.symbols("b m n", positive=True)
    per = [sp.simplify(v / (m * n * b)) for v in training.linear_layer_passes().values()]
    counts = training.flops_per_parameter_token()
    assert all(p.is_number for p in per)
    assert (counts["forward"], counts["backward"]) == (int(per[0]), int(sum(per[1:])))
    T, d = sp.symbols("T d", positive=True)
    full = sp.simplify(training._attention_products(T, d) / (T * T * d))
    assert full.is_number and int(full) == training.attention_flops_per_token()["full"]


def test_a_catalog_rental_rate_is_named_and_any_other_price_is_not():
    from utils.training import H100_RENTAL_RATES, h100_rental_rates, rental_rate_source
    rates = h100_rental_rates()
    assert tuple(rates) == H100_RENTAL_RATES and list(rates.values()) == sorted(rates.values())
    kind, source = rental_rate_source(rates["contract_1y"])
    assert kind == "market" and source.startswith("catalog h100-rental.contract_1y: ") and ", read 20" in source
    assert rental_rate_source(rates["contract_1y"] + 0.01) is None


def test_mixed_precision_adam_is_sixteen_bytes_a_parameter():
    """bf16 weight 2 + bf16 gradient 2 + fp32 master 4 + Adam m 4 + v 4, nothing partitioned: the one place the
    chapters read it from."""
    from utils.training import zero_bytes_per_param
    assert zero_bytes_per_param(0, 1) == 2 + 2 + 4 + 4 + 4
