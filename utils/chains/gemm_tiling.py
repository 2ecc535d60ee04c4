"""gemm-tiling: global bytes per multiply-add of a tiled matrix product, and the tile that reaches the ridge.

A program owning a B_M x B_N tile of C reads e (1/B_M + 1/B_N) bytes of A and B per multiply-add (B_K
cancels); the naive kernel (B_M = B_N = 1) reads 2e. Counting every slab load as an HBM read, the tiled
kernel's intensity is 2 FLOP over that, and the smallest compute-bound square tile is T = e I* for a
ridge I*. Shared memory and the register file cap the tile (per-SM limits cited below).
"""
from __future__ import annotations

import functools
import math

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.roofline import Chip, attainable
from utils.units import fmt, pct, q
from utils.verdicts import WRONG, Claim

HOPPER = ("NVIDIA, Tuning CUDA Applications for Hopper GPU Architecture (Hopper Tuning Guide), sections on "
          "shared memory (up to 228 KB per SM, at most 227 KB per thread block) and occupancy (64K 32-bit "
          "registers per SM), https://docs.nvidia.com/cuda/hopper-tuning-guide/index.html, read 2026-11-30")
AMPERE = ("NVIDIA, CUDA C++ Programming Guide, compute capability 8.0 (shared memory up to 164 KB per SM, "
          "1 KB of it reserved: 163 KB per thread block; 64K 32-bit registers per SM), "
          "https://docs.nvidia.com/cuda/cuda-c-programming-guide/, read 2026-11-30")
SM_LIMITS = {   # usable shared memory per thread block (KiB), registers per SM, source
    "h100-sxm": (227, 65536, HOPPER), "h200": (227, 65536, HOPPER), "a100-sxm-80gb": (163, 65536, AMPERE)}
RATE_FIELD = {1: "fp8_dense", 2: "bf16_dense", 4: "tf32_dense"}   # the tensor-core rate for each element width
STAGES = 2

PARAMETERS = (
    Param("m", 8192, "rows of A and C", check="whole", source="this book's assumption: a large square product"),
    Param("n", 8192, "columns of B and C", check="whole", source="this book's assumption"),
    Param("k", 8192, "columns of A, rows of B (the reduction)", check="whole", source="this book's assumption"),
    Param("tile_m", 128, "rows of C per program (BLOCK_M)", check="whole", source="the claim (a 128x128 tile)"),
    Param("tile_n", 128, "columns of C per program (BLOCK_N)", check="whole", source="the claim (a 128x128 tile)"),
    Param("elem_bytes", 2, "bytes per element of A, B and C: fp8, bf16 or fp32 (tf32 rate)", unit="B",
          check="choice", choices=(1, 2, 4), source="bf16, the training and inference default"),
    Param("gpu", "h200", "the GPU: a catalog accelerator key", check="accelerator",
          source="catalog: NVIDIA H200, the book's reference GPU"),
)

RESULTS = (
    Result("naive_bytes_per_fma", "B", "Naive kernel: bytes read per multiply-add", of="b_0"),
    Result("tiled_bytes_per_fma", "B", "Tiled kernel: bytes read per multiply-add", of="b_t"),
    Result("tiled_intensity", "FLOP/B", "Tiled kernel: arithmetic intensity (every slab load from HBM)", of="I_t"),
    Result("min_compute_bound_tile", "", "Smallest square tile whose main loop is compute-bound on HBM alone "
           "(elements per side)", of="T_c"),
)


def validate(p):
    field = RATE_FIELD[p.elem_bytes]
    if field not in p.gpu or "hbm_bandwidth" not in p.gpu:
        raise ParameterError(f"gpu {p.gpu.key!r} has no {field} figure in the catalog")


def block_k_for(tile: int) -> int:
    """The K step the book's measurement pairs with a square tile (utils.gpu.kernels.matmul.block_k_for)."""
    return 32 if tile <= 32 else 64


def bytes_per_fma(tile_m, tile_n, e) -> float:
    """e (1/B_M + 1/B_N): operand bytes per multiply-add (utils.gpu.kernels.matmul.bytes_per_fma)."""
    return e * (1 / tile_m + 1 / tile_n)


def gemm_chain(gpu, m, n, k, tile_m, tile_n, elem_bytes, *, source="parameters cell", cite=None, block_k=64,
               stages=STAGES) -> Chain:
    """C = A B on `gpu`, naive and tiled: bytes per multiply-add, intensity, the tile the ridge and the SM allow.
    Each input cites `source`, or cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    acc = catalog.accelerator(gpu)
    ch = Chain(f"C = A B, {int(m):,} x {int(k):,} times {int(k):,} x {int(n):,}, {int(elem_bytes)}-byte elements, "
               f"{int(tile_m)} x {int(tile_n)} tiles, {acc.name}")
    ch.given("M", int(m), "rows of A and C", kind="assumption", source=cite("m"))
    ch.given("N", int(n), "columns of B and C", kind="assumption", source=cite("n"))
    ch.given("K", int(k), "reduction length", kind="assumption", source=cite("k"))
    ch.given("e", q(elem_bytes, "B"), "bytes per element", kind="assumption", source=cite("elem_bytes"))
    ch.given("B_M", int(tile_m), "tile rows (BLOCK_M)", kind="assumption", source=cite("tile_m"))
    ch.given("B_N", int(tile_n), "tile columns (BLOCK_N)", kind="assumption", source=cite("tile_n"))
    ch.given("f", q(2, "FLOP"), "FLOPs per multiply-add", kind="spec", source="definition: one multiply, one add")
    ch.step("F", "f*M*N*K", "FLOP", "FLOPs of the product")
    ch.step("b_0", "2*e", "B", "naive: bytes read per multiply-add")
    ch.step("b_t", "e/B_M + e/B_N", "B", "tiled: bytes read per multiply-add")
    ch.step("r", "b_0/b_t", "", "reduction from tiling")
    ch.step("Q_t", "b_t*M*N*K + e*M*N", "GB", "tiled: bytes moved, C written once")
    ch.step("I_t", "F/Q_t", "FLOP/B", "tiled: arithmetic intensity")
    field = RATE_FIELD[int(elem_bytes)]
    ch.given("R", acc[field], f"dense tensor-core rate ({field})")
    ch.given("W", acc["hbm_bandwidth"], "HBM bandwidth")
    ch.step("I_r", "R/W", "FLOP/B", "ridge of the chip")
    ch.solve("T", "f/(e*2/T) = I_r", "", "smallest compute-bound square tile (main loop)")
    ch.step("T_c", "ceiling(T)", "", "the same, in whole elements")
    if acc.key in SM_LIMITS:
        smem_kib, regs, src = SM_LIMITS[acc.key]
        ch.given("B_K", int(block_k), "K step (BLOCK_K)", kind="assumption", source="this book's choice")
        ch.given("S", int(stages), "pipeline stages (double buffering)", kind="assumption", source="this book's choice")
        ch.given("Z", q(smem_kib, "KiB"), "shared memory per thread block", kind="spec", source=src)
        ch.step("Z_t", "S*(B_M + B_N)*B_K*e", "KiB", "shared memory for the operand slabs")
        ch.step("T_s", "Z/(2*S*B_K*e)", "", "largest square tile the shared memory holds")
        ch.given("G", q(regs * 4, "B").to("KiB"), "register file per SM (32-bit registers)", kind="spec", source=src)
        ch.given("a", q(4, "B"), "bytes per fp32 accumulator", kind="spec", source="IEEE 754 binary32")
        ch.step("G_t", "a*B_M*B_N", "KiB", "the fp32 accumulator of one tile")
        ch.step("T_g", "sqrt(G/a)", "", "largest square tile whose accumulator fills the whole register file")
    return ch


def compute(p) -> Chain:
    return gemm_chain(p.gpu, p.m, p.n, p.k, p.tile_m, p.tile_n, p.elem_bytes,
                      cite=functools.partial(SPEC.source, p))


def chip_of(gpu, elem_bytes) -> Chip:
    a = catalog.accelerator(gpu)
    return Chip(a.key, a.name, a.q(RATE_FIELD[int(elem_bytes)]).to("FLOP/s"), a.q("hbm_bandwidth").to("B/s"))


def closed_form() -> dict:
    """The bookkeeping in sympy: bytes per multiply-add of the whole grid, the naive case, the ridge tile."""
    import sympy as sp
    M, N, K, BM, BN, BK, e, T, I_star = sp.symbols("M N K B_M B_N B_K e T I^*", positive=True)
    total = (M / BM) * (N / BN) * (K / BK) * (BM * BK + BK * BN) * e
    per_fma = sp.simplify(total / (M * N * K))
    assert sp.simplify(per_fma - e * (1 / BM + 1 / BN)) == 0
    T_solved = sp.solve(sp.Eq(2 / per_fma.subs({BM: T, BN: T}), I_star), T)[0]   # 2 FLOP per multiply-add
    return dict(per_fma=per_fma, naive=per_fma.subs({BM: 1, BN: 1}), T=T_solved, symbols=(e, I_star))


def chain_numbers(p, ch) -> dict:
    chip = chip_of(p.gpu, p.elem_bytes)
    P_t = attainable(ch["I_t"].to("FLOP/B"), chip).to("TFLOP/s")
    T_min = as_float(ch["T"], "")
    has = p.gpu.key in SM_LIMITS
    if has:
        over = [name for name, lim in (("the shared memory's", as_float(ch["T_s"], "")),
                                       ("the register file's", as_float(ch["T_g"], ""))) if T_min > lim]
        fit = ("beyond " + " and ".join(over) + " ceiling" + ("s" if len(over) > 1 else "")) if over else \
            "within both ceilings, though an accumulator that size leaves little room for anything else"
        intro_fit = "more than an SM can hold" if over else "a tile an SM can only just hold"
    else:
        fit = "not checked against per-SM limits: the page cites none for this GPU"
        intro_fit = "a size this page cannot check against the GPU's per-SM limits"
    none = "not cited for this GPU"
    return {
        "intro-tile": f"{p.tile_m} x {p.tile_n}", "intro-gpu": p.gpu.name, "k-stages": fmt(STAGES),
        "p-reduction": fmt(ch["r"]), "p-ridge": fmt(ch["I_r"]), "p-attain": fmt(P_t),
        "p-attain-frac": pct(as_float(P_t, "FLOP/s") / as_float(chip.peak, "FLOP/s")),
        "p-peak": fmt(chip.peak.to("TFLOP/s")), "p-tile-pow2": fmt(2 ** math.ceil(math.log2(T_min))),
        "p-fit": fit, "intro-fit": intro_fit,
        "p-ts": fmt(math.floor(as_float(ch["T_s"], ""))) if has else none,
        "p-tg": fmt(as_float(ch["T_g"], "")) if has else none, "p-zt": fmt(ch["Z_t"]) if has else none,
        "p-gt": fmt(ch["G_t"]) if has else none,
        "res-naive": fmt(ch["b_0"]), "res-tiled": fmt(ch["b_t"]), "res-I": fmt(ch["I_t"]), "res-T": fmt(ch["T_c"]),
    }


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(naive_bytes_per_fma=2.0, tile=128, few_hundredths=(0.02, 0.05))
QUOTE = ("The naive kernel reads two bytes per multiply-add; a 128x128 tile with register blocking reads a "
         "few hundredths of that. Each step (shared-memory tiles, register blocking, vectorized loads, double "
         "buffering, tensor cores) with its intensity arithmetic and speedup, and where a hand kernel stops and "
         "cuBLAS begins.")
WARP, SECTOR = 32, 32


def naive_readings(e) -> dict:
    """The naive kernel's bytes per multiply-add for e-byte elements, counted each way the words admit.
    One output per thread, consecutive lanes on consecutive columns of C: the lanes share their row of A
    (one broadcast element) and read consecutive elements of B."""
    return {"per thread, both loads (per multiply-add)": 2 * e, "per FLOP (two FLOPs per multiply-add)": e,
            "per warp, distinct bytes (A broadcast)": (e + WARP * e) / WARP,
            "per warp, 32-byte sectors moved": (SECTOR + SECTOR * -(-WARP * e // SECTOR)) / WARP}


def readings() -> dict:
    """For each element width: the naive counts and the claim's tile, counted the same ways."""
    T = CLAIM["tile"]
    return {e: dict(naive=naive_readings(e), tiled=bytes_per_fma(T, T, e)) for e in (1, 2, 4)}


def claims() -> list[Claim]:
    rd = readings()
    T, (lo, hi) = CLAIM["tile"], CLAIM["few_hundredths"]
    bf = rd[2]["naive"]
    per_thread, per_flop, per_warp = (bf["per thread, both loads (per multiply-add)"],
                                      bf["per FLOP (two FLOPs per multiply-add)"], bf["per warp, distinct bytes (A broadcast)"])
    tiled = rd[2]["tiled"]
    # Every count of the naive kernel that gives two bytes, and the tiled count made the same way, over it:
    ratios = {"per thread in fp8": rd[1]["tiled"] / rd[1]["naive"]["per thread, both loads (per multiply-add)"],
              "per FLOP in bf16": (tiled / 2) / per_flop,
              "per warp in bf16": tiled / per_warp}
    both = [name for name, r in ratios.items() if lo <= r <= hi]
    verdict = WRONG if not both else "holds under a stated reading"
    return [Claim(
        "gemm-bytes", quote=QUOTE, source="spec/001, paragraph on GEMM tiling; CHAINS.md, gemm-tiling row",
        claimed=f"naive: {CLAIM['naive_bytes_per_fma']:g} bytes per multiply-add; {T} x {T} tile: a few hundredths of that",
        derived=(f"bf16: naive {per_thread:g} B per multiply-add per thread ({per_flop:g} B per FLOP, {per_warp:.3g} B "
                 f"counting a warp's distinct bytes); {T} x {T} tile {tiled:g} B per multiply-add, {1 / T:.3g} of the "
                 f"naive count made the same way; fp8: naive {rd[1]['naive']['per thread, both loads (per multiply-add)']:g} B, "
                 f"tiled {rd[1]['tiled']:g} B"),
        verdict=verdict,
        reason=(f"Per thread the naive kernel loads two operands per multiply-add, {fmt(per_thread, 'B')} in bf16 "
                f"(two bytes only for one-byte elements, or per FLOP); a {T} x {T} tile reads "
                f"{fmt(tiled, 'B')} in bf16, which is one over the tile's edge, {pct(1 / T)} of the naive count made "
                f"the same way, under one hundredth; no reading makes both halves true."),
        nearest_true=(f"The naive kernel reads two operands, {fmt(per_thread, 'B')} in bf16, per multiply-add; a "
                      f"{T} x {T} tile reads {fmt(tiled, 'B')}, one {fmt(T)}th of that: tiling divides the traffic "
                      f"by the tile's edge."))]


@memoised
def checks() -> dict:
    rd = readings()
    T = CLAIM["tile"]
    bf = rd[2]["naive"]
    tiled = rd[2]["tiled"]
    rows = [(f"{e} B", *(fmt(v, "B") for v in r["naive"].values()), fmt(r["tiled"], "B"),
             pct(r["tiled"] / r["naive"]["per thread, both loads (per multiply-add)"])) for e, r in rd.items()]
    return {
        "readings": rd, "rows": rows,
        "glue": {
            "claim-naive": fmt(CLAIM["naive_bytes_per_fma"], "B"), "claim-tile": f"{T} x {T}",
            "claim-lo": pct(CLAIM["few_hundredths"][0]), "claim-hi": pct(CLAIM["few_hundredths"][1]),
            "c-bf16-thread": fmt(bf["per thread, both loads (per multiply-add)"], "B"),
            "c-bf16-flop": fmt(bf["per FLOP (two FLOPs per multiply-add)"], "B"),
            "c-bf16-warp": fmt(bf["per warp, distinct bytes (A broadcast)"], "B"),
            "c-bf16-sector": fmt(bf["per warp, 32-byte sectors moved"], "B"),
            "c-fp8-thread": fmt(rd[1]["naive"]["per thread, both loads (per multiply-add)"], "B"),
            "c-fp32-thread": fmt(rd[4]["naive"]["per thread, both loads (per multiply-add)"], "B"),
            "c-tiled": fmt(tiled, "B"), "c-tiled-fp8": fmt(rd[1]["tiled"], "B"),
            "c-ratio-thread": pct(tiled / bf["per thread, both loads (per multiply-add)"]),
            "c-ratio-warp": pct(tiled / bf["per warp, distinct bytes (A broadcast)"]),
            "c-ratio-fp8": pct(rd[1]["tiled"] / rd[1]["naive"]["per thread, both loads (per multiply-add)"]),
            "c-tile": f"{T} x {T}", "c-edge": fmt(T),
            "fig-band-lo": fmt(2 * 2 / CLAIM["few_hundredths"][1]), "fig-band-hi": fmt(2 * 2 / CLAIM["few_hundredths"][0]),
        },
    }


# --- each step, figure, what changes, exercises ---------------------------------------------------
def steps(gpu="h200") -> dict:
    """The step-by-step numbers for bf16 at a 128 tile (the measurement's largest) on the GPU."""
    import numpy as np
    e, T = 2, 128
    BK = block_k_for(T)
    threads, reg_tile = 256, 8           # eight warps (Triton's num_warps=8); a thread's 8 x 8 accumulator
    slab = T * BK * e
    h = chip_of(gpu, 2)
    acc = catalog.accelerator(gpu)
    sm = acc.q("sm_count").magnitude
    step_time = (q(2 * T * T * BK, "FLOP") / (h.peak / sm)).to("us")
    step_bytes = q((T + T) * BK * e, "B")
    need_bw = (step_bytes / step_time * sm).to("TB/s")
    fp32 = acc.q("fp32").to("TFLOP/s")
    rows_w, cols_w = 8, int(np.ceil(sm / 8))      # one wave in GROUP_M = 8 tile rows
    wave_I = q(sm * 2 * T * T, "FLOP") / (q(e, "B") * T * (rows_w + cols_w))
    tiles = (8192 // T) ** 2
    waves = tiles / sm
    smem_naive, smem_blocked = 2 * e, bytes_per_fma(reg_tile, reg_tile, e)
    return {
        "s-slab": fmt(q(slab, "B").to("KiB")), "s-threads": fmt(threads), "s-loads-scalar": fmt(slab // (threads * e)),
        "s-loads-vector": fmt(slab // (threads * 16)), "s-warp-scalar": fmt(32 * e, "B"), "s-warp-vector": fmt(32 * 16, "B"),
        "s-reg": f"{reg_tile} x {reg_tile}", "s-smem-naive": fmt(smem_naive, "B"), "s-smem-blocked": fmt(smem_blocked, "B"),
        "s-smem-cut": fmt(smem_naive / smem_blocked), "s-step": f"{T} x {T} x {BK}", "s-step-time": fmt(step_time),
        "s-step-bytes": fmt(step_bytes.to("KiB")), "s-sm": fmt(sm), "s-need-bw": fmt(need_bw),
        "s-hbm": fmt(h.bandwidth.to("TB/s")), "s-l2-share": pct(1 - as_float(h.bandwidth, "TB/s") / as_float(need_bw, "TB/s")),
        "s-smem2": fmt(q(STAGES * (T + T) * BK * e, "B").to("KiB")), "s-fp32": fmt(fp32), "s-bf16": fmt(h.peak.to("TFLOP/s")),
        "s-tc-ratio": fmt(as_float(h.peak, "TFLOP/s") / as_float(fp32, "TFLOP/s")),
        "s-ridge-fp32": fmt((fp32 / h.bandwidth).to("FLOP/B")), "s-wave-rows": fmt(rows_w), "s-wave-cols": fmt(cols_w),
        "s-wave-I": fmt(wave_I.to("FLOP/B")), "s-ridge": fmt(h.ridge), "s-tiles": fmt(tiles), "s-waves": fmt(waves),
        "s-wave-eff": pct(waves / np.ceil(waves)), "s-tile-edge": fmt(T), "s-bk": fmt(BK), "s-side": fmt(8192),
        "s-tile-edge2": fmt(T),
    }


TILES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def tile_curves(gpus, elem_bytes) -> dict:
    """Bytes per multiply-add against the square tile, per width; attainable TFLOP/s per GPU (no cache)."""
    import numpy as np
    t = np.array(TILES)
    out = {"bytes": {e: [bytes_per_fma(x, x, e) for x in TILES] for e in (1, 2, 4)}, "rate": {}}
    for g in gpus:
        c = chip_of(g, elem_bytes)
        intens = q(np.array([2 / bytes_per_fma(x, x, elem_bytes) for x in TILES]), "FLOP/B")
        out["rate"][c.name] = attainable(intens, c).to("TFLOP/s").m
    out["tiles"] = t
    return out


def what_changes(p, ch: Chain) -> dict:
    def T(gpu, e):
        return fmt(as_float(gemm_chain(gpu, p.m, p.n, p.k, p.tile_m, p.tile_n, e)["T"], ""))
    return {"w-fp8-tile": T("h200", 1), "w-bf16-tile": T("h200", 2), "w-h100-tile": T("h100-sxm", 2)}


def exercises(p, ch: Chain) -> dict:
    c1 = chip_of("h200", 2)
    I1 = q(2, "FLOP") / q(4, "B")
    r1 = attainable(I1.to("FLOP/B"), c1).to("TFLOP/s")
    c2 = gemm_chain("h200", 8192, 8192, 8192, 128, 256, 2, stages=3)
    return {
        "ex1-bytes": fmt(4, "B"), "ex1-I": fmt(I1.to("FLOP/B")), "ex1-rate": fmt(r1),
        "ex1-frac": pct(as_float(r1, "FLOP/s") / as_float(c1.peak, "FLOP/s")),
        "ex2-tile": "128 x 256", "ex2-bk": fmt(64), "ex2-stages": fmt(3), "ex3-side": fmt(8192),
        "ex2-bpf": fmt(c2["b_t"]), "ex2-I": fmt(c2["I_t"]), "ex2-smem": fmt(c2["Z_t"]), "ex2-acc": fmt(c2["G_t"]),
        "ex2-acc-frac": pct(as_float(c2["G_t"], "KiB") / as_float(c2["G"], "KiB")),
        "ex3-tile": fmt(as_float(gemm_chain("h100-sxm", 8192, 8192, 8192, 128, 128, 1)["T"], "")),
        "ex3-bf16": fmt(as_float(gemm_chain("h100-sxm", 8192, 8192, 8192, 128, 128, 2)["T"], "")),
    }


SPEC = Spec("gemm-tiling", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
