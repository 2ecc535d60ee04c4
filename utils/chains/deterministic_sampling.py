"""deterministic-sampling: temperature zero leaves the floating-point nondeterminism; a batch-dependent
reduction order moves a row's logits in the last bits; a near-tie flips the greedy token; and what
batch-invariant kernels cost, from published end-to-end times.

The reduction is utils.serving.determinism's controlled-order float32 split-K: the same bits on every machine.
A kernel that picks its split from the batch (to fill the SMs) computes the same row differently in a
batch of one and in a batch of many; the difference d of the top-2 gap, standard deviation s, reverses
a greedy choice when it exceeds the gap. With the gap exponential of mean beta (the top-2 gap of i.i.d.
Gumbel logits), a token flips with probability P = 1/2 - exp(s^2/2beta^2) Q(s/beta) ~ s/(beta sqrt(2 pi)).
"""
from __future__ import annotations

import math

import numpy as np

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.serving.determinism import batch_logits, exact_logits, flip_probability, near_tie, rms, splits_for_batch
from utils.units import fmt, pct, q
from utils.verdicts import HOLDS, WRONG, Claim

SIMULATION = "seeded float32 hidden states and weights, reduced in the orders two batch sizes and a fixed split give"

TML = ("Horace He and Thinking Machines Lab, 'Defeating Nondeterminism in LLM Inference', Connectionism, "
       "2025-09-10 (thinkingmachines.ai/blog/defeating-nondeterminism-in-llm-inference), read 2026-12-01 through "
       "notes quoting it verbatim")
LMSYS = ("The SGLang Team, 'Towards Deterministic Inference in SGLang and Reproducible RL Training', LMSYS blog, "
         "2025-09-22 (lmsys.org/blog/2025-09-22-sglang-deterministic), read 2026-12-01 through a note quoting it")

# The published run: every one of its completions agreed on the first tokens before any forked (TML).
TML_COMPLETIONS, TML_IDENTICAL_PREFIX = 1000, 102

SAMPLER_SEEDS = 20   # seeds of the sampler's own generator tried at each temperature

PARAMETERS = (
    Param("gpu", "h100-sxm", "the GPU whose SMs the batch-variant kernel fills", check="accelerator",
          source="catalog: NVIDIA H100 SXM (its sm_count)"),
    Param("reduction_len", 4096, "K: elements each output sums (the hidden width of an 8B model)", check="whole",
          source="this book's assumption: Llama-3-8B's and Qwen3-8B's hidden size"),
    Param("columns", 256, "outputs (logits) computed per row in the demonstration", check="whole",
          source="this book's choice: enough for the statistics, fast to compute"),
    Param("items_per_row", 8, "work items per row before splitting (a GQA model's KV heads)", check="whole",
          source="this book's assumption: 8 KV heads (Llama-3-8B)"),
    Param("batch_small", 1, "rows in the small batch", check="whole", source="this book's choice"),
    Param("batch_large", 16, "rows in the large batch", check="whole", source="this book's choice"),
    Param("fixed_chunk", 256, "elements per split of the batch-invariant kernel", check="whole",
          source="this book's choice (a fixed split size, as the TML post prescribes)"),
    Param("seed", 0, "numpy Generator seed of the hidden states and weights", check="non_negative",
          source="this book's choice"),
    Param("gap_scale", 2.0, "beta: mean top-2 logit gap (the gap is taken as exponential)", unit="",
          source="this book's assumption: the top-2 gap of i.i.d. Gumbel logits of scale two"),
    Param("modal_share", 0.078, "share of temperature-zero completions equal to the most common one",
          check="fraction", source=TML + ": the most common of the completions occurred in that share"),
    Param("completion_tokens", 1000, "tokens per completion in that experiment", unit="token", check="whole",
          source=TML),
    Param("t_default_s", 26.0, "end-to-end time, default vLLM", unit="s", source=TML + " (Qwen-3-8B, one GPU)"),
    Param("t_deterministic_s", 42.0, "end-to-end time, batch-invariant with the improved attention kernel",
          unit="s", source=TML),
    Param("t_unoptimized_s", 55.0, "end-to-end time, unoptimized deterministic vLLM", unit="s", source=TML),
)

RESULTS = (
    Result("splits_small_batch", "", "Splits the batch-variant kernel picks for the small batch", of="S_1"),
    Result("splits_large_batch", "", "Splits it picks for the large batch", of="S_n"),
    Result("logits_changed", "", "Share of the row's logits whose bits change between the batches", of="c",
           percent=True),
    Result("top_shift_ulps", "", "Largest change, in ulps of the largest logit", of="u"),
    Result("gap_noise_fp32", "", "Noise on a top-2 gap from one float32 reduction, s", of="s"),
    Result("flip_per_token_fp32", "", "Flip probability per token from that noise", of="P_32"),
    Result("flip_per_token_observed", "", "Per-token flip rate a uniform, independent-flip model needs for the "
           "published modal share", of="p_obs"),
    Result("early_divergences_uniform", "", "Completions that model predicts diverge within the published identical "
           "prefix (the run had none)", of="D_0"),
    Result("slowdown_deterministic", "", "Slowdown of batch-invariant inference (published times)", of="x_det",
           percent=True),
    Result("slowdown_unoptimized", "", "Slowdown before the attention kernel was improved", of="x_un",
           percent=True),
)


def validate(p):
    if "sm_count" not in p.gpu:
        raise ParameterError(f"gpu {p.gpu.key!r} has no sm_count in the catalog; choose one that has")
    if p.batch_large <= p.batch_small:
        raise ParameterError(f"batch_large must exceed batch_small, got {p.batch_large} <= {p.batch_small}")
    if p.fixed_chunk > p.reduction_len:
        raise ParameterError(f"fixed_chunk must be at most reduction_len, got {p.fixed_chunk}")
    if p.reduction_len > 16384 or p.columns > 4096 or p.batch_large > 256:
        raise ParameterError("reduction_len, columns and batch_large are capped (16384, 4096, 256) to keep the "
                             "demonstration fast")


def inputs_of(K: int, N: int, B: int, seed: int):
    """Seeded float32 hidden states (B, K) and weights (K, N) scaled so the logits are of order one."""
    rng = np.random.default_rng(int(seed))
    h = rng.standard_normal((B, K)).astype(np.float32)
    W = (rng.standard_normal((K, N)) / math.sqrt(K)).astype(np.float32)
    return h, W


@memoised
def reductions(K: int, N: int, b_small: int, b_large: int, items: int, n_sm: int, chunk: int, seed: int) -> dict:
    """Row 0 computed inside both batches, batch-variant and batch-invariant (cached: deterministic)."""
    h, W = inputs_of(K, N, b_large, seed)
    kw = dict(items_per_row=items, n_sm=n_sm, chunk=chunk)
    v1 = batch_logits(h[:b_small], W, policy="variant", **kw)[0]
    vn = batch_logits(h, W, policy="variant", **kw)[0]
    i1 = batch_logits(h[:b_small], W, policy="invariant", **kw)[0]
    iN = batch_logits(h, W, policy="invariant", **kw)[0]
    d = vn.astype(np.float64) - v1.astype(np.float64)
    top = float(np.max(np.abs(v1)))
    return dict(v1=v1, vn=vn, i1=i1, iN=iN, changed=float(np.mean(v1 != vn)),
                ulps=float(np.max(np.abs(d)) / np.spacing(np.float32(top))), rms=rms(d),
                invariant_same=bool(np.array_equal(i1, iN)))


def compute(p) -> Chain:
    K, N, n_sm = int(p.reduction_len), int(p.columns), int(p.gpu.q("sm_count").m)
    r = reductions(K, N, int(p.batch_small), int(p.batch_large), int(p.items_per_row), n_sm, int(p.fixed_chunk),
                   int(p.seed))
    ch = Chain("A batch-dependent reduction, a near-tie, and what the fix costs")
    ch.given("K", K, "elements each output sums", kind="assumption", source=SPEC.source(p, "reduction_len"))
    ch.given("M", n_sm, f"SMs of the {p.gpu.name}", kind="spec", source=p.gpu["sm_count"].cite)
    kw = dict(items_per_row=int(p.items_per_row), n_sm=n_sm)
    ch.given("S_1", splits_for_batch(int(p.batch_small), **kw), f"splits at a batch of {p.batch_small}",
             kind="assumption", source="utils.serving.determinism.splits_for_batch")
    ch.given("S_n", splits_for_batch(int(p.batch_large), **kw), f"splits at a batch of {p.batch_large}",
             kind="assumption", source="utils.serving.determinism.splits_for_batch")
    ch.given("c", r["changed"], "share of the row's logits whose bits change", kind="assumption",
             source="utils.serving.determinism.split_reduce, run")
    ch.given("u", r["ulps"], "largest change, in ulps of the largest logit", kind="assumption",
             source="utils.serving.determinism.split_reduce, run")
    ch.given("delta", r["rms"], "RMS change of one logit between the batches", kind="assumption",
             source="utils.serving.determinism.split_reduce, run (math.fsum)", digits=3)
    ch.step("s", "sqrt(2)*delta", "", "noise on a top-2 gap: two logits, each moved", digits=3)
    ch.given("beta", p.gap_scale, "mean top-2 logit gap", kind="assumption", source=SPEC.source(p, "gap_scale"))
    s = as_float(ch["s"])
    ch.given("P_32", flip_probability(s, p.gap_scale), "flip probability per token, P(s, beta)", kind="assumption",
             source="utils.serving.determinism.flip_probability", digits=3)
    ch.given("m", p.modal_share, "share of completions equal to the most common", kind="measured-by-others",
             source=TML)
    ch.given("L", q(p.completion_tokens, "token"), "tokens per completion", kind="spec",
             source=SPEC.source(p, "completion_tokens"))
    ch.given("tok", q(1, "token"), "one token", kind="assumption", source="definition")
    ch.step("p_obs", "1 - m**(tok/L)", "", "per-token flip rate if flips were uniform and independent and the modal "
            "completion the one with no flip", digits=3)
    # The same run refutes that model: all its completions agreed on a long first stretch, so flips cluster at a few
    # near-ties; a uniform rate would have forked about a quarter of them inside it.
    ch.given("n_c", TML_COMPLETIONS, "completions in the published run", kind="spec", source=TML)
    ch.given("L_0", q(TML_IDENTICAL_PREFIX, "token"), "first tokens on which all of them agreed",
             kind="measured-by-others", source=TML)
    ch.step("S_0", "(1 - p_obs)**(L_0/tok)", "", "share the uniform model lets through that prefix unchanged", digits=3)
    ch.step("D_0", "n_c*(1 - S_0)", "", "completions the uniform model forks inside it (the run: none)")
    ch.given("T_0", q(p.t_default_s, "s"), "end-to-end time, default", kind="measured-by-others", source=TML)
    ch.given("T_det", q(p.t_deterministic_s, "s"), "end-to-end time, batch-invariant", kind="measured-by-others",
             source=SPEC.source(p, "t_deterministic_s"))
    ch.given("T_un", q(p.t_unoptimized_s, "s"), "end-to-end time, unoptimized batch-invariant",
             kind="measured-by-others",
             source=SPEC.source(p, "t_unoptimized_s"))
    ch.step("x_det", "(T_det - T_0)/T_0", "", "slowdown of batch invariance")
    ch.step("x_un", "(T_un - T_0)/T_0", "", "slowdown before the attention kernel was improved")
    return ch


# --- the claim, judged by running the reduction -----------------------------------------------------
QUOTE = ("Temperature zero removes the sampling randomness and leaves the floating-point kind. The batch your "
         "request lands in changes the reduction order, the logits move in the last bits, and a near-tie flips a "
         "token. The fix has a cost.")
CLAIM = dict(K=4096, N=256, b_small=1, b_large=16, items=8, n_sm=132, chunk=256, seed=0)
# The published figures, from the catalog: TML's end-to-end times (seconds) and LMSYS's slowdowns.
_TML, _SGL = catalog.entry("software", "vllm-batch-invariant"), catalog.entry("software", "sglang-deterministic")
TIMES = {k: as_float(_TML.q(f"t_{field}"), "s") for k, field in
         (("default", "default"), ("det", "deterministic"), ("unopt", "unoptimized"))}
LMSYS_SLOWDOWN = as_float(_SGL.q("tml_slowdown_quoted"))     # LMSYS restating TML's slowdown
SGLANG_SLOWDOWN = as_float(_SGL.q("slowdown"))               # SGLang's own (FlashInfer and FA3 backends)


SEEDS = 5   # hidden states and weights redrawn on seeds 0 .. 4: each step of the claim must reproduce on every one


def seed_check(seed: int) -> dict:
    """The claim's steps on one seed's hidden states and weights: the reduction in both batches, a near-tie made
    from the row, and which token each kernel picks from it in each batch."""
    from utils.components.sampling import probabilities
    C = CLAIM
    r = reductions(C["K"], C["N"], C["b_small"], C["b_large"], C["items"], C["n_sm"], C["chunk"], seed)
    h, W = inputs_of(C["K"], C["N"], C["b_large"], seed)
    kw = dict(items_per_row=C["items"], n_sm=C["n_sm"], chunk=C["chunk"])
    nt = near_tie(h[0], W, batch_rows=C["b_large"], seed=seed, candidates=64, policy_kw=kw)
    pick = {}
    for policy in ("variant", "invariant"):
        for n in ("one", "many"):
            a_val, b_val = nt[policy][n]
            pick[policy, n] = "b" if int(np.argmax(probabilities(np.array([a_val, b_val]), 0.0))) == 1 else "a"
    bits = math.log2(max(r["ulps"], 1))
    flipped = pick["variant", "one"] != pick["variant", "many"] and pick["invariant", "one"] == pick["invariant", "many"]
    return dict(r=r, nt=nt, pick=pick, bits=bits, h=h, W=W,
                holds=0 < r["changed"] and bits < 8 and flipped and r["invariant_same"])


@memoised
def checks() -> dict:
    from utils.components.sampling import sample
    C = CLAIM
    runs = [seed_check(s) for s in range(SEEDS)]
    page = runs[C["seed"]]
    r, h, W = page["r"], page["h"], page["W"]
    row = np.asarray(r["v1"], dtype=np.float64)
    # temperature zero: the token does not depend on the sampler's seed; at T = 0.7 it does
    greedy = {int(sample(row, 0.0, rng=np.random.default_rng(s))) for s in range(SAMPLER_SEEDS)}
    warm = {int(sample(row, 0.7, rng=np.random.default_rng(s))) for s in range(SAMPLER_SEEDS)}
    exact = exact_logits(h[:1], W)[0]
    err = dict(one=rms(np.asarray(r["v1"], np.float64) - exact), many=rms(np.asarray(r["vn"], np.float64) - exact))
    changed = [x["r"]["changed"] for x in runs]
    ulps = [x["r"]["ulps"] for x in runs]
    return dict(r=r, nt=page["nt"], greedy=greedy, warm=warm, pick=page["pick"], err=err, bits=page["bits"],
                every_seed=all(x["holds"] for x in runs), changed=(min(changed), max(changed)),
                ulps=(min(ulps), max(ulps)),
                splits=(splits_for_batch(C["b_small"], items_per_row=C["items"], n_sm=C["n_sm"]),
                        splits_for_batch(C["b_large"], items_per_row=C["items"], n_sm=C["n_sm"])),
                slowdown=TIMES["det"] / TIMES["default"] - 1, unopt=TIMES["unopt"] / TIMES["default"] - 1)


def spread(p) -> dict:
    """The seeded results over SEEDS seeds from p's: (lowest, highest) of each, as plain numbers."""
    runs = [SPEC.extract(compute(p.replace(seed=p.seed + i))) for i in range(SEEDS)]
    names = ("logits_changed", "top_shift_ulps", "gap_noise_fp32", "flip_per_token_fp32")
    return {n: (min(float(r[n].m) for r in runs), max(float(r[n].m) for r in runs)) for n in names}


def span(lo_hi, f=fmt) -> str:
    lo, hi = (f(x) for x in lo_hi)
    return lo if lo == hi else f"{lo} to {hi}"


def claims() -> list[Claim]:
    ck = checks()
    r, pick = ck["r"], ck["pick"]
    # moved in the lowest few of float32's 24 significand bits, flipped by the batch, not by the fixed split: every seed
    costs = ck["slowdown"] > 0 and abs(ck["slowdown"] - LMSYS_SLOWDOWN) < 0.0005
    ok = len(ck["greedy"]) == 1 and len(ck["warm"]) > 1 and ck["every_seed"] and costs
    return [Claim(
        "batch-flips-a-token", quote=QUOTE, source="spec/001 (the deterministic-sampling paragraph)",
        claimed="T = 0 leaves float nondeterminism; the batch moves logits in the last bits; a near-tie flips; the fix costs",
        derived=f"{pct(r['changed'])} of the row's logits change, by up to {fmt(r['ulps'])} ulps; a near-tie of "
                f"{fmt(ck['nt']['exact_gap'], digits=2)} flips; batch invariance costs {pct(ck['slowdown'])}",
        # Every step reproduces as written with the mechanism the source itself names (a kernel that picks its split
        # from the batch, as serving kernels do to fill the SMs): no reading is needed, so it holds.
        verdict=HOLDS if ok else WRONG,
        nearest_true="" if ok else "one of the paragraph's steps did not reproduce: see the check",
        reason=(f"at temperature zero {SAMPLER_SEEDS} sampler seeds gave {fmt(len(ck['greedy']))} token; the same row in a "
                f"batch of {fmt(CLAIM['b_small'])} and of {fmt(CLAIM['b_large'])} changed {pct(r['changed'])} of its "
                f"logits by at most {fmt(r['ulps'])} ulps of the largest; a near-tie of "
                f"{fmt(ck['nt']['exact_gap'], digits=2)} picked token {pick['variant', 'one']} in one and "
                f"{pick['variant', 'many']} in the other, while the fixed split picked {pick['invariant', 'one']} in "
                f"both; on each of {SEEDS} seeds of the hidden states and weights the logits moved ({span(ck['changed'], pct)} "
                f"of them, by at most {fmt(ck['ulps'][1])} ulps) and a near-tie flipped only under the batch-variant "
                f"split; the published times give a slowdown of {pct(ck['slowdown'])}."))]


def check_text(ck: dict) -> dict:
    r, nt, pick = ck["r"], ck["nt"], ck["pick"]
    (a1, b1), (an, bn) = nt["variant"]["one"], nt["variant"]["many"]
    return {"ck-seeds": fmt(SAMPLER_SEEDS), "ck-data-seeds": fmt(SEEDS), "ck-changed-range": span(ck["changed"], pct),
            "ck-ulps-range": span(ck["ulps"]), "ck-k": fmt(CLAIM["K"]), "ck-n": fmt(CLAIM["N"]), "ck-b1": fmt(CLAIM["b_small"]),
            "ck-bn": fmt(CLAIM["b_large"]), "ck-s1": fmt(ck["splits"][0]), "ck-sn": fmt(ck["splits"][1]),
            "ck-chunk": fmt(CLAIM["chunk"]), "ck-sm": fmt(CLAIM["n_sm"]), "ck-items": fmt(CLAIM["items"]),
            "ck-changed": pct(r["changed"]), "ck-ulps": fmt(r["ulps"]), "ck-bits": fmt(math.ceil(ck["bits"])),
            "ck-err-one": fmt(ck["err"]["one"], digits=2), "ck-err-many": fmt(ck["err"]["many"], digits=2),
            "ck-gap": fmt(nt["exact_gap"], digits=2), "ck-top": fmt(nt["top"], digits=4),
            "ck-a1": f"{a1:.9g}", "ck-b1v": f"{b1:.9g}", "ck-an": f"{an:.9g}", "ck-bnv": f"{bn:.9g}",
            "ck-pick1": pick["variant", "one"], "ck-pickn": pick["variant", "many"],
            "ck-pick-inv": pick["invariant", "one"], "ck-greedy": fmt(len(ck["greedy"])),
            "ck-warm": fmt(len(ck["warm"])), "ck-slow": pct(ck["slowdown"]), "ck-lmsys": pct(LMSYS_SLOWDOWN),
            "ck-sglang": pct(SGLANG_SLOWDOWN, digits=4), "ck-unopt": pct(ck["unopt"])}


def near_tie_rows(ck: dict) -> list[list[str]]:
    nt, pick = ck["nt"], ck["pick"]
    rows = []
    for policy, label in (("variant", "split from the batch"), ("invariant", "fixed split size")):
        for n, b in (("one", CLAIM["b_small"]), ("many", CLAIM["b_large"])):
            a_val, b_val = nt[policy][n]
            rows.append([label, fmt(b), f"`{a_val:.9g}`", f"`{b_val:.9g}`", f"token {pick[policy, n]}"])
    return rows


# --- figure, what changes, exercises --------------------------------------------------------------
def flip_curve(betas=(0.5, 1.0, 2.0, 4.0), s=None) -> dict:
    s = np.logspace(-7, 0, 43) if s is None else np.asarray(s, float)
    return dict(s=s, curves={b: np.array([flip_probability(float(x), b) for x in s]) for b in betas})


def what_changes(p, ch) -> dict:
    r = ch
    beta = p.gap_scale
    b_lo, b_hi = 0.5, 4.0
    return {"wc-beta-lo": fmt(b_lo), "wc-beta-hi": fmt(b_hi),
            "wc-p-lo": fmt(flip_probability(as_float(r["s"]), b_lo), digits=2),
            "wc-p-hi": fmt(flip_probability(as_float(r["s"]), b_hi), digits=2),
            "wc-p32": fmt(as_float(r["P_32"]), digits=2), "wc-beta": fmt(beta),
            "wc-sglang": pct(SGLANG_SLOWDOWN, digits=4), "wc-det": pct(as_float(r["x_det"])),
            "wc-un": pct(as_float(r["x_un"]))}


def exercises(p, ch) -> dict:
    r = ch
    p_obs = as_float(r["p_obs"])
    # 2: GPU-hours: a fleet serving with batch-invariant kernels needs 1 + x_det times the GPU time
    x = as_float(r["x_det"])
    gpus = 1000
    # 3: a fixed NUMBER of splits at two KV lengths: chunk sizes differ, so the order differs
    k1, k2, splits = 1000, 1001, 4
    return {"ex1-l": fmt(r["L_0"]), "ex1-n": fmt(r["n_c"]), "ex1-p": fmt(p_obs, digits=3),
            "ex1-same": pct(as_float(r["S_0"])), "ex1-d": fmt(r["D_0"]),
            "ex2-gpus": fmt(q(gpus, "GPU")), "ex2-x": pct(x), "ex2-more": fmt(q(gpus * x, "GPU")),
            "ex3-k1": fmt(k1), "ex3-k2": fmt(k2), "ex3-s": fmt(splits), "ex3-c1": fmt(math.ceil(k1 / splits)),
            "ex3-c2": fmt(math.ceil(k2 / splits)), "ex3-fixed": fmt(256),
            "ex3-n1": fmt(math.ceil(k1 / 256)), "ex3-n2": fmt(math.ceil(k2 / 256))}


SPEC = Spec("deterministic-sampling", PARAMETERS, RESULTS, compute, validate=validate)
