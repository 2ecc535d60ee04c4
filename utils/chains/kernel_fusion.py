"""kernel-fusion: a chain of elementwise operations, unfused (a kernel each, every one reading and writing
the tensor) against fused (one read, one write), with the launch each kernel pays.

Bytes move at the copy roof (utils.measured.copy_ceiling); launches cost the parameters' assumption
until the harness has a launch-overhead record for the GPU. The page counts eager torch's bytes with
utils.gpu.byte_counter; this module holds the counts those runs must reproduce.
"""
from __future__ import annotations

import functools

from utils import catalog, measured, roofline
from utils.chain import Chain, as_float, memoised
from utils.models import param_count
from utils.params import Param, Result, Spec
from utils.units import auto_bytes, fmt, pct, q, short
from utils.verdicts import READING, WRONG, Claim

PARAMETERS = (
    Param("gpu", "h200", "the accelerator: a catalog key or a spec file", check="accelerator",
          source="catalog: H200, the GPU the book measures on"),
    Param("n_elements", 268435456.0, "elements in the tensor", check="whole",
          source="the harness's largest size (two to the 28th)"),
    Param("bytes_per_element", 2.0, "bytes per element (2 = bf16, 4 = fp32)", unit="B",
          source="bf16, the precision models run in"),
    Param("n_ops", 5, "elementwise operations in the chain", check="whole", source="the claim (five)"),
    Param("launch_overhead_us", 5.0, "time per kernel launch from Python", unit="us",
          source="this book's assumption: a few microseconds per launch (replaced by the harness's "
                 "launch-overhead record where one exists)"),
)

RESULTS = (
    Result("bytes_unfused", "GB", "Bytes the eager chain moves", of="M_u"),
    Result("bytes_fused", "GB", "Bytes the fused kernel moves", of="M_f"),
    Result("byte_ratio", "", "Unfused bytes over fused bytes", of="r"),
    Result("crossover_elements", "", "Elements at which a kernel's bytes take as long as its launch", of="N_x"),
    Result("fusion_speedup", "", "Predicted speedup of the fused kernel over the eager chain", of="S"),
)

FAST_SHARE = 0.9          # share of copy speed worth calling fast (as the fused-softmax chapter's bar)
EPILOGUE_PASSES = 4       # bias add and GELU, eager: each reads C and writes C
EPILOGUE_MODEL = "llama-3-70b"
HARNESS_SIZES = tuple(1 << k for k in (12, 16, 20, 24, 28))   # the harness's kernel-fusion sizes, bf16


def launch_costs(acc, assumed_us, assumed_source) -> tuple:
    """(eager launch, fused launch, kind, source): the harness's launch-overhead record where one exists, else
    the assumed time and its source."""
    rec = measured.latest("launch-overhead", acc.key)
    if rec is None:
        t = q(assumed_us, "us")
        return t, t, "assumption", assumed_source
    return (measured.metric_of(rec, "launch_torch").to("us"), measured.metric_of(rec, "launch_triton").to("us"),
            "measured", f"launch-overhead record {rec['_file']}")


def fusion_chain(gpu, n_elements, bytes_per_element, n_ops, launch_overhead_us, *, source="parameters cell", cite=None) -> Chain:
    """`n_ops` elementwise operations on `n_elements` on `gpu`, eager and fused: bytes, launches, time. Each input
    cites `source`, or cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    acc = gpu if hasattr(gpu, "key") else catalog.accelerator(gpu)
    roof, roof_kind, roof_source = measured.copy_ceiling(acc)
    t_eager, t_fused, l_kind, l_source = launch_costs(acc, launch_overhead_us, cite("launch_overhead_us"))
    ch = Chain(f"{int(n_ops)} elementwise operations on {short(n_elements)} elements, {acc.name}")
    ch.given("N", int(n_elements), "elements in the tensor", kind="assumption", source=cite("n_elements"))
    ch.given("e", q(bytes_per_element, "B"), "bytes per element", kind="assumption", source=cite("bytes_per_element"))
    ch.given("k", int(n_ops), "elementwise operations in the chain", kind="assumption", source=cite("n_ops"))
    ch.step("M_u", "2*k*N*e", "MB", "bytes unfused: each kernel reads its input and writes its output")
    ch.step("M_f", "2*N*e", "MB", "bytes fused: one read, one write")
    ch.step("r", "M_u/M_f", "", "byte ratio")
    ch.given("W", roof, "copy bandwidth", kind=roof_kind, source=roof_source)
    ch.given("t_Lu", t_eager, "launch of one eager kernel", kind=l_kind, source=l_source)
    ch.given("t_Lf", t_fused, "launch of the fused Triton kernel", kind=l_kind, source=l_source)
    ch.step("t_u", "k*t_Lu + M_u/W", "us", "unfused time: k launches plus the bytes")
    ch.step("t_f", "t_Lf + M_f/W", "us", "fused time: one launch plus the bytes")
    ch.step("S", "t_u/t_f", "", "speedup from fusing")
    ch.solve("N_x", "t_Lu = 2*N_x*e/W", "", "crossover: elements at which one kernel's bytes take as long as its launch")
    ch.given("f", FAST_SHARE, "share of copy speed worth calling fast", kind="assumption",
             source="this book (as the fused-softmax chapter's bar)")
    ch.solve("N_f", "f = (2*N_f*e/W)/(t_Lf + 2*N_f*e/W)", "", "elements at which the fused kernel reaches that share")
    return ch


def compute(p) -> Chain:
    return fusion_chain(p.gpu, p.n_elements, p.bytes_per_element, p.n_ops, p.launch_overhead_us,
                        cite=functools.partial(SPEC.source, p))


def reading(p, ch: Chain) -> dict:
    kind = next(r for r in ch.rows if r.name == "t_Lu").kind
    return {
        "intro-ops": fmt(p.n_ops), "p-n": short(p.n_elements), "p-bytes-unfused": auto_bytes(ch["M_u"]),
        "p-bytes-fused": auto_bytes(ch["M_f"]), "p-roof": ch["W"], "p-launch": ch["t_Lu"],
        "p-launch-kind": "this book's assumption until the harness measures launches on this GPU"
                         if kind == "assumption" else "measured by the harness on this GPU",
        "p-t-unfused": fmt(ch["t_u"].to("s"), style="eng"), "p-t-fused": fmt(ch["t_f"].to("s"), style="eng"),
        "p-launch-share": pct(ch["k"] * ch["t_Lu"] / ch["t_u"]),
        "p-regime": "launches" if p.n_elements < as_float(ch["N_x"], "") else "bytes",
        "p-crossover-bytes": auto_bytes(ch["N_x"] * ch["e"]), "p-n90": short(ch["N_f"]), "p-crossover": short(ch["N_x"]),
        "p-n90-bytes": auto_bytes(ch["N_f"] * ch["e"]), "claim-fast-share": pct(FAST_SHARE),
    }


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(n_ops=5, reads_unfused=5, writes_unfused=5, reads_fused=1, writes_fused=1, byte_ratio=5.0)
QUOTE = ("A chain of five elementwise operations reads and writes the tensor five times when once would do. "
         "The byte arithmetic for an unfused chain against a fused one, the launch overhead that matters at "
         "small sizes, the three fusion shapes, and the operations where fusion changes nothing because the "
         "matmul was at the roof.")
BINARY_OPS = 4            # of the chain's five: mul, add, mul, add (the GELU is unary)
VECTOR_ROWS = 64          # the broadcast case on the page: column vectors over a 64 x 512 activation


def operand_passes(operands: str, rows: int = VECTOR_ROWS) -> tuple[float, float]:
    """(eager passes, fused passes) over the tensor for the chain y = gelu(x a + b) c + d, by what a, b,
    c, d are: scalars (kernel arguments), full tensors, or vectors broadcast over `rows` rows."""
    k = CLAIM["n_ops"]
    extra = {"scalars": 0.0, "tensors": 1.0, "vectors": 1.0 / rows}[operands]
    return 2 * k + BINARY_OPS * extra, 2 + BINARY_OPS * extra


def claim_chain(n: int = HARNESS_SIZES[-1]) -> Chain:
    assumed = next(p for p in PARAMETERS if p.name == "launch_overhead_us")     # the claim names no launch time
    return fusion_chain("h200", n, 2.0, CLAIM["n_ops"], assumed.default, source="the claim",
                        cite=lambda name: assumed.source if name == assumed.name else "the claim")


@memoised
def checks() -> dict:
    big, small = claim_chain(), claim_chain(HARNESS_SIZES[0])
    ratios = {o: (lambda e, f: e / f)(*operand_passes(o)) for o in ("scalars", "tensors", "vectors")}
    return dict(big=big, small=small, ratios=ratios,
                small_launch=as_float(small["k"] * small["t_Lu"] / (small["M_u"] / small["W"]), ""),
                big_launch=as_float(big["k"] * big["t_Lu"] / (big["M_u"] / big["W"]), ""))


def claims() -> list[Claim]:
    ck = checks()
    cc, r = ck["big"], ck["ratios"]
    exact = as_float(cc["r"], "") == CLAIM["byte_ratio"]
    launches_matter = ck["small_launch"] > 100 and ck["big_launch"] < 0.05
    epi = epilogue_cases(catalog.accelerator("h200"))
    at_roof = epi[0]["bound"] == "compute" and epi[0]["share"] < 0.1
    ok = exact and launches_matter and at_roof and r["tensors"] < CLAIM["byte_ratio"] / 2
    return [Claim(
        "five-passes", quote=QUOTE, source="spec/001, paragraph on kernel fusion; CHAINS.md, kernel-fusion row",
        claimed=f"{fmt(CLAIM['reads_unfused'])} reads and {fmt(CLAIM['writes_unfused'])} writes where one of each "
                f"would do: about {fmt(CLAIM['byte_ratio'])} times the bytes",
        derived=f"exactly {fmt(cc['r'])} times for scalar operands ({fmt(cc['M_u'])} against {fmt(cc['M_f'])} at "
                f"{short(HARNESS_SIZES[-1])} bf16 elements); {r['tensors']:.2f} times when the operands are full tensors",
        verdict=READING if ok else WRONG,
        reading="the operands are scalars or small broadcast vectors (bias, scale), so 'the tensor' is the only "
                "tensor, and it is too large for the intermediates to stay in the cache",
        nearest_true="" if ok else f"fusing saves {fmt(cc['r'])} times the bytes only for scalar operands",
        reason=f"with scalar operands eager makes {fmt(operand_passes('scalars')[0])} passes against the fused "
               f"kernel's {fmt(operand_passes('scalars')[1])}, exactly {fmt(cc['r'])} times (broadcast vectors "
               f"{r['vectors']:.2f}); with full-tensor operands {fmt(operand_passes('tensors')[0])} against "
               f"{fmt(operand_passes('tensors')[1])}, {r['tensors']:.2f}; at the smallest size the launches take "
               f"{fmt(ck['small_launch'], digits=2)} times the bytes, and next to a prefill matmul at its roof an "
               f"unfused epilogue is {pct(epi[0]['share'])} of the time.")]


# --- the three shapes: the matmul epilogue ----------------------------------------------------------
def epilogue_cases(acc) -> list[dict]:
    """A matmul and its unfused epilogue (bias add and GELU) for Llama-3-70B's MLP at prefill and decode,
    on the bf16 roofline: what fusing the epilogue saves."""
    chip = roofline.chip(acc.key)
    m = catalog.model(EPILOGUE_MODEL)
    d_model, d_ff = int(m.q("d_model").m), int(m.q("d_ff").m)
    out = []
    for name, rows, k, n in (("prefill, MLP up-projection", 8192, d_model, d_ff),
                             ("prefill, MLP down-projection", 8192, d_ff, d_model),
                             ("decode, MLP up-projection", 8, d_model, d_ff)):
        flops, mm_bytes = q(2 * rows * k * n, "FLOP"), q(2 * (rows * k + k * n + rows * n), "B")
        t_mm, bound = roofline.time_floor(flops, mm_bytes, chip)
        t_epi = (q(EPILOGUE_PASSES * 2 * rows * n, "B") / chip.bandwidth).to("s")
        out.append(dict(name=name, shape=(rows, k, n), intensity=(flops / mm_bytes).to("FLOP/B"), bound=bound,
                        t_mm=t_mm.to("s"), t_epi=t_epi, share=as_float(t_epi / (t_mm + t_epi), ""),
                        closed_form=EPILOGUE_PASSES * 2 * as_float(chip.ridge, "FLOP/B") / (2 * k)))
    return out


def epilogue_table(cases) -> list[list[str]]:
    return [[c["name"], " x ".join(f"{v:,}" for v in c["shape"]), fmt(c["intensity"]), c["bound"],
             fmt(c["t_mm"], style="eng"), fmt(c["t_epi"], style="eng"), pct(c["share"])] for c in cases]


def epilogue_text(acc, cases) -> dict:
    up, down, decode = cases
    return {"epi-prefill-intensity": up["intensity"], "epi-ridge": roofline.chip(acc.key).ridge,
            "epi-prefill-time": fmt(up["t_epi"], style="eng"), "epi-prefill-share": pct(up["share"]),
            "epi-decode-share": pct(decode["share"]), "epi-down-share": pct(down["share"]),
            "intro-epi-share": pct(up["share"])}


# --- the figure, what changes, exercises -----------------------------------------------------------
def figure_data(p, ch: Chain) -> dict:
    import numpy as np
    ns = np.logspace(2, 9, 200)
    w, t_lu, t_lf = as_float(ch["W"], "B/s"), as_float(ch["t_Lu"], "s"), as_float(ch["t_Lf"], "s")
    e, k = p.bytes_per_element, p.n_ops
    l2 = p.gpu.get("l2_cache")
    return dict(ns=ns, k=k, t_unfused=k * t_lu + 2 * k * ns * e / w, t_fused=t_lf + 2 * ns * e / w,
                t_floor=2 * ns * e / w, t_fused_2x=2 * t_lf + 2 * ns * e / w, crossover=as_float(ch["N_x"], ""),
                l2_elements=as_float(l2, "B") / e if l2 is not None else None, gpu=p.gpu.short_name)


def what_changes(p, ch: Chain) -> dict:
    lo = fusion_chain(p.gpu, p.n_elements, p.bytes_per_element, p.n_ops, 1.0)
    hi = fusion_chain(p.gpu, p.n_elements, p.bytes_per_element, p.n_ops, 20.0)
    fp32 = fusion_chain(p.gpu, p.n_elements, 4.0, p.n_ops, p.launch_overhead_us)
    return {"wc-launch-lo": lo["t_Lu"], "wc-launch-hi": hi["t_Lu"], "wc-crossover-lo": short(lo["N_x"]),
            "wc-crossover-hi": short(hi["N_x"]), "wc-crossover-fp32": short(fp32["N_x"])}


def exercises(p, ch: Chain) -> dict:
    big = HARNESS_SIZES[-1]
    ex1_ops = 8
    ex1 = fusion_chain("h200", big, 2.0, ex1_ops, p.launch_overhead_us)
    ex2 = fusion_chain("h200", big, 2.0, CLAIM["n_ops"], p.launch_overhead_us)
    m = catalog.model(EPILOGUE_MODEL)
    batch, gpus, kernels_per_layer = 8, 8, 10          # kernels per layer: this exercise's assumption
    layers, width = int(m.q("n_layers").m), int(m.q("d_model").m)
    weights = q(param_count(m)["total"].m * 2, "B")
    bw = catalog.accelerator("h200").q("hbm_bandwidth")
    launches = layers * kernels_per_layer
    t_launch = (launches * q(p.launch_overhead_us, "us")).to("s")
    t_bytes = (launches * q(2 * batch * width * 2, "B") / bw).to("s")
    t_weights = (weights / gpus / bw).to("s")
    return {
        "ex1-ops": fmt(ex1_ops), "ex1-ratio": f"{as_float(ex1['r'], ''):g}x", "ex1-bytes-u": auto_bytes(ex1["M_u"]),
        "ex1-bytes-f": auto_bytes(ex1["M_f"]), "ex1-time": fmt((ex1["M_f"] / ex1["W"]).to("s"), style="eng"),
        "ex2-n": short(ex2["N_f"]), "ex2-bytes": auto_bytes(ex2["N_f"] * ex2["e"]),
        "ex3-model": m.name, "ex3-batch": fmt(batch), "ex3-gpus": fmt(gpus), "ex3-kernels": fmt(kernels_per_layer),
        "ex3-width": fmt(width), "ex3-launches": fmt(launches), "ex3-launch-time": fmt(t_launch, style="eng"),
        "ex3-byte-time": fmt(t_bytes, style="eng"), "ex3-weight-time": fmt(t_weights, style="eng"),
        "ex3-ratio": fmt(as_float(t_launch / t_weights, ""), digits=2),
    }


def measured_predictions(gpu, sizes, launch_overhead_us) -> list[dict]:
    return [dict(size=s, chain=fusion_chain(gpu, s["n"], 2.0, CLAIM["n_ops"], launch_overhead_us,
                                            source="the harness's sizes")) for s in sizes]


SPEC = Spec("kernel-fusion", PARAMETERS, RESULTS, compute, closed_form=True)
