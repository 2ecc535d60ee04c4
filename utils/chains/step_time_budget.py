"""step-time-budget: the step time the formula predicts, the one to explain, and the gap as a budget.

Predicted: the compute 6N x tokens / (GPUs x peak x MFU), where MFU here is the kernels' own rate (the
matmuls' share of the dense peak once the communication and the bubble are taken out, so those two are
added, not hidden in it), plus the pipeline bubble (p - 1)/m of the compute, plus the communication left on
the critical path: tensor parallelism's all-reduces on NVLink, pipeline sends and the data-parallel
all-reduce's exposed tail, all from the parallelism-placement chain (utils.training.collectives' byte counts). The
gap between the step to explain and that prediction is the budget the isolation order spends, one metric
per suspect. The model is one parameter (a dense catalog model or a config.json).

The step to explain is the reader's timed step (`measured_step_s`). Without one, the page takes a stand-in:
the step at Llama 3 405B's published per-GPU rate on 16,384 GPUs, another model at another scale, so an
assumption, never a measurement; the gap against it is the difference between two assumptions.
"""
from __future__ import annotations

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.chains.parallelism_placement import check_layout, placement
from utils.params import Param, Result, Spec
from utils.units import duration, fmt, pct, q
from utils.verdicts import UNCHECKABLE, Claim

RUN = "llama-3-405b-pretraining"
MFU_SRC = ("this book's assumption: the matmuls at half the dense bf16 peak once communication and the "
           "bubble are taken out (Llama 3 405B's 38% to 43% end-to-end BF16 MFU, arXiv:2407.21783 Table 4, "
           "includes both)")
MEASURED_SRC = ("0 takes a stand-in: the step at the per-GPU rate Llama 3 405B published on 16,384 H100s "
                "(arXiv:2407.21783, Table 4 row 2: 400 TFLOPs per GPU), another model and scale, so this book's "
                "assumption until you time your own")
LAYOUT_SRC = "this book's assumption: TP 8 in the node, 4 stages of 20 layers, 32 replicas (1,024 GPUs)"

PARAMETERS = (
    Param("model", "llama-3-70b", "the model (dense): a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-70B"),
    Param("gpu", "h100-sxm", "accelerator catalog key", check="accelerator", source="catalog: H100 SXM"),
    Param("tp", 8, "tensor-parallel degree", check="whole", source=LAYOUT_SRC),
    Param("pp", 4, "pipeline stages", check="whole", source=LAYOUT_SRC),
    Param("dp", 32, "data-parallel replicas", check="whole", source=LAYOUT_SRC),
    Param("seq_len", 8192, "tokens per sequence", unit="token", check="whole",
          source="Llama 3 pre-training context (arXiv:2407.21783, sec. 3.4.1)"),
    Param("global_batch_tokens", 16777216.0, "tokens per optimizer step (2**24)", unit="token",
          source="this book's assumption: Llama 3 405B's 16M-token batch (arXiv:2407.21783, Table 4)"),
    Param("micro_batch", 1, "sequences per micro-batch", check="whole", source="this book's assumption"),
    Param("mfu", 0.50, "the kernels' compute utilisation (6N basis, communication and bubble excluded)",
          check="fraction", source=MFU_SRC),
    Param("fabric", "ib-ndr", "interconnect catalog key: the scale-out fabric, one port per GPU",
          check="interconnect", source="catalog: InfiniBand NDR"),
    Param("measured_step_s", 0.0, "your measured step time; 0 takes the stand-in (Llama 3 405B's per-GPU rate)",
          unit="s", check="non_negative", source=MEASURED_SRC),
)

RESULTS = (
    Result("compute_time", "s", "Compute, 6N x tokens / (GPUs x peak x MFU)", of="t_c"),
    Result("bubble_time", "s", "Pipeline bubble, (p - 1)/m of the compute", of="t_bub"),
    Result("exposed_comm_time", "s", "Communication on the critical path", of="t_comm"),
    Result("predicted_step_time", "s", "Predicted step time", of="t_pred"),
    Result("reference_step_time", "s", "Step to explain (a stand-in unless measured_step_s is set)", of="t_ref"),
    Result("gap", "s", "The gap: the step to explain minus the prediction", of="t_gap"),
    Result("gap_share", "", "The gap as a share of the step to explain", of="g", percent=True),
    Result("implied_mfu", "", "MFU the step to explain implies (6N basis, end to end)", of="u_ref", percent=True),
)

# The isolation order: (suspect, the one metric that names it, where to read it, what it says)
SUSPECTS = (
    ("dataloader wait", "time blocked in next(loader) per step", "a host timer around the iterator",
     "any wait is gap: the GPU had nothing to run", "t_data"),
    ("SM and tensor activity", "SM active and tensor pipe active", "DCGM_FI_PROF_SM_ACTIVE, "
     "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "tensor activity well under the MFU: the kernels, not the system",
     "t_sm"),
    ("HBM throughput", "DRAM active", "DCGM_FI_PROF_DRAM_ACTIVE", "near one with low tensor activity: "
     "memory-bound kernels (unfused elementwise, attention)", "t_hbm"),
    ("time in collectives", "NCCL kernels' time not overlapped with compute", "torch.profiler trace, "
     "nccl kernels on the compute stream's gaps", "above the predicted exposed communication: the fabric or the "
     "overlap", "t_coll"),
    ("per-rank spread", "slowest rank's step over the median rank's", "per-rank step timers, gathered",
     "well above one: one machine (a hot GPU, a bad NIC)", "t_rank"),
)


def step_chain(model, gpu, tp, pp, dp, seq_len, global_batch_tokens, micro_batch, mfu, fabric, measured_step_s,
               *, source="parameters cell") -> Chain:
    """source: one text for every parameter's row, or a function of the parameter's name (compute passes SPEC.source)."""
    src = (lambda name: source) if isinstance(source, str) else source
    pl = placement(model, gpu, tp, pp, dp, seq_len, global_batch_tokens, micro_batch, mfu, fabric, source=source)
    ch = Chain(f"{pl.title}: the step-time budget")
    for name in ("n", "k6", "N", "T_g", "R", "u", "m", "p"):
        row = next(r for r in pl.rows if r.name == name)
        ch.given(name, pl[name], row.label, kind=row.kind or "derived",
                 source=row.source or "the parallelism-placement chain")
    ch.step("t_c", "k6*N*T_g/(n*R*u)", "s", "compute at the kernels' MFU")
    ch.step("t_bub", "(p - 1)/m*t_c", "s", "pipeline bubble (one-forward-one-backward schedule)")
    ch.given("t_TP", pl["t_TP_nv"], "TP all-reduces on NVLink (each blocks the next layer)", kind="derived",
             source="the parallelism-placement chain")
    ch.given("t_PP", pl["t_PP_f"], "PP sends on the fabric", kind="derived", source="the parallelism-placement chain")
    ch.given("t_DP", pl["t_DP_exp"], "DP all-reduce left exposed after the backward", kind="derived",
             source="the parallelism-placement chain")
    ch.step("t_comm", "t_TP + t_PP + t_DP", "s", "communication on the critical path")
    ch.step("t_pred", "t_c + t_bub + t_comm", "s", "predicted step time")
    if measured_step_s > 0:
        ch.given("t_ref", q(measured_step_s, "s"), "your measured step time", kind="measured",
                 source=src("measured_step_s"))
    else:
        run = catalog.run(RUN)
        ch.given("X", run.q("table4_row2_tflops_per_gpu"),
                 "stand-in rate per GPU: Llama 3 405B's published bf16 rate on 16,384 GPUs (another model and scale)",
                 kind="assumption", source="arXiv:2407.21783, Table 4 row 2, applied here by this book")
        ch.step("t_ref", "k6*N*T_g/(n*X)", "s", "the stand-in step at that rate")
    ch.step("t_gap", "t_ref - t_pred", "s", "the gap: the budget to explain")
    ch.step("g", "t_gap/t_ref", "", "the gap's share of the step")
    ch.step("u_ref", "k6*N*T_g/(n*R*t_ref)", "", "MFU the step to explain implies (end to end)")
    return ch


def _args(p) -> dict:
    return {k: p[k] for k in ("model", "gpu", "tp", "pp", "dp", "seq_len", "global_batch_tokens", "micro_batch",
                              "mfu", "fabric", "measured_step_s")}


def compute(p) -> Chain:
    return step_chain(**_args(p), source=lambda name: SPEC.source(p, name))


def validate(p):
    check_layout(p.model, p.tp, p.pp, p.dp, p.seq_len, p.global_batch_tokens, p.micro_batch)


def parts(ch: Chain) -> list[tuple[str, float]]:
    """The budget's lines in seconds: what the prediction holds, then the gap."""
    return [("compute", as_float(ch["t_c"], "s")), ("pipeline bubble", as_float(ch["t_bub"], "s")),
            ("TP on NVLink", as_float(ch["t_TP"], "s")), ("PP sends", as_float(ch["t_PP"], "s")),
            ("DP exposed", as_float(ch["t_DP"], "s")), ("gap (to explain)", as_float(ch["t_gap"], "s"))]


def budget_rows(ch: Chain) -> list[list[str]]:
    t = as_float(ch["t_ref"], "s")
    label = "stand-in step" if any(r.name == "X" for r in ch.rows) else "measured step"
    return [[name, duration(q(v, "s")), pct(v / t)] for name, v in parts(ch)] + [
        [label, duration(ch["t_ref"]), pct(1.0)]]


def isolation_rows() -> list[list[str]]:
    return [[str(i + 1), s, metric, where, says] for i, (s, metric, where, says, _) in enumerate(SUSPECTS)]


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("Compute the step time the formula predicts, measure the one you have, and the gap is the budget to "
         "explain. The isolation order with one metric per suspect: dataloader wait, SM and tensor-core "
         "activity, HBM throughput, time in collectives, and the per-rank spread that says it is one machine.")
CLAIM_INPUTS = dict(model="llama-3-70b", gpu="h100-sxm", tp=8, pp=4, dp=32, seq_len=8192,
                    global_batch_tokens=16777216.0, micro_batch=1, mfu=0.50, fabric="ib-ndr", measured_step_s=0.0)


def claim_chain() -> Chain:
    return step_chain(**CLAIM_INPUTS, source="the worked budget")


@memoised
def checks() -> dict:
    ch = claim_chain()
    total = sum(v for _, v in parts(ch))
    closes = abs(total / as_float(ch["t_ref"], "s") - 1) < 1e-12
    metrics = [s[1] for s in SUSPECTS]
    one_each = len(set(metrics)) == len(SUSPECTS) == len({s[0] for s in SUSPECTS})
    end_to_end = step_chain(**{**CLAIM_INPUTS, "mfu": as_float(ch["u_ref"], "")}, source="end-to-end MFU")
    return dict(chain=ch, closes=closes, one_each=one_each, gap=as_float(ch["t_gap"], "s"),
                end_to_end_gap=as_float(end_to_end["t_gap"], "s"), end_to_end=end_to_end)


def claims() -> list[Claim]:
    ck = checks()
    ch = ck["chain"]
    return [Claim(
        "gap-is-the-budget", quote=QUOTE, source="spec/001, paragraph on the step-time budget; CHAINS.md row",
        claimed="no number: a method (predict, measure, spend the gap) and five suspects",
        derived=f"predicted {duration(ch['t_pred'])} against a stand-in {duration(ch['t_ref'])}, gap "
                f"{duration(ch['t_gap'])} ({pct(ch['g'])}); five suspects, five distinct metrics",
        verdict=UNCHECKABLE,
        reason=f"the sentence gives a method and no number, and its gap is defined as the step minus the "
               f"prediction, so the budget's lines close by construction, on any inputs; the page has no measured "
               f"step either: its {duration(ch['t_ref'])} is {catalog.model('llama-3-405b').name}'s published "
               f"per-GPU rate applied to {catalog.model(CLAIM_INPUTS['model']).name} on "
               f"{fmt(q(float(ch['n']), 'GPU'))}, so the {duration(ch['t_gap'])} gap is the difference "
               f"between two assumptions. What the page can show: with the end-to-end MFU that step implies, the "
               f"prediction is {duration(ck['end_to_end']['t_pred'])}, longer than the step, because the "
               f"communication and the bubble are then counted twice; the formula's MFU must be the kernels' own")]


# --- figure, what changes, exercises --------------------------------------------------------------
def figure_data(ch: Chain) -> dict:
    import numpy as np
    names, vals = zip(*parts(ch))
    return dict(names=list(names), seconds=np.asarray(vals), measured=as_float(ch["t_ref"], "s"),
                predicted=as_float(ch["t_pred"], "s"))


def what_changes(p, ch: Chain) -> dict:
    base = _args(p)
    lo, hi = step_chain(**{**base, "mfu": 0.40}), step_chain(**{**base, "mfu": 0.60})
    pp8 = step_chain(**{**base, "pp": 8, "dp": 16})
    return {"wc-pp8-pp": fmt(pp8["p"]), "wc-pp8-dp": fmt(q(16, "")),
            "wc-mfu-lo": pct(0.40), "wc-gap-lo": duration(lo["t_gap"]), "wc-mfu-hi": pct(0.60),
            "wc-gap-hi": duration(hi["t_gap"]), "wc-pp8-bubble": duration(pp8["t_bub"]),
            "wc-pp8-gap": duration(pp8["t_gap"])}


def exercises(p, ch: Chain) -> dict:
    base = _args(p)
    slow = step_chain(**{**base, "measured_step_s": 1.2 * as_float(ch["t_pred"], "s")})
    b200 = step_chain(**{**base, "gpu": "b200"})
    return {"ex1-factor": pct(0.2), "ex1-gap": duration(slow["t_gap"]), "ex1-share": pct(slow["g"]),
            "ex2-bubble": duration(ch["t_bub"]), "ex2-m": fmt(ch["m"]), "ex2-p": fmt(ch["p"]),
            "ex3-pred": duration(b200["t_pred"]), "ex3-comm": duration(b200["t_comm"])}


def cpu_prediction(flops: float, rate_flops_per_s: float, mfu: float = 1.0) -> float:
    """A small CPU step's predicted time in seconds: counted FLOPs over a measured matmul rate x MFU (no
    communication: one process). The measured side is timed in tests/chains/test_step_time_budget.py, never here."""
    return flops / (rate_flops_per_s * mfu)


HARNESS_GPU = "h200"      # the GPU the book's harness runs on


def harness_prediction(mfu: float, gpu: str = HARNESS_GPU) -> dict:
    """The harness's training-step (utils/gpu/measurements/training_step.py, full size) predicted on one GPU:
    6N x tokens over the dense bf16 peak x the kernels' MFU (one GPU: no communication, no bubble)."""
    from utils.gpu.measurements.common import REGISTRY
    from utils.gpu.measurements.training_step import step_flops
    size = REGISTRY["training-step"].sizes["full"][0]
    acc = catalog.accelerator(gpu)
    flops = q(step_flops(size), "FLOP")
    return dict(size=size, flops=flops, gpu=acc.name, predicted=(flops / (acc.q("bf16_dense") * mfu)).to("ms"))


SPEC = Spec("step-time-budget", PARAMETERS, RESULTS, compute, validate=validate,
            closed_form=True)
