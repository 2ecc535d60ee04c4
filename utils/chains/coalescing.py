"""coalescing: the 32-byte sectors a warp's load touches, for contiguous, strided and column-walk access.

A lane reading e bytes touches the sectors holding them; a load costs the distinct sectors its active lanes
touch. For aligned loads by L lanes s elements apart the count is min(L, ceil(((L - 1)s + 1)e / b)); a
warp walking down a column of a row-major matrix is the same formula with the stride equal to the row
length. The counter (utils.gpu.coalescing.analyse) checks the closed form address by address.
"""
from __future__ import annotations

import functools

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.gpu.coalescing import LINE, SECTOR, WARP, WIDTHS, analyse, column_walk, row_walk, strided
from utils.params import Param, Result, Spec
from utils.units import fmt, pct, q
from utils.verdicts import READING, Claim

WARP_SOURCE = "CUDA C++ Programming Guide, warp size"
SECTOR_SOURCE = "CUDA C++ Best Practices Guide, coalesced access to global memory (32-byte transactions)"

PARAMETERS = (
    Param("gpu", "h200", "the GPU: a catalog accelerator key", check="accelerator",
          source="catalog: NVIDIA H200, the book's reference GPU"),
    Param("bytes_per_element", 4, "bytes each lane loads (a 128-bit vector load is the widest)", unit="B",
          check="choice", choices=WIDTHS, source="fp32, the claim's element"),
    Param("stride_elements", 32, "elements between consecutive lanes' addresses", check="whole",
          source="the claim (stride-32 access)"),
    Param("row_elements", 4096, "row length of the row-major matrix the loop-order example walks, elements",
          check="whole", source="this book's assumption: any row of a sector or more gives the same count"),
)

RESULTS = (
    Result("sectors_contiguous", "", "Sectors per contiguous warp load", of="S_c"),
    Result("sectors_strided", "", "Sectors per strided warp load", of="S_s"),
    Result("efficiency_strided", "", "Bytes requested over bytes moved, strided load", of="eta", percent=True),
    Result("loop_order_ratio", "", "Sectors of a column walk over a row walk (row-major matrix)", of="r"),
    Result("effective_bandwidth_strided", "TB/s", "Useful bandwidth of the strided load at HBM peak", of="W_s"),
)


def coalescing_chain(gpu, bytes_per_element, stride_elements, row_elements, *, source="parameters cell", cite=None) -> Chain:
    """One warp's loads, contiguous, strided and down a column, in sectors, on `gpu`. Each input cites `source`,
    or cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    acc = catalog.accelerator(gpu)
    ch = Chain(f"{int(bytes_per_element)}-byte loads by one warp, stride {int(stride_elements)}, {acc.name}")
    ch.given("L", WARP, "lanes per warp", kind="spec", source=WARP_SOURCE)
    ch.given("b", q(SECTOR, "B"), "bytes per sector", kind="spec", source=SECTOR_SOURCE)
    ch.given("e", q(bytes_per_element, "B"), "bytes each lane loads", kind="assumption", source=cite("bytes_per_element"))
    ch.given("s", int(stride_elements), "elements between consecutive lanes", kind="assumption", source=cite("stride_elements"))
    ch.given("R", int(row_elements), "row length of the row-major matrix, elements", kind="assumption",
             source=cite("row_elements"))
    ch.step("S_c", "ceiling(L*e/b)", "", "sectors, contiguous load")
    ch.step("S_s", "Min(L, ceiling(((L - 1)*s + 1)*e/b))", "", "sectors, strided load")
    ch.step("eta", "L*e/(S_s*b)", "", "efficiency: bytes requested over bytes moved")
    ch.step("S_col", "Min(L, ceiling(((L - 1)*R + 1)*e/b))", "", "sectors, warp walking down a column (lanes a row apart)")
    ch.step("r", "S_col/S_c", "", "loop-order ratio: column walk over row walk")
    ch.given("W", acc["hbm_bandwidth"], "HBM bandwidth")
    ch.step("W_s", "W*eta", "TB/s", "useful bandwidth of the strided load")
    return ch


def compute(p) -> Chain:
    return coalescing_chain(p.gpu, p.bytes_per_element, p.stride_elements, p.row_elements,
                            cite=functools.partial(SPEC.source, p))


def counter_agrees(p, ch) -> bool:
    """The closed form against the address-by-address counter, for the parameters."""
    e = p.bytes_per_element
    got = (analyse(strided(0, e, e), e).n_sectors, analyse(strided(0, p.stride_elements * e, e), e).n_sectors,
           analyse(column_walk(p.row_elements, e), e).n_sectors, analyse(row_walk(p.row_elements, e), e).n_sectors)
    want = tuple(as_float(ch[k], "") for k in ("S_c", "S_s", "S_col", "S_c"))
    eff = analyse(strided(0, p.stride_elements * e, e), e).efficiency
    return got == want and abs(eff - as_float(ch["eta"], "")) < 1e-12


# --- the counter on the patterns that matter --------------------------------------------------------
def cases() -> dict:
    """The counter on the patterns that matter, edge cases included: {name: Access}."""
    half = [lane < 16 for lane in range(WARP)]
    odd = [lane % 2 == 1 for lane in range(WARP)]
    mixed = [4 if lane % 2 == 0 else 8 for lane in range(WARP)]
    spec = [
        ("contiguous", strided(0, 4, 4), 4), ("stride 2", strided(0, 8, 4), 4), ("stride 4", strided(0, 16, 4), 4),
        ("stride 8", strided(0, 32, 4), 4), ("stride 32", strided(0, 128, 4), 4),
        ("contiguous, 4 B off a sector", strided(4, 4, 4), 4),
        ("contiguous, lanes 16-31 inactive", strided(0, 4, 4, active=half), 4),
        ("contiguous, odd lanes only", strided(0, 4, 4, active=odd), 4),
        ("contiguous 8-byte", strided(0, 8, 8), 8), ("contiguous 16-byte (vector)", strided(0, 16, 16), 16),
        ("mixed 4/8-byte lanes, 8 B apart", [lane * 8 for lane in range(WARP)], mixed),
        ("all lanes one address", [64] * WARP, 4), ("one lane straddling a sector", [28] + [None] * 31, 8),
    ]
    return {name: (analyse(addrs, width), width) for name, addrs, width in spec}


def case_rows() -> list[tuple]:
    rows = []
    for name, (a, width) in cases().items():
        w = width if isinstance(width, int) else "mixed"
        stride = "" if a.stride is None else f" {a.stride} B"
        rows.append((name, str(w), str(a.lanes), f"{a.pattern}{stride}", str(a.bytes_requested), str(a.n_sectors),
                     str(a.n_lines), str(a.bytes_moved), pct(a.efficiency)))
    return rows


def page_numbers(p, ch) -> dict:
    t = {name: a for name, (a, _) in cases().items()}
    return {
        "k-lanes": fmt(WARP), "k-sector": fmt(SECTOR, "B"), "k-line": fmt(LINE, "B"),
        "intro-stride": fmt(p.stride_elements * p.bytes_per_element, "B"),
        "t-contig-bytes": fmt(t["contiguous"].bytes_requested, "B"), "t-contig-sectors": fmt(t["contiguous"].n_sectors),
        "t-warp": fmt(WARP), "t-s32-eff": pct(t["stride 32"].efficiency), "t-misalign": fmt(4, "B"),
        "t-misalign-eff": pct(t["contiguous, 4 B off a sector"].efficiency),
        "t-vec-bytes": fmt(t["contiguous 16-byte (vector)"].bytes_moved, "B"),
        "t-vec-sectors": fmt(t["contiguous 16-byte (vector)"].n_sectors),
        "p-e": fmt(p.bytes_per_element, "B"), "p-s": fmt(p.stride_elements), "p-R": fmt(p.row_elements),
        "p-W": fmt(ch["W"]),
    }


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(bytes_per_element=4, sectors={1: 4, 2: 8, 32: 32}, loop_order_ratio=8.0, row_elements=4096)
QUOTE = ("A warp issues one load instruction and the memory system turns it into some number of 32-byte "
         "sector requests; that number is the whole story. The arithmetic for contiguous, stride-2 and "
         "stride-32 access, the row-major matrix where a loop order change gives 8x, and the two Nsight "
         "Compute counters that show the waste.")
SHORT_ROW = 4       # elements: two lanes of a column walk then share a sector


def readings(row_elements=CLAIM["row_elements"]) -> dict:
    """For each load width: (column-walk sectors, row-walk sectors, ratio in sectors, ratio in lines)."""
    out = {}
    for e in WIDTHS:
        col, row = analyse(column_walk(row_elements, e), e), analyse(row_walk(row_elements, e), e)
        out[e] = (col.n_sectors, row.n_sectors, col.n_sectors / row.n_sectors, col.n_lines / row.n_lines)
    return out


def copy_ratio(e=4, row_elements=CLAIM["row_elements"]) -> float:
    """Time of a copy that reads a column walk and writes contiguously, over a contiguous copy (bytes moved)."""
    col = analyse(column_walk(row_elements, e), e).n_sectors
    return (SECTOR * col + WARP * e) / (2 * WARP * e)


def claims() -> list[Claim]:
    e = CLAIM["bytes_per_element"]
    rd = readings()
    col, row, r, r_lines = rd[e]
    sectors = [coalescing_chain("h200", e, s, CLAIM["row_elements"], source="the claim") for s in CLAIM["sectors"]]
    counts = [int(as_float(c["S_s"], "")) for c in sectors]
    holds = counts == list(CLAIM["sectors"].values()) and r == CLAIM["loop_order_ratio"]
    return [Claim(
        "loop-order", quote=QUOTE, source="spec/001, paragraph on memory coalescing; CHAINS.md, coalescing row",
        claimed=f"{', '.join(map(str, CLAIM['sectors'].values()))} sectors per warp load for contiguous, "
                f"stride-2 and stride-32 access; {CLAIM['loop_order_ratio']:g}x from loop order",
        derived=f"{', '.join(map(str, counts))} sectors for aligned {e}-byte loads; column walk over row walk "
                f"{col}/{row} = {r:g}x in sectors; {r_lines:g}x in cache lines; {rd[2][2]:g}x for 2-byte and "
                f"{rd[8][2]:g}x for 8-byte elements",
        verdict=READING if holds else "wrong as stated",
        reading=f"'a loop order change' read as the loop order's factor counted, as the source "
                f"counts, in sector requests per warp load, for "
                f"{fmt(e, 'B')} (fp32) elements in rows of a sector or more",
        reason=f"Aligned {fmt(e, 'B')} loads touch {', '.join(map(str, counts))} sectors for contiguous, stride "
               f"{list(CLAIM['sectors'])[1]} and stride {list(CLAIM['sectors'])[2]} access, and a column walk costs "
               f"{col} sectors against {row}: {r:g}x; it is {rd[2][2]:g}x for bf16, {rd[8][2]:g}x for fp64, "
               f"{r_lines:g}x counted in cache lines, and a copy that reads strided and writes contiguously "
               f"slows by {copy_ratio():g}x.")]


@memoised
def checks() -> dict:
    e = CLAIM["bytes_per_element"]
    rd = readings()
    col, row, r, r_lines = rd[e]
    short_ratio = analyse(column_walk(SHORT_ROW, e), e).n_sectors / row
    s = list(CLAIM["sectors"])
    return {
        "readings": rd,
        "glue": {
            "claim-sectors": ", ".join(str(v) for v in CLAIM["sectors"].values()),
            "claim-ratio": f"{CLAIM['loop_order_ratio']:g}x", "claim-ratio2": f"{CLAIM['loop_order_ratio']:g}x",
            "claim-ratio3": f"{CLAIM['loop_order_ratio']:g}x", "claim-s2": str(s[1]), "claim-s32": str(s[2]),
            "claim-s2b": str(s[1]), "claim-s32b": str(s[2]),
            "check-col-sectors": fmt(col), "check-row-sectors": fmt(row), "check-ratio": f"{r:g}x",
            "check-line-ratio": f"{r_lines:g}x", "check-bf16-ratio": f"{rd[2][2]:g}x",
            "check-fp64-ratio": f"{rd[8][2]:g}x", "check-vec-ratio": f"{rd[16][2]:g}x",
            "check-copy-ratio": f"{copy_ratio():g}x", "check-short-ratio": f"{short_ratio:g}x",
            "check-short-row": fmt(SHORT_ROW) + " elements",
            "fig-floor": pct(analyse(strided(0, 4 * SECTOR, 4), 4).efficiency), "fig-floor-stride": fmt(SECTOR // 4),
        },
    }


def bandwidth_curves(gpu, strides) -> dict:
    """Predicted useful bandwidth (TB/s) against stride, per load width, and the 4-byte strided copy."""
    acc = catalog.accelerator(gpu)
    W = as_float(acc.q("hbm_bandwidth"), "TB/s")
    out = {}
    for e in (2, 4, 8, 16):
        out[f"{e}-byte loads"] = [W * analyse(strided(0, int(s) * e, e), e).efficiency for s in strides]
    eff4 = [analyse(strided(0, int(s) * 4, 4), 4).efficiency for s in strides]
    out["4-byte strided copy (reads strided, writes contiguous)"] = [W * 2 / (1 / x + 1) for x in eff4]
    return out


def exercises(p, ch: Chain) -> dict:
    aos, soa = analyse(strided(0, 12, 4), 4), analyse(strided(0, 4, 4), 4)
    c2 = coalescing_chain("h200", 2, 1, 4096)
    col2 = analyse(column_walk(4096, 2), 2)
    v = analyse(strided(0, 32, 16), 16)
    return {
        "ex1-struct": fmt(12, "B"), "ex1-sectors": fmt(aos.n_sectors), "ex1-eff": pct(aos.efficiency),
        "ex1-soa": fmt(soa.n_sectors), "ex2-ratio": f"{as_float(c2['r'], ''):g}x", "ex2-col": fmt(c2["S_col"]),
        "ex2-row": fmt(c2["S_c"]), "ex2-eff": pct(col2.efficiency),
        "ex2-bw": fmt((c2["W"] * col2.efficiency).to("TB/s")), "ex3-stride": fmt(32, "B"),
        "ex3-sectors": fmt(v.n_sectors), "ex3-bytes": fmt(v.bytes_requested, "B"), "ex3-eff": pct(v.efficiency),
    }


SPEC = Spec("coalescing", PARAMETERS, RESULTS, compute, closed_form=True)
