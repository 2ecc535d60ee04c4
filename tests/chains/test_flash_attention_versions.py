"""flash-attention-versions' chain: the claim under its reading, the paper's figures re-derived, the tile
counts equal to the kernel module's, bad inputs, properties."""
import pytest

from utils import chains
from utils.chains import flash_attention_versions as fav
from utils.params import ParameterError
from utils.verdicts import READING


def test_claim_holds_under_the_fp8_reading():
    (c,) = fav.claims()
    assert c.verdict == READING and "FP8" in c.reading
    ck = fav.checks()
    assert ck["fp8"]["s_sm"].m == pytest.approx(0.60, abs=0.05)      # sixty percent with FP8 products
    assert ck["bf16"]["s_sm"].m < 0.5                                  # not with bf16
    assert ck["bf16"]["phi"].m == pytest.approx(0.01, rel=0.5)         # about one percent of the FLOPs


def test_the_flashattention3_figures_are_reproduced():
    cb, f = fav.claim_chain(), fav.FA3_FIGURES
    assert cb["R_x"].to("1/s").m == pytest.approx(f["exp_rate"], rel=0.01)   # 132 SMs x 16 x 1.83 GHz
    assert cb["rho"].to("FLOP").m == pytest.approx(f["price"], rel=0.01)     # "256x lower throughput"
    assert cb["r_x"].m == pytest.approx(f["exp_half"], abs=0.02)             # "exponential can take 50%"


def test_tile_counts_are_the_kernel_modules():
    pytest.importorskip("torch")
    from utils.gpu.kernels import exp_rate as E
    for args in ((128, 128, 128), (128, 64, 256), (64, 32, 64)):
        for v in (1, 2):
            assert fav.tile_ops(*args, v) == E.tile_ops(*args, v)
    assert fav.SOFTMAX_ALU_PER_SCORE == E.SOFTMAX_ALU_PER_SCORE


@pytest.mark.parametrize("name, value", [("gpu", "nope"), ("head_dim", 0), ("block_q", 1.5),
                                         ("mufu_per_sm_per_clock", -16.0), ("sm_clock_ghz", 0.0)])
def test_bad_input_is_refused_with_its_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("flash-attention-versions", **{name: value})


def test_a_gpu_without_sm_count_is_refused():
    from utils import catalog
    lacking = [k for k in catalog.keys("accelerator") if "sm_count" not in catalog.accelerator(k)]
    if not lacking:
        pytest.skip("every accelerator in the catalog has an SM count")
    with pytest.raises(ParameterError, match="gpu"):
        chains.derive("flash-attention-versions", gpu=lacking[0])


def test_bigger_heads_hide_the_softmax_and_more_sequences_fill_v1():
    base = chains.derive("flash-attention-versions")
    big = chains.derive("flash-attention-versions", head_dim=256)
    assert big["exp_time_share_serial"] < base["exp_time_share_serial"]
    assert big["softmax_flop_share"] < base["softmax_flop_share"]
    assert chains.derive("flash-attention-versions", mufu_per_sm_per_clock=32.0)["head_dim_at_parity"].m == \
        pytest.approx(base["head_dim_at_parity"].m / 2, rel=1e-9)


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in fav.compute(fav.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in fav.PARAMETERS}
    assert [sources()[s] for s in ("d", "u_x", "f", "N")] == [
        own["head_dim"], own["mufu_per_sm_per_clock"], own["sm_clock_ghz"], own["seq_len"]]
    changed = sources(sm_clock_ghz=1.5)
    assert changed["f"] == "parameters cell" and changed["d"] == own["head_dim"]


def test_the_clock_default_is_the_papers_in_the_catalog():
    """sm_clock_ghz defaults to footnote 5's 1830 MHz, which the catalog holds with the paper's other figures."""
    assert fav.SPEC.defaults()["sm_clock_ghz"] == float(fav.FA3.q("sm_clock").to("GHz").m)
