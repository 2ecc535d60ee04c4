"""triton-vs-cuda: what Triton's block model does not give you, and what each gap costs, in the book's
own numbers.

Each gap's price comes from the chapter that measures it, by calling that chapter's chain: warp-level
primitives from top-k-radix-select (the one-pass register heap, which needs warp shuffles, against the
four-pass radix select), shared-memory layout from bank-conflicts (the unpadded tile against the padded
one), warp specialisation from flash-attention-versions (the serial tile against the overlapped one),
launch control from torch-compile (a step of small kernels launched one by one against CUDA graphs). The
claim cannot be checked: it names no inventory and "most" no unit, and the book's own kernels
(utils.gpu.triton_gaps.inventory, counted by the gaps each needs) are shown as the book's figure, not as a
stack's.
"""
from __future__ import annotations

import re

import utils.chains.torch_compile as tc
from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.chains import bank_conflicts as bc
from utils.chains import flash_attention_versions as fa
from utils.chains import top_k_radix_select as tk
from utils.gpu.triton_gaps import GAP, GAPS, decide, inventory, shuffle_reduction, tally, tool_for, tree_reduction
from utils.params import Param, ParameterError, Result, Spec
from utils.units import fmt, pct, q, short
from utils.verdicts import UNCHECKABLE, Claim

PIN = "the book's pinned Triton (pyproject.toml: triton==3.9.0)"

PARAMETERS = (
    Param("gpu", "h200", "the GPU: a catalog accelerator key (needs sm_count and bf16_dense)", check="accelerator",
          source="catalog: NVIDIA H200, the book's reference GPU (the H100's GH100 compute)"),
    Param("model", "llama-3-70b", "the model whose vocabulary is the top-k row", check="model",
          source="catalog: Llama-3-70B, as on the top-k page"),
    Param("k", 50, "top-k: logits kept per row", check="whole", source="the top-k page's default"),
    Param("launch_us", 5.0, "time of one kernel launch from Python", unit="µs", source=tk.LAUNCH_SOURCE),
    Param("triton_version", "3.9", "Triton version (major.minor) the decision table is read at", check="text",
          source=PIN),
)

RESULTS = (
    Result("warp_given_up", "", "Element visits of the radix select over the register heap's (warp primitives)",
           of="w_1"),
    Result("smem_given_up", "", "Transpose time, unpadded tile over padded (bank control)", of="s_2"),
    Result("sync_given_up", "", "Attention tile time, serial over overlapped (warp specialisation)", of="g_3"),
    Result("launch_given_up", "", "Step time, kernels launched one by one over CUDA graphs (launch control)",
           of="S_4"),
)

def others() -> dict:
    """Figures published by others (labelled so on the page), from the catalog: Triton's attention tutorial
    against FlashAttention-3 on an H100, and FlexAttention without and with warp specialisation."""
    tut, fa3, flex = (catalog.entry("software", k) for k in ("triton-attention-tutorial", "flash-attention-3",
                                                             "flex-attention"))
    return dict(tutorial_tflops=tut.q("h100_tflops"), fa3_tflops=fa3.q("h100_tflops"), shape=tut.q("h100_shape"),
                cite=tut["h100_tflops"].source.title.split(": ")[0], flex_ms=flex.q("ms"),
                flex_ws_ms=flex.q("ms_warp_specialised"), flex_shape=flex.q("shape"),
                flex_cite=flex["ms"].source.title.split(": ")[0])


BEFORE, NOW = (3, 3), (3, 9)     # the last Triton without warp specialisation; the book's pin


def version_text(v: tuple) -> str:
    return f"{v[0]}.{v[1]}"


def version_tuple(text: str) -> tuple:
    m = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\.\d+)?\s*", str(text))
    if not m:
        raise ParameterError(f"triton_version must be major.minor (such as 3.9), got {text!r}")
    return int(m.group(1)), int(m.group(2))


def validate(p):
    version_tuple(p.triton_version)
    for field in ("sm_count", "bf16_dense"):
        if field not in p.gpu:
            raise ParameterError(f"gpu: the catalog entry {p.gpu.key!r} has no {field}")
    if p.k > int(p.model.q("vocab_size").m):
        raise ParameterError(f"k must be at most the vocabulary of {p.model.name}, got {p.k!r}")


def parts(gpu, model, k, launch_us) -> dict:
    """Each gap's chain, from the chapter that owns it, at that chapter's own defaults except the GPU."""
    b, f = bc.SPEC.defaults(), fa.SPEC.defaults()
    return dict(
        topk=tk.topk_chain(model, gpu, k, 4, tk.SPEC.defaults()["batch_rows"], launch_us),
        bank=bc.bank_chain(gpu, 4, 32, 33, b["matrix_n"], b["sm_clock_ghz"]),
        flash=fa.flash_chain(gpu, f["head_dim"], f["block_q"], f["block_k"], f["mufu_per_sm_per_clock"],
                             f["sm_clock_ghz"], f["batch_heads"], f["seq_len"]),
        step=tc.compile_chain(**{**tc.CLAIM_INPUTS, "gpu": gpu, "launch_overhead_us": launch_us}),
    )


def gaps_chain(gpu, model, k, launch_us) -> Chain:
    acc = catalog.accelerator(gpu)
    mod = catalog.model(model)
    pt = parts(acc, mod, k, launch_us)
    t, b, f, s = pt["topk"], pt["bank"], pt["flash"], pt["step"]
    ch = Chain(f"What each of Triton's four gaps costs on {acc.name}, in the book's own kernels")
    ch.given("V", t["V"], f"logits per row: {mod.name}'s vocabulary", kind="spec", source="catalog")
    ch.given("P", t["P"], "passes of the radix select (key bits over digit bits)", kind="derived",
             source="the top-k-radix-select chain")
    ch.given("H", float(tk.heap_work(int(as_float(t["V"], "")), int(k))),
             f"element visits of a one-pass register heap at k = {int(k)} (warp shuffles merge the queues)",
             kind="derived", source="top-k-radix-select: heap_work, V + k ln(V/k) log2 k")
    ch.step("w_1", "P*V/H", "", "warp primitives: the radix select's visits over the register heap's")
    ch.given("d_u", b["d_u"], "conflict degree of the unpadded column read", kind="derived",
             source="the bank-conflicts chain (the bank analyser)")
    ch.given("s_2", b["s"], "transpose time, unpadded tile over padded", kind="derived",
             source="the bank-conflicts chain")
    ch.given("T_s", f["T_s"], "attention tile, serial (products, then softmax)", kind="derived",
             source="the flash-attention-versions chain")
    ch.given("T_o", f["T_o"], "attention tile, overlapped (FlashAttention-3's warpgroups)", kind="derived",
             source="the flash-attention-versions chain")
    ch.step("g_3", "T_s/T_o", "", "warp specialisation: serial time over overlapped")
    ch.given("t_I", s["t_I"], "a step of fused Triton kernels, each launched from Python", kind="derived",
             source="the torch-compile chain (its claim's step)")
    ch.given("t_G", s["t_G"], "the same step replayed as CUDA graphs (forward, backward)", kind="derived",
             source="the torch-compile chain")
    ch.step("S_4", "t_I/t_G", "", "launch control: launched one by one over graphs (forward, backward)")
    return ch


def compute(p) -> Chain:
    return gaps_chain(p.gpu, p.model, p.k, p.launch_us)


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("Triton hands you a block of data and writes the thread-level code for you, which covers most of "
         "what a serving or training stack actually needs.")
CLAIM = dict(most=0.5)       # "most", if it counted kernels: more than half (the book's figure only)


def written_in_triton(version: tuple) -> int:
    """How many of the book's kernels Triton writes at `version` (the rest need a gap it has not filled)."""
    return sum(1 for k in inventory() if decide(k.needs, tuple(version)) == "Triton")


@memoised
def checks() -> dict:
    ks = inventory()
    t = tally(ks)
    share = t["none"] / t["total"]
    by_tool = {v: written_in_triton(v) for v in (BEFORE, NOW)}
    return dict(kernels=ks, tally=t, share=share, by_tool=by_tool, version=NOW)


def claims() -> list[Claim]:
    ck = checks()
    t, share = ck["tally"], ck["share"]
    sync = [k.name for k in ck["kernels"] if "sync" in k.needs]
    return [Claim(
        "most", quote=QUOTE, source="spec/001, the paragraph on Triton against CUDA; CHAINS.md, triton-vs-cuda row",
        claimed="Triton's block model covers most of what a stack needs (no inventory, no unit for 'most')",
        derived=f"the book's figure: {t['none']} of its own {t['total']} kernels ({pct(share)}) need none of the "
                f"four gaps; by time, attention and matmul need warp specialisation on Hopper",
        verdict=UNCHECKABLE,
        reason=f"The source names no inventory of what a stack needs and gives 'most' no unit, and the only "
               f"count at hand is the book's own kernels, which include a launch-timing kernel, microbenchmarks "
               f"and CUDA duplicates: a check would compare the book with itself. The book's figure: "
               f"{fmt(t['none'])} of its {fmt(t['total'])} kernels ({pct(share)}) need nothing but the block "
               f"model, while {fmt(t['sync'])} ({', '.join(sync)}: attention and matmul, most of a step's "
               f"FLOPs) need warp specialisation on Hopper, so by time the count reverses.")]


def claim_numbers() -> dict:
    ck = checks()
    t = ck["tally"]
    o = others()
    fa3, tut = o["fa3_tflops"], o["tutorial_tflops"]
    return {
        "c-total": fmt(t["total"]), "c-none": fmt(t["none"]), "c-share": pct(ck["share"]), "c-sync": fmt(t["sync"]),
        "c-smem": fmt(t["smem"]), "c-launch": fmt(t["launch"]), "c-warp": fmt(t["warp"]),
        "c-most": pct(CLAIM["most"]),
        # gaps a later Triton (or Gluon, inside it) took from CUDA between the two versions
        "c-closed": {1: "one", 2: "two", 3: "three", 4: "all four"}.get(
            sum(tool_for(g, NOW) != tool_for(g, BEFORE) for g in GAP), "none"),
        "c-v33": fmt(ck["by_tool"][BEFORE]), "c-v39": fmt(ck["by_tool"][NOW]),
        "o-tut": fmt(tut), "o-fa3": fmt(fa3), "o-ratio": pct(as_float(tut / fa3, "")),
        "o-shape": o["shape"], "o-source": o["cite"],
        "o-flex": fmt(o["flex_ms"]), "o-flex-ws": fmt(o["flex_ws_ms"]),
        "o-flex-gain": f"{fmt(as_float(o['flex_ms'] / o['flex_ws_ms'], ''))}x", "o-flex-shape": o["flex_shape"],
        "o-flex-source": o["flex_cite"],
    }


# --- tables ---------------------------------------------------------------------------------------
def inventory_rows() -> list[tuple]:
    return [(k.name, k.file.split("/")[-1], k.language, ", ".join(GAP[g].name for g in k.needs) or "none", k.why)
            for k in inventory()]


def gap_rows(ch: Chain) -> list[tuple]:
    """(gap, the book's case, what is given up) with the numbers from the chain."""
    return [
        (GAP["warp"].name, "top-k of one row: register heap (warp shuffles) against the radix select",
         f"{fmt(ch['w_1'])}x the element visits, {fmt(ch['P'])} passes for one"),
        (GAP["smem"].name, "tiled transpose: tile[32][32] against tile[32][33]",
         f"{fmt(ch['d_u'])}-way conflict, {fmt(ch['s_2'])}x the time"),
        (GAP["sync"].name, "attention tile: products then softmax, against both at once",
         f"{fmt(ch['g_3'])}x the tile time"),
        (GAP["launch"].name, "a step of small fused kernels: one launch each, against CUDA graphs",
         f"{fmt(ch['S_4'])}x the step time"),
    ]


def reduction_rows(threads=(128, 256, 1024)) -> list[tuple]:
    """A block sum: the shared-memory tree against the shuffles Triton emits for tl.sum."""
    out = []
    for n in threads:
        a, b = tree_reduction(n), shuffle_reduction(n)
        out.append((fmt(n), fmt(a["steps"]), fmt(a["barriers"]), fmt(q(a["smem_bytes"], "B")),
                    fmt(b["steps"]), fmt(b["barriers"]), fmt(q(b["smem_bytes"], "B"))))
    return out


def version_rows() -> list[tuple]:
    """(Triton version, what it offers, which gap, source), oldest first."""
    rows = sorted((v, what, g.name, src) for g in GAPS for v, _, what, src in g.offered)
    return [("any" if v == (0, 0) else f"{v[0]}.{v[1]}", what, name, src) for v, what, name, src in rows]


def decision_rows(version: tuple) -> list[tuple]:
    return [(g.name, g.matters, decide({g.key}, BEFORE), decide({g.key}, version)) for g in GAPS]


# --- figure, what changes, exercises ----------------------------------------------------------------
def figure_data(ch: Chain) -> dict:
    ck = checks()
    labels = [g.name for g in GAPS]
    return dict(labels=labels, given_up=[as_float(ch[k], "") for k in ("w_1", "s_2", "g_3", "S_4")],
                kernels=[ck["tally"][g.key] for g in GAPS], none=ck["tally"]["none"], total=ck["tally"]["total"],
                others=as_float(others()["fa3_tflops"] / others()["tutorial_tflops"], ""))


def what_changes(p, ch: Chain) -> dict:
    k_reg = gaps_chain(p.gpu, p.model, tk.K_REG, p.launch_us)
    f = fa.SPEC.defaults()
    c8 = fa.flash_chain(p.gpu, f["head_dim"], f["block_q"], f["block_k"], f["mufu_per_sm_per_clock"],
                        f["sm_clock_ghz"], f["batch_heads"], f["seq_len"], precision="fp8") \
        if "fp8_dense" in p.gpu else None
    big = tc.compile_chain(**{**tc.CLAIM_INPUTS, "gpu": p.gpu, "launch_overhead_us": p.launch_us,
                              "n_elements": 64 * tc.CLAIM_INPUTS["n_elements"]})
    return {
        "w-v33": fmt(written_in_triton(BEFORE)), "w-vnow": fmt(written_in_triton(version_tuple(p.triton_version))),
        "w-version": p.triton_version, "w-total": fmt(checks()["tally"]["total"]),
        "w-kreg": fmt(tk.K_REG), "w-w1-kreg": f"{fmt(k_reg['w_1'])}x",
        "w-fp8": f"{fmt(as_float(c8['T_s'] / c8['T_o'], ''))}x" if c8 is not None else "not in the catalog",
        "w-big": f"{fmt(as_float(big['t_I'] / big['t_G'], ''))}x", "w-big-n": short(64 * tc.CLAIM_INPUTS["n_elements"]),
        "w-base-n": short(tc.CLAIM_INPUTS["n_elements"]),
    }


def exercises(p, ch: Chain) -> dict:
    ks = inventory()
    leave = [k.name for k in ks if decide(k.needs, BEFORE) != "Triton"]
    t2, s2 = tree_reduction(256), shuffle_reduction(256)
    e3 = gaps_chain(p.gpu, p.model, 1, p.launch_us)
    return {
        "ex1-n": fmt(len(leave)), "ex1-names": ", ".join(leave),
        "ex1-tool": decide({"sync"}, BEFORE),
        "ex2-threads": fmt(256), "ex2-tree-b": fmt(t2["barriers"]), "ex2-tree-bytes": fmt(q(t2["smem_bytes"], "B")),
        "ex2-shfl-b": fmt(s2["barriers"]), "ex2-shfl-bytes": fmt(q(s2["smem_bytes"], "B")),
        "ex3-k": fmt(1), "ex3-w": f"{fmt(e3['w_1'])}x", "ex3-P": fmt(e3["P"]),
    }


SPEC = Spec("triton-vs-cuda", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
