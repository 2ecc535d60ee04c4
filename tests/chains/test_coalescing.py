"""The sector-count analyser (utils.gpu.coalescing) on the patterns the coalescing chapter names: contiguous,
strided, misaligned, inactive lanes, other widths, an access straddling a sector, and the loop-order pair."""
import pytest

from utils.gpu.coalescing import LINE, SECTOR, WARP, analyse, column_walk, row_walk, strided


def test_contiguous_4_byte_is_4_sectors_at_full_efficiency():
    a = analyse(strided(0, 4, 4), 4)
    assert (a.n_sectors, a.n_lines, a.bytes_requested, a.bytes_moved) == (4, 1, 128, 128)
    assert a.efficiency == 1.0 and a.pattern == "contiguous" and a.aligned and a.lanes == WARP


def test_stride_2_is_8_sectors_at_half():
    a = analyse(strided(0, 8, 4), 4)
    assert (a.n_sectors, a.bytes_requested, a.bytes_moved, a.efficiency) == (8, 128, 256, 0.5)
    assert (a.pattern, a.stride) == ("strided", 8)


def test_stride_32_elements_is_32_sectors_at_an_eighth():
    a = analyse(strided(0, 128, 4), 4)
    assert (a.n_sectors, a.n_lines, a.efficiency) == (32, 32, 0.125)
    assert a.sectors == tuple(range(0, 32 * 4, 4))


@pytest.mark.parametrize("stride_elements,sectors", [(1, 4), (2, 8), (4, 16), (8, 32), (16, 32), (32, 32), (1000, 32)])
def test_sectors_grow_with_stride_until_one_per_lane(stride_elements, sectors):
    assert analyse(strided(0, 4 * stride_elements, 4), 4).n_sectors == sectors


def test_misaligned_contiguous_is_5_sectors():
    a = analyse(strided(4, 4, 4), 4)
    assert (a.n_sectors, a.n_lines, a.bytes_requested) == (5, 2, 128)
    assert a.efficiency == 128 / 160 and a.aligned and a.pattern == "contiguous"


def test_inactive_lanes_touch_nothing():
    half = analyse(strided(0, 4, 4, active=[lane < 16 for lane in range(WARP)]), 4)
    assert (half.lanes, half.n_sectors, half.bytes_requested, half.efficiency) == (16, 2, 64, 1.0)
    odd = analyse(strided(0, 4, 4, active=[lane % 2 == 1 for lane in range(WARP)]), 4)
    assert (odd.n_sectors, odd.bytes_requested, odd.efficiency) == (4, 64, 0.5)
    assert (odd.pattern, odd.stride) == ("contiguous", 4), "the delta test spans the inactive lanes"
    one = analyse([None] * 31 + [100], 4)
    assert (one.n_sectors, one.bytes_moved, one.efficiency) == (1, 32, 4 / 32)
    none = analyse([None] * WARP, 4)
    assert (none.n_sectors, none.bytes_moved, none.efficiency, none.pattern) == (0, 0, 1.0, "none")


@pytest.mark.parametrize("width,sectors", [(1, 1), (2, 2), (4, 4), (8, 8), (16, 16)])
def test_contiguous_at_every_width_is_fully_efficient(width, sectors):
    a = analyse(strided(0, width, width), width)
    assert (a.n_sectors, a.bytes_requested, a.efficiency) == (sectors, WARP * width, 1.0)


def test_16_byte_vector_loads_move_512_bytes_in_16_sectors():
    a = analyse(strided(0, 16, 16), 16)
    assert (a.bytes_requested, a.n_sectors, a.n_lines, a.bytes_moved) == (512, 16, 4, 512)
    strided8 = analyse(strided(0, 16, 8), 8)              # 8-byte loads every 16 bytes
    assert (strided8.n_sectors, strided8.efficiency, strided8.pattern) == (16, 0.5, "strided")


def test_mixed_widths_per_lane():
    widths = [4 if lane % 2 == 0 else 8 for lane in range(WARP)]
    addrs = [lane * 8 for lane in range(WARP)]
    a = analyse(addrs, widths)
    assert a.bytes_requested == 16 * 4 + 16 * 8 and a.n_sectors == 8 and a.pattern == "strided"


def test_an_access_straddling_a_sector_touches_both():
    addrs = [28] + [None] * 31
    a = analyse(addrs, 8)
    assert a.sectors == (0, 1) and not a.aligned and a.efficiency == 8 / 64
    b = analyse([124] + [None] * 31, 8)
    assert b.lines == (0, 1) and b.n_sectors == 2


def test_broadcast_and_irregular():
    b = analyse([64] * WARP, 4)
    assert (b.n_sectors, b.bytes_requested, b.pattern) == (1, 4, "broadcast")
    irr = analyse([(lane * 7919) % 4096 * 4 for lane in range(WARP)], 4)
    assert irr.pattern == "irregular"


def test_loop_order_is_8x_in_sectors_for_4_byte_elements():
    col, row = analyse(column_walk(4096, 4), 4), analyse(row_walk(4096, 4), 4)
    assert (col.n_sectors, row.n_sectors) == (32, 4) and col.n_sectors / row.n_sectors == 8
    assert col.stride == 4096 * 4 and col.pattern == "strided"
    assert col.n_lines / row.n_lines == 32
    two = analyse(column_walk(4096, 2), 2).n_sectors / analyse(row_walk(4096, 2), 2).n_sectors
    eight = analyse(column_walk(4096, 8), 8).n_sectors / analyse(row_walk(4096, 8), 8).n_sectors
    assert (two, eight) == (16, 4)


@pytest.mark.parametrize("bad", [
    lambda: analyse([0] * 31, 4),                  # not 32 lanes
    lambda: analyse([0] * WARP, 3),                # not a load width
    lambda: analyse([0] * WARP, [4] * 31),         # widths not one per lane
    lambda: analyse([-4] + [0] * 31, 4),           # negative address
    lambda: analyse([1.5] + [0] * 31, 4),          # not an integer
    lambda: strided(0, 4, 4, active=[True]),
])
def test_bad_input_is_refused(bad):
    with pytest.raises(ValueError):
        bad()


def test_constants():
    assert (WARP, SECTOR, LINE) == (32, 32, 128)


# --- the chapter's chain (utils/chains/coalescing.py) ------------------------------------------------
from utils import chains  # noqa: E402
from utils.chains import coalescing as co_chain  # noqa: E402
from utils.params import ParameterError  # noqa: E402
from utils.verdicts import READING  # noqa: E402


def test_chain_claim_holds_under_the_sector_reading():
    (c,) = co_chain.claims()
    assert c.verdict == READING and "sector" in c.reading
    rd = co_chain.readings()
    assert rd[4][:3] == (32, 4, 8.0) and rd[2][2] == 16 and rd[8][2] == 4 and rd[4][3] == 32
    assert co_chain.copy_ratio() == 4.5


def test_chain_published_figures_and_counter_agree():
    r = chains.derive("coalescing")
    assert (r["sectors_contiguous"].m, r["sectors_strided"].m, r["loop_order_ratio"].m) == (4, 32, 8)
    assert r["efficiency_strided"].m == 0.125 and r["effective_bandwidth_strided"].to("TB/s").m == pytest.approx(0.6)
    for e in (1, 2, 4, 8, 16):
        for s in (1, 2, 3, 7, 8, 33):
            p = chains.check("coalescing", bytes_per_element=e, stride_elements=s, row_elements=s * 8 + 1)
            assert co_chain.counter_agrees(p, co_chain.compute(p)), (e, s)


def test_chain_strided_copy_prediction_matches_the_kernels_byte_count():
    pytest.importorskip("torch")
    from utils.gpu.kernels.strided import moved_bytes
    assert moved_bytes(10**6, 32, 4) / moved_bytes(10**6, 1, 4) == co_chain.copy_ratio()


@pytest.mark.parametrize("name,value", [("bytes_per_element", 3), ("stride_elements", 0), ("row_elements", 1.5),
                                        ("gpu", "no-such-gpu")])
def test_chain_bad_inputs_are_refused(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("coalescing", **{name: value})


def test_chain_wider_elements_waste_less():
    effs = [chains.derive("coalescing", bytes_per_element=e)["efficiency_strided"].m for e in (1, 2, 4, 8, 16)]
    assert effs == sorted(effs) and effs[-1] == 0.5
    ratios = [chains.derive("coalescing", bytes_per_element=e)["loop_order_ratio"].m for e in (2, 4, 8)]
    assert ratios == [16, 8, 4]


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in co_chain.compute(co_chain.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in co_chain.PARAMETERS}
    assert [sources()[s] for s in ("e", "s", "R",)] == [own["bytes_per_element"], own["stride_elements"], own["row_elements"]]
    changed = sources(stride_elements=4)
    assert changed["s"] == "parameters cell" and changed["e"] == own["bytes_per_element"]
