"""memory-wall's chain: the verdicts (the A100 80GB halves, the 40GB does not), figures, bad inputs, properties."""
import pytest

from utils import catalog, chains
from utils.chains import memory_wall as mw
from utils.params import ParameterError
from utils.verdicts import HOLDS, READING, UNCHECKABLE


def test_verdicts():
    judged = {c.name: c for c in mw.claims()}
    assert {n: c.verdict for n, c in judged.items()} == {"halved": READING, "level": HOLDS, "software": UNCHECKABLE}
    assert all(not c.problems() for c in judged.values())


def test_halved_holds_for_the_80gb_a100_only():
    ck = mw.checks()
    r80, r40 = ck["cc"]["r_ba"].m, ck["c40"]["r_ba"].m
    assert r80 == pytest.approx((3.35 / 989.4) / (2.039 / 312), rel=1e-3) and mw.halved(r80)
    assert r40 == pytest.approx((3.35 / 989.4) / (1.555 / 312), rel=1e-3) and not mw.halved(r40)
    assert r40 == pytest.approx(0.68, abs=0.005)


def test_level_against_h100_under_every_b200_figure_and_not_against_h200():
    ck = mw.checks()
    assert ck["cc"]["r_cb"].m == pytest.approx((7.7 / 2250) / (3.35 / 989.4), rel=1e-9)   # HGX B200: 7.7 TB/s
    assert all(ok for label, _, _, ok in ck["readings"] if "vs H100" in label)
    assert not ck["readings"][-1][3]
    assert mw.ridge_check(ck) < 1e-12


def test_published_results():
    out = chains.derive("memory-wall")
    assert out["bytes_per_flop_last"].m == pytest.approx(7.7e12 / 2.25e15)
    assert out["mla_kv_compression"].m == pytest.approx(71.11, abs=0.01)
    assert out["stacks_to_match_first"].m == pytest.approx(out["bandwidth_to_match_first"].to("TB/s").m / (7.7 / 8))


@pytest.mark.parametrize("name, value, message", [("gpu_a", "a100", "gpu_a"), ("dtype", "int8", "dtype")])
def test_bad_inputs_are_refused_by_name(name, value, message):
    with pytest.raises(ParameterError, match=message):
        chains.derive("memory-wall", **{name: value})


def test_a_chip_without_fp8_runs_it_at_bf16_so_the_wall_widens():
    bf16 = chains.derive("memory-wall")
    fp8 = chains.derive("memory-wall", dtype="fp8")
    assert fp8["bytes_per_flop_first"] == bf16["bytes_per_flop_first"]        # A100: fp8 at its bf16 rate
    assert fp8["ratio_middle_over_first"].m == pytest.approx(bf16["ratio_middle_over_first"].m / 2, rel=1e-3)
    # the 40GB A100 as the first chip: less bandwidth per FLOP to start from, so the ratio rises
    a40 = chains.derive("memory-wall", gpu_a="a100-sxm4-40gb")
    assert a40["ratio_middle_over_first"].m > bf16["ratio_middle_over_first"].m
    assert catalog.accelerator("a100-sxm4-40gb").q("bf16_dense") == catalog.accelerator("a100-sxm-80gb").q("bf16_dense")
