"""gemm-tiling's chain: the claim wrong as stated (no reading makes both halves true), the published
counts re-derived, the chain against the kernel module's exact count, bad inputs refused, and properties."""
import pytest

from utils import chains
from utils.chains import gemm_tiling as gt
from utils.params import ParameterError
from utils.verdicts import WRONG

SLUG = "gemm-tiling"


def test_claim_is_wrong_as_stated():
    (c,) = gt.claims()
    assert c.verdict == WRONG and c.nearest_true
    rd = gt.readings()
    assert rd[2]["naive"]["per thread, both loads (per multiply-add)"] == 4         # bf16: four, not two
    assert rd[1]["naive"]["per thread, both loads (per multiply-add)"] == 2         # two only for fp8
    assert rd[2]["naive"]["per FLOP (two FLOPs per multiply-add)"] == 2
    for e in (1, 2, 4):                                                             # tiled / naive = 1/128
        assert rd[e]["tiled"] / rd[e]["naive"]["per thread, both loads (per multiply-add)"] == 1 / 128 < 0.01
    lo, _ = gt.CLAIM["few_hundredths"]
    assert rd[2]["tiled"] / rd[2]["naive"]["per warp, distinct bytes (A broadcast)"] < lo


def test_published_figures():
    r = chains.derive(SLUG)
    assert r["naive_bytes_per_fma"].to("B").m == 4 and r["tiled_bytes_per_fma"].to("B").m == 0.03125
    F, Q = 2 * 8192**3, 0.03125 * 8192**3 + 2 * 8192**2
    assert r["tiled_intensity"].to("FLOP/B").m == pytest.approx(F / Q)
    assert r["min_compute_bound_tile"].m == 413          # e I* = 2 x 989.4 / 4.8


def test_chain_matches_the_kernel_modules_count():
    pytest.importorskip("torch")
    from utils.gpu.kernels.matmul import block_k_for, bytes_per_fma, global_bytes
    for t in (16, 32, 64, 128, 256):
        assert gt.block_k_for(t) == block_k_for(t) and gt.bytes_per_fma(t, t, 2) == bytes_per_fma(t, t, 2)
        ch = gt.compute(chains.check(SLUG, tile_m=t, tile_n=t))
        assert ch["Q_t"].to("B").m == pytest.approx(global_bytes(8192, 8192, 8192, t, t, 2), rel=1e-12)


def test_closed_form():
    cf = gt.closed_form()
    e, I_star = cf["symbols"]
    assert cf["naive"] == 2 * e and cf["T"] == e * I_star


@pytest.mark.parametrize("name,value", [("elem_bytes", 3), ("tile_m", 0), ("m", 1.5), ("gpu", "no-such-gpu")])
def test_bad_inputs_are_refused(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **{name: value})


def test_bigger_tile_fewer_bytes_and_slower_hbm_needs_a_bigger_tile():
    base = chains.derive(SLUG)
    big = chains.derive(SLUG, tile_m=256, tile_n=256)
    assert big["tiled_bytes_per_fma"].m == pytest.approx(base["tiled_bytes_per_fma"].m / 2)
    assert big["tiled_intensity"].m > base["tiled_intensity"].m
    assert chains.derive(SLUG, gpu="h100-sxm")["min_compute_bound_tile"].m > base["min_compute_bound_tile"].m


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in gt.compute(gt.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in gt.PARAMETERS}
    assert [sources()[s] for s in ("M", "K", "e", "B_M")] == [own["m"], own["k"], own["elem_bytes"], own["tile_m"]]
    changed = sources(tile_m=64)
    assert changed["B_M"] == "parameters cell" and changed["M"] == own["m"]
