"""fleet-size: the fleet equation solved for GPU count, the headroom, and the rounding to a power of two.

The compute a run needs equals the compute a fleet delivers, C = N_gpu R u T, with C = 6ND from the
model (N the parameters multiplied per token) and R the DENSE bf16 peak of one GPU. The exact count is
then given headroom for what is not training and rounded up, to the next power of two (or whole nodes).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.models import attention_width, n_layers, param_count
from utils.params import Param, ParameterError, Result, Spec
from utils.training import (
    MFU_BASES,
    fat_tree_sizes,
    fleet_equation,
    free_headroom,
    gpt_params,
    megatron_flops_per_token,
    mfu_conversion,
    mfu_to_6n,
    next_power_of_two,
    rounding_orders,
    six_nd,
)
from utils.units import fmt, pct, q, short
from utils.verdicts import UNCHECKABLE, Claim, ratio

if TYPE_CHECKING:
    import numpy as np

RUN = "llama-3-405b-pretraining"    # the Llama 3 paper's figures (arXiv:2407.21783), from the run catalog
NODE_SOURCE = "HGX/DGX H100 baseboard; Llama 3 paper sec. 3.3.1"


def mfu_range(run=None) -> str:
    run = run or catalog.run(RUN)
    mfus = [as_float(run.q(f"table4_row{i}_mfu")) for i in (1, 2, 3)]
    return f"{pct(min(mfus)).rstrip('%')}-{pct(max(mfus))}"


PARAMETERS = (
    Param("model", "llama-3-70b", "the model: a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-70B, the claim's model (6ND chapter)"),
    Param("n_tokens", 15e12, "training tokens, D", unit="token", source="the claim (15T tokens)"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key (its dense bf16 rate is the peak)",
          check="accelerator", source="catalog: the claim's H100 SXM"),
    Param("mfu", 0.40, "model FLOPs utilisation, counted on the basis mfu_basis names (the default 6N: the "
          "share of the dense bf16 peak spent on 6ND)",
          check="fraction", source=f"the claim's 40%; Llama-3-405B reported {mfu_range()} on H100 (Table 4)"),
    Param("mfu_basis", "6N", "which FLOPs the typed MFU counts: 6N (the book's), 6N+attention (PaLM's "
          "6N + 12LHQT), 6N+causal-attention (half the attention square), hardware (8N, recomputation "
          "counted); converted to 6N before the fleet equation", check="choice", choices=MFU_BASES,
          source="this book's assumption: the claim's 40% is on 6N"),
    Param("seq_len", 8192, "training sequence length T, read only by the attention-inclusive MFU bases",
          unit="token", check="whole", source="Llama 3 paper (arXiv:2407.21783) Table 4: 8,192-token sequences"),
    Param("run_days", 30.0, "wall-clock length of the run", unit="day",
          source="this book's assumption (a month; the claim names no run length)"),
    Param("headroom", 0.15, "extra fleet, as a share of the exact count, for what is not training",
          check="non_negative", source="the claim's 15%"),
    Param("gpus_per_node", 8, "GPUs in one node (an HGX/DGX baseboard holds eight)", check="whole",
          source=NODE_SOURCE),
)

RESULTS = (
    Result("train_flops", "FLOP", "Training compute, 6ND", of="C"),
    Result("gpus_exact", "GPU", "GPUs, exact (before headroom and rounding)", of="N_gpu"),
    Result("gpu_hours", "GPU*hour", "GPU-hours at the MFU", of="G"),
    Result("gpus_with_headroom", "GPU", "GPUs with headroom, before rounding", of="N_h"),
    Result("gpus_planned", "GPU", "GPUs planned: headroom, then the next power of two", of="N_2"),
    Result("nodes_planned", "node", "Nodes in the planned fleet", of="n_nodes"),
    Result("gpus_whole_nodes", "GPU", "GPUs with headroom, rounded to whole nodes", of="N_8"),
    Result("run_days_planned", "day", "Compute days on the planned fleet at the MFU", of="T_2"),
    Result("mfu_cliff", "", "MFU below which the planned fleet doubles", of="u_c", percent=True),
    Result("run_days_cliff", "day", "Run length below which the planned fleet doubles", of="T_c"),
)


def validate(p):
    if "bf16_dense" not in p.gpu:
        raise ParameterError(f"gpu: {p.gpu.name} has no dense bf16 rate in the catalog")


def fleet(n_params, n_tokens, gpu, mfu, run_days, headroom, gpus_per_node=8, *, peak_field="bf16_dense",
          kind="assumption", source="parameters cell", basis=None, sources=None, mfu_kind="assumption") -> Chain:
    """The fleet equation solved for GPU count, then headroom and rounding, as a Chain.
    gpu: a catalog key or Entry; peak_field: which of its rates is read as the peak. basis: None (the MFU
    is on 6N) or a dict of mfu_conversion's arguments (mfu_basis, n_layers, d_attn, seq_len), whose steps
    restate the typed MFU on 6N before the fleet equation reads it. sources: each input's own source by
    symbol (N, D, u, T, h, n_g), where it is not `source`. mfu_kind: the typed MFU's kind (a run's published
    MFU is measured-by-others)."""
    accel = catalog.accelerator(gpu)
    peak = accel[peak_field]
    run = catalog.run(RUN)
    src = {"u": source if source != "parameters cell" else
           f"assumption; Llama-3-405B reported {mfu_range(run)} on H100 (arXiv:2407.21783, Table 4)",
           "n_g": NODE_SOURCE if gpus_per_node == 8 else source, **{k: source for k in ("N", "D", "T", "h")}, **(sources or {})}
    ch = Chain(f"Fleet size on {accel.name}")
    six_nd(ch, n_params, n_tokens, kind=kind, source=src["N"], source_d=src["D"])
    if basis and basis["mfu_basis"] != "6N":
        mfu_conversion(ch, mfu, basis["mfu_basis"], basis["n_layers"], basis["d_attn"], basis["seq_len"],
                       source=src["u"], kind=mfu_kind)
        mfu = None                       # the chain now holds u, on 6N
    fleet_equation(ch, peak.q, mfu, run_days, peak_label=f"peak of one GPU ({peak_field.replace('_', ' ')})",
                   peak_kind=peak.kind, peak_source=peak.cite, source=src["T"], mfu_source=src["u"])
    ch.given("h", q(headroom, ""), "headroom", kind="assumption", source=src["h"])
    ch.step("N_h", "N_gpu*(1 + h)", "GPU", "GPUs with headroom")
    ch.given("g", q(1.0, "GPU"), "one GPU (makes the count a pure number)", kind="definition")
    ch.step("e", "ceiling(log(N_h/g)/log(2))", "", "exponent of the next power of two")
    ch.step("N_2", "g*2**e", "GPU", "GPUs planned: the next power of two")
    ch.given("n_g", q(float(gpus_per_node), "GPU/node"), "GPUs per node",
             kind="assumption" if src["n_g"] == "parameters cell" else "spec", source=src["n_g"])
    ch.step("n_nodes", "N_2/n_g", "node", "nodes in the planned fleet")
    ch.step("N_8", "n_g*ceiling(N_h/n_g)", "GPU", "or: whole nodes")
    ch.solve("T_2", "C = N_2*R*u*T_2", "day", "compute days on the planned fleet")
    # The step boundaries of the staircase: where N_gpu (1 + h) reaches N_2, the plan doubles.
    ch.solve("u_c", "C*(1 + h) = N_2*R*u_c*T", "", "MFU below which the plan doubles")
    ch.solve("T_c", "C*(1 + h) = N_2*R*u*T_c", "day", "run length below which the plan doubles")
    return ch


def run_length(n_params, n_tokens, gpu, mfu, n_gpus, *, peak_field="bf16_dense", source="the claim") -> Chain:
    """The fleet equation solved for the run length that a given GPU count needs."""
    accel = catalog.accelerator(gpu)
    peak = accel[peak_field]
    ch = Chain("Run length for a given fleet")
    six_nd(ch, n_params, n_tokens, source=source)
    ch.given("R", peak.q.to("FLOP/s") / q(1, "GPU"), f"peak of one GPU ({peak_field.replace('_', ' ')})",
             kind=peak.kind, source=peak.cite)
    ch.given("u", q(mfu, ""), "model FLOPs utilisation", kind="assumption", source=source)
    ch.given("N_gpu", q(n_gpus, "GPU"), "GPUs", kind="assumption", source=source)
    ch.solve("T", "C = N_gpu*R*u*T", "day", "run length, wall clock")
    return ch


def n_params_of(m) -> float:
    """N of 6ND: the parameters multiplied per token (the active ones for a mixture of experts)."""
    return param_count(m)["active"].m


def basis_of(p) -> dict:
    """mfu_conversion's arguments for the parameters' model and basis."""
    return dict(mfu_basis=p.mfu_basis, n_layers=n_layers(p.model), d_attn=attention_width(p.model),
                seq_len=p.seq_len)


def mfu6(p) -> float:
    """The parameters' MFU restated on the 6N basis (the figure every sweep below uses)."""
    b = basis_of(p)
    return mfu_to_6n(p.mfu, b["mfu_basis"], n_params_of(p.model), b["n_layers"], b["d_attn"], b["seq_len"])


def compute(p) -> Chain:
    # Each input shows its parameter's own source while it holds the default (SPEC is defined below).
    sources = {"N": f"{p.model.name}, counted from its configuration", "D": SPEC.source(p, "n_tokens"),
               "u": SPEC.source(p, "mfu"), "T": SPEC.source(p, "run_days"), "h": SPEC.source(p, "headroom"),
               "n_g": SPEC.source(p, "gpus_per_node")}
    return fleet(n_params_of(p.model), p.n_tokens, p.gpu, p.mfu, p.run_days, p.headroom, p.gpus_per_node,
                 kind="spec", sources=sources, basis=basis_of(p))


# --- the Llama 3 run: layouts, MFU, reliability ----------------------------------------------------
def llama3_layouts() -> list[dict]:
    """Table 4's pre-training layouts (GPUs = TP x CP x PP x DP, each a power of two), with the MFU
    re-derived from the reported per-GPU rate over the catalog's dense peak."""
    run = catalog.run(RUN)
    peak = catalog.accelerator(run.q("accelerator")).q("bf16_dense")
    rows = []
    for i in (1, 2, 3):
        f = {k: int(as_float(run.q(f"table4_row{i}_{k}"))) for k in ("gpus", "tp", "cp", "pp", "dp")}
        rate = run.q(f"table4_row{i}_tflops_per_gpu")
        rows.append(dict(**f, rate=rate, mfu_derived=as_float(rate / peak, ""),
                         mfu_printed=as_float(run.q(f"table4_row{i}_mfu"))))
    return rows


def llama3_dp_reading() -> dict:
    """Table 4's long-context row prints DP 4; the catalog reads 8 (its GPU count and its batch need it)."""
    run = catalog.run(RUN)
    dp3 = run["table4_row3_dp"]
    printed = int(as_float(next(a.q for a in dp3.alternatives if a.kind == "spec")))
    read = int(as_float(dp3.q))
    row = {f: as_float(run.q(f"table4_row3_{f}")) for f in ("gpus", "tp", "cp", "pp", "batch_per_dp")}
    seq = as_float(run.q("table4_row3_seq_len"), "token")
    return dict(printed=printed, read=read, kind=dp3.kind, gpus=row["gpus"], batch_per_dp=row["batch_per_dp"],
                seq=seq, batch_stated=as_float(run.q("batch_tokens"), "token"),
                gpus_printed=row["tp"] * row["cp"] * row["pp"] * printed,
                gpus_read=row["tp"] * row["cp"] * row["pp"] * read,
                tokens_printed=printed * row["batch_per_dp"] * seq, tokens_read=read * row["batch_per_dp"] * seq)


def llama3_reliability() -> dict:
    """Llama 3 paper sec. 3.3.4: interruptions in a snapshot on up to 16K H100s, and the effective
    training time, with the headroom that time needs: 1/ETT - 1."""
    run = catalog.run(RUN)
    ett = as_float(run.q("effective_training_time"))
    n, window = as_float(run.q("interruptions")), run.q("snapshot_days")
    return dict(name=run.name.split(" (")[0], interruptions=int(n), window=window.to("day"),
                gpus=run.q("gpus").to("GPU"), ett=ett, overhead=1 / ett - 1, mtbi=(window / n).to("hour"))


def fat_tree() -> dict:
    ndr = catalog.interconnect("ib-ndr")
    radix = int(as_float(ndr.q("switch_ports")))
    return dict(name=ndr.q("switch_name"), radix=radix, sizes=fat_tree_sizes(radix))


# --- the claim ------------------------------------------------------------------------------------
# As the source states it: about 6,200 H100s at 40% MFU, a power of two, 15% headroom; its compute is the
# 6ND chapter's 70B (nominal) on 15T tokens. The source names no run length.
CLAIM = dict(n_params=70e9, n_tokens=15e12, gpu="h100-sxm", mfu=0.40, gpus=6200, headroom=0.15)
QUOTE = ("The fleet equation solved for GPU count: about 6,200 H100s at 40% MFU, why it rounds up to a "
         "power of two, and the reasons a good answer adds 15% before naming a number.")
RUN_WORDS = "about 6,200 H100s at 40% MFU"
REASON_WORDS = "the reasons a good answer adds 15%"   # the reasons the source alludes to and never names
HEADROOM_WORDS = "why it rounds up to a power of two, and the reasons a good answer adds 15% before naming a number"
SOURCE = "spec/001, paragraph on the fleet equation (the 6ND chapter's 70B on 15T tokens, H100, 40% MFU)"
MONTH_DAYS = 30.0   # the book's default run length (an assumption), not the claim's


def _base() -> dict:
    return {k: CLAIM[k] for k in ("n_params", "n_tokens", "gpu", "mfu")}


@memoised
def checks() -> dict:
    """The check section's chains, all on the claim's own inputs."""
    at_claim = run_length(**_base(), n_gpus=CLAIM["gpus"])
    month = fleet(**_base(), run_days=MONTH_DAYS, headroom=CLAIM["headroom"], source="the claim")
    sparse = fleet(**_base(), run_days=MONTH_DAYS, headroom=CLAIM["headroom"], peak_field="bf16_sparse",
                   source="the claim")
    claimed_h = CLAIM["gpus"] * (1 + CLAIM["headroom"])
    return dict(run_length=at_claim, month=month, sparse=sparse, claimed_with_headroom=q(claimed_h, "GPU"),
                claimed_planned=q(next_power_of_two(claimed_h), "GPU"),
                orders=rounding_orders(CLAIM["gpus"], CLAIM["headroom"]),
                month_orders=rounding_orders(month["N_gpu"], CLAIM["headroom"]),
                gap=ratio(month["N_gpu"], q(CLAIM["gpus"], "GPU")) - 1,
                reliability=llama3_reliability())


def claims() -> list[Claim]:
    ck = checks()
    T = ck["run_length"]["T"]
    r = ck["reliability"]
    two_months = fleet(**_base(), run_days=2 * MONTH_DAYS, headroom=CLAIM["headroom"], source="the claim")
    plan = ck["orders"]["headroom, then the next power of two (the plan)"]
    other = ck["orders"]["the next power of two, then headroom, then round again"]
    covers = CLAIM["headroom"] >= r["overhead"]
    return [
        Claim("fleet-size", quote=QUOTE, source=SOURCE,
              claimed=f"about {fmt(q(CLAIM['gpus'], 'GPU'))} at {pct(CLAIM['mfu'])} MFU",
              derived=f"{fmt(q(CLAIM['gpus'], 'GPU'))} is a {fmt(T)} run; {fmt(ck['month']['N_gpu'])} at "
                      f"{fmt(q(MONTH_DAYS, 'day'))}",
              # The count is C/(R u T): without T it pins nothing, and a T solved from the count is not a reading.
              verdict=UNCHECKABLE,
              reason=f"The source says \"{RUN_WORDS}\" and names no run length, and the count is inversely "
                     f"proportional to it: {fmt(q(CLAIM['gpus'], 'GPU'))} at {pct(CLAIM['mfu'])} MFU deliver the "
                     f"{fmt(ck['month']['C'])} in {fmt(T)}, and {fmt(ck['month']['N_gpu'])} would at "
                     f"{fmt(q(MONTH_DAYS, 'day'))}, {fmt(two_months['N_gpu'])} at {fmt(two_months['T'])}; "
                     f"a run length solved from the count is not a reading, so the count pins only the "
                     f"{fmt(ck['month']['G'].to('GPU*day'))} the run needs."),
        # The source names no reason for its 15%, so it gives nothing to check the margin against: Llama 3's
        # overhead is a number it never gave, and the book's plan rounds up after the margin by construction.
        Claim("headroom", quote=HEADROOM_WORDS, source=SOURCE,
              claimed=f"+{pct(CLAIM['headroom'])}, then the next power of two",
              derived=f"the book's: {fmt(q(CLAIM['gpus'], 'GPU'))} x {1 + CLAIM['headroom']:.2f} -> "
                      f"{fmt(q(plan, 'GPU'))}; {r['name']}'s overhead {pct(r['overhead'])}",
              verdict=UNCHECKABLE,
              reason=f"The source alludes to \"{REASON_WORDS}\" and names none of them, so its "
                     f"{pct(CLAIM['headroom'])} has nothing of its own to be checked against. The book's own "
                     f"figures: {r['name']}'s {pct(r['ett'])} effective training time (measured by others, a "
                     f"number the source never gave) needs {pct(r['overhead'])} more GPU-time, which {pct(CLAIM['headroom'])} "
                     f"{'covers' if covers else 'does not cover'}; on the claimed count the margin makes "
                     f"{fmt(ck['claimed_with_headroom'])}, and the book's plan rounds that up to "
                     f"{fmt(q(plan, 'GPU'))}, a power of two by construction (rounding first and adding headroom "
                     f"after would name {fmt(q(other, 'GPU'))})."),
    ]


# --- the page's tables, figure and exercises ------------------------------------------------------
def sparse_reading(p) -> Chain | None:
    """The same run with the sparse headline read as the peak (None where the catalog has no such rate)."""
    if "bf16_sparse" not in p.gpu:
        return None
    return fleet(n_params_of(p.model), p.n_tokens, p.gpu, mfu6(p), p.run_days, p.headroom, p.gpus_per_node,
                 peak_field="bf16_sparse")


def at_run_lengths(p, days=(30.0, 45.0, 60.0, 90.0, 120.0)) -> list[Chain]:
    return [fleet(n_params_of(p.model), p.n_tokens, p.gpu, mfu6(p), d, p.headroom, p.gpus_per_node)
            for d in sorted({*days, float(p.run_days)})]


def count_curves(p, mfus, days=(30.0, 60.0, 90.0)) -> dict[float, np.ndarray]:
    """Exact GPU count against MFU, one curve per run length (the parameters' own included)."""
    import numpy as np
    ch = compute(p)
    C, R = as_float(ch["C"], "FLOP"), as_float(ch["R"], "FLOP/s/GPU")
    return {d: C / (R * np.asarray(mfus) * d * 86400) for d in sorted({*days, float(p.run_days)})}


def planned_grid(p, mfus, days) -> np.ndarray:
    """log2 of the planned count (headroom, then the next power of two) over an MFU x run-length grid."""
    import numpy as np
    ch = compute(p)
    C, R = as_float(ch["C"], "FLOP"), as_float(ch["R"], "FLOP/s/GPU")
    M, Dd = np.meshgrid(mfus, days)
    return np.ceil(np.log2(C / (R * M * Dd * 86400) * (1 + p.headroom)))


def what_changes(p, ch: Chain) -> dict:
    """What changes the answer: a lower MFU, a newer chip, and the headroom that rides free in the rounding."""
    low = fleet(n_params_of(p.model), p.n_tokens, p.gpu, 0.30, p.run_days, p.headroom, p.gpus_per_node)
    b200 = fleet(n_params_of(p.model), p.n_tokens, "b200", mfu6(p), p.run_days, p.headroom, p.gpus_per_node)
    return dict(mfu_low=0.30, exact_low=low["N_gpu"], b200_name=catalog.accelerator("b200").name.split(" (")[0],
                b200_exact=b200["N_gpu"], b200_ratio=ratio(b200["N_gpu"], ch["N_gpu"]),
                cliff_planned=2 * ch["N_2"], free_headroom=free_headroom(ch["N_gpu"]),
                free_pow2=q(next_power_of_two(ch["N_gpu"]), "GPU"),
                slack=1 - as_float(ch["T_2"] * (1 + p.headroom) / ch["T"], ""),
                floor_datasheet=(ch["C"] / (ch["R"] * ch["T"])).to("GPU"))


def exercises(p, ch: Chain) -> dict:
    """Worked answers, glued into hidden dropdowns."""
    ex1 = fleet(CLAIM["n_params"], CLAIM["n_tokens"], "b200", 0.35, 60.0, CLAIM["headroom"])
    ck = checks()
    ex2 = run_length(**_base(), n_gpus=4096)
    sparse_n = as_float(ck["sparse"]["N_gpu"], "GPU")
    ex3 = run_length(**_base(), n_gpus=sparse_n)
    return {
        "ex1-gpu": catalog.accelerator("b200").name.split(" (")[0], "ex1-mfu": pct(0.35), "ex1-days": fmt(ex1["T"]),
        "ex1-peak": fmt(ex1["R"]), "ex1-exact": fmt(ex1["N_gpu"]), "ex1-headroom": fmt(ex1["N_h"]),
        "ex1-planned": fmt(ex1["N_2"]),
        "ex2-gpus": fmt(4096), "ex2-days": fmt(ex2["T"]), "ex2-days-h": fmt(ex2["T"] * (1 + CLAIM["headroom"])),
        "ex3-sparse": fmt(ck["sparse"]["N_gpu"]), "ex3-month": fmt(q(MONTH_DAYS, "day")),
        "ex3-mfu": pct(CLAIM["mfu"] * as_float(ck["month"]["N_gpu"], "GPU") / sparse_n),
        "ex3-days": fmt(ex3["T"]), "ex3-mfu-hi": pct(max(r["mfu_printed"] for r in llama3_layouts())),
        "ex-headroom": pct(CLAIM["headroom"]),
    }


def claim_texts() -> dict:
    """The numbers the claim and check prose name."""
    ck = checks()
    return {"claim-n": short(CLAIM["n_params"]), "claim-d": short(CLAIM["n_tokens"]), "claim-mfu": pct(CLAIM["mfu"]),
            "claim-gpus": fmt(q(CLAIM["gpus"], "GPU")), "claim-headroom": pct(CLAIM["headroom"]),
            "claim-T": fmt(ck["run_length"]["T"]), "claim-C": fmt(ck["month"]["C"]),
            "month": fmt(q(MONTH_DAYS, "day")), "claim-exact": fmt(ck["month"]["N_gpu"]),
            "claim-exact-gap": pct(abs(ck["gap"])), "claim-gpu-days": fmt(ck["month"]["G"].to("GPU*day")),
            "claim-times-headroom": fmt(ck["claimed_with_headroom"]),
            "claim-with-headroom": fmt(ck["month"]["N_h"]), "claim-planned": fmt(ck["claimed_planned"]),
            "claim-nodes": fmt(ck["month"]["N_8"]),
            "claim-double": fmt(q(ck["orders"]["the next power of two, then headroom, then round again"], "GPU")),
            "claim-sparse": fmt(ck["sparse"]["N_gpu"]), "claim-planned-days": fmt(ck["month"]["T_2"]),
            "llama-interruptions": str(ck["reliability"]["interruptions"]),
            "llama-window": fmt(ck["reliability"]["window"]), "llama-mtbi": fmt(ck["reliability"]["mtbi"]),
            "llama-gpus": fmt(ck["reliability"]["gpus"]), "llama-ett": pct(ck["reliability"]["ett"]),
            "llama-overhead": pct(ck["reliability"]["overhead"])}


# --- which MFU: published figures restated on the book's 6N basis ------------------------------------
PALM_RUN = "palm-540b-pretraining"
PALM_SRC = "PaLM (Chowdhery et al., arXiv:2204.02311), Table 3 and Appendix B"
MEGATRON = "megatron-lm-throughput"   # software catalog: Narayanan et al. 2021, Table 1 and sec. 5.1 (A100)


def megatron_rows() -> list[dict]:
    """Megatron-LM's two published rates (catalog: software megatron-lm-throughput): sec. 5.1's GPT-3 175B and
    Table 1's 1T model, each with its layers, width and per-GPU TFLOP/s; s and V are every row's."""
    e = catalog.entry("software", MEGATRON)
    def row(key, label):
        gpus = int(as_float(e.q(f"{key}_gpus"), "GPU"))
        return dict(name=label.format(gpus=f"{gpus:,}"), layers=int(as_float(e.q(f"{key}_layers"))),
                    hidden=int(as_float(e.q(f"{key}_hidden"))), tflops=as_float(e.q(f"{key}_tflops_per_gpu"), "TFLOP/s"))
    return [row("gpt3_175b", "GPT-3 175B on {gpus} A100s (sec. 5.1)"), row("t1", "1T on {gpus} A100s (Table 1)")]


def dsv3() -> dict:
    """DeepSeek-V3 pre-training from the run catalog: 4K sequences, the MFUs of the ISCA paper's Table 4, and the
    technical report's GPU-hours and tokens for the second route (H800 has H100 SXM's dense bf16 rate)."""
    r = catalog.run("deepseek-v3-pretraining")
    return dict(seq_len=int(as_float(r.q("seq_len"), "token")), mfu_causal=as_float(r.q("mfu_causal")),
                mfu_noncausal=as_float(r.q("mfu_noncausal")), gpu_hours=as_float(r.q("gpu_hours"), "GPU*hour"),
                tokens=as_float(r.q("tokens"), "token"))


def _palm_basis() -> tuple[float, dict]:
    m = catalog.model(catalog.run(PALM_RUN).q("model"))
    return n_params_of(m), dict(mfu_basis="6N+attention", n_layers=n_layers(m), d_attn=attention_width(m),
                                seq_len=int(as_float(catalog.run(PALM_RUN).q("seq_len"), "token")))


def palm_fleet(headroom: float = 0.0) -> Chain:
    """PaLM's fleet from its own figures: 540B on 780B tokens at 46.2% MFU (6N + 12LHQT) on TPU v4, for the
    compute time its throughput implies (780B tokens / 238.3K tokens/s), not its wall clock."""
    run = catalog.run(PALM_RUN)
    n, basis = _palm_basis()
    days = as_float((run.q("tokens") / run.q("tokens_per_second")).to("day"), "day")
    return fleet(n, as_float(run.q("tokens"), "token"), run.q("accelerator"), as_float(run.q("mfu")), days, headroom,
                 4, kind="spec", source=f"{PALM_SRC}; model and run catalogs", basis=basis,
                 mfu_kind=run["mfu"].kind)


def palm_figures() -> dict:
    """PaLM's fleet re-derived, its MFU on 6N, the 6N-typed error, and the chip-time its wall clock spent."""
    run = catalog.run(PALM_RUN)
    ch = palm_fleet()
    n, basis = _palm_basis()
    as_6n = fleet(n, as_float(run.q("tokens"), "token"), run.q("accelerator"), as_float(run.q("mfu")),
                  as_float(ch["T"], "day"), 0.0, 4, source="PaLM's MFU typed as if it counted 6N")
    chip_hours = (run.q("chips") * run.q("hours_full") + run.q("chips_half") * run.q("hours_half")).to("GPU*hour")
    compute_hours = (ch["N_gpu"] * ch["T"]).to("GPU*hour")
    return dict(chain=ch, chips=run.q("chips").to("GPU"), mfu=as_float(run.q("mfu")), mfu6=as_float(ch["u"]),
                exact=ch["N_gpu"], days=ch["T"], typed_as_6n=as_6n["N_gpu"], chip_hours=chip_hours,
                compute_share=as_float(compute_hours / chip_hours, ""),
                gap=as_float(ch["N_gpu"] / run.q("chips").to("GPU"), "") - 1)


def deepseek_conversion() -> dict:
    """DeepSeek-V3's causal and non-causal MFUs, each restated on 6N (two counts of one run must agree),
    and the MFU its GPU-hours imply on 6N (a second route)."""
    m = catalog.model("deepseek-v3")
    n, L, d = n_params_of(m), n_layers(m), attention_width(m)
    T = dsv3()["seq_len"]
    causal = mfu_to_6n(dsv3()["mfu_causal"], "6N+causal-attention", n, L, d, T)
    noncausal = mfu_to_6n(dsv3()["mfu_noncausal"], "6N+attention", n, L, d, T)
    peak = catalog.accelerator("h100-sxm").q("bf16_dense")
    hours = q(dsv3()["gpu_hours"], "GPU*hour")
    from_hours = as_float(q(6 * n * dsv3()["tokens"], "FLOP") / (hours * peak / q(1, "GPU")), "")
    return dict(n=n, layers=L, d_attn=d, seq_len=T, causal=causal, noncausal=noncausal, from_hours=from_hours,
                typed_error=1 - causal / dsv3()["mfu_causal"])


def megatron_conversion() -> list[dict]:
    """Megatron-LM's per-GPU TFLOP/s (eq. 3, recomputation counted) as MFU on A100's peak, then on 6N, beside
    the 8N shortcut of the 'hardware' basis."""
    peak = as_float(catalog.accelerator("a100-sxm-80gb").q("bf16_dense"), "TFLOP/s")
    e = catalog.entry("software", MEGATRON)
    seq, vocab = int(as_float(e.q("seq_len"), "token")), int(as_float(e.q("vocab")))
    rows = []
    for r in megatron_rows():
        n = gpt_params(r["layers"], r["hidden"], vocab)
        f = megatron_flops_per_token(r["layers"], r["hidden"], seq, vocab)
        printed = r["tflops"] / peak
        rows.append(dict(**r, n=n, printed=printed, mfu6=printed * 6 * n / f, via_8n=mfu_to_6n(printed, "hardware", n),
                         ratio=f / (6 * n)))
    return rows


def conversion_table() -> list[tuple]:
    """The page's table: (run, figure as published, its basis, on 6N, how much too small a fleet the figure
    typed as a 6N MFU would plan: 1 - u_6N / u_typed)."""
    pf, ds = palm_figures(), deepseek_conversion()
    rows = [("PaLM 540B, 6,144 TPU v4 (Table 3)", pct(pf["mfu"]), "6N + 12LHQT", pct(pf["mfu6"]),
             pct(1 - pf["mfu6"] / pf["mfu"])),
            ("DeepSeek-V3, 2,048 H800 (ISCA Table 4)", pct(dsv3()["mfu_causal"], 4), "6N + causal attention",
             pct(ds["causal"]), pct(1 - ds["causal"] / dsv3()["mfu_causal"])),
            ("DeepSeek-V3, same run, non-causal count", pct(dsv3()["mfu_noncausal"], 4), "6N + 12LHQT",
             pct(ds["noncausal"]), pct(1 - ds["noncausal"] / dsv3()["mfu_noncausal"]))]
    for r in megatron_conversion():
        rows.append((f"Megatron-LM {r['name']}", f"{r['tflops']:.0f} TFLOP/s = {pct(r['printed'])}",
                     "96Bslh^2(1 + s/6h + V/16lh), recomputation", pct(r["mfu6"]), pct(1 - r["mfu6"] / r["printed"])))
    return rows


def basis_texts() -> dict:
    """The which-MFU section's numbers for the prose."""
    pf, ds, mg = palm_figures(), deepseek_conversion(), megatron_conversion()
    return {"palm-chips": fmt(pf["chips"]), "palm-mfu": pct(pf["mfu"]), "palm-mfu6": pct(pf["mfu6"]),
            "palm-days": fmt(pf["days"]), "palm-exact": fmt(pf["exact"]), "palm-gap": pct(abs(pf["gap"]), 2),
            "palm-typed": fmt(pf["typed_as_6n"]), "palm-chip-hours": fmt(pf["chip_hours"].to("GPU*hour")),
            "palm-compute-share": pct(pf["compute_share"]),
            "ds-causal": pct(dsv3()["mfu_causal"], 4), "ds-noncausal": pct(dsv3()["mfu_noncausal"], 4),
            "ds-6n-causal": pct(ds["causal"]), "ds-6n-noncausal": pct(ds["noncausal"]),
            "ds-hours-mfu": pct(ds["from_hours"]), "ds-seq": fmt(q(ds["seq_len"], "token")),
            "ds-error": pct(ds["typed_error"]), "ds-dattn": f"{ds['d_attn']:,}",
            "mg-lo": f"{mg[0]['tflops']:.0f}", "mg-hi": f"{mg[1]['tflops']:.0f}",
            "mg-6n-lo": pct(mg[0]["mfu6"]), "mg-6n-hi": pct(mg[1]["mfu6"]),
            "mg-printed-hi": pct(mg[1]["printed"]), "mg-8n-hi": pct(mg[1]["via_8n"]),
            "mg-error-hi": pct(1 - mg[1]["mfu6"] / mg[1]["printed"]),
            "mg-error-lo": pct(1 - mg[0]["mfu6"] / mg[0]["printed"]), "palm-typed-error": pct(1 - pf["mfu6"] / pf["mfu"])}


SPEC = Spec("fleet-size", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
