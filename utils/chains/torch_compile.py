"""torch-compile: what TorchDynamo, AOTAutograd, Inductor and CUDA graphs each buy on a step's non-matmul
time, from the kernel-fusion chain's bytes and launches, and the two failures that give it back.

The step is `n_blocks` blocks forward and as many backward, each with an elementwise chain of `n_ops`
operations on `n_elements` (the kernel-fusion chain's block). The matmuls go to cuBLAS in every stage
(Inductor calls matmuls, convolutions and the SDPA/flash-attention kernels as extern kernels by default),
so their time is the same in each column and drops out. Dynamo and AOTAutograd move no byte themselves:
they capture the forward and the backward as graphs, which is what lets Inductor fuse each chain into one
kernel (the kernel-fusion chain's byte ratio) and CUDA graphs replay each captured graph as one launch: a
training step is two graphs (AOTAutograd's forward and backward, recorded separately under
mode='reduce-overhead'), so two launches. A graph break splits the forward into one more graph (and its
backward into one more) and returns to Python; a recompile costs a compile per new shape, and once a frame
holds recompile_limit compiled entries it runs eagerly. The counts of both (utils.gpu.compile_probe, with
torch) are on the page, not here.
"""
from __future__ import annotations

import functools

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.chains.kernel_fusion import fusion_chain
from utils.params import Param, Result, Spec
from utils.units import duration, fmt, num, pct, q, short
from utils.verdicts import READING, WRONG, Claim

LIMIT_SRC = ("PyTorch torch/_dynamo/config.py: recompile_limit = 8 ('controls the maximum number of cache "
             "entries with a guard on same ID_MATCH'd object'); torch/_dynamo/cache_size.py refuses a compile "
             "when the entries are >= the limit, read 2026-12-01")
BREAK_SRC = ("this book's assumption: a return to the interpreter between graphs, the next graph's guard "
             "check and its launch, about four eager launches")
COMPILE_SRC = ("this book's assumption: tens of seconds per graph for a real model with Inductor (a two-layer "
               "MLP took tens of seconds on this book's two-core CPU)")

PARAMETERS = (
    Param("gpu", "h200", "the accelerator: a catalog key or a spec file", check="accelerator",
          source="catalog: H200, the GPU the book measures on"),
    Param("n_elements", 1048576.0, "elements each elementwise operation touches (two to the 20th)",
          check="whole", source="this book's assumption: a small model's activation, where launches matter"),
    Param("bytes_per_element", 2.0, "bytes per element (2 = bf16)", unit="B", source="bf16"),
    Param("n_ops", 5, "elementwise operations per block", check="whole",
          source="the kernel-fusion chapter's chain (five)"),
    Param("n_blocks", 32, "blocks in the step, each run forward and backward", check="whole",
          source="this book's assumption: a 32-layer model"),
    Param("launch_overhead_us", 5.0, "time per kernel launch from Python", unit="us",
          source="the kernel-fusion chapter's assumption (a few microseconds)"),
    Param("graph_breaks", 1, "graph breaks in the step (each a return to Python)", check="non_negative",
          source="this book's assumption: one .item() in the loop"),
    Param("break_overhead_us", 20.0, "cost of one graph break besides the extra graph launch", unit="us",
          source=BREAK_SRC),
    Param("compile_s", 40.0, "compile time of one graph", unit="s", source=COMPILE_SRC),
    Param("recompile_limit", 8, "compiled entries (shapes) Dynamo keeps for a frame before it runs it eagerly",
          check="whole",
          source=LIMIT_SRC),
)

RESULTS = (
    Result("eager_time", "ms", "Non-matmul time per step, eager", of="t_E"),
    Result("inductor_time", "ms", "Non-matmul time per step, Inductor (fused)", of="t_I"),
    Result("graphs_time", "ms", "Non-matmul time per step, Inductor and CUDA graphs", of="t_G"),
    Result("inductor_speedup", "", "Speedup from fusion (Inductor over eager)", of="S_I"),
    Result("graphs_speedup", "", "Speedup with CUDA graphs (over eager)", of="S_G"),
    Result("broken_speedup", "", "Speedup with CUDA graphs and the graph breaks", of="S_B"),
    Result("steps_to_repay_recompile", "", "Steps that repay one recompile", of="n_r"),
)


def compile_chain(gpu, n_elements, bytes_per_element, n_ops, n_blocks, launch_overhead_us, graph_breaks,
                  break_overhead_us, compile_s, recompile_limit, *, source="parameters cell", cite=None) -> Chain:
    """A training step's non-matmul time on `gpu`: eager, Inductor, CUDA graphs, graph breaks, a recompile. Each
    input cites `source` (the three this book assumes or reads, their own), or cite(parameter name) where given
    (the page's SPEC.source)."""
    own = {"break_overhead_us": BREAK_SRC, "compile_s": COMPILE_SRC, "recompile_limit": LIMIT_SRC}
    cite = cite or (lambda name: own.get(name, source))
    acc = gpu if hasattr(gpu, "key") else catalog.accelerator(gpu)
    blk = fusion_chain(acc, n_elements, bytes_per_element, n_ops, launch_overhead_us, source=source)
    ch = Chain(f"{int(n_blocks)} blocks of {int(n_ops)} elementwise operations on {short(n_elements)} "
               f"elements, forward and backward, {acc.name}")
    ch.given("L", int(n_blocks), "blocks, each run forward and backward", kind="assumption", source=cite("n_blocks"))
    ch.given("t_u", blk["t_u"], "one eager block: k launches plus 2kNe bytes", kind="derived",
             source="the kernel-fusion chain")
    ch.given("t_f", blk["t_f"], "one fused block: one launch plus 2Ne bytes", kind="derived",
             source="the kernel-fusion chain")
    ch.given("r", blk["r"], "bytes eager over bytes fused", kind="derived", source="the kernel-fusion chain")
    ch.given("M_f", blk["M_f"], "bytes of one fused block", kind="derived", source="the kernel-fusion chain")
    ch.given("W", blk["W"], "copy bandwidth", kind="derived", source="the kernel-fusion chain")
    ch.given("t_L", blk["t_Lu"], "one launch from Python", kind="derived", source="the kernel-fusion chain")
    ch.step("t_E", "2*L*t_u", "ms", "eager; Dynamo and AOTAutograd alone (backend eager) change nothing")
    ch.step("t_I", "2*L*t_f", "ms", "Inductor: each block's chain, forward and backward, one kernel")
    ch.step("t_G", "2*t_L + 2*L*M_f/W", "ms", "CUDA graphs: the forward and the backward graph, one launch each")
    ch.step("S_I", "t_E/t_I", "", "fusion's speedup")
    ch.step("S_G", "t_E/t_G", "", "speedup with CUDA graphs")
    ch.given("b", int(graph_breaks), "graph breaks in the step", kind="assumption", source=cite("graph_breaks"))
    ch.given("t_b", q(break_overhead_us, "us"), "cost of one break besides its graph's launch",
             kind="assumption", source=cite("break_overhead_us"))
    ch.step("t_B", "2*(b + 1)*t_L + b*t_b + 2*L*M_f/W", "ms",
            "CUDA graphs with the breaks: b + 1 graphs forward, as many backward")
    ch.step("S_B", "t_E/t_B", "", "speedup with the breaks")
    ch.given("c", q(compile_s, "s"), "compile time of one graph", kind="assumption",
             source=cite("compile_s"))
    ch.step("n_r", "c/(t_E - t_G)", "", "steps a recompile must run to repay itself")
    ch.given("R", int(recompile_limit), "recompile limit (compiled entries per frame)", kind="spec",
             source=cite("recompile_limit"))
    ch.step("n_s", "R", "", "distinct shapes a frame compiles before it runs eagerly (dynamic=False): entries >= R")
    return ch


def _args(p) -> dict:
    return {k: p[k] for k in ("gpu", "n_elements", "bytes_per_element", "n_ops", "n_blocks", "launch_overhead_us",
                              "graph_breaks", "break_overhead_us", "compile_s", "recompile_limit")}


def compute(p) -> Chain:
    return compile_chain(**_args(p), cite=functools.partial(SPEC.source, p))


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("Four stages: a bytecode interpreter captures a graph with guards, an autograd pass splits forward "
         "from backward, a compiler emits Triton for everything but the matmuls, and a mode that replays the "
         "step as one launch. What each buys, and the two failures that silently give it back.")
CLAIM_INPUTS = dict(gpu="h200", n_elements=1048576.0, bytes_per_element=2.0, n_ops=5, n_blocks=32,
                    launch_overhead_us=5.0, graph_breaks=1, break_overhead_us=20.0, compile_s=40.0,
                    recompile_limit=8)
READING_TEXT = ("'emits Triton' on a GPU (Inductor emits C++ with OpenMP on a CPU); 'everything but the matmuls' "
                "by default, with the matmul-like kernels counted as matmuls: matmuls, convolutions and the "
                "SDPA/flash-attention kernels, which Inductor calls as extern kernels (mode='max-autotune' may pick "
                "Triton matmul templates instead); and 'replays the step as one launch' as one launch per "
                "captured graph: a training step is two graphs (forward and backward), and b breaks make "
                "2(b + 1)")


def claim_chain() -> Chain:
    return compile_chain(**CLAIM_INPUTS, source="the claim's step")


@memoised
def checks() -> dict:
    """The claim's step: each stage's gain, and the two failures on the same step."""
    ch = claim_chain()
    many = compile_chain(**{**CLAIM_INPUTS, "graph_breaks": CLAIM_INPUTS["n_blocks"]}, source="the claim")
    return dict(chain=ch, many=many, fused_gain=as_float(ch["S_I"], ""), graph_gain=as_float(ch["S_G"], ""),
                broken_gain=as_float(ch["S_B"], ""), many_gain=as_float(many["S_B"], ""),
                limit_gain=1.0, repay=as_float(ch["n_r"], ""))


def claims() -> list[Claim]:
    ck = checks()
    ch = ck["chain"]
    ok = (ck["graph_gain"] > ck["fused_gain"] > 1 and ck["broken_gain"] < ck["graph_gain"]
          and ck["many_gain"] < ck["fused_gain"] and ck["repay"] > 1)
    return [Claim(
        "four-stages", quote=QUOTE, source="spec/001, paragraph on torch.compile; CHAINS.md, torch-compile row",
        claimed="four stages (capture with guards, the forward-backward split, Triton for all but the matmuls, "
                "one-launch replay); each buys something; two failures give it back",
        derived=f"fusion {fmt(ck['fused_gain'], digits=2)}x, CUDA graphs {fmt(ck['graph_gain'], digits=2)}x on the "
                f"claim's step (two graphs, forward and backward); one break leaves {fmt(ck['broken_gain'], digits=2)}x, "
                f"one per block "
                f"{fmt(ck['many_gain'], digits=2)}x; past the recompile limit the frame runs eagerly",
        verdict=READING if ok else WRONG, reading=READING_TEXT,
        nearest_true="" if ok else "on this step the stages do not buy what the claim says",
        reason=f"on the claim's step Inductor's fusion cuts the non-matmul time {fmt(ck['fused_gain'], digits=2)} "
               f"times ({fmt(ch['r'])} times fewer bytes, one launch per chain) and the replay (one launch each for "
               f"the forward and the backward graph) {fmt(ck['graph_gain'], digits=2)} times; a single break in the loop leaves "
               f"{fmt(ck['broken_gain'], digits=2)} times, a break per block {fmt(ck['many_gain'], digits=2)} "
               f"times, and past the recompile limit the frame runs eagerly again, with no gain at all.")]


# --- the page's tables, the figure, what changes, exercises ----------------------------------------
def stage_rows(ch: Chain) -> list[list[str]]:
    return [
        ["TorchDynamo", "bytecode capture into an FX graph, with guards (shapes, dtypes, Python values)",
         "nothing by itself: the graph everything else needs", duration(ch["t_E"])],
        ["AOTAutograd", "traces the backward ahead of time; splits the joint graph into forward and backward, "
         "choosing what to save", "a backward graph Inductor can fuse too", duration(ch["t_E"])],
        ["Inductor", "fuses elementwise and reduction chains into Triton kernels (C++ on CPU); matmuls, "
         "convolutions and SDPA/flash attention stay extern kernels (cuBLAS, cuDNN, flash)",
         f"{fmt(ch['r'])}x fewer bytes, one launch per chain", duration(ch["t_I"])],
        ["CUDA graphs (mode='reduce-overhead')", "records each graph's launches once and replays them",
         "one launch per graph: two a training step (forward, backward)", duration(ch["t_G"])],
    ]


def break_curve(p, breaks) -> dict:
    """Speedup over eager against graph breaks in the step (CUDA graphs on), and fusion alone for scale."""
    import numpy as np
    base = _args(p)
    s = [as_float(compile_chain(**{**base, "graph_breaks": int(b)})["S_B"], "") for b in breaks]
    ch = compute(p)
    return dict(breaks=np.asarray(breaks), speedup=np.asarray(s), fused=as_float(ch["S_I"], ""),
                graphs=as_float(ch["S_G"], ""))


def what_changes(p, ch: Chain) -> dict:
    base = _args(p)
    big = compile_chain(**{**base, "n_elements": 268435456.0})
    slow = compile_chain(**{**base, "launch_overhead_us": 20.0})
    return {"wc-big-n": short(268435456.0), "wc-big-graphs": fmt(as_float(big["S_G"], ""), digits=2),
            "wc-big-fused": fmt(as_float(big["S_I"], ""), digits=2),
            "wc-slow-launch": fmt(slow["t_L"]), "wc-slow-graphs": fmt(as_float(slow["S_G"], ""), digits=2),
            "wc-per-block": fmt(as_float(compile_chain(**{**base, "graph_breaks": int(p["n_blocks"])})["S_B"], ""),
                                digits=2)}


def exercises(p, ch: Chain) -> dict:
    base = _args(p)
    ten = compile_chain(**{**base, "graph_breaks": 10})
    fp32 = compile_chain(**{**base, "bytes_per_element": 4.0})
    ch = compute(p)
    return {"ex1-breaks": num(10), "ex1-speedup": fmt(as_float(ten["S_B"], ""), digits=2),
            "ex1-clean": fmt(as_float(ch["S_G"], ""), digits=2),
            "ex2-shapes": num(as_float(ch["n_s"], "")), "ex2-recompiles": num(as_float(ch["n_s"], "") - 1),
            "ex2-compile": duration(ch["c"] * as_float(ch["n_s"], "")),
            "ex3-fused": fmt(as_float(fp32["S_I"], ""), digits=2), "ex3-graphs": fmt(as_float(fp32["S_G"], ""), digits=2),
            "ex3-eager": duration(fp32["t_E"]), "ex3-share": pct(as_float(fp32["t_L"] / fp32["t_E"], "") * 2 *
                                                                  as_float(fp32["L"], "") * int(p["n_ops"]))}


SPEC = Spec("torch-compile", PARAMETERS, RESULTS, compute, closed_form=True)
