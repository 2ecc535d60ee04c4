"""flash-attention-versions: inside one attention tile, the softmax's FLOPs against its time.

A B_q x B_k tile does 4 B_q B_k d matrix FLOPs on the tensor cores, one exponential per score (and one
per row) on the multi-function unit (MUFU), and a few FP32 operations per score on the FP32 pipes. An
exponential costs R_mm / R_x matrix FLOPs of time, so a softmax that is a percent of the FLOPs is a large
share of a serial (FlashAttention-2) tile; FlashAttention-3 overlaps the two sides. The tile's counts
are utils.gpu.kernels.exp_rate.tile_ops (the tests hold them equal); v1's memory traffic is attention-traffic.
"""
from __future__ import annotations

import functools
import math

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.chains.attention_traffic import attention_chain
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, pct, q, short
from utils.verdicts import READING, WRONG, Claim, within

GUIDE = ("NVIDIA CUDA C++ Programming Guide, section Arithmetic Instructions, table Throughput of Native "
         "Arithmetic Instructions (results per clock cycle per multiprocessor), compute capability 9.0, "
         "https://docs.nvidia.com/cuda/cuda-c-programming-guide/, read 2026-11-30")

PARAMETERS = (
    Param("gpu", "h100-sxm", "the accelerator: a catalog key or a spec file (needs sm_count and bf16_dense)",
          check="accelerator", source="catalog: H100 SXM, the GPU of the FlashAttention-3 paper"),
    Param("head_dim", 128, "head dimension d", check="whole", source="the claim's setting (FlashAttention-3 paper)"),
    Param("block_q", 128, "query rows per tile, B_q", check="whole", source="FlashAttention-3's tile"),
    Param("block_k", 128, "keys per tile, B_k", check="whole", source="FlashAttention-3's tile"),
    Param("mufu_per_sm_per_clock", 16.0, "exp2 results per SM per clock (multi-function unit)",
          source=GUIDE),
    Param("sm_clock_ghz", 1.83, "SM clock", unit="GHz",
          source="FlashAttention-3 paper (arXiv:2407.08608), footnote 5 (16 x 132 SMs x 1830 MHz): 1830 MHz, the clock "
                 "at which the catalog's H100 bf16 rate is 4,096 FLOP per SM per clock"),
    Param("batch_heads", 8, "batch x heads of one attention call", check="whole",
          source="this book's assumption: one sequence, 64 heads over 8-way tensor parallelism"),
    Param("seq_len", 16384, "sequence length N", unit="token", check="whole", source="this book's assumption"),
)

RESULTS = (
    Result("softmax_flop_share", "", "Softmax's share of one tile's FLOPs (an exp counted as one FLOP)", of="phi",
           percent=True),
    Result("exp_time_share_serial", "", "Exponentials' share of the serial tile time", of="s_x", percent=True),
    Result("overlap_speedup", "", "Serial tile time over overlapped tile time", of="g"),
    Result("exp_rate", "1/s", "Exponentials per second, whole GPU (SMs x MUFU x clock)", of="R_x"),
    Result("head_dim_at_parity", "", "Head dimension at which exponential time equals matmul time", of="d_p"),
)

SOFTMAX_ALU_PER_SCORE = 4     # max, subtract, sum, scale: the book's softmax count (five) less the exp
FP32_PER_SM_PER_CLOCK = 128   # FP32 add, multiply or FMA results per SM per clock (GUIDE)
# The FlashAttention-3 paper's figures for the H100 SXM5 (section 3.1 and footnote 5), from the catalog.
FA3 = catalog.entry("software", "flash-attention-3-h100-figures")
FA3_FIGURES = dict(exp_rate=float(FA3.q("exp_rate").to("1/s").m), matmul_rate=float(FA3.q("matmul_rate").to("FLOP/s").m),
                   price=FA3.q("exp_price").m, flops_per_exp=FA3.q("flops_per_exp").m,
                   exp_half=float(FA3.q("exp_half").m),
                   pingpong=tuple(float(FA3.q(f"pingpong_{k}").to("FLOP/s").m) for k in ("before", "after_low", "after_high")))


def validate(p):
    for field in ("sm_count", "bf16_dense"):
        if field not in p.gpu:
            have = ", ".join(k for k in catalog.keys("accelerator") if "sm_count" in catalog.accelerator(k))
            raise ParameterError(f"gpu: the catalog entry {p.gpu.key!r} has no {field}; choose one of {have}")


def tile_ops(b_q: int, b_k: int, d: int, version: int = 2) -> dict:
    """One tile's work, FlashAttention version 1 or 2 (3 counts as 2): matrix FLOPs, MUFU operations,
    other FP32 FLOPs (the same counts as utils.gpu.kernels.exp_rate.tile_ops)."""
    scores = b_q * b_k
    mufu, out = (scores + 3 * b_q, 3 * b_q * d) if version == 1 else (scores + b_q, b_q * d)
    return {"matmul_flops": 4 * scores * d, "mufu": mufu, "alu_flops": SOFTMAX_ALU_PER_SCORE * scores + out,
            "scores": scores}


def flash_chain(gpu, d, b_q, b_k, u_x, f_ghz, bh, n_ctx, *, precision="bf16", source="parameters cell", cite=None) -> Chain:
    """One attention tile's matrix, exponential and other FP32 work on `gpu`, serial and overlapped. Each input
    cites `source`, or cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    acc = gpu if hasattr(gpu, "key") else catalog.accelerator(gpu)
    ch = Chain(f"One {int(b_q)} x {int(b_k)} attention tile at d = {int(d)}, {precision} products, {acc.name}")
    ch.given("d", int(d), "head dimension", kind="assumption", source=cite("head_dim"))
    ch.given("B_q", int(b_q), "query rows per tile", kind="assumption", source=cite("block_q"))
    ch.given("B_k", int(b_k), "keys per tile", kind="assumption", source=cite("block_k"))
    ch.given("c", q(4, "FLOP"), "matrix FLOPs per score per head-dimension element: QK^T and PV, 2 each",
             kind="derived", source="a multiply and an add per term, two products")
    ch.given("c_a", SOFTMAX_ALU_PER_SCORE, "other FP32 operations per score: max, subtract, sum, scale",
             kind="derived", source="the book's softmax count (fused-softmax chapter: five per element) less the exp")
    ch.given("w", q(1, "FLOP"), "FLOPs per FP32 result, and per exponential when counting FLOPs",
             kind="derived", source="the FlashAttention-3 paper's convention (special functions in TFLOPS)")
    ch.step("F", "c*B_q*B_k*d", "MFLOP", "matrix FLOPs per tile")
    ch.step("n_x", "B_q*B_k + B_q", "", "exponentials per tile: one per score, one per row (alpha)")
    ch.step("n_a", "w*(c_a*B_q*B_k + B_q*d)", "MFLOP", "other FP32 FLOPs per tile: per score, and the output rescale")
    ch.step("phi", "(w*n_x + n_a)/(F + w*n_x + n_a)", "", "softmax's share of the tile's FLOPs")
    ch.given("R_mm", acc[f"{precision}_dense"], f"dense {precision} matrix rate")
    ch.given("n_SM", acc["sm_count"], "SMs")
    ch.given("u_x", float(u_x), "exp2 results per SM per clock (MUFU)", kind="spec",
             source=cite("mufu_per_sm_per_clock"))
    ch.given("u_a", FP32_PER_SM_PER_CLOCK, "FP32 add, multiply or FMA results per SM per clock", kind="spec",
             source=GUIDE)
    ch.given("f", q(f_ghz, "GHz"), "SM clock", kind="spec",
             source=cite("sm_clock_ghz"))
    ch.step("R_x", "n_SM*u_x*f", "1/s", "exponentials per second, whole GPU")
    ch.step("R_a", "n_SM*u_a*f*w", "TFLOP/s", "FP32 non-tensor rate (one FLOP per result)")
    ch.step("rho", "R_mm/R_x", "FLOP", "an exponential's price in matrix FLOPs")
    ch.step("t_mm", "F*n_SM/R_mm", "ns", "matrix products of one tile on one SM")
    ch.step("t_x", "n_x/(u_x*f)", "ns", "exponentials of one tile on one SM")
    ch.step("t_a", "n_a/(u_a*f*w)", "ns", "other FP32 work of one tile on one SM")
    ch.step("r_x", "t_x/t_mm", "", "exponential time over matrix time")
    ch.step("T_s", "t_mm + t_x + t_a", "ns", "tile time, serial (FlashAttention-2: each waits for the other)")
    ch.step("s_x", "t_x/T_s", "", "exponentials' share of the serial time")
    ch.step("s_sm", "(t_x + t_a)/T_s", "", "softmax's share of the serial time")
    ch.step("T_o", "Max(t_mm, t_x + t_a)", "ns", "tile time, overlapped (FlashAttention-3)")
    ch.step("g", "T_s/T_o", "", "speedup from overlapping, at best")
    ch.solve("d_p", "c*B_q*B_k*d_p*n_SM/R_mm = (B_q*B_k + B_q)/(u_x*f)", "",
             "head dimension at which the exponentials take as long as the products")
    ch.solve("d_s", "c*B_q*B_k*d_s*n_SM/R_mm = (B_q*B_k + B_q)/(u_x*f) + (c_a*B_q*B_k + B_q*d_s)/(u_a*f)", "",
             "head dimension at which all the softmax work takes as long as the products")
    # FlashAttention-2's tweak: rescale the output once per tile, divide by l once at the end.
    ch.step("n_x1", "B_q*B_k + 3*B_q", "", "v1's exponentials and reciprocals per tile (two exps and 1/l per row)")
    ch.step("n_a1", "w*(c_a*B_q*B_k + 3*B_q*d)", "MFLOP", "v1's other FP32 FLOPs per tile (O = a O + b PV)")
    ch.step("T_1", "t_mm + n_x1/(u_x*f) + n_a1/(u_a*f*w)", "ns", "v1's serial tile time (its non-matmul work)")
    ch.step("h", "T_1/T_s", "", "v1's tile time over v2's")
    # FlashAttention-2's other fix: parallelism over the sequence.
    ch.given("H", int(bh), "batch x heads of the call", kind="assumption", source=cite("batch_heads"))
    ch.given("N", int(n_ctx), "sequence length", kind="assumption", source=cite("seq_len"))
    ch.step("G_1", "H", "", "thread blocks, v1 (one per batch and head)")
    ch.step("G_2", "H*ceiling(N/B_q)", "", "thread blocks, v2 (also one per query block)")
    ch.step("e_1", "G_1/(ceiling(G_1/n_SM)*n_SM)", "", "SMs kept busy, v1 (waves rounded up)")
    ch.step("e_2", "G_2/(ceiling(G_2/n_SM)*n_SM)", "", "SMs kept busy, v2")
    ch.step("p", "e_2/e_1", "", "speedup from parallelism over the sequence")
    return ch


def _chain(p, **kw) -> Chain:
    a = dict(gpu=p.gpu, d=p.head_dim, b_q=p.block_q, b_k=p.block_k, u_x=p.mufu_per_sm_per_clock,
             f_ghz=p.sm_clock_ghz, bh=p.batch_heads, n_ctx=p.seq_len)
    a.update(kw)
    return flash_chain(**a)


def compute(p) -> Chain:
    return _chain(p, cite=functools.partial(SPEC.source, p))


def reading(p, ch: Chain) -> dict:
    return {
        "intro-tile": f"{p.block_q} x {p.block_k}", "intro-d": fmt(p.head_dim), "intro-share": pct(ch["phi"]),
        "intro-gpu": p.gpu.name, "intro-rho": ch["rho"], "intro-sm-share": pct(ch["s_sm"]),
        "c-F": ch["F"], "c-nx": fmt(ch["n_x"]), "c-na": ch["n_a"], "c-Rx": f"{short(as_float(ch['R_x'], '1/s'))} exp/s",
        "c-Ra": ch["R_a"], "c-Rmm": ch["R_mm"].to("TFLOP/s"), "c-rho": ch["rho"], "c-ua": fmt(ch["u_a"]),
        "c-ux": fmt(ch["u_x"]), "c-alu-ratio": fmt(as_float(ch["u_a"] / ch["u_x"], "")), "c-tmm": ch["t_mm"],
        "c-tx": ch["t_x"], "c-ta": ch["t_a"], "c-rx": pct(ch["r_x"]), "c-Ts": ch["T_s"], "c-To": ch["T_o"],
        "c-ssm": pct(ch["s_sm"]),
        "c-bound": "the matrix products" if ch["t_mm"] >= ch["t_x"] + ch["t_a"] else "the softmax",
        "c-ds": fmt(ch["d_s"]),
    }


def versions(p, ch: Chain) -> dict:
    """The three versions' numbers: v1's bytes (attention-traffic's chain), v2's saved work and launch."""
    at = attention_chain(p.gpu, p.seq_len, p.head_dim, 2.0, p.block_q, 64)
    ops1, ops2 = tile_ops(p.block_q, p.block_k, p.head_dim, 1), tile_ops(p.block_q, p.block_k, p.head_dim, 2)
    a100 = catalog.accelerator("a100-sxm-80gb")
    pp = FA3_FIGURES["pingpong"]
    return {
        "v1-n": fmt(p.seq_len), "v1-ratio": f"{fmt(at['r'])}x", "v1-floor": f"{fmt(as_float(at['M_m'] / at['M_0'], ''))}x",
        "v2-a100": f"1/{fmt(as_float(a100.q('bf16_dense') / a100.q('fp32'), ''))}",
        "v2-saved-alu": q(ops1["alu_flops"] - ops2["alu_flops"], "FLOP").to("kFLOP"),
        "v2-saved-mufu": fmt(ops1["mufu"] - ops2["mufu"]), "v2-h": fmt(ch["h"]), "v2-g1": fmt(ch["G_1"]),
        "v2-sms": fmt(ch["n_SM"]), "v2-e1": pct(ch["e_1"]), "v2-g2": fmt(ch["G_2"]),
        "v2-waves": fmt(math.ceil(as_float(ch["G_2"], "") / as_float(ch["n_SM"], ""))), "v2-e2": pct(ch["e_2"]),
        "v2-p": f"{fmt(ch['p'])}x",
        "v3-pp": f"{fmt(q(pp[0], 'FLOP/s').to('TFLOP/s'))} before and {fmt(pp[1] / 1e12)} to "
                 f"{fmt(q(pp[2], 'FLOP/s').to('TFLOP/s'))} after, a gain of {pct(pp[1] / pp[0] - 1)} to {pct(pp[2] / pp[0] - 1)}",
    }


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(flop_share=0.01, time_share=0.60, head_dim=128, block=128)
QUOTE = ("Each version fixed a different bottleneck: version 1 fixed memory traffic, version 2 fixed non-matmul "
         "work and parallelism, version 3 fixed the fact that softmax and matmul were waiting for each other on "
         "Hopper. The arithmetic that shows why a softmax costing one percent of the FLOPs can cost sixty "
         "percent of the time.")


def claim_chain(precision="bf16", d=CLAIM["head_dim"]) -> Chain:
    b = CLAIM["block"]
    return flash_chain("h100-sxm", d, b, b, 16, 1.83, 8, 16384, precision=precision, source="the claim")


@memoised
def checks() -> dict:
    """The claim's chains (bf16, FP8, and bf16 at d = 64) and the readings of 'sixty percent'."""
    cb, c8, c64 = claim_chain(), claim_chain("fp8"), claim_chain(d=64)

    def naive(c):     # every softmax FLOP priced at the exponential's rate
        phi = as_float(c["phi"], "")
        return phi / (phi + (1 - phi) / as_float(c["rho"], "FLOP"))

    readings = [
        ("exponentials' time over the products' time (the FA3 paper's half)", cb["r_x"], c8["r_x"]),
        ("exponentials' share of the serial tile time", cb["s_x"], c8["s_x"]),
        ("all softmax work's share of the serial tile time", cb["s_sm"], c8["s_sm"]),
        ("all softmax work's time over the products' time", (cb["t_x"] + cb["t_a"]) / cb["t_mm"],
         (c8["t_x"] + c8["t_a"]) / c8["t_mm"]),
        ("every softmax FLOP priced at the exponential's rate", naive(cb), naive(c8)),
    ]
    exp_only = as_float(cb["n_x"] * cb["w"] / (cb["F"] + cb["n_x"] * cb["w"]), "")
    return dict(bf16=cb, fp8=c8, d64=c64, naive=naive(cb), exp_only=exp_only,
                readings=[(n, as_float(a, ""), as_float(b, "")) for n, a, b in readings])


def claims() -> list[Claim]:
    ck = checks()
    cb, c8 = ck["bf16"], ck["fp8"]
    exp_rate = short(cb["R_x"].to("1/s").m)
    flop_ok = within(cb["phi"], CLAIM["flop_share"], 0.5) and within(c8["phi"], CLAIM["flop_share"], 0.5)
    time_fp8 = abs(as_float(c8["s_sm"], "") - CLAIM["time_share"]) < 0.05
    ok = flop_ok and time_fp8
    return [Claim(
        "softmax-time", quote=QUOTE, source="spec/001, paragraph on the FlashAttention versions",
        claimed=f"the softmax is about {pct(CLAIM['flop_share'])} of the FLOPs and can take about "
                f"{pct(CLAIM['time_share'])} of the time",
        derived=f"{pct(cb['phi'])} of the FLOPs at d = {CLAIM['head_dim']} (exp counted as one FLOP); serial softmax "
                f"share of the tile time {pct(cb['s_sm'])} with bf16 products and {pct(c8['s_sm'])} with FP8",
        verdict=READING if ok else WRONG,
        reading="the softmax's share of the serial (FlashAttention-2) tile time, every softmax instruction at its own "
                "unit's rate, with FP8 matrix products on Hopper ('can cost': the case where it does)",
        nearest_true="" if ok else f"the softmax takes {pct(c8['s_sm'])} of a serial tile with FP8 products",
        reason=f"an exponential costs {fmt(cb['rho'])} of matrix products on the H100 "
               f"({exp_rate} exp/s against {fmt(cb['R_mm'].to('TFLOP/s'))}), so "
               f"{pct(cb['phi'])} of the FLOPs is {pct(c8['s_sm'])} of a serial tile with FP8 products; with bf16 "
               f"products it is {pct(cb['s_sm'])} ({pct(cb['s_x'])} for the exponentials alone), and pricing every "
               f"softmax FLOP at the exponential's rate overstates it ({pct(ck['naive'])}).")]


def check_text(ck: dict) -> dict:
    cb, c8, c64 = ck["bf16"], ck["fp8"], ck["d64"]
    f = FA3_FIGURES
    return {"check-d": fmt(CLAIM["head_dim"]), "check-tile": f"{CLAIM['block']} x {CLAIM['block']}",
            "fa3-rx": f"{short(f['exp_rate'])} exp/s", "fa3-rmm": fmt(q(f["matmul_rate"], "FLOP/s").to("TFLOP/s")),
            "check-rx": f"{short(as_float(cb['R_x'], '1/s'))} exp/s", "check-price": fmt(cb["rho"]),
            "check-phi": pct(cb["phi"]), "check-phi-exp": pct(ck["exp_only"]), "check-rx-half": pct(cb["r_x"]),
            "check-s-bf16": pct(cb["s_sm"]), "check-s-fp8": pct(c8["s_sm"]), "check-phi-fp8": pct(c8["phi"]),
            "check-s-64": pct(c64["s_sm"]), "check-phi-64": pct(c64["phi"]), "check-naive": pct(ck["naive"]),
            "fa3-half": pct(f["exp_half"]), "check-d64": fmt(c64["d"]), "check-g-bf16": fmt(cb["g"]),
            "check-g-fp8": fmt(c8["g"])}


# --- the figure, what changes, exercises -----------------------------------------------------------
FIGURE_DIMS = (64, 96, 128, 192, 256)


def figure_data(p, ch: Chain) -> dict:
    import numpy as np
    bars = []
    for d in FIGURE_DIMS:
        c = _chain(p, d=d)
        tm, tx, ta = (as_float(c[k], "ns") for k in ("t_mm", "t_x", "t_a"))
        bars.append(dict(d=d, t_mm=tm, t_x=tx, t_a=ta, overlapped=max(tm, tx + ta)))
    bh = np.unique(np.round(np.logspace(0, np.log10(512), 40)).astype(int))
    n_sm = as_float(ch["n_SM"], "")
    tiles = math.ceil(p.seq_len / p.block_q)
    e1 = bh / (np.ceil(bh / n_sm) * n_sm)
    e2 = bh * tiles / (np.ceil(bh * tiles / n_sm) * n_sm)
    return dict(bars=bars, bh=bh, busy_v1=100 * e1, busy_v2=100 * e2, tiles=tiles, n_sm=int(n_sm),
                gpu=p.gpu.short_name)


def what_changes(p, ch: Chain) -> dict:
    out = {"wc-d": "; ".join(f"{pct(_chain(p, d=d)['s_sm'])} at d = {d}" for d in (64, 128, 256)),
           "wc-bk": "; ".join(f"{pct(_chain(p, b_k=b)['s_sm'])} with {b} keys" for b in (32, 64, 128)),
           "wc-bh": "; ".join(f"{pct(_chain(p, bh=b)['e_1'])} at {b}" for b in (4, 32, 132))}
    if "fp8_dense" in p.gpu:
        c8 = _chain(p, precision="fp8")
        out["wc-fp8"] = (f"{pct(c8['s_sm'])} serial softmax share against {pct(ch['s_sm'])}, the exponentials at "
                         f"{pct(c8['r_x'])} of the products' time")
    else:
        out["wc-fp8"] = f"the catalog has no FP8 rate for the {p.gpu.name}"
    return out


def exercises(p, ch: Chain) -> dict:
    if "fp8_dense" in p.gpu:
        e1 = _chain(p, precision="fp8")
        bound = "the softmax" if e1["t_mm"] < e1["t_x"] + e1["t_a"] else "the products"
        ex1 = (f"The tensor rate doubles to {fmt(e1['R_mm'].to('TFLOP/s'))} while the MUFU stays at "
               f"{short(as_float(e1['R_x'], '1/s'))} exp/s, so an exponential costs {fmt(e1['rho'])}. The exponentials "
               f"take {pct(e1['r_x'])} of the products' time, and overlapping gives at most {fmt(e1['g'])}x: the tile "
               f"is then bound by {bound}.")
    else:
        ex1 = f"The catalog has no FP8 rate for the {p.gpu.name}; try gpu = \"h100-sxm\"."
    bh2, n2 = 4, 4096
    e2 = _chain(p, bh=bh2, n_ctx=n2)
    d3, bq3, bk3 = 256, 128, 64
    e3 = _chain(p, d=d3, b_q=bq3, b_k=bk3)
    o1, o2 = tile_ops(bq3, bk3, d3, 1), tile_ops(bq3, bk3, d3, 2)
    saved = as_float(e3["T_1"] - e3["T_s"], "ns")

    def kflop(n):
        return fmt(q(n, "FLOP").to("kFLOP"))

    return {
        "ex1-answer": ex1, "ex2-bh": fmt(bh2), "ex2-n": fmt(n2),
        "ex2-answer": f"v1 launches {fmt(e2['G_1'])} blocks, {pct(e2['e_1'])} of the SMs; v2 launches {fmt(e2['G_2'])} "
                      f"({fmt(bh2)} x {fmt(math.ceil(n2 / p.block_q))} query blocks), {pct(e2['e_2'])} busy with the "
                      f"last wave rounded up: {fmt(e2['p'])}x from the launch alone.",
        "ex3-d": fmt(d3), "ex3-tile": f"{bq3} x {bk3}",
        "ex3-answer": f"v1 does two scalings and an add per output element, {kflop(3 * bq3 * d3)}, where v2 does one "
                      f"multiply, {kflop(bq3 * d3)}: {kflop(o1['alu_flops'] - o2['alu_flops'])} saved per tile, and "
                      f"{fmt(o1['mufu'] - o2['mufu'])} MUFU operations (an exp and a reciprocal per row). That is "
                      f"{fmt(saved)} ns of v1's {fmt(as_float(e3['T_1'], 'ns'))} ns serial tile, "
                      f"{pct(saved / as_float(e3['T_1'], 'ns'))}; v2 pays {kflop(bq3 * d3)} and {fmt(bq3)} reciprocals "
                      "once per query block instead.",
    }


SPEC = Spec("flash-attention-versions", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
