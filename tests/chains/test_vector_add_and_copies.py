"""vector-add-and-copies' chain: the claim re-judged, the bytes cancelling, the launch arithmetic against
the kernel's own, the peer path over each chip's own NVLink, bad inputs refused, and properties."""
import pytest

from utils import catalog, chains
from utils.chains import vector_add_and_copies as va
from utils.params import ParameterError
from utils.verdicts import WRONG

SLUG = "vector-add-and-copies"


def test_claim_is_wrong_as_stated_and_lands_only_on_one_chip_at_the_datasheet_rate():
    (c,) = va.claims()
    assert c.verdict == WRONG and c.nearest_true
    rd = va.readings()
    assert rd["h100-sxm"]["sheet"] == pytest.approx(3350 / 63, rel=1e-9)        # 53x: the only landing
    assert rd["h100-sxm"]["practical"] > 55 and rd["h200"]["sheet"] > 55 and rd["b200"]["sheet"] > 55


def test_the_bytes_cancel():
    base = va.ratio_of("h200", "pcie5-x16", 0.85)
    assert va.ratio_of("h200", "pcie5-x16", 0.85, n=1e9, e=2) == pytest.approx(base, rel=1e-12)
    W = catalog.accelerator("h200").q("hbm_bandwidth")
    L = catalog.interconnect("pcie5-x16").q("bandwidth_unidirectional")
    assert base == pytest.approx(float((W / (0.85 * L)).to("")), rel=1e-12)


def test_peer_path_uses_each_chips_own_nvlink():
    rd = va.readings()
    assert rd["b200"]["peer_name"].startswith("NVLink 5") and rd["h200"]["peer_name"].startswith("NVLink 4")
    W = catalog.accelerator("b200").q("hbm_bandwidth")
    nvl5 = catalog.interconnect("nvlink5").q("bandwidth_unidirectional")
    assert nvl5.to("GB/s").m == pytest.approx(900)
    assert rd["b200"]["peer"] == pytest.approx(float((W / nvl5).to("")), rel=1e-12) and rd["b200"]["peer"] < 10


def test_published_launch_and_times():
    r = chains.derive(SLUG)
    assert r["grid_blocks"].m == 390_625 and r["idle_lanes"].m == 0
    assert r["add_time"].to("ms").m == pytest.approx(1.2e9 / 4.8e12 * 1e3, rel=1e-9)
    assert r["copy_over_add"].m == pytest.approx(4800 / (0.85 * 63), rel=1e-9)


def test_launch_arithmetic_matches_the_kernel_module():
    torch = pytest.importorskip("torch")  # noqa: F841
    from utils.gpu.kernels.vector_add import DEFAULT_BLOCK, DEFAULT_WARPS, grid_blocks, idle_lanes
    assert (va.TRITON_BLOCK, va.TRITON_WARPS) == (DEFAULT_BLOCK, DEFAULT_WARPS)
    for n, b in [(100_000_000, 256), (2**31 + 1000, 256), (1025, 1024)]:
        assert va.grid(n, b) == (grid_blocks(n, b), idle_lanes(n, b))
    r = chains.derive(SLUG, n_elements=1e6 + 1, block_size=1024)
    assert (r["grid_blocks"].m, r["idle_lanes"].m) == (grid_blocks(10**6 + 1, 1024), idle_lanes(10**6 + 1, 1024))


def test_cuda_source_is_four_lines_and_a_brace():
    k = va.cuda_kernel()
    assert "i < n" in k["source"] and "(size_t)blockDim.x" in k["source"] and len(k["source"].splitlines()) == 5


@pytest.mark.parametrize("name,value", [("block_size", 100), ("block_size", 2048), ("link_efficiency", 1.5),
                                        ("n_elements", 0.0), ("gpu", "mi300x"), ("gpu", "no-such-gpu"),
                                        ("link", "no-such-link"), ("dtype_bytes", 0)])
def test_bad_inputs_are_refused_with_the_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **{name: value})


def test_faster_hbm_larger_ratio_and_better_link_smaller():
    base = chains.derive(SLUG)["copy_over_add"].m
    assert chains.derive(SLUG, gpu="b200")["copy_over_add"].m > base > chains.derive(SLUG, gpu="h100-sxm")["copy_over_add"].m
    assert chains.derive(SLUG, link_efficiency=1.0)["copy_over_add"].m < base
    assert chains.derive(SLUG, n_elements=1e9)["copy_over_add"].m == pytest.approx(base, rel=1e-12)


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in va.compute(va.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in va.PARAMETERS}
    assert [sources()[s] for s in ("n", "e", "B", "eta")] == [
        own["n_elements"], own["dtype_bytes"], own["block_size"], own["link_efficiency"]]
    changed = sources(block_size=512)
    assert changed["B"] == "parameters cell" and changed["n"] == own["n_elements"]
