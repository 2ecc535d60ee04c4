"""grpo-rollout-cost: sixteen samples per prompt, a code-running verifier, no value model, responses to 16k
tokens: the token arithmetic of one step, the longest response that holds it, and where the fleet idles.

A step samples G responses for each of P prompts. Generation costs 2N FLOPs per token plus attention over
the cache (the decode roofline of the rl-actor-learner chain sets the rate); the update costs 6N per
trained token plus 2N for the reference's log-probabilities (the KL term); no critic means no value
model's forward, backward or state. Response lengths are log-normal clipped at the cap; a synchronous
step holds every decode slot until the step's longest response ends (utils.training.rollouts: E[max of n] by
quadrature, and a seeded simulation of it over several seeds, drawn a group's longest at a time so its memory
does not grow with the prompts), then waits for the verifier and the weight broadcast. Decode and the broadcast
run at the achieved shares of their ceilings (the rl-actor-learner chain's parameters).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from utils import models
from utils.chain import Chain, as_float
from utils.chains import rl_actor_learner as rl
from utils.params import Param, ParameterError, Result, Spec
from utils.roofline import fraction_params
from utils.training import collectives, rollouts
from utils.units import fmt, pct, q
from utils.verdicts import UNCHECKABLE, Claim

SIMULATION = "the longest response of each group, drawn from the clipped log-normal's F^G (seeded)"
SIM_PROMPTS = 64     # groups simulated per step at most: the estimate's precision, not the step's size, sets it
SEEDS = 5            # seeds the simulation's spread is shown over (seed, seed + 1, ...)
MAX_SIM_STEPS = 5000  # steps simulated at most: 320,000 groups a seed, within a second; the quadrature needs none

PARAMETERS = (
    Param("model", "llama-3-70b", "the policy: a catalog key or config.json", check="model",
          source="catalog: Llama-3-70B (the rl-actor-learner chapter's model)"),
    Param("gpu", "h100-sxm", "the accelerator, for generation and training", check="accelerator",
          source="this book's assumption (H100 SXM)"),
    Param("link", "ib-ndr", "the fabric the weights are broadcast over", check="interconnect",
          source="catalog: InfiniBand NDR"),
    Param("n_prompts", 64, "prompts per step, P", unit="sequence", check="whole", source="this book's assumption"),
    Param("samples_per_prompt", 16, "responses sampled per prompt, G", check="whole", source="the claim (sixteen)"),
    Param("prompt_tokens", 1024, "tokens per prompt", unit="token", check="whole", source="this book's assumption"),
    Param("median_response_tokens", 2048.0, "median response length, m (log-normal)", unit="token",
          source="this book's assumption"),
    Param("sigma", 1.0, "log-normal shape of response lengths (log-space standard deviation)", check="positive",
          source="this book's assumption"),
    Param("max_response_tokens", 16384, "generation cap: longer responses are cut here", unit="token",
          check="whole", source="the claim (responses to 16k tokens)"),
    Param("verifier_seconds", 20.0, "wall time of the step's code-running verifier (its slowest sandbox batch)",
          unit="s", check="non_negative", source="this book's assumption"),
    Param("kl_reference", True, "the update computes the reference's log-probabilities for a KL term (2N)",
          check="bool", source="GRPO as published (DeepSeekMath, arXiv:2402.03300, sec. 4.1) keeps a KL term"),
    Param("decode_batch", 256, "sequences one actor replica decodes together", unit="sequence", check="whole",
          source="the rl-actor-learner chapter's default"),
    Param("actor_gpus_per_replica", 8, "GPUs per actor replica", unit="GPU", check="whole",
          source="the rl-actor-learner chapter's default (one HGX node)"),
    Param("mfu", 0.4, "learner MFU on the 6N basis", check="fraction",
          source="this book's assumption; Llama 3 pre-training reports 0.38 to 0.43"),
    Param("n_actor_gpus", 64, "GPUs generating", unit="GPU", check="whole", source="this book's assumption"),
    Param("n_learner_gpus", 64, "GPUs training", unit="GPU", check="whole", source="this book's assumption"),
    Param("sim_steps", 300, "steps simulated", check="whole", source="this book's choice (sampling error a few %)"),
    Param("seed", 0, "the simulation's seed", check="non_negative", source="this book's choice"),
    *fraction_params(),
    *collectives.link_fraction_params(),
)

RESULTS = (
    Result("samples_per_step", "sequence", "Responses per step, P x G", of="n_s"),
    Result("mean_response", "token/sequence", "Mean response length (clipped)", of="E_X"),
    Result("generated_tokens", "token", "Tokens generated per step", of="R"),
    Result("generation_flops", "FLOP", "Generation FLOPs per step (2N + attention)", of="F_g"),
    Result("training_flops", "FLOP", "Training FLOPs per step", of="F_u"),
    Result("expected_longest_of_group", "token/sequence", "Expected longest of one prompt's samples", of="E_G"),
    Result("expected_longest_of_step", "token/sequence", "Expected longest of the step's samples", of="E_S"),
    Result("simulated_longest_of_group", "token/sequence", "Longest of one prompt's samples, simulated", of="sim_G"),
    Result("tail_idle_fraction", "", "Decode slots idle waiting for the step's longest", of="f_tail", percent=True),
    Result("step_time_sync", "s", "Synchronous step time", of="T_s"),
    Result("idle_fraction_sync", "", "Fleet idle fraction, synchronous", of="f_s", percent=True),
    Result("step_time_async", "s", "Step time, asynchronous rollouts", of="T_x"),
    Result("idle_fraction_async", "", "Fleet idle fraction, asynchronous", of="f_x", percent=True),
    Result("rollout_gpu_share", "", "Rollouts' share of the step's GPU-seconds of work", of="s_g", percent=True),
    Result("rollout_held_share", "", "Rollouts' share of GPU-seconds held", of="s_h", percent=True),
)


def rl_inputs(p, context) -> SimpleNamespace:
    return SimpleNamespace(model=p.model, gpu=p.gpu, link=p.link, weight_bytes_per_param=2.0,
                           rollout_tokens_per_step=float(p.n_prompts * p.samples_per_prompt * p.median_response_tokens),
                           mean_context_tokens=float(context), decode_batch=p.decode_batch,
                           actor_gpus_per_replica=p.actor_gpus_per_replica, mfu=p.mfu,
                           n_actor_gpus=p.n_actor_gpus, n_learner_gpus=p.n_learner_gpus,
                           compute_fraction=p.compute_fraction, bandwidth_fraction=p.bandwidth_fraction,
                           nvlink_fraction=p.nvlink_fraction, fabric_fraction=p.fabric_fraction)


def validate(p) -> None:
    if p.median_response_tokens >= p.max_response_tokens:
        raise ParameterError(f"median_response_tokens={p.median_response_tokens:g} must be below "
                             f"max_response_tokens={p.max_response_tokens}")
    if p.sim_steps > MAX_SIM_STEPS:
        raise ParameterError(f"sim_steps must be at most {MAX_SIM_STEPS:,}: the simulation draws up to "
                             f"{SIM_PROMPTS} groups a step one at a time and would run past a second; the quadrature "
                             f"(expected_longest_of_group) is exact at any length, got {p.sim_steps}")
    if p.n_actor_gpus % p.actor_gpus_per_replica:
        raise ParameterError(f"n_actor_gpus={p.n_actor_gpus} is not a whole number of replicas of "
                             f"actor_gpus_per_replica={p.actor_gpus_per_replica}")


def simulated_longest(p, seed: int) -> float:
    """Mean longest of a prompt's samples over sim_steps x min(P, SIM_PROMPTS) simulated groups, one seed."""
    a = (p.median_response_tokens, p.sigma, p.max_response_tokens)
    groups = p.sim_steps * min(p.n_prompts, SIM_PROMPTS)
    return float(rollouts.simulate_longest(groups, p.samples_per_prompt, *a, np.random.default_rng(seed)).mean())


def lengths(p) -> dict:
    """The length statistics: closed-form (quadrature) and simulated (the page's seed)."""
    a = (p.median_response_tokens, p.sigma, p.max_response_tokens)
    n_s = p.n_prompts * p.samples_per_prompt
    return dict(E_X=rollouts.expected_length(*a), E_G=rollouts.expected_max(p.samples_per_prompt, *a),
                E_S=rollouts.expected_max(n_s, *a), p_cap=rollouts.cap_probability(*a),
                sim_G=simulated_longest(p, p.seed))


def seed_spread(p) -> dict:
    """The simulated longest over SEEDS seeds, each against the quadrature within four standard errors of its
    own draws (the check holds on every seed, not on the one the page draws)."""
    a = (p.median_response_tokens, p.sigma, p.max_response_tokens)
    groups = p.sim_steps * min(p.n_prompts, SIM_PROMPTS)
    exact = rollouts.expected_max(p.samples_per_prompt, *a)
    runs = []
    for s in range(p.seed, p.seed + SEEDS):
        x = rollouts.simulate_longest(groups, p.samples_per_prompt, *a, np.random.default_rng(s))
        se = float(x.std(ddof=1)) / groups ** 0.5 if groups > 1 else float("inf")
        runs.append((s, float(x.mean()), se, abs(float(x.mean()) - exact) <= 4 * se))
    return dict(exact=exact, runs=runs, lo=min(r[1] for r in runs), hi=max(r[1] for r in runs),
                every_seed=all(r[3] for r in runs), groups=groups)


def grpo_chain(p) -> Chain:
    L = lengths(p)

    def src(name, kind="assumption"):   # the parameter's own source at its default, the reader's otherwise
        s = SPEC.source(p, name)
        return dict(kind=kind if s != "parameters cell" else "assumption", source=s)
    ctx = p.prompt_tokens + L["E_X"] / 2
    r = rl.rl_chain(**rl._args(rl_inputs(p, ctx), m=p.model, acc_a=p.gpu, acc_l=p.gpu, fabric=p.link))
    n = models.param_count(p.model)
    ch = Chain(f"GRPO step: {p.model.name}, {p.samples_per_prompt} samples per prompt, on {p.gpu.name}")
    ch.given("P", q(p.n_prompts, "sequence"), "prompts per step", **src("n_prompts"))
    ch.given("G", p.samples_per_prompt, "samples per prompt", **src("samples_per_prompt", "spec"))
    ch.step("n_s", "P*G", "sequence", "responses per step")
    qt = "token/sequence"
    ch.given("T_p", q(p.prompt_tokens, qt), "prompt tokens", **src("prompt_tokens"))
    ch.given("T_max", q(p.max_response_tokens, qt), "generation cap", **src("max_response_tokens", "spec"))
    ch.given("E_X", q(L["E_X"], qt), "mean response, log-normal clipped at the cap", kind="derived",
             source="utils.training.rollouts.expected_length (Simpson quadrature)")
    ch.given("p_cap", L["p_cap"], "share of responses cut at the cap", kind="derived", source="utils.training.rollouts")
    ch.step("R", "n_s*E_X", "token", "tokens generated per step")
    ch.step("D", "n_s*(T_p + E_X)", "token", "tokens the update trains on (prompts and responses)")
    # --- FLOPs
    ch.given("N_a", n["active"], "parameters multiplied per token", kind="derived", source="utils.models")
    ch.given("k_f", q(2, "FLOP/parameter/token"), "generation FLOPs per weight per token", kind="derived",
             source="the 6ND chapter (forward)")
    ch.given("a_g", (r["I_kv"] * r["kv_s"] / q(1, "token/sequence")).to("GFLOP/token"),
             "attention FLOPs per generated token at the mean context", kind="derived",
             source="the rl-actor-learner chain (KV bytes x attention intensity)")
    ch.step("F_g", "R*(k_f*N_a + a_g)", "FLOP", "generation FLOPs per step")
    ch.given("k_u", q(6 + (2 if p.kl_reference else 0), "FLOP/parameter/token"),
             "update FLOPs per weight per token: 6 policy" + (" + 2 reference (KL)" if p.kl_reference else ""),
             kind="derived", source="the 6ND chapter; GRPO's KL term")
    ch.step("F_u", "D*k_u*N_a", "FLOP", "training FLOPs per step")
    ch.given("k_v", q(8, "FLOP/parameter/token"), "a value model of the same size: 2 forward on rollouts + 6 trained",
             kind="derived", source="PPO's critic (what GRPO drops)")
    ch.step("F_v", "D*k_v*N_a", "FLOP", "FLOPs a value model would add (GRPO spends none)")
    # --- the tail
    ch.given("E_G", q(L["E_G"], qt), "expected longest of one prompt's samples", kind="derived",
             source="utils.training.rollouts.expected_max: integral of 1 - F^G")
    ch.given("E_S", q(L["E_S"], qt), "expected longest of the step's samples", kind="derived",
             source="utils.training.rollouts.expected_max: integral of 1 - F^(P G)")
    ch.given("sim_G", q(L["sim_G"], qt), f"longest of a prompt's samples, mean over "
             f"{p.sim_steps * min(p.n_prompts, SIM_PROMPTS):,} simulated groups", kind="derived",
             source=f"seeded simulation (seed {p.seed}; utils.training.rollouts.simulate_longest)")
    ch.step("f_tail", "1 - E_X/E_S", "", "decode slots idle while the step waits for its longest")
    # --- times
    ch.given("r_a", r["r_a"], "generation rate per actor GPU, slots full", kind="derived", source=rl.__name__)
    ch.given("r_l", q(as_float(r["r_l"], "token/s/GPU") * 6 / as_float(ch["k_u"], "FLOP/parameter/token"),
                      "token/s/GPU"), "update rate per learner GPU at these FLOPs per token", kind="derived",
             source="the rl-actor-learner learner rate, scaled by 6 / k_u")
    ch.given("n_a", q(p.n_actor_gpus, "GPU"), "actor GPUs", **src("n_actor_gpus"))
    ch.given("n_l", q(p.n_learner_gpus, "GPU"), "learner GPUs", **src("n_learner_gpus"))
    ch.step("t_g", "R/(n_a*r_a)", "s", "generation time, slots always full")
    ch.step("t_G", "t_g*E_S/E_X", "s", "generation time, slots held to the step's longest")
    ch.given("t_v", q(p.verifier_seconds, "s"), "the verifier", **src("verifier_seconds"))
    ch.given("t_b", r["t_b"], "weight broadcast, pipelined", kind="derived", source="the rl-actor-learner chain")
    ch.step("t_u", "D/(n_l*r_l)", "s", "update time")
    ch.step("T_s", "t_G + t_v + t_b + t_u", "s", "synchronous step: generate, verify, broadcast, train")
    ch.step("W", "n_a*t_g + n_l*t_u", "s*GPU", "GPU-seconds of work in a step")
    ch.step("f_s", "1 - W/((n_a + n_l)*T_s)", "", "fleet idle fraction, synchronous")
    ch.step("T_x", "Max(t_g, t_v, t_u + t_b)", "s", "asynchronous: generation overlaps verify and train, slots refilled")
    ch.step("f_x", "1 - W/((n_a + n_l)*T_x)", "", "fleet idle fraction, asynchronous")
    ch.step("s_g", "n_a*t_g/W", "", "rollouts' share of the GPU-seconds of work")
    ch.step("s_h", "n_a*t_G/(n_a*t_G + n_l*t_u)", "", "rollouts' share of GPU-seconds held (slots kept to the longest)")
    ch.value("t_g_s", ch["t_g"])
    return ch


def compute(p) -> Chain:
    return grpo_chain(p)


def idle_by_place(p) -> dict:
    ch = compute(p)
    f = lambda k: as_float(ch[k], "s")   # noqa: E731
    return rollouts.step_idle(f("t_g"), as_float(ch["E_S"] / ch["E_X"], ""), f("t_v"), f("t_u"), f("t_b"),
                              p.n_actor_gpus, p.n_learner_gpus)


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("Sixteen samples per prompt, a verifier that runs code, no value model, responses to 16k tokens: "
         "GRPO moves the cost from the learner to rollouts and rewards.")
COST_WORDS = "moves the cost from the learner to rollouts and rewards"


def defaults():
    return SPEC.check()


def claims() -> list[Claim]:
    p = defaults()
    ch = compute(p)
    flop_ratio = as_float(ch["F_u"] / ch["F_g"], "")
    learner_per_generated = as_float(ch["F_u"] / (ch["R"] * ch["N_a"]), "FLOP/parameter/token")
    share = as_float(ch["s_g"], "")
    held = as_float(ch["s_h"], "")
    # The source names no measure of "cost" and no response lengths; the three measures below disagree
    # (held GPU-time, GPU-time with full slots, FLOPs), so the sentence is the book's figures, not a check.
    return [Claim(
        "grpo", quote=QUOTE, source="spec/001, paragraph on GRPO",
        claimed="rollouts and rewards carry the cost",
        derived=f"the book's: rollouts hold {pct(held)} of the GPU-seconds ({pct(share)} with slots always full); "
                f"the learner does {fmt(flop_ratio, digits=2)} times the generation's FLOPs",
        verdict=UNCHECKABLE,
        reason=(f"The source says \"{COST_WORDS}\" but names no measure of the cost and no response lengths, and "
                f"the answer turns on both. The book's own figures, on its response lengths (log-normal, median "
                f"{fmt(q(p.median_response_tokens, 'token'))}, cut at {fmt(ch['T_max'] * q(1, 'sequence'))}) with "
                f"decode at {pct(p.bandwidth_fraction)} of HBM bandwidth: counted as GPU-time held (slots kept to "
                f"the step's longest response) rollouts take {pct(held)}, with slots always full {pct(share)}, "
                f"and in FLOPs the learner does {fmt(flop_ratio, digits=2)} times the generation's "
                f"{fmt(ch['F_g'])} ({learner_per_generated:.1f}N per generated token, prompts trained too, "
                f"against {fmt(ch['k_f'].m)}N plus attention); the verifier stops the fleet for {fmt(ch['t_v'])}, "
                f"and dropping the value model saves {fmt(ch['F_v'])} a step."))]


# --- the page's sections ----------------------------------------------------------------------------
def cdf_curves(p, n_values=(1, 4, 16, 64)) -> dict:
    x = np.linspace(0, p.max_response_tokens, 400)
    F = rollouts.clipped_lognormal_cdf(x[:-1], p.median_response_tokens, p.sigma, p.max_response_tokens)
    F = np.append(F, 1.0)
    return dict(x=x, curves={n: F ** n for n in n_values},
                emax={n: rollouts.expected_max(n, p.median_response_tokens, p.sigma, p.max_response_tokens)
                      for n in n_values})


def group_curve(p, ns=(1, 2, 4, 8, 16, 32, 64, 128, 256, 1024)) -> dict:
    a = (p.median_response_tokens, p.sigma, p.max_response_tokens)
    rng = np.random.default_rng(p.seed + 1)
    sims = []
    for n in ns:
        sims.append(float(rollouts.simulate_lengths((2000, n), *a, rng).max(axis=1).mean()))
    return dict(n=np.array(ns), exact=np.array([rollouts.expected_max(n, *a) for n in ns]), sim=np.array(sims))


def balanced_split(p, ch) -> dict:
    """The split of the same GPUs into whole actor replicas that minimises asynchronous idle: generation
    time scales as 1 / n_a and the update as 1 / n_l (the work W in GPU-seconds does not change); splits
    that leave the learners too few GPUs for the training state are skipped."""
    G, g = p.n_actor_gpus + p.n_learner_gpus, p.actor_gpus_per_replica
    tg, tu, tv, tb = (as_float(ch[k], "s") for k in ("t_g", "t_u", "t_v", "t_b"))
    W = as_float(ch["W"], "s*GPU")
    state = as_float(models.param_count(p.model)["total"] * q(rl.ADAM_BYTES, "byte/parameter"), "GB")
    best = None
    for a in range(g, G, g):
        n_l = G - a
        if state / n_l > as_float(p.gpu.q("hbm_capacity"), "GB"):
            continue
        T = max(tg * p.n_actor_gpus / a, tv, tu * p.n_learner_gpus / n_l + tb)
        f = 1 - W / (G * T)
        if best is None or f < best["f_x"]:
            best = dict(n_a=a, n_l=n_l, T_x=T, f_x=f)
    return best


def _given(p) -> dict:
    """p's values as re-derive would take them (catalog entries back to their keys)."""
    return {x.name: (getattr(p, x.name).key if hasattr(getattr(p, x.name), "key") else getattr(p, x.name))
            for x in PARAMETERS}


def what_changes(p, ch: Chain) -> dict:
    base = ch
    s2 = compute(SPEC.check(**{**_given(p), "sigma": 0.5}))
    cap8 = compute(SPEC.check(**{**_given(p), "max_response_tokens": 8192}))
    v60 = compute(SPEC.check(**{**_given(p), "verifier_seconds": 60.0}))
    bal = balanced_split(p, base)
    return {"w-bal-a": fmt(q(bal["n_a"], "GPU")), "w-bal-l": fmt(q(bal["n_l"], "GPU")), "w-bal-fx": pct(bal["f_x"]),
            "w-fx": pct(base["f_x"]),
            "w-s-half": fmt(0.5), "w-s-half-fs": pct(s2["f_s"]), "w-fs": pct(base["f_s"]),
            "w-cap8": fmt(q(8192, "token")), "w-cap8-fs": pct(cap8["f_s"]), "w-cap8-pcap": pct(cap8["p_cap"]),
            "w-v60": fmt(q(60, "s")), "w-v60-fs": pct(v60["f_s"]), "w-v60-fx": pct(v60["f_x"])}


def exercises(p, ch: Chain) -> dict:
    """Worked answers on the page's defaults (the questions name them), not the reader's inputs."""
    p = defaults()
    a = (p.median_response_tokens, p.sigma, p.max_response_tokens)
    e2 = compute(SPEC.check(samples_per_prompt=64, n_prompts=16))
    return {"ex1-n": fmt(64), "ex1-emax": fmt(q(rollouts.expected_max(64, *a), "token")),
            "ex1-emax16": fmt(q(rollouts.expected_max(16, *a), "token")),
            "ex2-fs": pct(e2["f_s"]), "ex2-eg": fmt(e2["E_G"]),
            "ex3-pcap": pct(rollouts.cap_probability(*a)),
            "ex3-any": pct(1 - (1 - rollouts.cap_probability(*a)) ** p.samples_per_prompt)}


SPEC = Spec("grpo-rollout-cost", PARAMETERS, RESULTS, compute, validate=validate)
