"""six-nd: training compute by the 6ND rule, and the attention term it leaves out.

C = 6 N D, where N is the parameters a token is multiplied by (the active ones for a mixture of
experts; the input embedding is a lookup, not a product) and D the training tokens. Attention's QK^T and
AV add 6 L T d_attn FLOPs per token with a causal kernel, a share L T d_attn / N of the rule: the model
sets N, L and d_attn together, so the model is one parameter.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.models import attention_width, n_layers, param_count
from utils.params import Param, Result, Spec
from utils.training import attention_flops_per_token, flops_per_parameter_token, six_nd
from utils.units import fmt, pct, q, short
from utils.verdicts import HOLDS, WRONG, Claim, ratio, rounds_to

if TYPE_CHECKING:
    import numpy as np

PARAMETERS = (
    Param("model", "llama-3-70b", "the model: a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-70B, the claim's model"),
    Param("n_tokens", 15e12, "training tokens, D", unit="token", source="the claim (15T tokens)"),
    Param("context_tokens", 8192, "training sequence length, T", unit="token", check="whole",
          source="Llama 3 pre-training context (Llama 3 paper, sec. 3.4.1)"),
)

RESULTS = (
    Result("train_flops", "FLOP", "Training compute, 6ND", of="C"),
    Result("flops_per_token", "FLOP/token", "Training FLOPs per token, 6N", of="c_tok"),
    Result("attention_flops", "FLOP", "Attention FLOPs left out of 6ND (causal)", of="C_att"),
    Result("attention_share", "", "Attention FLOPs relative to 6ND", of="s", percent=True),
    Result("train_flops_with_attention", "FLOP", "Training compute with attention", of="C_total"),
    Result("context_at_10pct", "token", "Context at which attention adds a tenth", of="T_10"),
)


def architecture(m) -> dict:
    """What the chain needs of a model, all from one entry: N (active, multiplied per token), L, d_attn."""
    return dict(n_params=param_count(m)["active"].m, n_layers=n_layers(m), d_attn=attention_width(m))


def training_compute(n_params, n_tokens, context_tokens, n_layers, d_attn, *, kind="assumption",
                     source="parameters cell", sources=None) -> Chain:
    """sources: D's and T's own sources by symbol, where they are not `source` (the model's)."""
    src = {"D": source, "T": source, **(sources or {})}
    ch = Chain("Training compute")
    six_nd(ch, n_params, n_tokens, kind=kind, source=source, source_d=src["D"])
    ch.step("c_tok", "k*N", "FLOP/token", "FLOPs per training token")
    ch.given("L", n_layers, "layers", kind=kind, source=source)
    ch.given("T", q(context_tokens, "token"), "training context", kind=kind, source=src["T"])
    ch.given("d_attn", d_attn, "attention width (heads x head dim)", kind=kind, source=source)
    ch.given("a", q(attention_flops_per_token()["causal"], "FLOP/token**2"),
             "causal attention FLOPs per token, per context token, per width", kind="derived",
             source="the attention products")
    ch.step("C_att", "a*L*T*d_attn*D", "FLOP", "attention FLOPs the rule leaves out")
    ch.step("s", "C_att/C", "", "attention's share, relative to 6ND")
    ch.step("C_total", "C + C_att", "FLOP", "training compute with attention")
    ch.given("s_10", 0.10, "a share worth noticing", kind="assumption", source="this book")
    ch.solve("T_10", "s_10 = a*L*T_10*d_attn*D/(k*N*D)", "token", "context where attention adds that share")
    return ch


def compute(p) -> Chain:
    # D and T show their parameters' own sources while they hold the defaults (SPEC is defined below).
    return training_compute(**architecture(p.model), n_tokens=p.n_tokens, context_tokens=p.context_tokens,
                            kind="spec", source=f"{p.model.name}, counted from its configuration",
                            sources={"D": SPEC.source(p, "n_tokens"), "T": SPEC.source(p, "context_tokens")})


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(n_params=70e9, n_tokens=15e12, train_flops=6.3e24)   # as the source states it


def claim_chain() -> Chain:
    """The claim's own inputs: 70B (nominal) on 15T tokens, with Llama-3-70B's layers and width."""
    arch = architecture(catalog.model("llama-3-70b"))
    return training_compute(CLAIM["n_params"], CLAIM["n_tokens"], 8192, arch["n_layers"], arch["d_attn"],
                            source="the claim")


def paper_route() -> dict:
    """Second route: the Llama 3 paper's own count for 405B on 15.6T tokens, against 6ND on its inputs."""
    run = catalog.run("llama-3-405b-pretraining")
    n = param_count(catalog.model(run.q("model")))["total"]
    ch = training_compute(n.m, run.q("tokens").m, 8192, **{k: v for k, v in
                          architecture(catalog.model(run.q("model"))).items() if k != "n_params"})
    return dict(chain=ch, reported=run.q("train_flops"), n_params=n, n_tokens=run.q("tokens"),
                ratio=ratio(ch["C"], run.q("train_flops")))


QUOTE = ("The 6ND rule, where the 6 comes from, and the 6.3e24 that every training-time and GPU-count question "
         "in the loop is built on.")
# The same source names the run the 6.3e24 is of, in its cost paragraph: "a 70B training token" and "the whole
# 15T-token run" (spec/001). Two figures, so the check is the rounding to two figures.
INPUT_WORDS = ("a 70B training token", "the whole 15T-token run")
FIGURES = 2


def n_readings() -> dict:
    """N as the source's nominal 70B and as Llama-3-70B counted: multiplied per token, and every parameter."""
    counted = param_count(catalog.model("llama-3-70b"))
    return {"nominal": CLAIM["n_params"], "counted, multiplied per token": counted["active"].m,
            "counted, all parameters": counted["total"].m}


def claims() -> list[Claim]:
    ch, claimed = claim_chain(), q(CLAIM["train_flops"], "FLOP")
    k = flops_per_parameter_token()["train"]
    by_n = {name: q(k * n * CLAIM["n_tokens"], "FLOP") for name, n in n_readings().items()}
    holds = all(rounds_to(c, claimed, FIGURES) for c in by_n.values())
    counted = ", ".join(f"{fmt(c, digits=5)} ({name}, {short(n)})" for (name, c), n in zip(by_n.items(), n_readings().values())
                        if name != "nominal")
    return [Claim(
        "train-flops", quote=QUOTE,
        source="spec/001, paragraph on the 6ND rule; its N and D from the same source's cost paragraph",
        claimed=fmt(claimed), derived=fmt(ch["C"]), verdict=HOLDS if holds else WRONG,
        nearest_true="" if holds else f"6ND for Llama-3-70B on {short(CLAIM['n_tokens'])} tokens is {counted}",
        reason=f"The same source names the run: \"{INPUT_WORDS[0]}\" and \"{INPUT_WORDS[1]}\". "
               f"{k} x {short(CLAIM['n_params'])} x {short(CLAIM['n_tokens'])} is {fmt(ch['C'])}, and Llama-3-70B "
               f"counted from its configuration gives {counted}: all three are {fmt(claimed, digits=FIGURES)} at the claim's "
               f"{FIGURES} significant figures. "
               f"The rule leaves out attention, which adds {fmt(ch['s'].m * 100, digits=2)}% at Llama-3-70B's "
               f"{fmt(ch['T'])} training context.")]


@memoised
def checks() -> dict:
    """The check section's numbers: the claim's chain, the paper route, the counted 70B."""
    m = catalog.model("llama-3-70b")
    counted = param_count(m)
    arch = architecture(m)
    return dict(claim=claim_chain(), paper=paper_route(), counted_total=counted["total"],
                counted_active=counted["active"], embedding=counted["embedding"],
                counted_chain=training_compute(counted["active"].m, CLAIM["n_tokens"], 8192,
                                               arch["n_layers"], arch["d_attn"]))


def attention_share_curves(contexts) -> dict[str, np.ndarray]:
    """Attention's share of 6ND against training context, for each Llama 3 model in the catalog."""
    import numpy as np
    k, a = flops_per_parameter_token()["train"], attention_flops_per_token()["causal"]
    out = {}
    for key in (k_ for k_ in catalog.keys("model") if k_.startswith("llama-3")):
        arch = architecture(catalog.model(key))
        out[catalog.model(key).name] = a * arch["n_layers"] * np.asarray(contexts) * arch["d_attn"] / (k * arch["n_params"])
    return out


def what_changes(p, ch: Chain) -> dict:
    """Context and recomputation, on the claim's inputs: attention's share at its 8k context and at 128k, and
    the compute of full activation recomputation (8ND)."""
    k, claim = flops_per_parameter_token(), checks()["claim"]
    arch = architecture(catalog.model("llama-3-70b"))
    long = training_compute(CLAIM["n_params"], CLAIM["n_tokens"], 131072, arch["n_layers"], arch["d_attn"])
    return {"context-8k": claim["T"], "share-8k": pct(claim["s"]), "context-128k": long["T"],
            "share-128k": pct(long["s"]), "k-recompute": str(k["recompute"]),
            "recompute-flops": claim["C"] * k["recompute"] / k["train"]}


def exercises(p, ch: Chain) -> dict:
    """Worked answers on the book's own inputs, glued into hidden dropdowns."""
    paper = paper_route()
    m8 = catalog.model("llama-3-8b")
    ex2 = training_compute(**architecture(m8), n_tokens=CLAIM["n_tokens"], context_tokens=8192)
    ds = catalog.model("deepseek-v3")
    tokens_ds = as_float(catalog.run("deepseek-v3-pretraining").q("tokens"), "token")
    ex3 = training_compute(**architecture(ds), n_tokens=tokens_ds, context_tokens=4096)
    return {
        "ex1-flops": fmt(paper["chain"]["C"]), "ex1-ratio": f"{fmt(paper['ratio'] * 100)}%",
        "ex2-context": fmt(ex2["T_10"]), "ex2-layers": str(n_layers(m8)),
        "ex2-width": f"{attention_width(m8):,}", "ex2-params": fmt(q(architecture(m8)["n_params"], "parameter")),
        "ex3-active": short(architecture(ds)["n_params"]), "ex3-tokens": short(tokens_ds),
        "ex3-flops": fmt(ex3["C"]), "ex3-fraction": f"{fmt(ratio(ex3['C'], claim_chain()['C']) * 100)}%",
    }


def flop_count_check(counted: dict) -> dict:
    """Counted FLOPs of a real step (utils.training.tiny_gpt.count_training_step) against the chain: 6N per token
    over the weight-matrix parameters plus full-square attention (the toy computes the whole square)."""
    ch = training_compute(counted["params_matmul"], counted["tokens"], counted["context"], counted["layers"],
                          counted["d_attn"], source="the tiny model")
    k_att = attention_flops_per_token()
    predicted = ch["C"] + ch["C_att"] * k_att["full"] / k_att["causal"]
    naive = q(flops_per_parameter_token()["train"] * counted["params_total"] * counted["tokens"], "FLOP")
    return dict(counted=q(counted["flops"], "FLOP"), predicted=predicted,
                ratio=ratio(q(counted["flops"], "FLOP"), predicted), naive_ratio=ratio(q(counted["flops"], "FLOP"), naive))


SPEC = Spec("six-nd", PARAMETERS, RESULTS, compute, closed_form=True)
