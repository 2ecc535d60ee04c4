"""serverless-cold-start's chain: the claim and its verdict, each stage from bytes and rate, the snapshot
floor, the pool against the simulated pool, bad input refused, and properties."""
import pytest

from utils import chains
from utils.chains import serverless_cold_start as sc
from utils.params import ParameterError
from utils.serving import warm_pool
from utils.verdicts import UNCHECKABLE


def test_claim_cannot_be_checked_and_the_book_scenario_keeps_its_own_bar():
    """The source names no threshold, model, traffic or price: cannot be checked, whatever the book's scenario
    gives; the scenario itself (cold over the book's bar, snapshot under it, a positive margin) still holds."""
    (c,) = sc.claims()
    assert c.verdict == UNCHECKABLE and not c.reading and not c.nearest_true
    k = sc.checks()
    assert k["ok"]
    assert k["chain"]["T_c"].to("s").m > sc.BUDGET_S >= k["chain"]["T_s"].to("s").m


def test_stages_are_bytes_over_rates():
    ch = sc.chain(sc.claim_inputs())
    assert ch["t_img"].to("s").m == pytest.approx(10e9 / 0.1e9)
    assert ch["M_w"].to("GB").m == pytest.approx(16.06, abs=0.01)          # Llama-3-8B, bf16
    assert ch["r_w"].to("GB/s").m == pytest.approx(2.85)                    # the object store binds
    assert sc.checks()["serial"]["ready"] == pytest.approx(ch["T_c"].to("s").m)


def test_overlap_shortens_but_never_below_the_longest_path():
    k = sc.checks()
    ov = k["overlapped"]["timeline"]
    assert ov["ready"] < k["serial"]["ready"]
    assert k["overlapped"]["path"][0] == "image pull"


def test_pool_matches_simulation_and_beats_the_mean():
    out = chains.derive("serverless-cold-start")
    assert abs(out["cold_share"].m - out["cold_share_simulated"].m) < 3e-3
    ch = sc.chain(sc.claim_inputs())
    assert out["pool_snapshot"].m > ch["a_s"].m
    assert warm_pool.poisson_tail(ch["a_s"].m, int(out["pool_snapshot"].m) - 1) > 0.01


def test_a_target_of_one_needs_no_pool_and_a_slow_start_a_large_one():
    r = chains.derive("serverless-cold-start", target=1.0)
    assert r["pool_cold"].m == r["pool_snapshot"].m == 0 and r["cold_share"].m == 1.0
    slow = chains.derive("serverless-cold-start", cuda_init_s=3e6)
    assert slow["pool_cold"].m > 3e6


@pytest.mark.parametrize("name,value", [("registry_rate", 0.0), ("target", 1.5), ("weights_from", "tape"),
                                        ("snapshot_restore_s", 0.01), ("model", "no-such-model")])
def test_bad_input_is_refused_naming_it(name, value):
    with pytest.raises(ParameterError, match=name if name != "snapshot_restore_s" else "snapshot_restore_s"):
        chains.derive("serverless-cold-start", **{name: value})


def test_faster_starts_need_smaller_pools_and_packing_raises_margin():
    base = chains.derive("serverless-cold-start")
    cache = chains.derive("serverless-cold-start", weights_from="page-cache")
    assert cache["cold_start"] < base["cold_start"]
    assert base["pool_snapshot"] < base["pool_cold"]
    packed = chains.derive("serverless-cold-start", isolation="packed")
    assert packed["margin"] > base["margin"]
    assert chains.derive("serverless-cold-start", request_rate=10.0)["margin"] > base["margin"]


def test_pool_search_is_one_pass_and_agrees_with_the_tail_at_a_hundred_requests_a_second():
    """The search is O(k): 100 requests/s at the cold start sizes a pool of thousands at once, and the pool it
    returns is the smallest k whose Poisson tail is within the target."""
    import time

    from utils.serving import warm_pool as wp
    t0 = time.perf_counter()
    k = wp.pool_size(100.0, 131.0, 0.01)
    assert time.perf_counter() - t0 < 1.0
    assert wp.poisson_tail(100 * 131.0, k) <= 0.01 < wp.poisson_tail(100 * 131.0, k - 1)


def test_reused_instances_need_no_starts_and_keep_the_margin_positive():
    """Single-use instances make the cold-start margin negative; reuse until an idle timeout does not."""
    ch = sc.compute(sc.claim_inputs())
    assert ch["m_c"].m < 0 < ch["m_r"].m
    assert ch["L_b"].m < ch["k_r"].m < ch["k_c"].m
    kinds = {r.name: r.kind for r in ch.rows}
    assert kinds["t_comp"] == kinds["t_g"] == kinds["T_r"] == "measured-by-others"
    assert kinds["c"] == kinds["pr"] == "market"


def test_the_providers_cost_default_is_the_catalogs_contract_price():
    from utils import catalog
    from utils.chain import as_float
    contract = catalog.price("h100-rental")["contract_1y"]
    assert sc.SPEC.defaults()["cost_per_gpu_hour"] == as_float(contract.q, "USD/GPU/hour") and contract.kind == "market"
