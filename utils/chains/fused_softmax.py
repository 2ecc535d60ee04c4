"""fused-softmax: one program per row, one read and one write of HBM, so a copy's time is the floor.

The chain counts the bytes (two passes over the tensor), puts them over the copy roof (measured where a
record exists, utils.measured.copy_ceiling), checks that the arithmetic hides under the traffic (the FP32
lanes and the exponentials on the special-function units), and derives the block-size rule and the
widest row the kernel holds in registers. The kernel itself is utils/gpu/kernels/softmax.py.
"""
from __future__ import annotations

import functools
import math

from utils import catalog, measured, roofline
from utils.chain import Chain, as_float, memoised
from utils.params import Param, Result, Spec
from utils.units import auto_bytes, fmt, pct, q
from utils.verdicts import HOLDS, READING, WRONG, Claim

PARAMETERS = (
    Param("gpu", "h200", "the accelerator: a catalog key or a spec file", check="accelerator",
          source="catalog: H200, the GPU the book measures on"),
    Param("n_rows", 32768, "rows: one program each", check="whole", source="the harness's shapes"),
    Param("n_cols", 4096, "columns: the softmax runs along each row", check="whole",
          source="the harness's shapes"),
    Param("bytes_per_element", 2.0, "bytes per element of the input and output (2 = bf16, 4 = fp32)",
          unit="B", source="bf16, the precision models run in"),
)

RESULTS = (
    Result("bytes_moved", "MB", "Bytes the fused softmax moves (one read, one write)", of="M"),
    Result("predicted_time", "us", "Predicted time: bytes over the copy bandwidth", of="t"),
    Result("block_size", "", "Block: lanes per program (next power of two at or above the row)", of="B"),
    Result("done_time", "us", "Slowest time that counts as done (the claim's share of copy speed)", of="t_d"),
    Result("wide_row_limit", "", "Widest row the kernel holds in registers (columns)", of="C_max"),
)

REGFILE_SOURCE = ("NVIDIA, Tuning CUDA Applications for Hopper GPU Architecture (Hopper Tuning Guide), "
                  "section Occupancy: 'The register file size is 64K 32-bit registers per SM', "
                  "https://docs.nvidia.com/cuda/hopper-tuning-guide/index.html, read 2026-11-29")
EXP_SOURCE = ("NVIDIA, CUDA C++ Programming Guide, Arithmetic Instructions throughput table, compute "
              "capability 9.0: 128 results per clock per SM for 32-bit add, multiply and multiply-add "
              "(2 FLOPs each), 16 for the base-2 exponential, so one exponential issues as long as "
              "2 x 128 / 16 = 16 FP32 FLOPs; https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html, "
              "read 2026-11-29")
# The register file and the block's thread cap of the chapter's GPU (the gpu Param's default), from the
# catalog's per-SM limits (utils/catalog/sm_limits.toml).
SM_LIMITS = catalog.entry("sm_limit", PARAMETERS[0].default)
REGISTERS_PER_SM = int(SM_LIMITS.q("registers").m)
MAX_THREADS = int(SM_LIMITS.q("max_threads_per_block").m)
FLOPS_PER_ELEMENT = 5     # compare, subtract, exp, add, multiply (the harness counts the same)
EXP_COST = 16             # FP32 FLOPs one exponential occupies the SM for (EXP_SOURCE)
ROW_SHARE = 0.5           # share of the register file the row's values may take
ROW_SHARE_SOURCE = "this book's assumption (the kernel's MAX_COLS): half for the row, half for everything else"
UNFUSED_PASSES = 8        # counted on the page from eager torch (utils.gpu.byte_counter): see unfused_softmax
TILED_PASSES = 3          # past the register limit: two reads (max and sum, then output) and one write
OTHER_GPUS = ("a100-sxm-80gb", "h100-sxm", "h200", "b200")


def block_size(n_cols: int) -> int:
    """The kernel's rule (utils.gpu.kernels.softmax.block_size): the next power of two at or above the row,
    at least 16."""
    return max(16, 1 << max(0, math.ceil(math.log2(n_cols))))


def softmax_chain(gpu, n_rows, n_cols, bytes_per_element, *, done_fraction=None, source="parameters cell", cite=None) -> Chain:
    """One fused softmax over `n_rows` rows of `n_cols` on `gpu`: its bytes, its floors, its register budget. Each
    input cites `source`, or cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    acc = gpu if hasattr(gpu, "key") else catalog.accelerator(gpu)
    roof, roof_kind, roof_source = measured.copy_ceiling(acc)
    ch = Chain(f"Fused softmax of {int(n_rows):,} x {int(n_cols):,} on {acc.name}")
    ch.given("R", int(n_rows), "rows, one program each", kind="assumption", source=cite("n_rows"))
    ch.given("C", int(n_cols), "columns per row", kind="assumption", source=cite("n_cols"))
    ch.given("e", q(bytes_per_element, "B"), "bytes per element in HBM", kind="assumption", source=cite("bytes_per_element"))
    ch.given("p", CLAIM["reads"] + CLAIM["writes"], "passes over HBM: one read, one write", kind="derived",
             source="the kernel: one tl.load and one tl.store per element")
    ch.step("M", "p*R*C*e", "MB", "bytes moved")
    ch.given("W", roof, "copy bandwidth: the roof", kind=roof_kind, source=roof_source)
    ch.step("t", "M/W", "us", "predicted time: a copy's")
    ch.given("f", done_fraction or CLAIM["done_fraction"], "share of copy speed that counts as done",
             kind="assumption", source="the claim")
    ch.step("t_d", "t/f", "us", "slowest time that still counts as done")
    ch.given("k", q(FLOPS_PER_ELEMENT, "FLOP"), "FLOPs per element: compare, subtract, exp, add, multiply",
             kind="derived", source="the kernel (the harness counts the same)")
    ch.step("I", "k/(p*e)", "FLOP/B", "arithmetic intensity")
    ch.given("P", acc["fp32"], "FP32 rate of the CUDA cores (not the tensor cores)")
    ch.step("t_F", "k*R*C/P", "us", "compute floor on the FP32 lanes")
    ch.given("c_x", q(EXP_COST, "FLOP"), "issue cost of one exponential, in FP32 FLOPs", kind="spec", source=EXP_SOURCE)
    ch.step("t_E", "c_x*R*C/P", "us", "floor of the exponentials on the special-function units")
    ch.step("phi", "Max(t_F, t_E)/t", "", "the larger compute floor over the memory time")
    ch.given("B", block_size(int(n_cols)), "block: the next power of two at or above C", kind="derived",
             source="the kernel's rule, utils.gpu.kernels.softmax.block_size")
    ch.step("u", "1 - C/B", "", "share of the block's lanes masked off")
    ch.given("b_a", q(4, "B"), "bytes per row value in registers (fp32 accumulation)", kind="derived",
             source="the kernel converts each row to float32")
    ch.step("m", "B*b_a", "KiB", "registers one program needs for its row")
    ch.given("N_r", REGISTERS_PER_SM, "32-bit registers per SM", kind="spec",
             source=f"catalog: sm_limit {SM_LIMITS.key}, registers ({SM_LIMITS['registers'].cite}), as in "
                    + REGFILE_SOURCE)
    ch.given("b_r", q(4, "B"), "bytes per register", kind="spec", source=REGFILE_SOURCE)
    ch.step("F_r", "N_r*b_r", "KiB", "register file of one SM")
    ch.step("s_m", "m/F_r", "", "share of the SM's register file the row takes")
    ch.given("s", ROW_SHARE, "share of the register file the row may take", kind="assumption", source=ROW_SHARE_SOURCE)
    ch.solve("C_max", "s*F_r = b_a*C_max", "", "wide-row limit: the widest row held in registers")
    ch.given("n_u", UNFUSED_PASSES, "passes of an unfused softmax: max, subtract, exp, sum, divide as separate kernels",
             kind="derived", source="counted on the page, from the operations eager torch dispatches")
    ch.step("M_u", "n_u*R*C*e", "MB", "bytes an unfused softmax moves")
    ch.step("t_u", "M_u/W", "us", "its time at copy speed")
    return ch


def compute(p) -> Chain:
    return softmax_chain(p.gpu, p.n_rows, p.n_cols, p.bytes_per_element, cite=functools.partial(SPEC.source, p))


def reading(p, ch: Chain) -> dict:
    """The prose around the chain."""
    acc = p.gpu
    roof_kind = next(r for r in ch.rows if r.name == "W").kind
    l2 = acc.get("l2_cache")
    tensor = ch["M"] / ch["p"]
    if l2 is None:
        l2_note = "The catalog has no L2 size for this GPU."
    elif tensor > l2:
        l2_note = (f"The tensor is {fmt(tensor.to('MB'))}, larger than the {fmt(l2.to('MB'))} L2 cache, so the "
                   "prediction is for data that comes from HBM.")
    else:
        l2_note = (f"The tensor is {fmt(tensor.to('MB'))}, which fits in the {fmt(l2.to('MB'))} L2 cache: a "
                   "repeated call on warm data can beat this prediction, which is for data that comes from HBM.")
    return {
        "intro-shape": f"{p.n_rows:,} x {p.n_cols:,}", "intro-gpu": acc.name,
        "intro-done-time": fmt(ch["t_d"], style="eng"), "intro-done-share": pct(CLAIM["done_fraction"]),
        "roof": ch["W"], "intro-cols": fmt(p.n_cols),
        "roof-kind": "the harness's measured copy bandwidth" if roof_kind == "measured"
                     else "the datasheet's HBM bandwidth, standing in until the harness measures a copy on this GPU",
        "intensity": ch["I"], "t-fp32": fmt(ch["t_F"], style="eng"), "t-exp": fmt(ch["t_E"], style="eng"),
        "exp-cost": fmt(ch["c_x"].m), "phi": pct(ch["phi"]), "bound-word": "memory" if ch["phi"] < 1 else "compute",
        "lanes-idle": pct(ch["u"]), "row-regs": ch["m"], "regfile": ch["F_r"], "row-share": pct(ch["s_m"]),
        "row-share-allowed": pct(ROW_SHARE),
        "row-fit": "fits" if p.n_cols <= as_float(ch["C_max"], "") else
                   "does not: this kernel refuses it, and the tiled kernel described below moves half as many bytes again",
        "unfused-bytes": auto_bytes(ch["M_u"]), "unfused-time": fmt(ch["t_u"], style="eng"),
        "unfused-ratio": fmt(as_float(ch["M_u"] / ch["M"], "")), "l2-note": l2_note,
    }


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(reads=1, writes=1, done_fraction=0.90)
QUOTES = dict(
    one_pass="One program per row, the row in registers, max then exp then sum then divide, one read "
             "and one write of HBM.",
    done="The runnable kernel with its launch, the numerics (subtract the max, accumulate in fp32), the "
         "block-size rule and the wide-row limit, and the arithmetic that says the kernel is done at 90% "
         "of copy speed.")
CHECK_GPUS = ("h200", "h100-sxm")
# The harness's fused-softmax shapes (utils/gpu/measurements/fused_softmax.py; tests hold the two equal).
SHAPES = tuple({"rows": 2 ** 27 // (c * e), "cols": c, "dtype": d}            # each tensor 256 MiB
               for d, e in (("bfloat16", 1), ("float32", 2)) for c in (1024, 4096, 16384))
ELEMENT_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}


def shape_label(s: dict) -> str:
    return f"{s['rows']:,} x {s['cols']:,} {dict(bfloat16='bf16', float16='fp16', float32='fp32')[s['dtype']]}"


@memoised
def checks() -> dict:
    """The claim's check: the chain on each shape, on both GPUs, with utils.roofline as a second route."""
    rows = []
    for g in CHECK_GPUS:
        acc = catalog.accelerator(g)
        for s in SHAPES:
            cc = softmax_chain(acc, s["rows"], s["cols"], ELEMENT_BYTES[s["dtype"]], source="the harness's shapes")
            t_floor, bound = roofline.time_floor(cc["k"] * s["rows"] * s["cols"], cc["M"],
                                                 roofline.Chip(g, acc.name, cc["P"], cc["W"]))
            rows.append(dict(gpu=acc, shape=s, chain=cc, floor=t_floor, bound=bound))
    worst = max(rows, key=lambda r: as_float(r["chain"]["phi"], ""))
    return dict(rows=rows, worst=worst, worst_phi=as_float(worst["chain"]["phi"], ""),
                limit=rows[0]["chain"]["C_max"], full_file=q(REGISTERS_PER_SM * 4, "B"))


def claims() -> list[Claim]:
    ck = checks()
    copies = all(as_float(r["chain"]["M"], "B") == 2 * r["shape"]["rows"] * r["shape"]["cols"]
                 * ELEMENT_BYTES[r["shape"]["dtype"]] for r in ck["rows"])
    memory_bound = all(r["bound"] == "memory" for r in ck["rows"]) and ck["worst_phi"] < 1
    slack = 1 / CLAIM["done_fraction"] - 1
    return [
        Claim("one-pass", quote=QUOTES["one_pass"], source="spec/001, paragraph on the fused softmax",
              claimed="one read and one write of HBM",
              derived="twice the tensor's bytes, the bytes of a copy, on every shape checked",
              verdict=HOLDS if copies else WRONG,
              nearest_true="" if copies else "the kernel moves more than a copy's bytes",
              reason=f"the kernel issues one masked load and one masked store per element and keeps the max, the "
                     f"exponentials and the sum in registers: {fmt(ck['rows'][0]['chain']['M'])} for a "
                     f"{shape_label(ck['rows'][0]['shape'])} tensor, as the harness counts for a copy."),
        Claim("done", quote=QUOTES["done"], source="spec/001, paragraph on the fused softmax",
              claimed=f"done at {pct(CLAIM['done_fraction'])} of copy speed",
              derived=f"compute floors at most {pct(ck['worst_phi'])} of the memory time; done means within "
                      f"{pct(slack)} of a copy's time",
              verdict=READING if memory_bound else WRONG,
              reading="'done' as 'at its roof': the arithmetic shows that the roof is a copy of the same bytes, "
                      f"and {pct(CLAIM['done_fraction'])} of it is the finish line the source sets; whether this "
                      "kernel reaches it is a measurement",
              nearest_true="" if memory_bound else "the softmax's arithmetic, not its traffic, sets its time",
              reason=f"the kernel is memory-bound on every shape checked: its exponentials, the larger compute "
                     f"floor, take at most {pct(ck['worst_phi'])} of its memory time on the H100 and the H200, so a "
                     f"copy is its roof and {pct(CLAIM['done_fraction'])} of a copy's speed leaves {pct(slack)} "
                     "of slack."),
    ]


def check_table(ck: dict) -> list[list[str]]:
    return [[r["gpu"].short_name, shape_label(r["shape"]), fmt(r["chain"]["M"]), fmt(r["chain"]["t"].to("s"), style="eng"),
             fmt(r["chain"]["t_d"].to("s"), style="eng"), fmt(r["chain"]["t_E"].to("s"), style="eng"),
             pct(r["chain"]["phi"]), fmt(r["chain"]["B"])] for r in ck["rows"]]


# --- numerics --------------------------------------------------------------------------------------
def exp_limits() -> dict:
    """ln of the largest finite value: past it e^x overflows (bf16 has fp32's range)."""
    import numpy as np
    return {"fp32": float(np.log(np.finfo(np.float32).max)), "fp16": float(np.log(np.finfo(np.float16).max))}


def stalled_sum(n: int, mantissa_bits: int) -> int:
    """A running sum of n ones, one after another, in a float with `mantissa_bits` significant bits
    (8 for bf16, 11 for fp16, 24 for fp32): it stops growing at 2**bits, where adding one rounds away."""
    return min(n, 2 ** mantissa_bits)


# --- the block-size rule, the figure, what changes, exercises ---------------------------------------
def block_rule_rows(widths, num_warps, max_cols: int) -> list[list[str]]:
    """The block-size table for a few widths; num_warps is the kernel's own rule."""
    out = []
    for c in widths:
        b = block_size(c)
        w = num_warps(b)
        out.append([fmt(c), fmt(b), pct(1 - c / b), str(w), str(b // (32 * w)), fmt(q(b * 4, "B").to("KiB")),
                    pct(b / REGISTERS_PER_SM), "runs" if c <= max_cols else "refuses: needs a tiled kernel"])
    return out


def register_budget(num_warps, max_cols: int) -> dict:
    return {"max-threads": fmt(MAX_THREADS),
            "values-cap": fmt(max(b // (32 * num_warps(b)) for b in (2 ** k for k in range(4, 15)))),
            "regs-cap": fmt(REGISTERS_PER_SM // MAX_THREADS), "regs-at-limit": fmt(max_cols // MAX_THREADS),
            "regs-at-full": fmt(REGISTERS_PER_SM // MAX_THREADS), "tiled-ratio": fmt(TILED_PASSES / 2)}


def figure_data(p, ch: Chain) -> dict:
    import numpy as np
    cols = np.unique(np.logspace(np.log10(64), np.log10(65536), 120).astype(int))
    bw, rate = as_float(ch["W"], "B/s"), as_float(ch["P"], "FLOP/s")
    t_copy = 2 * p.n_rows * cols * p.bytes_per_element / bw * 1e6          # the chain's t = M / W, in µs
    limit = int(as_float(ch["C_max"], ""))
    l2 = p.gpu.get("l2_cache")
    c_l2 = as_float(l2, "B") / (p.n_rows * p.bytes_per_element) if l2 is not None else None
    return dict(cols=cols, t_copy=t_copy, t_done=t_copy / CLAIM["done_fraction"],
                t_exp=EXP_COST * p.n_rows * cols / rate * 1e6, t_fp32=FLOPS_PER_ELEMENT * p.n_rows * cols / rate * 1e6,
                limit=limit, past=cols >= limit, t_tiled=TILED_PASSES / 2 * t_copy,
                c_l2=c_l2 if c_l2 is not None and cols.min() < c_l2 < cols.max() else None,
                roof=fmt(ch["W"]), done=pct(CLAIM["done_fraction"]), gpu=p.gpu.short_name)


def what_changes(p, ch: Chain) -> dict:
    fp32 = softmax_chain(p.gpu, p.n_rows, p.n_cols, 4.0)
    others = []
    for g in OTHER_GPUS:
        acc = catalog.accelerator(g)
        others.append(f"{fmt((ch['M'] / acc.q('hbm_bandwidth')).to('s'), style='eng')} on the "
                      f"{acc.short_name.replace('NVIDIA ', '')} ({fmt(acc.q('hbm_bandwidth'))})")
    return {"wc-fp32-bytes": auto_bytes(fp32["M"]), "wc-fp32-time": fmt(fp32["t"].to("s"), style="eng"),
            "wc-gpus": "; ".join(others)}


def exercises(p, ch: Chain) -> dict:
    llama8 = catalog.model("llama-3-8b")
    vocab, tokens, ctx = int(llama8.q("vocab_size").m), 4096, 8192
    fused = softmax_chain("h200", tokens, vocab, 4.0)
    tiled_bytes = fused["M"] * TILED_PASSES / 2
    heads, layers = int(llama8.q("n_heads").m), int(llama8.q("n_layers").m)
    ex2 = softmax_chain("h200", heads * ctx, ctx, 2.0)
    slow = 1.2
    frac = 1 / slow
    return {
        "ex1-model": llama8.name, "ex1-vocab": fmt(vocab), "ex1-tokens": fmt(tokens), "ex1-block": fmt(block_size(vocab)),
        "ex1-bytes": auto_bytes(tiled_bytes), "ex1-time": fmt((tiled_bytes / fused["W"]).to("s"), style="eng"),
        "ex1-time-fused": fmt(fused["t"].to("s"), style="eng"),
        "ex2-model": llama8.name, "ex2-heads": fmt(heads), "ex2-layers": fmt(layers), "ex2-context": fmt(ctx),
        "ex2-rows": fmt(heads * ctx), "ex2-bytes": ex2["M"].to("GB"), "ex2-time-layer": fmt(ex2["t"].to("s"), style="eng"),
        "ex2-time": fmt((ex2["t"] * layers).to("s"), style="eng"),
        "ex3-measured": fmt((ch["t"] * slow).to("s"), style="eng"), "ex3-fraction": pct(frac),
        "ex3-verdict": "done" if frac >= CLAIM["done_fraction"] else "not done",
    }


SPEC = Spec("fused-softmax", PARAMETERS, RESULTS, compute, closed_form=True)
