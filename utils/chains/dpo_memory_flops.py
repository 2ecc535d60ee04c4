"""dpo-memory-flops: a policy and a frozen reference, their memory and FLOPs per token, the precompute that
takes the reference out of the loop, and the generation (and exploration) DPO does without.

The DPO loss needs, for every pair, the summed log-probability of the chosen and the rejected response
under the policy (trained: 6N FLOPs per token, forward and backward) and under the frozen reference
(forward only: 2N). The policy carries a full training state (ZeRO's 2 + 2 + K bytes per parameter,
sharded by stage); the reference only its bf16 weights. The reference's log-probabilities depend on
nothing the training changes, so one forward pass over the dataset can compute them first and store one
number per sequence; the loop then holds the policy alone.

Two things the model memory alone hides. Activations: a Llama layer keeps about 40 bytes per token per unit
of width for its backward (the activation-recompute chapter's count, scores never stored), tens of GB for a
pair of 1k-token sequences of a 70B model; full recomputation keeps only each layer's input. A plan whose
activations do not fit reports the shortfall and no run time. Traffic: under ZeRO-3 every micro-batch
all-gathers the policy's weights twice (forward, backward) and reduce-scatters its gradients, and a sharded
reference is all-gathered once more: four transfers of the model's bf16 bytes per GPU (ZeRO sec. 7), on a
fabric at an achieved fraction of its datasheet rate, which the compute hides only with enough pairs per
micro-batch. The precompute removes the reference's transfer: a quarter of the traffic.
"""
from __future__ import annotations

from types import SimpleNamespace

from utils import catalog, models
from utils.chain import Chain, as_float
from utils.chains import rl_actor_learner as rl
from utils.chains.activation_recompute import llama_coefficients
from utils.params import Param, ParameterError, Result, Spec
from utils.training import ZERO_STAGE_NAMES, flops_per_parameter_token, zero_bytes_per_param
from utils.training.collectives import all_gather_bytes, fsdp_bytes
from utils.units import fmt, pct, q
from utils.verdicts import HOLDS, Claim

RECOMPUTE = ("full", "none")
PARAMETERS = (
    Param("model", "llama-3-70b", "the policy (and its reference, the same architecture): a catalog key or "
          "config.json", check="model", source="catalog: Llama-3-70B"),
    Param("gpu", "h100-sxm", "the accelerator", check="accelerator", source="this book's assumption (H100 SXM)"),
    Param("n_gpus", 64, "GPUs the job shards over (the data-parallel degree ZeRO divides by)", unit="GPU",
          check="whole", source="this book's assumption (eight HGX nodes)"),
    Param("zero_stage", 3, "ZeRO stage of the policy's state (0 = none, 3 = weights, gradients and optimizer)",
          check="choice", choices=(0, 1, 2, 3), source="this book's assumption (ZeRO-3 / FSDP full sharding)"),
    Param("optimizer_bytes", 12.0, "optimizer bytes per parameter, K: fp32 master weight and two Adam moments",
          unit="byte/parameter", source="the ZeRO paper (arXiv:1910.02054), sec. 3.1: K = 12"),
    Param("reference_bytes_per_param", 2.0, "bytes per weight of the frozen reference: 2 = bf16",
          unit="byte/parameter", source="this book's assumption (bf16)"),
    Param("prompt_tokens", 512, "tokens in a pair's prompt", unit="token", check="whole",
          source="this book's assumption"),
    Param("response_tokens", 512, "tokens in each response, chosen and rejected", unit="token", check="whole",
          source="this book's assumption"),
    Param("n_pairs", 60000.0, "preference pairs in the dataset", unit="sequence", source="this book's assumption "
          "(the order of UltraFeedback's binarized set, about 61k pairs; HuggingFaceH4, read 2026-12-01)"),
    Param("epochs", 1, "passes over the dataset", check="whole", source="this book's assumption"),
    Param("mfu", 0.4, "model FLOPs utilisation on the 6N / 2N basis", check="fraction",
          source="this book's assumption; Llama 3 pre-training reports 0.38 to 0.43 (catalog: llama-3-405b-pretraining)"),
    Param("logprob_bytes", 4.0, "bytes to store one precomputed log-probability (fp32)", unit="byte",
          source="this book's assumption (fp32)"),
    Param("recompute", "full", "activations kept for the backward: full (each layer's input only) or none",
          check="choice", choices=RECOMPUTE, source="this book's assumption (a 70B policy's pair does not leave "
          "room for more than one pair per micro-batch without it)"),
    Param("fabric", "ib-ndr", "the scale-out fabric, one port per GPU (ZeRO's collectives cross nodes)",
          check="interconnect", source="catalog: InfiniBand NDR"),
    Param("link_efficiency", 0.81, "achieved share of the fabric's one-way datasheet rate in a large collective",
          check="fraction", source="this book's assumption: nccl-tests ring all-reduce on 8x H200 NVLink reached "
          "365.6 of 450 GB/s (catalog nvlink4 allreduce_busbw_measured, an alternative), a stand-in for the fabric"),
)

RESULTS = (
    Result("policy_state_per_gpu", "GB", "Policy training state per GPU", of="M_p"),
    Result("reference_per_gpu", "GB", "Reference weights per GPU", of="M_r"),
    Result("memory_per_gpu", "GB", "Policy plus reference per GPU", of="M"),
    Result("reference_memory_share", "", "Reference share of that memory", of="s_M", percent=True),
    Result("activations_per_pair", "GB", "Activations one pair keeps for the backward, at the recompute chosen",
           of="a_pair"),
    Result("pairs_that_fit", "", "Pairs per micro-batch whose activations fit beside the model", of="k_fit"),
    Result("zero_traffic_per_gpu", "GB", "Bytes each GPU moves per micro-batch in the ZeRO collectives", of="V"),
    Result("zero_comm_time", "s", "Those collectives' time per micro-batch on the fabric", of="t_z"),
    Result("pairs_to_hide_comm", "", "Pairs per GPU per micro-batch whose compute hides that traffic", of="k_h"),
    Result("reference_traffic_share", "", "Share of the traffic the precompute removes (the reference's gather)",
           of="s_V", percent=True),
    Result("flops_per_token", "GFLOP/token", "FLOPs per pair token, policy and reference", of="c"),
    Result("flops_per_token_precomputed", "GFLOP/token", "FLOPs per pair token, reference precomputed", of="c_p"),
    Result("flops_per_pair", "TFLOP", "FLOPs per pair (chosen and rejected)", of="F_pair"),
    Result("precompute_flops", "FLOP", "The one reference pass that precomputes the log-probabilities", of="F_pre"),
    Result("flops_saved", "FLOP", "Training FLOPs the precompute saves over the run", of="F_saved"),
    Result("logprob_storage", "MB", "Storage for the precomputed log-probabilities", of="S_lp"),
    Result("run_gpu_hours", "hour*GPU", "GPU-hours of the DPO run, reference in the loop", of="H"),
    Result("rl_generation_gpu_hours", "hour*GPU", "GPU-hours an on-policy loop spends generating the same responses",
           of="H_g"),
)

RL_SOURCE = "the rl-actor-learner chain at its defaults (decode roofline, bf16 weights and cache)"


def validate(p) -> None:
    for field in ("bf16_dense", "hbm_capacity"):
        if field not in p.gpu:
            raise ParameterError(f"gpu {p.gpu.key!r} has no {field} in the catalog")


def generation_rate(m, gpu, prompt_tokens, response_tokens):
    """Tokens per second per GPU an on-policy loop generates these responses at (the rl-actor-learner chain,
    its batch capped where the caches stop fitting); None where the model does not fit a replica."""
    ctx = prompt_tokens + response_tokens / 2
    d = {x.name: x.default for x in rl.PARAMETERS}
    p = SimpleNamespace(**{**d, "model": m, "gpu": gpu, "link": catalog.interconnect(d["link"])})
    for g in (8, 16, 32, 64):            # the smallest replica (whole nodes) that holds the weights and a cache
        ch = rl.balanced(p, gpu, ctx, actor_gpus_per_replica=g, n_actor_gpus=g, n_learner_gpus=4096)
        if ch is not None:
            return ch["r_a"]
    return None


def dpo_chain(m, gpu, n_gpus, zero_stage, optimizer_bytes, reference_bytes_per_param, prompt_tokens,
              response_tokens, n_pairs, epochs, mfu, logprob_bytes, recompute="full", fabric=None,
              link_efficiency=0.81, *, source="parameters cell") -> Chain:
    """source: one text for every input's row, or a function of the parameter's name (compute passes SPEC.source)."""
    src = source if callable(source) else (lambda name: source)
    tokens_src = src("prompt_tokens") if src("prompt_tokens") == src("response_tokens") else "parameters cell"
    fabric = fabric or catalog.interconnect("ib-ndr")
    n = models.param_count(m)
    k = flops_per_parameter_token()
    per_gpu = q(1, "GPU")
    ch = Chain(f"DPO: {m.name}, {ZERO_STAGE_NAMES[zero_stage]}, on {n_gpus} x {gpu.name}")
    ch.given("N", n["total"], "parameters stored (policy; the reference has the same)", kind="derived",
             source="counted from the configuration by utils.models")
    ch.given("N_a", n["active"], "parameters multiplied per token", kind="derived", source="utils.models")
    # --- memory
    ch.given("n_d", q(n_gpus, "GPU"), "GPUs the state is sharded over", kind="assumption", source=src("n_gpus"))
    ch.given("b_p", q(zero_bytes_per_param(zero_stage, n_gpus, k=optimizer_bytes), "byte/parameter"),
             f"policy state per parameter on one GPU, {ZERO_STAGE_NAMES[zero_stage]}", kind="derived",
             source=f"utils.training.zero_bytes_per_param: 2 + 2 + K={optimizer_bytes:g}, sharded by stage")
    ch.step("M_p", "b_p*N", "GB", "policy training state per GPU")
    ch.given("b_r", q(reference_bytes_per_param, "byte/parameter"), "reference bytes per weight", kind="assumption",
             source=src("reference_bytes_per_param"))
    ch.given("z_r", n_gpus if zero_stage == 3 else 1, "ways the reference's weights are sharded", kind="derived",
             source="sharded like the policy's weights: across the GPUs under ZeRO-3, whole on each GPU otherwise")
    ch.step("M_r", "b_r*N/z_r", "GB", "reference weights per GPU (no gradient, no optimizer)")
    ch.step("M", "M_p + M_r", "GB", "model memory per GPU, activations not counted")
    ch.step("s_M", "M_r/M", "", "the reference's share of it")
    ch.given("C", gpu.q("hbm_capacity").to("GB"), "HBM per GPU", kind=gpu["hbm_capacity"].kind,
             source=gpu["hbm_capacity"].cite)
    ch.step("A", "C - M", "GB", "left for activations, reference in the loop")
    ch.step("A_p", "C - M_p", "GB", "left for activations, reference precomputed")
    # --- activations: a Llama layer's own count (no scores stored), or each layer's input under full recompute
    c_w = llama_coefficients(m)[0] if recompute == "none" else 2.0
    ch.given("c_a", q(c_w, "byte/token"), "bytes kept per token per unit width per layer" +
             (" (every tensor the backward reads)" if recompute == "none" else " (full recompute: the input)"),
             kind="derived", source="the activation-recompute chapter's Llama layer, bf16")
    ch.given("h", m["d_model"], "width")
    ch.given("L", m["n_layers"], "layers")
    ch.given("T_s", q(prompt_tokens + response_tokens, "token"), "tokens per sequence", kind="assumption",
             source=tokens_src)
    ch.step("a_pair", "2*T_s*c_a*h*L", "GB", "activations of one pair (two sequences)")
    k_fit = max(0, int(as_float(ch["A"], "GB") // as_float(ch["a_pair"], "GB")))
    ch.given("k_fit", k_fit, "pairs per micro-batch that fit, floor(A / a_pair)", kind="derived", source="this chain")
    fits = k_fit >= 1
    if not fits:
        ch.step("S_a", "a_pair - A", "GB", "the shortfall: one pair's activations over what is left")
    # --- FLOPs per token
    ch.given("k_t", q(k["train"], "FLOP/parameter/token"), "policy: forward and backward", kind="derived",
             source="the 6ND chapter")
    ch.given("k_f", q(k["forward"], "FLOP/parameter/token"), "reference: forward only", kind="derived",
             source="the 6ND chapter")
    ch.step("c", "(k_t + k_f)*N_a", "GFLOP/token", "FLOPs per token, both models on both responses")
    ch.step("c_p", "k_t*N_a", "GFLOP/token", "FLOPs per token in the loop, reference precomputed")
    ch.given("T", q(prompt_tokens + response_tokens, "token/sequence"), "tokens per sequence (prompt + response)",
             kind="assumption", source=tokens_src)
    ch.given("r", q(2, "sequence"), "sequences per pair (chosen and rejected)", kind="derived", source="DPO's loss")
    ch.step("F_pair", "r*T*c", "TFLOP", "FLOPs per pair")
    ch.given("P_n", q(n_pairs, ""), "pairs in the dataset", kind="assumption", source=src("n_pairs"))
    ch.given("E", q(epochs, ""), "epochs", kind="assumption", source=src("epochs"))
    ch.step("D", "E*P_n*r*T", "token", "pair tokens the run trains on")
    ch.step("F", "D*c", "FLOP", "the run's FLOPs, reference in the loop")
    ch.step("F_pre", "P_n*r*T*k_f*N_a", "FLOP", "the one reference pass over the dataset")
    ch.step("F_x", "D*c_p + F_pre", "FLOP", "the run's FLOPs, reference precomputed")
    ch.step("F_saved", "F - F_x", "FLOP", "FLOPs the precompute saves ((E - 1) reference passes)")
    ch.given("b_lp", q(logprob_bytes, "byte/sequence"), "bytes per stored log-probability (one per sequence)",
             kind="assumption", source=src("logprob_bytes"))
    ch.step("S_lp", "P_n*r*b_lp", "MB", "the precomputed log-probabilities")
    # --- time on the fleet
    ch.given("P_g", gpu.q("bf16_dense").to("TFLOP/s") / per_gpu, "dense bf16 rate per GPU",
             kind=gpu["bf16_dense"].kind, source=gpu["bf16_dense"].cite)
    ch.given("mu", mfu, "MFU", kind="assumption", source=src("mfu"))
    # --- the data-parallel collectives per micro-batch: ZeRO-3 moves the weights, not only the gradients
    w = 2 * as_float(ch["N"], "parameter")            # bf16 weights and gradients on the wire
    sharded = zero_stage == 3
    v_pol = fsdp_bytes(w, n_gpus, transfers=3) if sharded else 2 * all_gather_bytes(w, n_gpus)
    v_ref = all_gather_bytes(reference_bytes_per_param / 2 * w, n_gpus) if sharded else 0.0
    ch.given("V_p", q(v_pol, "byte").to("GB"), "policy: " + ("two all-gathers and a reduce-scatter" if sharded
             else "the gradients' all-reduce"), kind="derived", source="ZeRO (arXiv:1910.02054) sec. 7; "
             "utils.training.collectives")
    ch.given("V_r", q(v_ref, "byte").to("GB"), "reference: " + ("one all-gather" if sharded else "none (replicated)"),
             kind="derived", source="sharded like the policy's weights under ZeRO-3")
    ch.step("V", "V_p + V_r", "GB", "bytes each GPU moves per micro-batch")
    ch.step("s_V", "V_r/V", "", "the reference's share, which the precompute removes")
    ch.given("B_f", fabric.q("bandwidth_unidirectional").to("GB/s"), f"{fabric.name}, one direction per GPU",
             kind=fabric["bandwidth_unidirectional"].kind, source=fabric["bandwidth_unidirectional"].cite)
    ch.given("eta", link_efficiency, "achieved share of the fabric's rate", kind="assumption",
             source=src("link_efficiency"))
    ch.given("n_1", per_gpu, "one GPU", kind="derived", source="per GPU")
    ch.step("t_pr", "r*T*c/(mu*P_g*n_1)", "s", "compute time of one pair on one GPU")
    ch.step("t_pp", "r*T*c_p/(mu*P_g*n_1)", "s", "the same, reference precomputed")
    if not fits:                          # a plan that does not fit has no time, no run and no cost
        for name, unit in (("t_z", "s"), ("k_h", ""), ("H", "hour*GPU")):
            ch.value(name, q(float("nan"), unit))
    else:
        ch.step("t_z", "V/(eta*B_f)", "s", "the collectives' time per micro-batch")
        ch.step("t_zp", "V_p/(eta*B_f)", "s", "the collectives' time, reference precomputed")
        ch.value("k_h", q(float(-(-as_float(ch["t_z"], "s") // as_float(ch["t_pr"], "s"))), ""))
        # the collectives overlap the compute; what the fitting pairs' compute cannot hide stretches the run
        ch.given("x", max(1.0, as_float(ch["t_z"], "s") / (k_fit * as_float(ch["t_pr"], "s"))),
                 "stretch: max(1, t_z / (k_fit x t_pr)), the traffic the fitting pairs cannot hide", kind="derived",
                 source="this chain")
        ch.step("H", "x*F/(mu*P_g)", "hour*GPU", "GPU-hours of the run")
        ch.step("t_run", "H/n_d", "hour", "wall-clock on the job's GPUs")
    # --- what an on-policy loop would spend generating the same responses
    r_a = generation_rate(m, gpu, prompt_tokens, response_tokens)
    ch.given("R", q(epochs * n_pairs * 2 * response_tokens, "token"),
             "response tokens an on-policy loop would generate fresh, as many as DPO reads", kind="derived",
             source="epochs x pairs x two responses x response tokens")
    if r_a is None:
        ch.value("H_g", q(float("nan"), "hour*GPU"))
    else:
        ch.given("r_a", r_a, "generation rate per actor GPU", kind="derived", source=RL_SOURCE)
        ch.step("H_g", "R/r_a", "hour*GPU", "GPU-hours of generation DPO never spends")
        ch.step("s_g", "H_g/(H + H_g)", "", "generation's share of that on-policy budget")
    return ch


def _args(p) -> dict:
    return dict(m=p.model, gpu=p.gpu, n_gpus=p.n_gpus, zero_stage=p.zero_stage, optimizer_bytes=p.optimizer_bytes,
                reference_bytes_per_param=p.reference_bytes_per_param, prompt_tokens=p.prompt_tokens,
                response_tokens=p.response_tokens, n_pairs=p.n_pairs, epochs=p.epochs, mfu=p.mfu,
                logprob_bytes=p.logprob_bytes, recompute=p.recompute, fabric=p.fabric,
                link_efficiency=p.link_efficiency)


def defaults() -> dict:
    d = {x.name: x.default for x in PARAMETERS}
    d["m"], d["gpu"] = catalog.model(d.pop("model")), catalog.accelerator(d["gpu"])
    d["fabric"] = catalog.interconnect(d["fabric"])
    return d


def compute(p) -> Chain:
    return dpo_chain(**_args(p), source=lambda name: SPEC.source(p, name))


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("DPO deletes the rollout engine, the reward service and the weight broadcast, turning post-training "
         "back into one supervised job: a policy, a frozen reference and a fixed dataset.")


def claim_chain() -> Chain:
    """The claim names no model; the book's Llama-3-70B defaults stand in for one."""
    return dpo_chain(**defaults(), source="the book's defaults (the claim names no model)")


def rl_step() -> Chain:
    """What the deleted parts cost an on-policy step at the same model: the rl-actor-learner chain."""
    return rl.claim_chain()


def claims() -> list[Claim]:
    ch, st = claim_chain(), rl_step()
    return [Claim(
        "dpo", quote=QUOTE, source="spec/001, paragraph on DPO", claimed="no rollouts, no reward, no broadcast",
        derived=f"{fmt(q(0, 'token'))} generated, {fmt(q(0, 'GB'))} broadcast; reference {pct(ch['s_M'])} of memory",
        verdict=HOLDS,
        reason=(f"The loss reads only the fixed pairs: the step generates nothing (an on-policy step of "
                f"{fmt(q(rl.CLAIM_INPUTS['rollout_tokens_per_step'], 'token'))} would), sends no weights from a "
                f"learner to a rollout engine (that broadcast is {fmt(st['W_b'])}) and calls no reward model; what "
                f"remains is one job whose reference adds {fmt(ch['M_r'])} to the policy's {fmt(ch['M_p'])} and "
                f"{fmt(ch['c'] - ch['c_p'])} to its {fmt(ch['c_p'])}. The weights still move inside that job: "
                f"ZeRO-3 gathers them, and reduce-scatters the gradients, at {fmt(ch['V'])} per GPU per micro-batch, "
                f"{pct(ch['s_V'])} of it the reference's gather, which the precompute removes."))]


# --- the page's sections ----------------------------------------------------------------------------
def counted_route() -> dict:
    """Second route to the policy's 16 bytes: count the tensors PyTorch keeps after one AdamW step."""
    from utils.training.optimizer_state import counted_bytes_per_param
    b, n = counted_bytes_per_param("zero")
    return dict(counted=b, params=n, formula=zero_bytes_per_param(0, 1, k=defaults()["optimizer_bytes"]))


def stage_rows(p) -> list[tuple[str, object, object, int]]:
    """(stage, policy per GPU, reference per GPU, pairs per micro-batch that fit) for every ZeRO stage at p's inputs."""
    out = []
    for s in (0, 1, 2, 3):
        ch = dpo_chain(**{**_args(p), "zero_stage": s})
        out.append((ZERO_STAGE_NAMES[s], ch["M_p"], ch["M_r"], int(as_float(ch["k_fit"]))))
    return out


def fit_text(ch: Chain) -> dict:
    """The page's sentences on whether the plan fits: the run's time only for a plan that fits, else the shortfall."""
    if as_float(ch["k_fit"]) < 1:
        return {"c-run": "no run time: the plan does not fit", "c-fit": f"does not fit: one pair's activations, "
                f"{fmt(ch['a_pair'])}, exceed what is left by {fmt(ch['S_a'])}"}
    return {"c-run": fmt(ch["t_run"]), "c-fit": f"fits {fmt(ch['k_fit'])} pairs per micro-batch"}


def memory_bars(keys=("llama-3-8b", "llama-3-70b", "llama-3-405b"), n_gpus=64) -> dict:
    """Per-GPU GB of policy state and reference weights, reference in the loop, for a few catalog models."""
    out = {}
    for k_ in keys:
        ch = dpo_chain(**{**defaults(), "m": catalog.model(k_), "n_gpus": n_gpus})
        out[catalog.model(k_).name] = (as_float(ch["M_p"], "GB"), as_float(ch["M_r"], "GB"))
    return out


def what_changes(p, ch: Chain) -> dict:
    z0 = dpo_chain(**{**_args(p), "zero_stage": 0})
    e3 = dpo_chain(**{**_args(p), "epochs": 3})
    rn = dpo_chain(**{**_args(p), "recompute": "none"})
    return {"w-rn-act": fmt(rn["a_pair"]), "w-rn-fit": fmt(rn["k_fit"]), "w-rn-hours": fmt(rn["H"]),
            "w-z0-mem": fmt(z0["M"]), "w-z0-share": pct(z0["s_M"]), "w-share": pct(ch["s_M"]),
            "w-e3-saved": fmt(e3["F_saved"]), "w-e3-share": pct(e3["F_saved"] / e3["F"]),
            "w-flop-share": pct((ch["c"] - ch["c_p"]) / ch["c"])}


def exercises(p, ch: Chain) -> dict:
    base = defaults()
    e1 = dpo_chain(**{**base, "m": catalog.model("llama-3-8b"), "n_gpus": 8, "zero_stage": 0})
    e2 = dpo_chain(**{**base, "epochs": 3})
    e3 = dpo_chain(**{**base, "m": catalog.model("llama-3-405b"), "n_gpus": 128})
    return {"ex1-mem": fmt(e1["M"]), "ex1-left": fmt(e1["A"]), "ex1-cap": fmt(e1["C"]), "ex2-epochs": fmt(q(3, "")),
            "ex3-fit": fmt(e3["k_fit"]), "ex3-hide": fmt(e3["k_h"]),
            "ex2-saved": fmt(e2["F_saved"]), "ex2-share": pct(e2["F_saved"] / e2["F"]),
            "ex2-pre": fmt(e2["F_pre"]),
            "ex3-gpus": fmt(q(128, "GPU")), "ex3-pol": fmt(e3["M_p"]), "ex3-ref": fmt(e3["M_r"]), "ex3-hours": fmt(e3["H"])}


SPEC = Spec("dpo-memory-flops", PARAMETERS, RESULTS, compute, validate=validate,
            closed_form=True)
