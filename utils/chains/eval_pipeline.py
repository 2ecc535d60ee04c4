"""eval-pipeline: two thousand evals against every checkpoint, as a batch inference job.

The prompts a run asks for are evals x prompts per eval x samples per prompt x checkpoints; the source
names none of the last three, so each is this book's stated assumption and the claim is judged on them.
The job's rate is the continuous-batching chain's tokens per second per replica over the output tokens
per prompt; its turnaround is the work over the replicas, divided by how busy the sharding keeps them
(round robin of whole evals against longest-processing-time-first on shards, utils.fleet.bin_packing). A
content-addressed cache (utils.fleet.eval_cache) serves what repeats: the base model's baseline and re-runs
against the same checkpoint, never a new checkpoint's outputs. An eval score is a binomial share, so its
standard error sets the smallest regression worth believing.
"""
from __future__ import annotations

import math

import numpy as np

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.chains import continuous_batching
from utils.chains import continuous_batching as cb
from utils.fleet import bin_packing, eval_cache
from utils.params import Param, ParameterError, Result, Spec
from utils.units import duration, fmt, pct, q, short
from utils.verdicts import UNCHECKABLE, Claim, rounds_to

SIMULATION = "a seeded long tail of eval sizes (lognormal), packed onto replicas by round robin and by LPT"

# The two public evals that bound the size range (catalog software: their dataset cards).
HUMANEVAL_PROBLEMS = int(as_float(catalog.entry("software", "humaneval").q("problems")))
MMLU_TEST_QUESTIONS = int(as_float(catalog.entry("software", "mmlu").q("test_questions")))
SIZES_SOURCE = (f"this book's assumption: public evals run from about a hundred prompts (HumanEval's {HUMANEVAL_PROBLEMS}) to "
                f"tens of thousands (MMLU's {MMLU_TEST_QUESTIONS:,}); a lognormal with a median of five hundred and a spread of "
                "one and a half in log space puts the suite's largest eval near that upper end")
SAMPLES_SOURCE = ("this book's assumption: most evals decode greedily (one sample); a tenth score pass@k on "
                  "code or maths, with ten samples a prompt (the HumanEval paper, arXiv:2107.03374, reports pass@k "
                  "from many samples a problem)")
FLEET_SOURCE = "this book's assumption: eight nodes of eight GPUs lent to evals between training checkpoints"
CACHE_SOURCE = ("this book's assumption: each report compares the checkpoint against the base model on the "
                "same suite, and a tenth of evals are re-run against the same checkpoint (a failed shard, a "
                "fixed grader, a new metric on old outputs)")

PARAMETERS = (
    Param("n_evals", 2000, "evals in the suite", check="whole", source="the claim (two thousand evals)"),
    Param("median_prompts", 500.0, "median prompts per eval (the long tail's middle)", source=SIZES_SOURCE),
    Param("size_spread", 1.5, "spread of eval sizes: the standard deviation of log(prompts)", check="non_negative",
          source=SIZES_SOURCE),
    Param("sampled_share", 0.1, "share of evals scored by sampling several completions a prompt", check="share",
          source=SAMPLES_SOURCE),
    Param("samples_per_prompt", 10, "completions a prompt in a sampled eval (pass@k's n)", check="whole",
          source=SAMPLES_SOURCE),
    Param("checkpoints", 1, "checkpoints one run evaluates (1: a run is one checkpoint's pass)", check="whole",
          source="the reading taken: 'against every checkpoint' is one pass per checkpoint"),
    Param("model", "llama-3-70b", "the model under evaluation (a catalog key or a config.json)", check="model",
          source="catalog: Llama-3-70B, the book's serving model"),
    Param("gpu", "h100-sxm", "the accelerator", check="accelerator", source="catalog: H100 SXM"),
    Param("gpus_per_replica", 8, "GPUs holding one copy of the model", unit="GPU", check="whole",
          source="the continuous-batching chain's replica"),
    Param("mean_prompt_tokens", 1024, "mean prompt per eval request (few-shot examples included)", unit="token",
          check="whole", source="this book's assumption: a five-shot prompt"),
    Param("mean_output_tokens", 256, "mean completion per eval request", unit="token", check="whole",
          source="this book's assumption: an answer with its reasoning"),
    Param("gpus", 64, "GPUs the eval job holds", unit="GPU", check="whole", source=FLEET_SOURCE),
    Param("max_shard", 500, "most prompt-samples in one shard (an eval larger than this is split)", check="whole",
          source="this book's assumption: a shard a replica finishes in a few minutes"),
    Param("sweep_checkpoints", 20, "checkpoints a training run evaluates over its life (for the cache)",
          check="whole", source="this book's assumption: one every few thousand steps"),
    Param("baseline", True, "each report also scores the base model on the same suite", check="bool",
          source=CACHE_SOURCE),
    Param("rerun_share", 0.1, "share of evals re-run against the same checkpoint", check="share", source=CACHE_SOURCE),
    Param("eval_prompts", 500, "prompts in the eval whose regression is read", check="whole",
          source="the brief's example: a five-hundred-prompt eval"),
    Param("eval_accuracy", 0.7, "its score, a share of prompts right", check="fraction",
          source="this book's assumption"),
    Param("seed", 0, "seed of the eval sizes", check="non_negative", source="this book's choice"),
)
REFUSED = {name: "tokens per second follow from model=, gpu= and gpus_per_replica= through the continuous-batching "
                 "chain; set those instead" for name in ("tokens_per_second", "throughput")}

RESULTS = (
    Result("prompts_per_eval", "request", "Mean prompts per eval (seeded long tail)", of="n_bar"),
    Result("samples_per_prompt_mean", "", "Mean completions per prompt", of="s_bar"),
    Result("prompts_per_run", "request", "Prompt-samples per run", of="N"),
    Result("replica_tokens_per_second", "token/s", "Output tokens per second, one replica", of="X"),
    Result("replica_prompts_per_second", "request/s", "Prompt-samples per second, one replica", of="r_p"),
    Result("turnaround_ideal", "h", "Turnaround with every GPU busy to the end", of="T_0"),
    Result("utilisation_round_robin", "", "Utilisation, whole evals dealt round robin", of="U_rr", percent=True),
    Result("utilisation_lpt", "", "Utilisation, shards packed largest first", of="U_lpt", percent=True),
    Result("turnaround_round_robin", "h", "Turnaround, round robin of whole evals", of="T_rr"),
    Result("turnaround_lpt", "h", "Turnaround, LPT on shards", of="T_lpt"),
    Result("gpus_for_four_hours", "GPU", "GPUs for a four-hour turnaround (LPT on shards)", of="G_4h"),
    Result("gpus_for_two_days", "GPU", "GPUs for a two-day turnaround", of="G_2d"),
    Result("cache_hit_rate", "", "Cache hit rate over the run's checkpoints", of="h", percent=True),
    Result("score_standard_error", "", "Standard error of the eval's score", of="se", percent=True),
    Result("difference_standard_error", "", "Standard error of a difference of two runs", of="se_d", percent=True),
    Result("smallest_believable_change", "", "Smallest change outside noise (two-sided, 95%)", of="delta_95",
           percent=True),
)

FOUR_HOURS, TWO_DAYS = 4.0, 48.0            # the claim's two turnarounds, hours
Z95 = 1.959964                              # two-sided 95% normal quantile


def validate(p):
    if p.samples_per_prompt < 1:
        raise ParameterError(f"samples_per_prompt must be at least 1, got {p.samples_per_prompt!r}")
    if p.gpus % p.gpus_per_replica:
        raise ParameterError(f"gpus={p.gpus!r} is not a whole number of {p.gpus_per_replica}-GPU replicas")
    if p.max_shard < 1:
        raise ParameterError(f"max_shard must be at least 1, got {p.max_shard!r}")
    if p.n_evals < 1 or p.n_evals > 100000:
        raise ParameterError(f"n_evals must be between 1 and 100,000, got {p.n_evals!r}")
    if p.size_spread > MAX_SPREAD:
        raise ParameterError(f"size_spread above {MAX_SPREAD:g} puts the largest of the suite's evals past any float "
                             f"(e^{MAX_SPREAD:g} is a factor of {fmt(math.exp(MAX_SPREAD))} a standard deviation), "
                             f"got {p.size_spread!r}")


MAX_SPREAD = 20.0           # size_spread's bound: a lognormal draw stays a float (e^(20 x 5 deviations) x 1e30)
MAX_WORK = 10**15           # prompt-samples of one eval over the run's checkpoints: counted exactly in a float


def eval_sizes(n_evals, median, spread, sampled_share, samples, seed, checkpoints=1) -> dict:
    """The suite: prompts per eval (a seeded lognormal, at least one) and completions per prompt."""
    rng = np.random.default_rng(seed)
    drawn = np.maximum(1, np.rint(rng.lognormal(math.log(median), spread, n_evals)))
    if (largest := float(drawn.max()) * samples * checkpoints) > MAX_WORK:
        raise ParameterError(f"the suite's largest eval is {fmt(largest)} prompt-samples over the run's checkpoints; "
                             f"above {fmt(MAX_WORK)} its count is no longer exact in a float: lower median_prompts, "
                             f"size_spread, samples_per_prompt or checkpoints")
    prompts = drawn.astype(np.int64)
    sampled = rng.random(n_evals) < sampled_share
    per = np.where(sampled, samples, 1)
    return dict(prompts=prompts, samples=per, work=prompts * per)


def packing(work, replicas: int, max_shard: int) -> dict:
    """Utilisation of the two schedules: whole evals round robin; shards of max_shard largest first."""
    rr = bin_packing.round_robin(work, replicas)
    whole = bin_packing.lpt(work, replicas)
    sizes, counts = bin_packing.shard_counts(work, max_shard)     # (size, count): a run's shards may not fit in memory
    sh = bin_packing.lpt(sizes, replicas, counts)
    return dict(rr=bin_packing.utilisation(rr), lpt_whole=bin_packing.utilisation(whole),
                lpt=bin_packing.utilisation(sh), largest=int(np.max(work)), mean_load=float(np.mean(rr)))


def hit_rate(n_prompts, checkpoints, baseline, rerun_share) -> float:
    """Over a sweep: every checkpoint's own outputs miss; the baseline misses once, then hits; re-runs hit."""
    own = checkpoints * n_prompts
    base = checkpoints * n_prompts if baseline else 0.0
    rerun = checkpoints * rerun_share * n_prompts
    hits = (base - (n_prompts if baseline else 0.0)) + rerun
    return hits / (own + base + rerun)


def throughput_chain(p):

    pc = continuous_batching.SPEC.check(model=p.model.key, gpu=p.gpu.key, gpus_per_replica=p.gpus_per_replica,
                      mean_prompt_tokens=p.mean_prompt_tokens, mean_output_tokens=p.mean_output_tokens)
    return cb.batching_chain(pc, source="the continuous-batching chain")


def compute(p) -> Chain:
    suite = eval_sizes(p.n_evals, p.median_prompts, p.size_spread, p.sampled_share, p.samples_per_prompt, p.seed,
                       p.checkpoints)
    ec = throughput_chain(p)
    R = p.gpus // p.gpus_per_replica
    pk = packing(suite["work"] * p.checkpoints, R, p.max_shard)
    ch = Chain("Two thousand evals against a checkpoint, as a batch job")
    ch.given("E", q(p.n_evals, "request/request"), "evals in the suite", kind="assumption",
             source=SPEC.source(p, "n_evals"))
    ch.given("n_bar", q(float(suite["prompts"].mean()), "request"), "mean prompts per eval (seeded long tail)",
             kind="derived", source=SIZES_SOURCE)
    ch.given("s_bar", float(suite["work"].sum() / suite["prompts"].sum()), "mean completions per prompt",
             kind="derived", source=SAMPLES_SOURCE)
    ch.given("C", float(p.checkpoints), "checkpoints a run evaluates", kind="assumption",
             source=SPEC.source(p, "checkpoints"))
    ch.step("N", "E*n_bar*s_bar*C", "request", "prompt-samples per run")
    ch.given("X", ec["X"], "output tokens per second, one replica", kind="derived",
             source="the continuous-batching chain (its batch, step and prefill chunks)")
    ch.given("o", q(p.mean_output_tokens, "token/request"), "output tokens per prompt-sample", kind="assumption",
             source=SPEC.source(p, "mean_output_tokens"))
    ch.step("r_p", "X/o", "request/s", "prompt-samples per second, one replica")
    ch.given("g", q(p.gpus_per_replica, "GPU"), "GPUs per replica", kind="assumption",
             source=SPEC.source(p, "gpus_per_replica"))
    ch.given("G", q(p.gpus, "GPU"), "GPUs the job holds", kind="assumption", source=SPEC.source(p, "gpus"))
    ch.step("T_0", "N*g/(G*r_p)", "h", "turnaround with every replica busy to the end")
    ch.given("U_rr", pk["rr"], "utilisation: whole evals dealt round robin", kind="derived",
             source="utils.fleet.bin_packing.round_robin on the seeded suite")
    ch.given("U_lpt", pk["lpt"], "utilisation: shards, largest first to the least loaded", kind="derived",
             source="utils.fleet.bin_packing.lpt on utils.fleet.bin_packing.shard")
    ch.step("T_rr", "T_0/U_rr", "h", "turnaround, round robin")
    ch.step("T_lpt", "T_0/U_lpt", "h", "turnaround, LPT on shards")
    ch.given("T_4", q(FOUR_HOURS, "h"), "the fast turnaround", kind="assumption", source="the claim")
    ch.given("T_2d", q(TWO_DAYS, "h"), "the slow turnaround", kind="assumption", source="the claim")
    ch.step("G_4h", "N*g/(r_p*U_lpt*T_4)", "GPU", "GPUs for four hours")
    ch.step("G_2d", "N*g/(r_p*U_lpt*T_2d)", "GPU", "GPUs for two days")
    ch.given("h", hit_rate(1.0, p.sweep_checkpoints, p.baseline, p.rerun_share), "cache hit rate over the sweep",
             kind="derived", source="utils.chains.eval_pipeline.hit_rate (checked against utils.fleet.eval_cache)")
    ch.given("a", float(p.eval_accuracy), "the eval's score", kind="assumption", source=SPEC.source(p, "eval_accuracy"))
    ch.given("n_e", float(p.eval_prompts), "prompts in that eval", kind="assumption",
             source=SPEC.source(p, "eval_prompts"))
    ch.step("se", "sqrt(a*(1 - a)/n_e)", "", "binomial standard error of the score")
    ch.step("se_d", "sqrt(2)*se", "", "standard error of the difference of two independent runs")
    ch.given("z", Z95, "two-sided 95% normal quantile", kind="derived", source="the normal distribution")
    ch.step("delta_95", "z*se_d", "", "smallest change outside noise")
    ch.data.update(suite=suite, packing=pk)
    return ch


# --- the claim ------------------------------------------------------------------------------------------
QUOTE = ("Two thousand evals against every checkpoint is ten million prompts per run and the difference "
         "between a four-hour and a two-day turnaround.")
CLAIMED = 10e6


def claim_inputs(**over):

    return SPEC.check(**over)


def expected_prompts(p) -> float:
    """The suite's prompt-samples in expectation (the lognormal's mean, median x exp(spread^2 / 2)), so the
    verdict does not hang on one seed's draw of the tail."""
    mean = p.median_prompts * math.exp(p.size_spread ** 2 / 2)
    return p.n_evals * mean * (1 + p.sampled_share * (p.samples_per_prompt - 1)) * p.checkpoints


SEEDS = 5   # the suite's tail redrawn on seeds seed .. seed + 4: its figures are shown as their range over these
SPREAD = ("prompts_per_run", "turnaround_lpt", "gpus_for_four_hours", "gpus_for_two_days", "utilisation_round_robin",
          "utilisation_lpt")


def spread(p) -> dict:
    """The seeded figures' (lowest, highest) over SEEDS seeds from p's, each as a Quantity in its Result unit."""
    runs = [SPEC.extract(compute(p.replace(seed=p.seed + i))) for i in range(SEEDS)]
    return {n: (min(r[n] for r in runs), max(r[n] for r in runs)) for n in SPREAD}


@memoised
def claim_spread() -> dict:
    return spread(claim_inputs())


def span(lo_hi, f=fmt) -> str:
    """'4.76e6 to 6.35e6 requests': a range with its unit said once."""
    lo, hi = (f(x) for x in lo_hi)
    unit = hi.partition(" ")[2]
    if unit and lo.endswith(" " + unit):
        lo = lo[: -len(unit) - 1]
    return lo if lo == hi else f"{lo} to {hi}"


def claims() -> list[Claim]:
    p = claim_inputs()
    N_exp = expected_prompts(p)
    N = span(claim_spread()["prompts_per_run"], lambda x: short(as_float(x, "request")))
    N20 = expected_prompts(claim_inputs(checkpoints=20))
    ok = rounds_to(N_exp, CLAIMED, 1)      # the claim's one figure: 5.85M rounds to 6M, not 10M
    return [Claim(
        "prompts", quote=QUOTE, source="spec/000 and spec/001, the paragraph on the eval pipeline",
        claimed=short(CLAIMED) + " prompts per run", derived=short(N_exp) + " prompt-samples per checkpoint",
        # The sentence names no factor (prompts per eval, samples, checkpoints per run): the count is this book's
        # assumptions multiplied, and an assumption is not a reading. Within rounding or not, it cannot be checked.
        verdict=UNCHECKABLE,
        reason=f"{fmt(p.n_evals)} evals x {fmt(p.median_prompts * math.exp(p.size_spread ** 2 / 2))} prompts (the tail's "
               f"mean) x {fmt(1 + p.sampled_share * (p.samples_per_prompt - 1))} completions is {short(N_exp)} "
               f"(the seeded suites: {N} over {SEEDS} seeds), the book's figure, which {'rounds' if ok else 'does not round'} to "
               f"{short(CLAIMED)} at the claim's one figure and is {fmt(CLAIMED / N_exp)} times short of it; read "
               f"as a training run of {fmt(20)} checkpoints it would be {short(N20)}, and the sentence names none "
               f"of the factors.")]


# --- the page's tables, checks, figure, what changes, exercises --------------------------------------------
def factor_rows(ch) -> list[list[str]]:
    return [["evals", fmt(as_float(ch["E"])), "the claim"],
            ["prompts per eval (mean of the seeded tail)", fmt(ch["n_bar"]), "assumption"],
            ["completions per prompt (mean)", fmt(as_float(ch["s_bar"])), "assumption"],
            ["checkpoints per run", fmt(as_float(ch["C"])), "the reading"],
            ["prompt-samples per run", short(as_float(ch["N"], "request")), "product"]]


def cache_check(n_prompts=200, checkpoints=5, baseline=True, rerun_share=0.1) -> dict:
    """The closed-form hit rate against utils.fleet.eval_cache run over a small sweep (greedy decoding)."""
    c = eval_cache.EvalCache()
    greedy = {"temperature": 0.0, "max_tokens": 256}
    prompts = [f"prompt {i}" for i in range(n_prompts)]
    n_rerun = int(round(rerun_share * n_prompts))
    run = lambda s: s[::-1]          # noqa: E731  (a stand-in model: any deterministic function)
    for k in range(checkpoints):
        ck = f"ckpt-{k}"
        for s in prompts:
            c.get_or_run(ck, s, greedy, run)
            if baseline:
                c.get_or_run("base", s, greedy, run)
        for s in prompts[:n_rerun]:
            c.get_or_run(ck, s, greedy, run)
    return dict(simulated=c.hit_rate, closed=hit_rate(n_prompts, checkpoints, baseline, n_rerun / n_prompts),
                hits=c.hits, misses=c.misses)


def cache_rows() -> list[list[str]]:
    return [["the base model's baseline, every report after the first", "hit", "same checkpoint id, prompt, parameters"],
            ["an unchanged eval re-run against the same checkpoint", "hit", "same key"],
            ["a new checkpoint's outputs", "miss", "the checkpoint id is in the key"],
            ["a prompt template edited by one space", "miss", "the prompt is in the key"],
            ["max_tokens raised from 256 to 512", "miss", "the sampling parameters are in the key"],
            ["sampling at temperature above zero without a seed", "refused", "no key fixes the draw"]]


def case_rows() -> list[list[str]]:
    """The cases tests/fleet/test_eval_cache.py and tests/fleet/test_bin_packing.py hold, run live."""
    g = {"temperature": 0.0, "max_tokens": 256}
    same = eval_cache.key("c", "p", {"temperature": 0.7, "top_p": 0.9, "seed": 1}) == \
        eval_cache.key("c", "p", {"seed": 1, "top_p": 0.9, "temperature": 0.7})
    try:
        eval_cache.canonical({"temperature": 1.0})
        refused = "served"
    except ValueError:
        refused = "refused"
    tight = bin_packing.makespan(bin_packing.lpt([3, 3, 2, 2, 2], 2))
    tail = [1000] + [10] * 99
    return [["same parameters in another order", "same key", "same key" if same else "different"],
            ["greedy with a seed and top_p set", "the greedy key",
             "the greedy key" if eval_cache.key("c", "p", {"temperature": 0, "seed": 3, "max_tokens": 256}) ==
             eval_cache.key("c", "p", g) else "different"],
            ["sampling without a seed", "refused", refused],
            ["Graham's tight instance on two replicas", "LPT makespan seven against six", fmt(tight)],
            ["one eval of a thousand beside ninety-nine of ten, ten replicas, whole",
             "utilisation under a fifth", pct(bin_packing.utilisation(bin_packing.lpt(tail, 10)))],
            ["the same, sharded at fifty", "utilisation above ninety-five percent",
             pct(bin_packing.utilisation(bin_packing.lpt(bin_packing.shard(tail, 50), 10)))],
            ["LPT on random small instances", "within Graham's bound of brute force", "six seeds"]]


def utilisation_curves(ch, replicas=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512), max_shard=500) -> dict:
    w = ch.data["suite"]["work"]
    out = {"round robin, whole evals": [], "LPT, whole evals": [], "LPT, shards": []}
    for r in replicas:
        pk = packing(w, r, max_shard)
        out["round robin, whole evals"].append(pk["rr"])
        out["LPT, whole evals"].append(pk["lpt_whole"])
        out["LPT, shards"].append(pk["lpt"])
    return dict(replicas=np.array(replicas), curves={k: np.array(v) for k, v in out.items()})


def noise_curve(accuracy=0.7, sizes=None) -> dict:
    n = np.geomspace(50, 20000, 120) if sizes is None else np.asarray(sizes, float)
    return dict(n=n, delta=Z95 * np.sqrt(2 * accuracy * (1 - accuracy) / n))


def rule_rows() -> list[list[str]]:
    return [["checkpoint by content hash, never 'latest'", "the cache key and the report name the same weights"],
            ["engine, tokenizer, grader and prompt templates pinned by version", "a score moves only with the model"],
            ["greedy decoding, or a fixed temperature with a seed per prompt", "the same key gives the same text"],
            ["the same prompts in the same order, seeded few-shot selection", "differences are paired, not resampled"],
            ["a regression reported with its standard error", "a change inside the noise is not a regression"]]


def what_changes(p, ch: Chain) -> dict:
    def derive(**changes) -> dict:
        return SPEC.extract(compute(p.replace(**changes)))
    base = SPEC.extract(ch)
    wide = derive(size_spread=2.0)
    big = derive(gpus=512)
    bigs = derive(gpus=512, max_shard=100000)
    return {"wc-spread": fmt(2.0), "wc-spread-n": short(wide["prompts_per_run"].m),
            "wc-base-n": short(base["prompts_per_run"].m),
            "wc-big-gpus": fmt(512), "wc-big-rr": pct(big["utilisation_round_robin"].m),
            "wc-big-whole": pct(bigs["utilisation_lpt"].m), "wc-big-lpt": pct(big["utilisation_lpt"].m),
            "wc-big-t": duration(big["turnaround_lpt"].to("s").m)}


def exercises(p, ch: Chain) -> dict:
    se2 = math.sqrt(0.5 * 0.5 / 2000)
    n_for_1pt = math.ceil((Z95 * math.sqrt(2 * 0.7 * 0.3) / 0.01) ** 2)
    hr = hit_rate(1.0, 20, False, 0.1)
    return {"ex1-acc": pct(0.5), "ex1-n": fmt(2000), "ex1-se": pct(se2, digits=2),
            "ex2-n": fmt(n_for_1pt), "ex2-acc": pct(0.7),
            "ex3-rerun": pct(0.1), "ex3-hit": pct(hr)}


SPEC = Spec("eval-pipeline", PARAMETERS, RESULTS, compute, validate=validate, refused=REFUSED)
