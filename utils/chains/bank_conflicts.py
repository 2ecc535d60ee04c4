"""bank-conflicts: a column walk down a shared-memory tile, the padding that removes its conflict, and
what the conflict costs a tiled transpose.

Shared memory is 32 banks of 4-byte words; a request takes as many wavefronts as its most-loaded bank has
distinct words. A column walk at a pitch of p elements of w words is a gcd(p, 32/w)-way conflict (the
analyser, utils.gpu.bank_conflicts.analyse, applies the rule address by address; the check proves the closed
form). A transpose crosses the banks twice per tile (row writes, column reads); its shared-memory time is
wavefronts over (SMs x clock), its HBM time bytes over bandwidth, and the slower one sets the time.
"""
from __future__ import annotations

import functools
import math

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.gpu.bank_conflicts import BANK_BYTES, BANKS, WARP, WIDTHS, analyse, column_walk, lanes_per_phase, pitch_rule, row_walk
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, q
from utils.verdicts import HOLDS, WRONG, Claim

GUIDE = ("NVIDIA CUDA C++ Programming Guide, Shared Memory (compute capability 5.x and later): 32 banks, "
         "successive 32-bit words in successive banks, 32 bits per bank per clock")
# The SM clock under load: the H100's published boost clock, from the catalog (the H200 has the same GH100
# compute). The sm_clock_ghz defaults here and in reading-a-kernel-profile repeat it; tests hold them equal.
SM_CLOCK = catalog.accelerator("h100-sxm")["sm_boost_clock"]
SM_CLOCK_GHZ = float(SM_CLOCK.q.to("GHz").m)
CLOCK_SOURCE = (f"catalog: accelerator h100-sxm, sm_boost_clock ({SM_CLOCK.source.title}, {SM_CLOCK.source.url}, "
                f"read {SM_CLOCK.source.read}); the H200 has the H100's GH100 compute (catalog note)")
ANALYSER = "the bank rule, applied by utils.gpu.bank_conflicts.analyse"

PARAMETERS = (
    Param("gpu", "h200", "the GPU: a catalog accelerator key (its SM count must be in the catalog)",
          check="accelerator", source="catalog: NVIDIA H200, the book's reference GPU"),
    Param("elem_bytes", 4, "bytes per element (and per lane's access): fp32, fp64 or float4", unit="B",
          check="choice", choices=WIDTHS, source="fp32, the claim's element (4-byte banks)"),
    Param("tile", 32, "tile width and height, elements: a whole number of warps (a warp walks a column)",
          check="whole", source="the claim (a 32-wide tile)"),
    Param("pitch", 33, "row pitch of the padded tile, elements (tile + 1: one column of padding)",
          check="whole", source="the claim (padding by one column)"),
    Param("matrix_n", 16384, "the transposed matrix is matrix_n x matrix_n elements", check="whole",
          source="this book's assumption: a matrix far past the L2 cache"),
    Param("sm_clock_ghz", 1.98, "SM clock under load (the catalog's H100 boost clock: set it with the GPU)", unit="GHz",
          source=CLOCK_SOURCE),
)

RESULTS = (
    Result("conflict_degree_unpadded", "", "Conflict degree of the column read, unpadded tile", of="d_u"),
    Result("conflict_degree_padded", "", "Conflict degree of the column read, padded tile", of="d_p"),
    Result("transpose_time_floor", "µs", "Transpose time floor from HBM bandwidth", of="t_M"),
    Result("predicted_slowdown", "", "Predicted time of the unpadded transpose over the padded one", of="s"),
)


def validate(p):
    if p.tile % WARP:
        raise ParameterError(f"tile must be a multiple of the warp ({WARP} lanes walk a column), got {p.tile!r}")
    if p.pitch < p.tile:
        raise ParameterError(f"pitch must be >= tile ({p.tile}): a row holds the tile's row, got {p.pitch!r}")
    if p.matrix_n % p.tile:
        raise ParameterError(f"matrix_n must be a multiple of tile ({p.tile}), got {p.matrix_n!r}")
    if "sm_count" not in p.gpu:
        raise ParameterError(f"gpu: {p.gpu.key!r} has no sm_count in the catalog")


def bank_chain(gpu, elem_bytes, tile, pitch, matrix_n, sm_clock_ghz, *, source="parameters cell", cite=None) -> Chain:
    """A tile transpose through shared memory, unpadded and padded, against HBM on `gpu`. Each input cites
    `source`, or cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    acc = catalog.accelerator(gpu)
    e, t, p = int(elem_bytes), int(tile), int(pitch)
    ch = Chain(f"Transpose of a {int(matrix_n)} x {int(matrix_n)} matrix of {e}-byte elements through a "
               f"{t} x {t} tile, pitch {t} vs {p}, {acc.name}")
    ch.given("B", BANKS, "shared-memory banks per SM", kind="spec", source=GUIDE)
    ch.given("w", q(BANK_BYTES, "B"), "bytes each bank serves per clock", kind="spec", source=GUIDE)
    ch.given("e", q(e, "B"), "bytes per element", kind="assumption", source=cite("elem_bytes"))
    ch.given("N", int(matrix_n), "matrix rows (= columns)", kind="assumption", source=cite("matrix_n"))
    ch.given("d_u", analyse(column_walk(t, elem_bytes=e), e).degree,
             f"conflict degree of the column read at pitch {t} (no padding)", kind="spec", source=ANALYSER)
    ch.given("d_p", analyse(column_walk(p, elem_bytes=e), e).degree,
             f"conflict degree of the column read at pitch {p}", kind="spec", source=ANALYSER)
    ch.given("W", acc["hbm_bandwidth"], "HBM bandwidth")
    ch.given("n_SM", acc["sm_count"], "SMs")
    ch.given("f", q(sm_clock_ghz, "GHz"), "SM clock under load", kind="assumption",
             source=CLOCK_SOURCE if float(sm_clock_ghz) == SM_CLOCK_GHZ else cite("sm_clock_ghz"))
    ch.step("M", "2*N**2*e", "GB", "bytes the transpose moves through HBM (read once, write once)")
    ch.step("t_M", "M/W", "µs", "time floor from HBM")
    ch.step("F", "N**2*e/(B*w)", "", "conflict-free wavefronts for one pass of every tile through the banks")
    ch.step("F_u", "F*(1 + d_u)", "", "wavefronts, unpadded: row writes plus column reads replayed d_u times")
    ch.step("F_p", "F*(1 + d_p)", "", "wavefronts, padded")
    ch.step("R", "n_SM*f", "1/s", "wavefront rate: one per clock per SM")
    ch.step("t_u", "F_u/R", "µs", "shared-memory time, unpadded")
    ch.step("t_p", "F_p/R", "µs", "shared-memory time, padded")
    ch.step("T_u", "Max(t_M, t_u)", "µs", "predicted time, unpadded: the slower pipe sets it")
    ch.step("T_p", "Max(t_M, t_p)", "µs", "predicted time, padded")
    ch.step("s", "T_u/T_p", "", "predicted slowdown of the unpadded transpose")
    ch.solve("d_star", "F*(1 + d_star)/R = t_M", "", "conflict degree at which shared memory ties with HBM")
    return ch


def compute(p) -> Chain:
    return bank_chain(p.gpu, p.elem_bytes, p.tile, p.pitch, p.matrix_n, p.sm_clock_ghz,
                      cite=functools.partial(SPEC.source, p))


# --- the analyser on the requests that matter --------------------------------------------------------
def cases() -> dict:
    """{name: (Request, width)} for the page's table of requests."""
    half = [a if lane < 16 else None for lane, a in enumerate(column_walk(32))]
    spec = [
        ("row walk, fp32 (contiguous)", row_walk(32), 4), ("lanes two words apart", [lane * 8 for lane in range(WARP)], 4),
        ("column walk, pitch 32 (no padding)", column_walk(32), 4), ("column walk, pitch 33 (padded)", column_walk(33), 4),
        ("column walk, pitch 34", column_walk(34), 4), ("column walk, pitch 48", column_walk(48), 4),
        ("all lanes one word (broadcast)", [128] * WARP, 4), ("column walk, pitch 32, lanes 16-31 inactive", half, 4),
        ("row walk, fp64", row_walk(32, elem_bytes=8), 8), ("column walk, fp64, pitch 32", column_walk(32, elem_bytes=8), 8),
        ("column walk, fp64, pitch 33", column_walk(33, elem_bytes=8), 8),
        ("row walk, float4", row_walk(32, elem_bytes=16), 16),
    ]
    return {name: (analyse(addrs, width), width) for name, addrs, width in spec}


def case_rows() -> list[tuple]:
    return [(name, str(w), str(r.lanes), str(sum(1 for x in r.words_per_bank if x)),
             " + ".join(str(d) for d in r.phase_degrees), str(r.wavefronts), str(r.ideal), str(r.replays))
            for name, (r, w) in cases().items()]


def page_numbers(p, ch) -> dict:
    t = {name: r for name, (r, _) in cases().items()}
    r0 = t["column walk, pitch 32 (no padding)"]
    smem = ch["R"] * q(BANKS * BANK_BYTES, "B")
    return {
        "k-banks": fmt(BANKS), "k-bank-bytes": fmt(BANK_BYTES, "B"), "k-tile": fmt(CLAIM["tile"]),
        "k-guide": "NVIDIA's CUDA C++ Programming Guide, the section on shared memory for compute capability 5.x and later",
        "k-wavefront-bytes": fmt(BANKS * BANK_BYTES, "B"),
        "t-tile": fmt(32), "t-bank0": fmt(0), "t-col-words": fmt(r0.words_per_bank[0]), "t-col-wave": fmt(r0.wavefronts),
        "t-pitch33": fmt(33), "t-warp": fmt(WARP), "t-fp64-row": fmt(t["row walk, fp64"].wavefronts),
        "t-f4-row": fmt(t["row walk, float4"].wavefronts),
        "intro-n": f"{int(p.matrix_n):,} x {int(p.matrix_n):,}", "p-M": fmt(ch["M"]), "p-W": fmt(ch["W"]),
        "p-R": fmt(ch["R"]), "p-tu": fmt(ch["t_u"]), "p-tp": fmt(ch["t_p"]), "p-dstar": fmt(ch["d_star"]),
        "p-du": fmt(ch["d_u"]), "p-smem-bw": fmt(smem.to("TB/s")), "p-smem-ratio": f"{as_float((smem / ch['W']).to('')):.3g}",
        "p-bound-u": "shared memory" if ch["t_u"] > ch["t_M"] else "HBM",
    }


def profiler_counts(p, ch) -> dict:
    """What Nsight Compute's shared-load counters should show for the parameters' transpose."""
    ideal = as_float(ch["F"])
    du, dp = as_float(ch["d_u"]), as_float(ch["d_p"])
    return {"prof-inst": fmt((int(p.matrix_n) ** 2) // WARP), "prof-wave-u": fmt(ideal * du),
            "prof-conf-u": fmt(ideal * (du - 1)), "prof-wave-p": fmt(ideal * dp), "prof-conf-p": fmt(ideal * (dp - 1))}


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("Shared memory has 32 banks, each 4 bytes wide, and a warp's access is as slow as the most-loaded "
         "bank. The bank of an address, why a column walk down a 32-wide tile puts all 32 lanes in one bank, "
         "the padding by one column that spreads them across all 32, and the profiler counter that confirms "
         "the fix.")
CLAIM = dict(banks=32, bank_bytes=4, tile=32, degree=32, pad=1, elem_bytes=4, matrix_n=16384, clock_ghz=SM_CLOCK_GHZ)


def gcd_rule_holds() -> bool:
    """The closed form degree = gcd(pitch, lanes per phase) against the analyser for every pitch 1-64 and
    width, and its proof's key step lane pair by lane pair."""
    for e in WIDTHS:
        for p in range(1, 65):
            r = analyse(column_walk(p, elem_bytes=e), e)
            if not (r.degree == pitch_rule(p, e) == math.gcd(p, lanes_per_phase(e)) and r.wavefronts == r.ideal * r.degree):
                return False
    for p in range(1, 65):
        g = math.gcd(p, 32)
        if not all(((i * p - j * p) % 32 == 0) == ((i - j) % (32 // g) == 0) for i in range(32) for j in range(32)):
            return False
    return True


def claim_chain() -> Chain:
    c = CLAIM
    return bank_chain("h200", c["elem_bytes"], c["tile"], c["tile"] + c["pad"], c["matrix_n"], c["clock_ghz"],
                      source="the claim")


def claims() -> list[Claim]:
    cc = claim_chain()
    du, dp = as_float(cc["d_u"]), as_float(cc["d_p"])
    banks_u = set(analyse(column_walk(CLAIM["tile"]), 4).banks)
    banks_p = sorted(analyse(column_walk(CLAIM["tile"] + CLAIM["pad"]), 4).banks)
    holds = (BANKS, BANK_BYTES) == (CLAIM["banks"], CLAIM["bank_bytes"]) and du == CLAIM["degree"] and dp == 1 \
        and len(banks_u) == 1 and banks_p == list(range(BANKS))
    fp64_u = analyse(column_walk(32, elem_bytes=8), 8)
    even = {p: pitch_rule(p) for p in (34, 48)}
    return [Claim(
        "padding", quote=QUOTE,
        source="spec/001, paragraph on shared-memory bank conflicts; CHAINS.md, bank-conflicts row",
        claimed=f"{CLAIM['banks']} banks of {CLAIM['bank_bytes']} bytes; a column walk down a {CLAIM['tile']}-wide "
                f"tile is a {CLAIM['degree']}-way conflict; padding by {CLAIM['pad']} column removes it",
        derived=f"column walk at pitch {CLAIM['tile']}: all lanes in one bank, degree {du:g}, "
                f"{as_float(cc['d_u']):g} wavefronts; at pitch {CLAIM['tile'] + 1}: one lane per bank, degree "
                f"{dp:g}; degree = gcd(pitch, lanes per phase) for every pitch; fp64 tiles {fp64_u.degree}-way "
                f"unpadded, conflict-free padded by one element",
        verdict=HOLDS if holds else WRONG,
        nearest_true="" if holds else "see the check",
        reason=f"Unpadded, the column walk puts all {WARP} lanes in {len(banks_u)} bank, a {du:g}-way conflict; a "
               f"pitch of {CLAIM['tile'] + CLAIM['pad']} is odd, so the degree gcd(pitch, lanes per phase) is "
               f"{dp:g} and the lanes land in {len(banks_p)} banks, for fp64 and float4 too when padded by one "
               f"element; an even pad leaves a conflict (pitch {list(even)[0]}: {even[34]}-way, pitch "
               f"{list(even)[1]}: {even[48]}-way).")]


@memoised
def checks() -> dict:
    cc = claim_chain()
    h200 = catalog.accelerator("h200")
    clock = (h200.q("fp32") / (h200.q("sm_count") * q(256, "FLOP"))).to("GHz")   # 128 FP32 lanes x 2 FLOP
    s_max = as_float(cc["s"])
    s_sum = as_float((cc["t_M"] + cc["t_u"]) / (cc["t_M"] + cc["t_p"]))
    fp64_u, fp64_p = analyse(column_walk(32, elem_bytes=8), 8), analyse(column_walk(33, elem_bytes=8), 8)
    return {
        "chain": cc, "clock": clock, "s_max": s_max, "s_sum": s_sum, "gcd_rule": gcd_rule_holds(),
        "fp64": (fp64_u.degree, fp64_u.wavefronts, fp64_p.degree, fp64_p.wavefronts),
        "glue": {
            "claim-banks": fmt(CLAIM["banks"]), "claim-bank-bytes": fmt(CLAIM["bank_bytes"], "B"),
            "claim-tile": fmt(CLAIM["tile"]), "claim-degree": fmt(CLAIM["degree"]), "claim-pad": fmt(CLAIM["pad"]),
            "c-du": fmt(as_float(cc["d_u"])), "c-dp": fmt(as_float(cc["d_p"])), "c-smax": f"{s_max:.3g}",
            "c-ssum": f"{s_sum:.3g}", "c-clock": fmt(clock), "c-p34": fmt(34), "c-d34": fmt(pitch_rule(34)),
            "c-p48": fmt(48), "c-d48": fmt(pitch_rule(48)), "c-fp64-du": fmt(fp64_u.degree),
            "c-fp64-wu": fmt(fp64_u.wavefronts), "c-fp64-wp": fmt(fp64_p.wavefronts),
        },
    }


def degree_curves(pitches) -> dict:
    """The figure's right panel: conflict degree of a column walk against the pitch, per access width."""
    labels = {4: "fp32 (32 lanes a phase)", 8: "fp64 (16 lanes a phase)", 16: "float4 (8 lanes a phase)"}
    return {labels[e]: [analyse(column_walk(int(p), elem_bytes=e), e).degree for p in pitches] for e in WIDTHS}


def lane_banks(pitch) -> tuple:
    """The figure's left panels: the bank each lane of an fp32 column walk hits."""
    return analyse(column_walk(pitch), 4).banks


def what_changes(p, ch: Chain) -> dict:
    c = {pp: bank_chain(p.gpu, 4, 32, pp, p.matrix_n, p.sm_clock_ghz) for pp in (33, 36, 48)}
    h100 = bank_chain("h100-sxm", 4, 32, 33, p.matrix_n, SM_CLOCK_GHZ)
    h200 = bank_chain("h200", 4, 32, 33, p.matrix_n, SM_CLOCK_GHZ)
    slow = bank_chain(p.gpu, 4, 32, 33, p.matrix_n, 1.5)
    return {
        "w-p36": fmt(36), "w-d36": fmt(c[36]["d_p"]), "w-s36": f"{as_float(c[36]['T_p'] / c[33]['T_p']):.3g}x",
        "w-p48": fmt(48), "w-d48": fmt(c[48]["d_p"]), "w-s48": f"{as_float(c[48]['T_p'] / c[33]['T_p']):.3g}x",
        "w-h100-W": fmt(h100["W"]), "w-h100-s": f"{as_float(h100['s']):.3g}x", "w-h200-s": f"{as_float(h200['s']):.3g}x",
        "w-clk": fmt(q(1.5, "GHz")), "w-clk-s": f"{as_float(slow['s']):.3g}x",
    }


def exercises(p, ch: Chain) -> dict:
    e1 = bank_chain(p.gpu, 4, 64, 80, p.matrix_n, p.sm_clock_ghz)
    e2 = bank_chain(p.gpu, 8, 32, 33, p.matrix_n, p.sm_clock_ghz)
    h100 = bank_chain("h100-sxm", 4, 32, 33, p.matrix_n, SM_CLOCK_GHZ)
    h200 = bank_chain("h200", 4, 32, 33, p.matrix_n, SM_CLOCK_GHZ)
    return {
        "ex1-tile": fmt(64), "ex1-pitch": fmt(80), "ex1-d": fmt(e1["d_p"]), "ex1-t": fmt(e1["t_p"]),
        "ex1-tm": fmt(e1["t_M"]), "ex1-bound": "shared-memory" if e1["t_p"] > e1["t_M"] else "HBM",
        "ex2-tile": fmt(32), "ex2-tile2": fmt(32), "ex2-du": fmt(e2["d_u"]),
        "ex2-wu": fmt(analyse(column_walk(32, elem_bytes=8), 8).wavefronts),
        "ex2-wp": fmt(analyse(column_walk(33, elem_bytes=8), 8).wavefronts), "ex2-s": f"{as_float(e2['s']):.3g}x",
        "ex3-dstar": fmt(h100["d_star"]), "ex3-dstar-h200": fmt(h200["d_star"]),
    }


SPEC = Spec("bank-conflicts", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
