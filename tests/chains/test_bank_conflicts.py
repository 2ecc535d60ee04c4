"""The shared-memory bank analyser (utils.gpu.bank_conflicts) on requests with known answers: contiguous,
strided, broadcast, the column walk of a 32-wide tile with and without padding, inactive lanes, 8- and
16-byte accesses, an irregular mixed request, the gcd pitch rule, and bad input."""
import math

import pytest

from utils.gpu.bank_conflicts import BANKS, WARP, analyse, bank, column_walk, lanes_per_phase, pitch_rule, row_walk


def words(stride_words, width=4, base=0):
    return [base + lane * stride_words * 4 for lane in range(WARP)]


def test_bank_of_an_address():
    assert [bank(a) for a in (0, 3, 4, 124, 128, 132, 4 * 33)] == [0, 0, 1, 31, 0, 1, 1]


def test_contiguous_4_byte_is_one_wavefront():
    r = analyse(words(1), 4)
    assert r.banks == tuple(range(32)) and r.words_per_bank == (1,) * BANKS
    assert (r.wavefronts, r.degree, r.ideal, r.replays, r.lanes) == (1, 1, 1, 0, 32)


def test_stride_2_words_is_2_way():
    r = analyse(words(2), 4)
    assert (r.degree, r.wavefronts, r.replays) == (2, 2, 1)
    assert r.words_per_bank == tuple(2 if b % 2 == 0 else 0 for b in range(BANKS))


def test_stride_32_words_is_32_way():
    r = analyse(words(32), 4)
    assert set(r.banks) == {0} and r.words_per_bank[0] == 32
    assert (r.degree, r.wavefronts, r.replays) == (32, 32, 31)


def test_odd_strides_are_conflict_free():
    for s in (1, 3, 5, 17, 31, 33):
        assert analyse(words(s), 4).wavefronts == 1


def test_all_lanes_one_word_is_a_broadcast():
    r = analyse([256] * WARP, 4)
    assert (r.degree, r.wavefronts, r.words_per_bank[0]) == (1, 1, 1)
    # two words of one bank, each read by 16 lanes: 2-way, not 32-way
    r2 = analyse([0 if lane % 2 else 128 for lane in range(WARP)], 4)
    assert (r2.degree, r2.wavefronts) == (2, 2)


def test_column_walk_of_a_32_wide_tile_and_its_padding():
    unpadded = analyse(column_walk(32), 4)
    assert (unpadded.degree, unpadded.wavefronts) == (32, 32)
    padded = analyse(column_walk(33), 4)
    assert (padded.degree, padded.wavefronts) == (1, 1) and sorted(padded.banks) == list(range(32))
    for column in (0, 7, 31):        # any column: the padded walk's banks are a rotation of 0..31
        assert analyse(column_walk(33, column), 4).wavefronts == 1
        assert analyse(column_walk(32, column), 4).wavefronts == 32
    assert analyse(row_walk(32, row=5), 4).wavefronts == analyse(row_walk(33, row=5), 4).wavefronts == 1


def test_inactive_lanes_ask_for_nothing():
    half = [a if lane < 16 else None for lane, a in enumerate(column_walk(32))]
    r = analyse(half, 4)
    assert (r.lanes, r.degree, r.wavefronts) == (16, 16, 16)
    assert analyse([None] * WARP, 4).wavefronts == 0 and analyse([], 4).degree == 0
    short = analyse([0, 128, 256], 4)                  # fewer than 32 addresses: the rest inactive
    assert (short.lanes, short.degree) == (3, 3) and short.banks[3:] == (None,) * 29


def test_8_byte_contiguous_is_two_half_warps():
    r = analyse([8 * lane for lane in range(WARP)], 8)
    assert (lanes_per_phase(8), r.phase_degrees, r.wavefronts, r.replays) == (16, (1, 1), 2, 0)
    assert r.words_per_bank == (2,) * BANKS            # 64 words over the request, 2 per bank, 1 per phase


def test_16_byte_contiguous_is_four_quarter_warps():
    r = analyse([16 * lane for lane in range(WARP)], 16)
    assert (lanes_per_phase(16), r.phase_degrees, r.wavefronts) == (8, (1, 1, 1, 1), 4)
    only_first_quarter = analyse([16 * lane if lane < 8 else None for lane in range(WARP)], 16)
    assert (only_first_quarter.wavefronts, only_first_quarter.ideal) == (1, 1)


def test_8_byte_column_walks():
    # fp64 tile [32][32]: every lane of a half-warp in banks 0-1, 16 words each: 16-way, 32 wavefronts
    r = analyse(column_walk(32, elem_bytes=8), 8)
    assert (r.degree, r.wavefronts, r.ideal) == (16, 32, 2)
    # padded by one fp64 element: conflict-free, the two wavefronts any 256-byte request needs
    p = analyse(column_walk(33, elem_bytes=8), 8)
    assert (p.degree, p.wavefronts, p.replays) == (1, 2, 0)


def test_a_mixed_irregular_request():
    # lanes 0-15 broadcast one word; lanes 16-23 hit four words of bank 5; lanes 24-31 distinct banks
    addrs = [40] * 16 + [(5 + 32 * k) * 4 for k in (0, 1, 2, 3, 0, 1, 2, 3)] + [(8 + i) * 4 for i in range(8)]
    r = analyse(addrs, 4)
    assert r.words_per_bank[10] == 1 and r.words_per_bank[5] == 4
    assert (r.degree, r.wavefronts) == (4, 4)


@pytest.mark.parametrize("elem_bytes", [4, 8, 16])
def test_the_gcd_rule_matches_the_analyser_for_every_pitch(elem_bytes):
    for pitch in range(1, 65):
        r = analyse(column_walk(pitch, elem_bytes=elem_bytes), elem_bytes)
        assert r.degree == pitch_rule(pitch, elem_bytes), pitch
        assert r.wavefronts == r.ideal * pitch_rule(pitch, elem_bytes)
    assert pitch_rule(32) == 32 and pitch_rule(33) == 1 and pitch_rule(34) == 2 and pitch_rule(48) == 16
    assert all(pitch_rule(p) == math.gcd(p, 32) for p in range(1, 65))


@pytest.mark.parametrize("bad", [
    lambda: analyse([0] * 33, 4),                          # more than 32 lanes
    lambda: analyse([2] + [None] * 31, 4),                 # 4-byte access not 4-aligned
    lambda: analyse([4] + [None] * 31, 8),                 # 8-byte access not 8-aligned
    lambda: analyse([8] + [None] * 31, 16),                # 16-byte access not 16-aligned
    lambda: analyse([0] * 32, 2),                          # width not 4, 8 or 16
    lambda: analyse([0] * 32, True),
    lambda: analyse([-4] + [None] * 31, 4),                # negative address
    lambda: analyse([4.0] + [None] * 31, 4),               # not an integer
    lambda: column_walk(0),                                # pitch below 1
    lambda: pitch_rule(33, 2),
])
def test_bad_input_raises(bad):
    with pytest.raises(ValueError):
        bad()


# --- the chapter's chain (utils/chains/bank_conflicts.py) --------------------------------------------
from utils import chains  # noqa: E402
from utils.chains import bank_conflicts as bc_chain  # noqa: E402
from utils.params import ParameterError  # noqa: E402
from utils.verdicts import HOLDS  # noqa: E402


def test_chain_claim_holds_and_the_gcd_rule_is_proved():
    (c,) = bc_chain.claims()
    assert c.verdict == HOLDS
    ck = bc_chain.checks()
    assert ck["gcd_rule"] and ck["fp64"] == (16, 32, 1, 2)
    assert ck["clock"].to("GHz").m == pytest.approx(1.98, rel=0.01)       # second route to the clock


def test_chain_published_figures():
    r = chains.derive("bank-conflicts")
    assert (r["conflict_degree_unpadded"].m, r["conflict_degree_padded"].m) == (32, 1)
    assert r["transpose_time_floor"].to("s").m == pytest.approx(2 * 16384**2 * 4 / 4.8e12, rel=1e-9)
    # unpadded: F (1 + 32) wavefronts at 132 SMs x 1.98 GHz against the HBM floor
    F = 16384**2 * 4 / 128
    assert r["predicted_slowdown"].m == pytest.approx(F * 33 / (132 * 1.98e9) / (2 * 16384**2 * 4 / 4.8e12), rel=1e-9)


def test_chain_a_misaligned_wide_pad_is_refused_by_the_analyser():
    with pytest.raises(ValueError):
        analyse([lane * (32 * 8 + 4) for lane in range(WARP)], 8)


@pytest.mark.parametrize("name,value", [("tile", 48), ("pitch", 16), ("matrix_n", 1000), ("elem_bytes", 2),
                                        ("sm_clock_ghz", 0.0), ("gpu", "no-such-gpu")])
def test_chain_bad_inputs_are_refused(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("bank-conflicts", **{name: value})


def test_chain_properties_odd_pitch_free_slower_clock_costlier():
    for pitch in (33, 35, 37, 63):
        assert chains.derive("bank-conflicts", pitch=pitch)["conflict_degree_padded"].m == 1
    assert chains.derive("bank-conflicts", pitch=48)["conflict_degree_padded"].m == 16
    base = chains.derive("bank-conflicts")["predicted_slowdown"].m
    assert chains.derive("bank-conflicts", sm_clock_ghz=1.5)["predicted_slowdown"].m > base
    assert chains.derive("bank-conflicts", gpu="h100-sxm")["predicted_slowdown"].m < base


def test_clock_default_is_the_catalogs_boost_clock():
    """The parameters cell holds a literal; it must stay the catalog's H100 boost clock, the value the chain reads."""
    from utils import catalog
    from utils.chains import bank_conflicts as bc
    clock = catalog.accelerator("h100-sxm").q("sm_boost_clock").to("GHz").m
    default = next(p for p in bc.PARAMETERS if p.name == "sm_clock_ghz")
    assert default.default == clock == bc.SM_CLOCK_GHZ == bc.CLAIM["clock_ghz"]
    assert "h100-sxm" in default.source and "sm_boost_clock" in default.source


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in bc_chain.compute(bc_chain.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in bc_chain.PARAMETERS}
    assert [sources()[s] for s in ("e", "N", "f",)] == [own["elem_bytes"], own["matrix_n"], own["sm_clock_ghz"]]
    changed = sources(matrix_n=8192)
    assert changed["N"] == "parameters cell" and changed["e"] == own["elem_bytes"]
