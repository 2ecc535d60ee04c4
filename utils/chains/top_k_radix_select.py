"""top-k-radix-select: a row of logits is small, so passes (not bytes) set the cost of a top-k; a sort
does V log2 V compares where a radix select makes a fixed number of histogram passes.

The row is V logits of b bytes (V from the model: its vocabulary); its read at HBM bandwidth is a small
share of one kernel launch, so each dependent pass costs about a launch. The radix select makes 8b / d
passes of d-bit digits whatever k is; the numpy reference (utils.gpu.kernels.topk.radix_topk) matches a
stable sort element for element.
"""
from __future__ import annotations

import functools
import math

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.gpu.kernels.topk import BUCKETS, DIGIT_BITS, keys, radix_thresholds, radix_topk, reference_topk
from utils.params import Param, ParameterError, Result, Spec
from utils.roofline import chip, time_floor
from utils.units import fmt, pct, q
from utils.verdicts import HOLDS, READING, WRONG, Claim

LAUNCH_SOURCE = ("this book's assumption: a few microseconds per kernel launch from Python (as on the "
                 "kernel-fusion page); the harness's launch-overhead record measures it")
K_REG = 1024
K_REG_SOURCE = ("Johnson, Douze, Jegou, 'Billion-scale similarity search with GPUs' (arXiv:1702.08734), section "
                "on WarpSelect: per-thread register queues, k up to 1024; this book's assumption for the register cap")

PARAMETERS = (
    Param("model", "llama-3-70b", "the model: a catalog key or a config.json path; its vocabulary is the row length",
          check="model", source="catalog: Llama-3-70B (a 128k vocabulary, the claim's half megabyte)"),
    Param("gpu", "h200", "the GPU: a catalog accelerator key", check="accelerator",
          source="catalog: NVIDIA H200, the book's reference GPU"),
    Param("k", 50, "how many of the largest logits to keep per row", check="whole",
          source="a common top-k for sampling; this book's assumption"),
    Param("bytes_per_logit", 4, "bytes per logit in memory (fp32 or bf16): sets the key's width and so the passes",
          unit="B", check="choice", choices=(2, 4), source="fp32, the precision logits are sampled in"),
    Param("batch_rows", 64, "rows selected in one launch (sequences in a decode batch)", check="whole",
          source="this book's assumption: a decode batch; the harness's batch"),
    Param("launch_us", 5.0, "time of one kernel launch", unit="µs", source=LAUNCH_SOURCE),
)

RESULTS = (
    Result("row_bytes", "B", "Bytes in one row of logits", of="S"),
    Result("read_time", "ns", "Time to read one row at HBM bandwidth", of="t_r"),
    Result("sort_compares", "", "Compares of a comparison sort of one row (V log2 V)", of="C_s"),
    Result("select_passes", "", "Passes of the radix select over the row", of="P"),
    Result("work_ratio", "", "The sort's compares over the select's element visits", of="w"),
)


def vocab(model) -> int:
    return int(model.q("vocab_size").m)


def validate(p):
    if p.k > vocab(p.model):
        raise ParameterError(f"k must be at most the vocabulary of {p.model.name} ({vocab(p.model):,}), got {p.k!r}")


def topk_chain(model, gpu, k, bytes_per_logit, batch_rows, launch_us=5.0, *, source="parameters cell", cite=None,
               launch_source=LAUNCH_SOURCE) -> Chain:
    """Top-k of one row of `model`'s logits on `gpu`: the row's read against a launch, a sort's work against a
    radix select's. Each input cites `source`, or cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    mod = catalog.model(model)
    acc = catalog.accelerator(gpu)
    v = mod["vocab_size"]
    ch = Chain(f"Top-{int(k)} of {mod.name}'s logits on {acc.name}")
    ch.given("V", int(v.q.m), "logits per row: the vocabulary", kind=v.kind, source=v.cite)
    ch.given("b", q(bytes_per_logit, "B"), "bytes per logit", kind="assumption", source=cite("bytes_per_logit"))
    ch.step("S", "V*b", "MB", "bytes in one row")
    ch.given("W", acc["hbm_bandwidth"], "HBM bandwidth")
    ch.step("t_r", "S/W", "us", "time to read one row at HBM bandwidth")
    ch.given("t_L", q(launch_us, "us"), "one kernel launch", kind="assumption",
             source=launch_source)
    ch.step("rho", "t_r/t_L", "", "one row's read over one launch")
    ch.given("R", int(batch_rows), "rows per launch", kind="assumption", source=cite("batch_rows"))
    ch.step("t_B", "R*S/W", "us", "time to read the batch at HBM bandwidth")
    ch.solve("R_x", "R_x*S/W = t_L", "", "rows at which a pass's read takes as long as a launch")
    if acc.get("l2_cache") is not None:
        ch.given("L2", acc["l2_cache"], "L2 cache")
        ch.step("f_L2", "R*S/L2", "", "the batch over the L2 cache (below one: passes after the first hit L2)")
    ch.step("C_s", "V*log(V)/log(2)", "", "compares of a comparison sort of one row, V log2 V")
    ch.given("d", DIGIT_BITS, "bits per radix digit", kind="assumption",
             source="this book's choice: 256 buckets, one histogram per pass")
    ch.given("n_b", 8 * int(bytes_per_logit), "bits per key: the logit's width", kind="derived",
             source="8 bits per byte of the logit")
    ch.step("P", "n_b/d", "", "radix passes: key bits over digit bits")
    ch.step("C_r", "P*V", "", "element visits of the radix select (each pass scans the row)")
    ch.step("w", "C_s/C_r", "", "the sort's work over the select's")
    return ch


def compute(p) -> Chain:
    return topk_chain(p.model, p.gpu, p.k, p.bytes_per_logit, p.batch_rows, p.launch_us,
                      launch_source=SPEC.source(p, "launch_us"), cite=functools.partial(SPEC.source, p))


def chain_numbers(p, ch) -> dict:
    """The chain section's prose numbers for the parameters."""
    if "f_L2" in ch._values:
        fits = as_float(ch["f_L2"], "") < 1
        l2 = (f"the batch is {pct(ch['f_L2'])} of the {fmt(ch['L2'])} L2 cache, so "
              + ("every pass after the first can read it from L2" if fits
                 else "it does not fit in L2 and every pass re-reads HBM unless the kernel compacts the survivors"))
    else:
        l2 = "the catalog has no L2 figure for this GPU, so whether later passes hit the cache is open"
    V = vocab(p.model)
    return {
        "intro-model": p.model.name, "intro-gpu": p.gpu.name, "intro-k": fmt(p.k),
        "intro-read-share": pct(ch["rho"]), "buckets": fmt(BUCKETS), "ch-launch": fmt(ch["t_L"].to("us")),
        "ch-launch-kind": "this book's assumption" if SPEC.source(p, "launch_us") == LAUNCH_SOURCE else "the parameters cell",
        "ch-batch-time": fmt(ch["t_B"].to("us")), "ch-rows": fmt(p.batch_rows), "ch-rx": fmt(ch["R_x"]),
        "ch-batch-bytes": fmt((ch["R"] * ch["S"]).to("MB")), "ch-l2": l2, "ch-keybits": fmt(ch["n_b"]),
        "k-reg": fmt(K_REG), "k-half": fmt(V // 2), "shape-now": shape_for(p.k, ch),
    }


# --- the order, and the reference a radix select must match -------------------------------------------
def probe():
    """The special float32 values: infinities, the extremes, the denormals and the two zeros."""
    import numpy as np
    return np.array([-np.inf, -3.4e38, -1.5, -1e-45, -0.0, 0.0, 1e-45, 1.5, 3.4e38, np.inf], np.float32)


def key_table() -> list[tuple]:
    """(float, bits, key, top byte) for the special values; the keys are in the floats' order."""
    import numpy as np
    pk = keys(probe())
    rest = np.delete(pk, 4)
    assert pk[4] == pk[5] and all(int(a) < int(b) for a, b in zip(rest[:-1], rest[1:]))
    return [(f"{v:.4g}", f"{int(b):08x}", f"{int(kk):08x}", str(int(kk) >> 24))
            for v, b, kk in zip(probe().tolist(), probe().view(np.uint32), pk)]


FUZZ_KINDS = ("Gaussian", "few integers", "special values", "fp16-rounded Gaussian")


def fuzz_cases(seed=2026, per_kind=40):
    """Seeded rows built to break a select: (kind, rows, k), random length and k."""
    import numpy as np
    rng = np.random.default_rng(seed)
    for kind in FUZZ_KINDS:
        for _ in range(per_kind):
            n = int(rng.integers(1, 4000))
            k = int(rng.integers(1, n + 1))
            rows = int(rng.integers(1, 4))
            if kind == "Gaussian":
                x = (4 * rng.standard_normal((rows, n))).astype(np.float32)
            elif kind == "few integers":
                x = rng.integers(-3, 4, (rows, n)).astype(np.float32)
            elif kind == "special values":
                x = rng.choice(probe(), (rows, n))
            else:
                x = (4 * rng.standard_normal((rows, n))).astype(np.float16).astype(np.float32)
            yield kind, x, k


def fuzz_matches(seed=2026) -> dict:
    """{kind: rows} of the fuzzed rows on which the numpy radix select returned the stable sort's indices
    and values exactly; raises AssertionError on the first row where it does not."""
    import numpy as np
    seen = dict.fromkeys(FUZZ_KINDS, 0)
    for kind, x, k in fuzz_cases(seed):
        (v1, i1), (v0, i0) = radix_topk(x, k), reference_topk(x, k)
        assert np.array_equal(i1, i0) and np.array_equal(v1, v0), (kind, x.shape, k)
        seen[kind] += x.shape[0]
    return seen


def logit_rows(n_rows, vocab_size, seed=7):
    """fp16-rounded Gaussian logits (ties in the top k, as real logits have), seeded."""
    import numpy as np
    g = np.random.default_rng(seed)
    return (4 * g.standard_normal((n_rows, vocab_size))).astype(np.float16).astype(np.float32)


def trace(p, n_rows=8) -> dict:
    """The four passes on rows as long as the vocabulary: elements histogrammed per pass, ties resolved."""
    import numpy as np
    x = logit_rows(n_rows, vocab(p.model))
    _, _, visited = radix_thresholds(keys(x), p.k)
    v_ref, i_ref = reference_topk(x, p.k)
    v_rad, i_rad = radix_topk(x, p.k)
    ties = int(sum(len(r) - len(np.unique(r)) for r in v_ref))
    return dict(visited=visited, match=bool(np.array_equal(i_rad, i_ref) and np.array_equal(v_rad, v_ref)),
                glue={"trace-rows": fmt(n_rows), "trace-ties": fmt(ties), "trace-after-one": pct(visited[1] / visited[0])})


# --- two shapes: small k and large k ---------------------------------------------------------------
def heap_work(vocab_size, k):
    """A register heap: one compare per element plus the expected insertions k ln(V/k), each about log2 k. A
    count gives a float (no numpy: triton-vs-cuda's chain), an array of counts an array (the curves)."""
    if isinstance(k, (int, float)):
        return vocab_size + k * math.log(max(vocab_size / k, 1.0)) * max(math.log2(k), 1.0)
    import numpy as np
    k = np.asarray(k, dtype=float)
    return vocab_size + k * np.log(np.maximum(vocab_size / k, 1.0)) * np.maximum(np.log2(k), 1.0)


def shape_for(k, ch) -> str:
    return "register heap, one pass" if k <= K_REG else f"radix select, {int(as_float(ch['P'], ''))} passes"


def shapes_table(p, ch) -> list[tuple]:
    V, P = vocab(p.model), int(as_float(ch["P"], ""))
    rows = []
    for k in sorted({1, 50, 1024, 16384, V // 2, p.k}):
        heap = fmt(float(heap_work(V, k))) if k <= K_REG else "does not fit registers"
        rows.append((f"{k:,}", shape_for(k, ch), str(1 if k <= K_REG else P), heap, fmt(P * V),
                     fmt(as_float(ch["C_s"], ""))))
    return rows


# --- the claims -----------------------------------------------------------------------------------
CLAIM = dict(row_bytes=0.5e6, model="llama-3-70b", bytes_per_logit=4, gpu="h200", k=50, passes=4)
QUOTES = dict(
    passes="A row of logits is half a megabyte, so the kernel is not bandwidth-bound and the cost is in how "
           "many passes you make over it.",
    select="Why a full sort does far more work than the question asks, the two shapes that fit small and "
           "large k, and the four-pass radix select with a reference that matches a sort exactly.")
READING_MODELS = (("llama-3-70b", 4), ("deepseek-v3", 4), ("kimi-k2", 4), ("llama-3-70b", 2), ("kimi-k2", 2))


def claim_chain(batch_rows=1) -> Chain:
    c = CLAIM
    return topk_chain(c["model"], c["gpu"], c["k"], c["bytes_per_logit"], batch_rows, source="the claim")


def claims() -> list[Claim]:
    import numpy as np
    cc, cb = claim_chain(), claim_chain(64)
    S = as_float(cc["S"], "B")
    half = abs(S / CLAIM["row_bytes"] - 1) < 0.1 and abs(S / 2**19 - 1) < 0.1    # half a MB, either unit
    small = as_float(cc["rho"], "") < 0.05
    kimi = topk_chain("kimi-k2", CLAIM["gpu"], CLAIM["k"], 4, 1)
    x = logit_rows(4, int(as_float(cc["V"], "")), seed=11)
    _, _, vis = radix_thresholds(keys(x), CLAIM["k"])
    (vr, ir), (v0, i0) = radix_topk(x, CLAIM["k"]), reference_topk(x, CLAIM["k"])
    exact = bool(np.array_equal(ir, i0) and np.array_equal(vr, v0)) and sum(fuzz_matches().values()) > 0
    four = as_float(cc["P"], "") == CLAIM["passes"] == len(vis)
    out_ratio = as_float(cc["V"], "") / CLAIM["k"]
    llama = catalog.model(CLAIM["model"]).name
    return [
        Claim("passes", quote=QUOTES["passes"], source="spec/001, paragraph on top-k",
              claimed="a row of logits is half a megabyte; not bandwidth-bound; passes set the cost",
              derived=f"{fmt(cc['S'].to('MB'))} ({fmt(cc['S'].to('MiB'))}) per fp32 row of {llama}'s "
                      f"{fmt(cc['V'])} vocabulary, read in {fmt(cc['t_r'].to('ns'))}, {pct(cc['rho'])} of a launch",
              verdict=READING if half and small else WRONG,
              reading=f"'A row of logits is half a megabyte' read as one row, of a vocabulary "
                      f"of about {fmt(cc['V'])} (Llama-3, DeepSeek-V3) in fp32, the "
                      f"precision logits are sampled in",
              nearest_true="" if half and small else "see the check",
              reason=f"A row of {llama}'s vocabulary in fp32 is {fmt(cc['S'].to('MB'))} "
                     f"({fmt(cc['S'].to('MiB'))}) and reads in {pct(cc['rho'])} of a launch, so passes set the "
                     f"time; {catalog.model('kimi-k2').short_name}'s larger vocabulary makes {fmt(kimi['S'].to('MB'))}, "
                     f"bf16 halves every row, and a batch of {fmt(cb['R_x'])} rows or more makes one pass's read "
                     f"as long as a launch, though it still fits the L2 cache."),
        Claim("select", quote=QUOTES["select"], source="spec/001, paragraph on top-k",
              claimed="a sort does far more work; four-pass radix select matches a sort exactly",
              derived=f"V log2 V = {fmt(cc['C_s'])} compares against {fmt(cc['P'])} scans of {fmt(cc['V'])} "
                      f"({fmt(cc['w'])}x); the sort writes {fmt(out_ratio)}x the output; exact match on every row tested",
              verdict=HOLDS if exact and four and as_float(cc["w"], "") > 1 else WRONG,
              nearest_true="" if exact and four else "see the check",
              reason=f"The sort makes {fmt(cc['C_s'])} compares and writes all {fmt(cc['V'])} logits; the select's "
                     f"{fmt(cc['P'])} histograms are fixed by the key's {fmt(cc['n_b'])} bits, {fmt(cc['w'])} times "
                     f"less work, and its output is {fmt(CLAIM['k'])} entries; the reference returns the stable "
                     f"sort's indices and values exactly, ties, signed zeros and infinities included."),
    ]


def sort_compares_counted(n=16384, seed=3) -> int:
    """A second route to V log2 V: the compares of a real comparison sort (Python's) on n random values."""
    import numpy as np
    count = [0]

    def cmp(a, b):
        count[0] += 1
        return (a > b) - (a < b)
    sorted(np.random.default_rng(seed).standard_normal(n).tolist(), key=functools.cmp_to_key(cmp))
    return count[0]


@memoised
def checks() -> dict:
    cc, cb = claim_chain(), claim_chain(64)
    t_floor, bound = time_floor(q(0, "FLOP"), cc["S"], chip(CLAIM["gpu"]))    # second route: the roofline
    n = 16384
    counted = sort_compares_counted(n)
    readings = [(catalog.model(m).name, b, topk_chain(m, CLAIM["gpu"], CLAIM["k"], b, 1, source="the check"))
                for m, b in READING_MODELS]
    return {
        "roofline_agrees": bound == "memory" and abs(as_float(t_floor / cc["t_r"], "") - 1) < 1e-12,
        "counted_ratio": counted / (n * math.log2(n)), "readings": readings,
        "glue": {
            "chk-model": catalog.model(CLAIM["model"]).name, "chk-k": fmt(CLAIM["k"]), "chk-mb": fmt(cc["S"].to("MB")),
            "chk-mib": fmt(cc["S"].to("MiB")), "chk-share": pct(cc["rho"]), "chk-counted": fmt(counted),
            "chk-count-n": fmt(n), "chk-nlogn": fmt(n * math.log2(n)), "chk-ratio": fmt(cc["w"]),
            "chk-out-ratio": fmt(as_float(cc["V"], "") / CLAIM["k"]), "chk-batch": fmt(64),
            "chk-batch-bytes": fmt((cb["R"] * cb["S"]).to("MB")), "chk-batch-time": fmt(cb["t_B"].to("us")),
            "chk-rx": fmt(cb["R_x"]), "chk-batch-l2": pct(cb["f_L2"]),
        },
    }


def reading_rows(readings) -> list[tuple]:
    return [(f"{name}, {'fp32' if b == 4 else 'bf16'}", fmt(c["V"]), fmt(c["S"].to("MB")), fmt(c["t_r"].to("ns")),
             pct(c["rho"]), fmt(c["P"])) for name, b, c in readings]


# --- figure, what changes, exercises ------------------------------------------------------------
def work_curves(ch) -> dict:
    """Work per row against k: the sort, the select (full scans and compacted), the heap up to its cap."""
    import numpy as np
    V, P = int(as_float(ch["V"], "")), int(as_float(ch["P"], ""))
    kgrid = np.unique(np.logspace(0, np.log10(V), 200).astype(int))
    fit = kgrid <= K_REG
    return dict(k=kgrid, sort=np.full(kgrid.shape, as_float(ch["C_s"], "")), select=np.full(kgrid.shape, float(P * V)),
                compacted=np.full(kgrid.shape, float(V)), heap_k=kgrid[fit], heap=heap_work(V, kgrid[fit]), V=V, P=P)


def pass_curves(ch) -> dict:
    """One pass over a batch against one launch, in µs, against rows per launch."""
    import numpy as np
    rows = np.unique(np.logspace(0, 3, 100).astype(int))
    S, W = as_float(ch["S"], "B"), as_float(ch["W"], "B/s")
    out = dict(rows=rows, t_pass=rows * S / W * 1e6, t_launch=as_float(ch["t_L"], "us"), R_x=as_float(ch["R_x"], ""))
    if "L2" in ch._values:
        out["rows_l2"] = as_float(ch["L2"], "B") / S
    return out


def what_changes(p, ch: Chain) -> dict:
    c_bf16 = topk_chain(p.model, p.gpu, p.k, 2, p.batch_rows, p.launch_us, launch_source=SPEC.source(p, "launch_us"))
    c_kimi = topk_chain("kimi-k2", p.gpu, p.k, p.bytes_per_logit, p.batch_rows, p.launch_us,
                        launch_source=SPEC.source(p, "launch_us"))
    return {"wc-bf16-row": fmt(c_bf16["S"].to("MB")), "wc-bf16-passes": fmt(c_bf16["P"]),
            "wc-bf16-ratio": fmt(c_bf16["w"]), "wc-kimi": catalog.model("kimi-k2").name,
            "wc-kimi-row": fmt(c_kimi["S"].to("MB")), "wc-kimi-rx": fmt(c_kimi["R_x"])}


def exercises(p, ch) -> dict:
    e1 = topk_chain("kimi-k2", "b200", 50, 2, 1, source="exercise 1")
    e2 = topk_chain("llama-3-70b", "h100-sxm", 50, 4, 1, source="exercise 2")
    V, P = vocab(p.model), int(as_float(ch["P"], ""))
    return {
        "ex1-model": catalog.model("kimi-k2").name, "ex1-gpu": catalog.accelerator("b200").name,
        "ex1-row": fmt(e1["S"].to("MB")), "ex1-time": fmt(e1["t_r"].to("ns")), "ex1-share": pct(e1["rho"]),
        "ex1-passes": fmt(e1["P"]), "ex2-gpu": catalog.accelerator("h100-sxm").name,
        "ex2-model": catalog.model("llama-3-70b").name, "ex2-rx": fmt(e2["R_x"]),
        "ex2-bytes": fmt((e2["R_x"] * e2["S"]).to("MB")), "ex3-shape": shape_for(V // 2, ch), "ex3-visits": fmt(P * V),
    }


SPEC = Spec("top-k-radix-select", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
