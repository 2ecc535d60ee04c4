"""reading-a-kernel-profile: the Speed Of Light rule, and the sector arithmetic behind a report whose DRAM
throughput is low while its L1 pipe is busy.

A warp walking down a column of a row-major fp32 matrix touches one sector per lane (utils.gpu.coalescing);
if L1 keeps those sectors while the thread's loop reads their other elements, DRAM moves each sector
once but the L1 pipe handles it once per element. The pipe's cycles per request against DRAM's cycles
per request give both percentages (utils.gpu.kernel_profile.predict); the fix (coalesce through shared
memory) moves the limit back to DRAM.
"""
from __future__ import annotations

import functools

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.chains.bank_conflicts import CLOCK_SOURCE, GUIDE, SM_CLOCK_GHZ
from utils.gpu.coalescing import LINE, SECTOR, WARP, analyse, column_walk, row_walk, strided
from utils.gpu.kernel_profile import (
    BALANCED,
    HIGH,
    LATENCY,
    Load,
    Rates,
    bottleneck,
    predict,
    reading_order,
    reuse_for_ratio,
)
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, pct, q
from utils.verdicts import READING, UNCHECKABLE, WRONG, Claim, within

L1_SOURCE = ("this book's assumption: the L1 data path moves as much per clock as shared memory, "
             "32 banks x 4 bytes (" + GUIDE.split(",")[0] + "), since L1 and shared memory are one array")
WAVEFRONT_SOURCE = ("this book's assumption: a request costs the L1 pipe one cycle per distinct 128-byte line "
                    "it touches ('lines'); 'sectors' is the other reading (any four sectors a cycle)")
ROW = 4096          # elements in a row of the walked matrix: any row of a line or more gives the same counts

PARAMETERS = (
    Param("gpu", "h200", "the GPU: a catalog accelerator key (its SM count must be in the catalog)",
          check="accelerator", source="catalog: NVIDIA H200, the book's reference GPU"),
    Param("bytes_per_element", 4, "bytes per element of the walked matrix", unit="B", check="choice",
          choices=(2, 4, 8), source="fp32, the book's default element"),
    Param("sm_clock_ghz", 1.98, "SM clock under load (the catalog's H100 boost clock: set it with the GPU)", unit="GHz",
          source=CLOCK_SOURCE),
    Param("l1_bytes_per_clock", 128, "bytes one SM's L1 data path moves per clock", unit="B",
          source=L1_SOURCE),
    Param("wavefront", "lines", "what an L1 request costs a cycle for: 'lines' or 'sectors'", check="choice",
          choices=("lines", "sectors"), source=WAVEFRONT_SOURCE),
    Param("busy", 0.82, "share of its peak the limiting unit reaches", check="fraction",
          source="the claim's 82% (the busy pipe), taken for whichever unit limits"),
)

RESULTS = (
    Result("sectors_per_request", "", "Sectors per request, column walk", of="S"),
    Result("dram_pct_walk", "", "DRAM throughput, column walk", of="P_D", percent=True),
    Result("l1_pct_walk", "", "L1 throughput, column walk", of="P_L1", percent=True),
    Result("dram_pct_fixed", "", "DRAM throughput, coalesced fix", of="P_Df", percent=True),
    Result("l1_pct_fixed", "", "L1 throughput, coalesced fix", of="P_L1f", percent=True),
    Result("speedup_fixed", "", "Speed-up of the coalesced fix", of="x"),
)


def validate(p):
    if "sm_count" not in p.gpu:
        raise ParameterError(f"gpu: {p.gpu.key!r} has no sm_count in the catalog")
    if "hbm_bandwidth" not in p.gpu:
        raise ParameterError(f"gpu: {p.gpu.key!r} has no hbm_bandwidth in the catalog")


def rates(gpu, sm_clock_ghz=SM_CLOCK_GHZ, l1_bytes_per_clock=128, wavefront="lines") -> Rates:
    acc = catalog.accelerator(gpu)
    return Rates(int(as_float(acc.q("sm_count"), "")), float(sm_clock_ghz) * 1e9, float(l1_bytes_per_clock),
                 as_float(acc.q("hbm_bandwidth"), "B/s"), wavefront)


def walk_chain(gpu, e, clock_ghz, l1_bytes, wavefront, busy, *, source="parameters cell", cite=None) -> Chain:
    """A warp walking down a column, then along a row, on `gpu`: L1 and DRAM shares of peak the profile would show.
    Each input cites `source`, or cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    acc = catalog.accelerator(gpu)
    r = rates(acc, clock_ghz, l1_bytes, wavefront)
    walk, fixed = analyse(column_walk(ROW, e), e), analyse(row_walk(ROW, e), e)
    ch = Chain(f"A warp walking down a column of {int(e)}-byte elements, {acc.name}")
    ch.given("n_SM", acc["sm_count"], "SMs")
    ch.given("f", q(clock_ghz, "GHz"), "SM clock", kind="assumption", source=cite("sm_clock_ghz"))
    ch.given("W", acc["hbm_bandwidth"], "DRAM (HBM) bandwidth")
    ch.given("B_L1", q(l1_bytes, "B"), "L1 bytes per SM per clock", kind="assumption",
             source=cite("l1_bytes_per_clock"))
    ch.given("b", q(SECTOR, "B"), "bytes per sector", kind="spec", source="CUDA C++ Best Practices Guide")
    ch.given("L", WARP, "lanes per warp", kind="spec", source="CUDA C++ Programming Guide")
    ch.given("e", q(e, "B"), "bytes per element", kind="assumption", source=cite("bytes_per_element"))
    ch.step("D_c", "W/(n_SM*f)", "B", "DRAM bytes per SM per clock")
    ch.step("R", "B_L1/D_c", "", "how much faster L1 moves bytes than DRAM, per SM")
    ch.given("S", walk.n_sectors, "sectors per request (utils.gpu.coalescing.analyse)", kind="assumption",
             source="utils.gpu.coalescing, column walk")
    ch.given("c_L1", r.l1_cycles(walk), f"L1 cycles per request ({wavefront})", kind="assumption",
             source=cite("wavefront"))
    ch.step("r", "S*b/(L*e)", "", "reuse: each sector served to every element it holds")
    ch.step("c_D", "S*b/(r*D_c)", "", "DRAM cycles per request")
    ch.given("u", busy, "share of peak of the limiting unit", kind="assumption", source=cite("busy"))
    ch.step("P_L1", "u*c_L1/Max(c_L1, c_D)", "", "L1 throughput, share of peak")
    ch.step("P_D", "u*c_D/Max(c_L1, c_D)", "", "DRAM throughput, share of peak")
    ch.given("c_L1f", r.l1_cycles(fixed), "L1 cycles per coalesced request", kind="assumption",
             source=cite("wavefront"))
    ch.step("c_Df", "L*e/D_c", "", "DRAM cycles per coalesced request (the same useful bytes)")
    ch.step("P_L1f", "u*c_L1f/Max(c_L1f, c_Df)", "", "L1 throughput after the fix")
    ch.step("P_Df", "u*c_Df/Max(c_L1f, c_Df)", "", "DRAM throughput after the fix")
    ch.step("x", "Max(c_L1, c_D)/Max(c_L1f, c_Df)", "", "speed-up: elapsed cycles per useful byte, before over after")
    return ch


def compute(p) -> Chain:
    return walk_chain(p.gpu, p.bytes_per_element, p.sm_clock_ghz, p.l1_bytes_per_clock, p.wavefront, p.busy,
                      cite=functools.partial(SPEC.source, p))


def model_agrees(p, ch) -> bool:
    """The chain's percentages against utils.gpu.kernel_profile.predict on the same accesses."""
    e = p.bytes_per_element
    r = rates(p.gpu, p.sm_clock_ghz, p.l1_bytes_per_clock, p.wavefront)
    walk = analyse(column_walk(ROW, e), e)
    got = predict([Load(walk, reuse=1 / walk.efficiency)], r, p.busy)
    fix = predict([Load(analyse(row_walk(ROW, e), e))], r, p.busy)
    want = [as_float(ch[k], "") for k in ("P_D", "P_L1", "P_Df", "P_L1f")]
    return all(abs(a - b) < 1e-12 for a, b in zip((got.dram, got.l1, fix.dram, fix.l1), want))


# --- the patterns that can and cannot give the claim's pair ------------------------------------------
def patterns() -> dict:
    """{name: [Load, ...]}: the warp's memory instructions of each kernel the page compares."""
    row = analyse(strided(0, 4, 4), 4)
    out = {"coalesced fp32 copy": [Load(row), Load(row, store=True)],
           "stride-32 gather, no reuse (the book's strided kernel)":
               [Load(analyse(strided(0, 128, 4), 4)), Load(row, store=True)]}
    for e, name in ((8, "fp64"), (4, "fp32"), (2, "bf16")):
        walk = analyse(column_walk(ROW, e), e)
        out[f"{name} column walk, sectors reused from L1"] = [Load(walk, reuse=1 / walk.efficiency)]
    return out


def pattern_rows(gpu="h200", clock=SM_CLOCK_GHZ, l1=128, busy=0.82) -> list[tuple]:
    """Each pattern under both wavefront readings: (name, reading, sectors/request, DRAM, L1, limiter)."""
    rows = []
    for name, loads in patterns().items():
        for wf in ("lines", "sectors"):
            pr = predict(loads, rates(gpu, clock, l1, wf), busy)
            rows.append((name, wf, pr.sectors_per_request, pr.dram, pr.l1, pr.limiter))
    return rows


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(dram=0.12, pipe=0.82, figures=2)
QUOTE_ORDER = "Four sections, read in a fixed order, and one number that usually names the bottleneck outright."
QUOTE = ("The report of a kernel at 12 percent of DRAM bandwidth while its memory pipeline reads 82 percent "
         "busy, what that gap means, the fix it implies, and the numbers the fixed kernel reports back.")


def claim_numbers() -> dict:
    """The claim's pair against the model on the H200, both wavefront readings: what reuse it needs and
    which patterns land within two significant figures of it."""
    c = CLAIM
    tol = 0.5 / (c["dram"] * 100)               # half a unit of the second figure of "12 percent"
    walk = analyse(column_walk(ROW, 4), 4)
    out = {"tol": tol, "needed": {}, "walk": {}, "hits": []}
    for wf in ("lines", "sectors"):
        r = rates("h200", SM_CLOCK_GHZ, 128, wf)
        out["needed"][wf] = reuse_for_ratio(c["dram"] / c["pipe"], walk, r)
        out["walk"][wf] = predict([Load(walk, reuse=1 / walk.efficiency)], r, c["pipe"])
    for name, wf, _, dram, l1, _ in pattern_rows(busy=c["pipe"]):
        if within(dram, c["dram"], tol) and within(l1, c["pipe"], tol):
            out["hits"].append((name, wf))
    out["rule"] = bottleneck(compute_pct=10.0, memory_pct=c["pipe"] * 100)
    return out


def order_claim() -> Claim:
    order = reading_order(compute_pct=10.0, memory_pct=CLAIM["pipe"] * 100)
    rule = bottleneck(compute_pct=10.0, memory_pct=CLAIM["pipe"] * 100)
    fixed = [s.order for s in order] == sorted(s.order for s in order) and order[0].identifier == "SpeedOfLight"
    names = ", ".join(s.name for s in order)
    return Claim(
        "reading-order", quote=QUOTE_ORDER, source="spec/001, paragraph on reading a kernel profile",
        claimed="four sections in a fixed order; one number names the bottleneck",
        derived=f"{names}, in the report's order; the SOL rule on the claim's memory throughput: {rule.name}",
        verdict=READING if fixed else WRONG,
        reading=(f"'four sections, read in a fixed order' as the Speed Of Light, the workload analysis it names, the "
                 f"warp states and the launch statistics (with occupancy), in the Order their section files give; "
                 f"'one number that usually names the bottleneck outright' as the larger of the Speed Of Light's "
                 f"compute and memory throughputs, which names the side outright when it reaches {pct(HIGH / 100)} "
                 f"('usually': the rule also names a side that leads by {fmt(BALANCED)} points, and calls both "
                 f"under {pct(LATENCY / 100)} latency-bound)"),
        nearest_true=("" if fixed else "the report's section order is not the reading order"),
        reason=(f"Nsight Compute orders its sections by their files' Order field, and its own bottleneck rule reads "
                f"the Speed Of Light pair: at or above {pct(HIGH / 100)} high throughput, both under "
                f"{pct(LATENCY / 100)} latency (the warp states, or the launch statistics for a grid under one "
                f"wave), else the side ahead by {fmt(BALANCED)} points; it is a pair, not one number, and "
                f"'usually' is the cases it leaves balanced or latency-bound."))


def claims() -> list[Claim]:
    return [order_claim(), gap_claim()]


def gap_claim() -> Claim:
    n = claim_numbers()
    walk = analyse(column_walk(ROW, 4), 4)
    lw, sw = n["walk"]["lines"], n["walk"]["sectors"]
    verdict = UNCHECKABLE
    return Claim(
        "profile-gap", quote=QUOTE, source="spec/001, paragraph on reading a kernel profile; CHAINS.md row",
        claimed=f"DRAM at {pct(CLAIM['dram'])} of peak while the memory pipe reads {pct(CLAIM['pipe'])} busy",
        derived=(f"fp32 column walk on the H200 with its sectors reused from L1: DRAM {pct(lw.dram)} at L1 "
                 f"{pct(lw.l1)} (one cycle per line), DRAM {pct(sw.dram)} (any four sectors a cycle); the pair "
                 f"needs a reuse of {fmt(n['needed']['lines'])} or {fmt(n['needed']['sectors'])} against the "
                 f"walk's {fmt(1 / walk.efficiency)}; patterns within two figures: {len(n['hits'])}"),
        verdict=verdict,
        reason=(f"The source names no kernel, GPU or size, so the pair cannot be re-derived; the gap needs a memory "
                f"unit busier than DRAM (Nsight Compute's Memory Throughput is the largest of its L1/TEX, L2 and "
                f"DRAM shares): a working set held in L2, shared-memory bank conflicts (counted in L1/TEX), or "
                f"requests that touch many sectors served again from L1, each with its own fix. The last, the "
                f"book's model: an fp32 column walk reusing its sectors gives DRAM {pct(lw.dram)} at an L1 of "
                f"{pct(lw.l1)} on the H200 (one cycle per line), "
                f"a gather with no reuse is DRAM-bound instead, and the source's {pct(CLAIM['dram'])} would need "
                f"each DRAM sector served {fmt(n['needed']['lines'])} times, more than the walk's "
                f"{fmt(1 / walk.efficiency)}."))


@memoised
def checks() -> dict:
    n = claim_numbers()
    walk = analyse(column_walk(ROW, 4), 4)
    lw, sw = n["walk"]["lines"], n["walk"]["sectors"]
    order = reading_order(compute_pct=10.0, memory_pct=CLAIM["pipe"] * 100)
    return {"numbers": n, "order": order, "glue": {
        "claim-dram": pct(CLAIM["dram"]), "claim-pipe": pct(CLAIM["pipe"]), "claim-dram2": pct(CLAIM["dram"]),
        "claim-pipe2": pct(CLAIM["pipe"]),
        "ck-walk-dram": pct(lw.dram), "ck-walk-l1": pct(lw.l1), "ck-walk-dram-s": pct(sw.dram),
        "ck-reuse-walk": fmt(1 / walk.efficiency), "ck-reuse-lines": fmt(n["needed"]["lines"]),
        "ck-reuse-sectors": fmt(n["needed"]["sectors"]), "ck-hits": fmt(len(n["hits"])),
        "ck-tol": pct(n["tol"], 2), "ck-rule": n["rule"].name, "ck-rule-section": n["rule"].section.name,
        "ck-sectors": fmt(walk.n_sectors), "ck-lines": fmt(walk.n_lines), "ck-line": fmt(LINE, "B"),
    }}


# --- the measurement: the book's strided gather ------------------------------------------------------
def gather_loads(stride: int) -> list[Load]:
    """The strided gather's warp instructions: at stride one Triton vectorises the contiguous load and
    store (16 bytes a lane); at a larger stride each lane loads one fp32 element, the store stays
    contiguous (4 bytes a lane)."""
    if stride == 1:
        v = analyse(strided(0, 16, 16), 16)
        return [Load(v), Load(v, store=True)]
    return [Load(analyse(strided(0, 4 * stride, 4), 4)), Load(analyse(strided(0, 4, 4), 4), store=True)]


def gather_predictions(p) -> dict:
    """Predicted ncu metrics (percent, and sectors per request) for the kernel-profile measurement."""
    out, per_element = {}, {}
    for s in (1, 32):
        pr = predict(gather_loads(s), rates(p.gpu, p.sm_clock_ghz, p.l1_bytes_per_clock, p.wavefront), p.busy)
        out[s] = {"dram_pct": 100 * pr.dram, "memory_pct": 100 * pr.memory, "l1_pct": 100 * pr.l1,
                  "sectors_per_request": pr.sectors_per_request}
        per_element[s] = pr.cycles_per_warp / (gather_loads(s)[0].access.bytes_requested / 4)   # fp32
    out["slowdown"] = per_element[32] / per_element[1]      # elapsed cycles per element, stride 32 over 1
    return out


def page_numbers(p, ch) -> dict:
    """The numbers the prose quotes, formatted."""
    g = gather_predictions(p)
    other = "sectors" if p.wavefront == "lines" else "lines"
    alt = walk_chain(p.gpu, p.bytes_per_element, p.sm_clock_ghz, p.l1_bytes_per_clock, other, p.busy)
    g_alt = gather_predictions(p.replace(wavefront=other))
    widths = {e: walk_chain(p.gpu, e, p.sm_clock_ghz, p.l1_bytes_per_clock, p.wavefront, p.busy) for e in (2, 8)}
    walk = analyse(column_walk(ROW, p.bytes_per_element), p.bytes_per_element)
    return {
        "k-sector": fmt(SECTOR, "B"), "k-lanes": fmt(WARP), "k-line": fmt(LINE, "B"),
        "k-high": pct(HIGH / 100), "k-latency": pct(LATENCY / 100), "k-balanced": fmt(BALANCED),
        "p-e": fmt(p.bytes_per_element, "B"), "p-wf": p.wavefront, "p-other": other, "p-busy": pct(p.busy),
        "p-lines": fmt(walk.n_lines), "p-Dc": fmt(ch["D_c"]), "p-R": fmt(ch["R"]), "p-cL1": fmt(ch["c_L1"]),
        "p-cD": fmt(ch["c_D"]), "p-r": fmt(ch["r"]), "p-useful": fmt(WARP * p.bytes_per_element, "B"),
        "p-moved": fmt(walk.bytes_moved, "B"), "p-B": fmt(p.l1_bytes_per_clock, "B"),
        "w-speed-other": f"{as_float(alt['x'], ''):.3g}x", "w-dram-other": pct(as_float(alt["P_D"], "")),
        "w-dram-bf16": pct(as_float(widths[2]["P_D"], "")), "w-dram-fp64": pct(as_float(widths[8]["P_D"], "")),
        "m-spr-s1": fmt(g[1]["sectors_per_request"]), "m-spr-s32": fmt(g[32]["sectors_per_request"]),
        "m-l1-s1": pct(g[1]["l1_pct"] / 100), "m-l1-s32": pct(g[32]["l1_pct"] / 100),
        "m-l1-s32-other": pct(g_alt[32]["l1_pct"] / 100), "m-dram": pct(g[32]["dram_pct"] / 100),
        "m-slow": f"{g['slowdown']:.3g}x",
    }


def stride_curves(p, strides) -> dict:
    """DRAM and L1 share of peak against stride, for the gather (no reuse) and the reused walk."""
    r = rates(p.gpu, p.sm_clock_ghz, p.l1_bytes_per_clock, p.wavefront)
    e = 4
    out = {"gather DRAM": [], "gather L1": [], "reused walk DRAM": [], "reused walk L1": []}
    for s in strides:
        a = analyse(strided(0, int(s) * e, e), e)
        g = predict([Load(a), Load(analyse(strided(0, e, e), e), store=True)], r, p.busy)
        w = predict([Load(a, reuse=1 / a.efficiency)], r, p.busy)
        out["gather DRAM"].append(g.dram)
        out["gather L1"].append(g.l1)
        out["reused walk DRAM"].append(w.dram)
        out["reused walk L1"].append(w.l1)
    return out


def exercises(p, ch: Chain) -> dict:
    b1 = bottleneck(compute_pct=45.0, memory_pct=30.0)
    b2 = bottleneck(compute_pct=20.0, memory_pct=25.0, waves=0.5)
    b3 = bottleneck(compute_pct=20.0, memory_pct=25.0, waves=4.0)
    fp64 = walk_chain("h200", 8, SM_CLOCK_GHZ, 128, "lines", 0.82)
    return {
        "ex1-c": pct(0.45), "ex1-m": pct(0.30), "ex1-name": b1.name, "ex1-section": b1.section.name,
        "ex2-c": pct(0.20), "ex2-m": pct(0.25), "ex2-waves": fmt(0.5), "ex2-name": b2.name,
        "ex2-section": b2.section.name, "ex2-name4": b3.name, "ex2-section4": b3.section.name,
        "ex2-waves4": fmt(4),
        "ex3-dram": pct(as_float(fp64["P_D"], "")), "ex3-l1": pct(as_float(fp64["P_L1"], "")),
        "ex3-reuse": fmt(fp64["r"]), "ex3-limit": "DRAM" if as_float(fp64["P_D"], "") >= as_float(fp64["P_L1"], "") else "L1",
    }


SPEC = Spec("reading-a-kernel-profile", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
