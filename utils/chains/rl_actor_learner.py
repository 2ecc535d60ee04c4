"""rl-actor-learner: generation (decode) against the update (training), the weight broadcast every step,
the actor:learner ratio that follows, and the idle time on-policy training builds in.

Generation on an actor replica is a decode step: it reads the weights once per batch and each sequence's
KV cache once, so its rate is the decode roofline's at the achieved shares of HBM bandwidth and the dense
peak (utils.roofline.fraction_params); the broadcast runs at the fabric's measured share (collectives). The
update costs 6N FLOPs per token at the tensor rate times the MFU. After every full-parameter update all
weights go to the actors. The ratio rho = r_l / r_a balances tokens made against tokens trained; a synchronous
loop idles whichever side is not running, and a loop one step late overlaps the two.
"""
from __future__ import annotations

import math

from utils import catalog, models
from utils.chain import Chain, as_float, memoised
from utils.display import table
from utils.params import Param, ParameterError, Result, Spec
from utils.roofline import FRACTIONS, add_fraction_inputs, fraction_params
from utils.training import collectives, zero_bytes_per_param
from utils.units import fmt, listing, pct, q
from utils.verdicts import UNCHECKABLE, Claim

PARAMETERS = (
    Param("model", "llama-3-70b", "the policy being trained (full-parameter): a catalog key or config.json",
          check="model", source="catalog: Llama-3-70B (the model whose bf16 weights are the claim's figure)"),
    Param("gpu", "h100-sxm", "the accelerator, for actors and learners", check="accelerator",
          source="this book's assumption (H100 SXM)"),
    Param("weight_bytes_per_param", 2.0, "bytes per weight the actors read and the broadcast sends: 2 = bf16",
          unit="byte/parameter", source="this book's assumption (bf16)"),
    Param("rollout_tokens_per_step", 4194304.0, "generated tokens per RL step: 512 prompts x 8 samples x 1,024 tokens",
          unit="token", source="this book's assumption"),
    Param("mean_context_tokens", 1536.0, "mean tokens in a sequence's KV cache while it decodes (a 1,024-token "
          "prompt plus half of a 1,024-token response)", unit="token", source="this book's assumption"),
    Param("decode_batch", 256, "sequences one actor replica decodes together", unit="sequence", check="whole",
          source="this book's assumption"),
    Param("actor_gpus_per_replica", 8, "GPUs holding one actor copy of the model (tensor parallel, one node)",
          unit="GPU", check="whole", source="this book's assumption (one HGX node)"),
    Param("mfu", 0.4, "learner model FLOPs utilisation on the 6N basis (attention and recomputation not "
          "counted)", check="fraction",
          source="this book's assumption; Llama 3 pre-training reports 0.38 to 0.43 (catalog: llama-3-405b-pretraining)"),
    Param("link", "ib-ndr", "the scale-out fabric, one NIC per GPU", check="interconnect",
          source="catalog: InfiniBand NDR"),
    Param("n_actor_gpus", 64, "GPUs generating rollouts", unit="GPU", check="whole", source="this book's assumption"),
    Param("n_learner_gpus", 64, "GPUs running the update", unit="GPU", check="whole", source="this book's assumption"),
    *fraction_params(),
    *collectives.link_fraction_params(),
)

RESULTS = (
    Result("broadcast_bytes", "GB", "Weights broadcast to the actors every step", of="W_b"),
    Result("broadcast_time", "s", "Broadcast time, pipelined, one NIC per actor GPU", of="t_b"),
    Result("broadcast_time_sharded", "s", "Broadcast time, one broadcast per tensor-parallel shard", of="t_sh"),
    Result("decode_tokens_per_gpu", "token/s/GPU", "Generation rate per actor GPU (roofline at achieved shares)",
           of="r_a"),
    Result("train_tokens_per_gpu", "token/s/GPU", "Update rate per learner GPU", of="r_l"),
    Result("balanced_actor_learner_ratio", "", "Actor GPUs per learner GPU that balance tokens", of="rho"),
    Result("step_time_sync", "s", "Synchronous on-policy step time", of="T_s"),
    Result("learner_idle_fraction", "", "Learner idle fraction, synchronous", of="f_l", percent=True),
    Result("actor_idle_fraction", "", "Actor idle fraction, synchronous", of="f_a", percent=True),
    Result("step_time_async", "s", "Step time, asynchronous (one step off-policy)", of="T_x"),
)

KV_BYTES = 2.0      # a bf16 cache: the engines' default of storing the cache in the model's dtype
ADAM_BYTES = zero_bytes_per_param(0, 1)   # mixed-precision Adam: bf16 weight + grad, fp32 master + m, v
ADAM_SOURCE = "mixed-precision Adam, 2 + 2 + 4 + 4 + 4 bytes per parameter (the ZeRO paper's count)"
PIPE_SOURCE = ("a pipelined ring or tree broadcast (NCCL) moves the full message once over every link, so its "
               "time is the message over one link whatever the number of receivers")
MODELS_SOURCE = "counted from the catalog config by utils.models"
ENGINE = ("software", "vllm", "gpu_memory_utilization")


def _util():
    return catalog.entry(*ENGINE[:2])[ENGINE[2]]


def fit_problem(m, acc_a, acc_l, b_w, context, batch, g, n_l) -> str:
    """Why a layout cannot run ('' when it can): the replica's memory, or the learners' state."""
    per_replica = acc_a.q("hbm_capacity").to("GB") * g * _util().q
    need = models.weight_bytes(m, b_w) + batch * models.kv_bytes_per_token(m, KV_BYTES) * q(context, "token")
    if need > per_replica:
        kv_seq = models.kv_bytes_per_token(m, KV_BYTES) * q(context, "token")
        fits = int(max(0.0, as_float((per_replica - models.weight_bytes(m, b_w)) / kv_seq, "")))
        return (f"decode_batch={batch} at mean_context_tokens={context:g} needs {fmt(need.to('GB'))} per replica, "
                f"{fmt((need - per_replica).to('GB'))} more than {g} x {acc_a.key} give the engine; the largest "
                f"batch that fits is {fits}" + (": lower decode_batch" if fits else ", none: the weights alone do "
                "not fit") + " or raise actor_gpus_per_replica")
    state = models.param_count(m)["total"] * q(ADAM_BYTES, "byte/parameter")
    if state / n_l > acc_l.q("hbm_capacity"):
        return (f"the training state, {fmt(state.to('TB'))}, does not fit on n_learner_gpus={n_l} x {acc_l.key} "
                "even fully sharded: raise n_learner_gpus")
    return ""


def validate(p) -> None:
    if "bandwidth_unidirectional" not in p.link:
        raise ParameterError(f"link: {p.link.key!r} has no one-way bandwidth in the catalog")
    for field in ("bf16_dense", "hbm_bandwidth", "hbm_capacity", "scaleup_link"):
        if field not in p.gpu:
            raise ParameterError(f"gpu {p.gpu.key!r} has no {field} in the catalog")
    if p.n_actor_gpus % p.actor_gpus_per_replica:
        raise ParameterError(f"n_actor_gpus={p.n_actor_gpus} is not a whole number of replicas of "
                             f"actor_gpus_per_replica={p.actor_gpus_per_replica}")
    problem = fit_problem(p.model, p.gpu, p.gpu, p.weight_bytes_per_param, p.mean_context_tokens, p.decode_batch,
                          p.actor_gpus_per_replica, p.n_learner_gpus)
    if problem:
        raise ParameterError(problem)


def rl_chain(m, acc_a, acc_l, fabric, weight_bytes_per_param, rollout_tokens_per_step, mean_context_tokens,
             decode_batch, actor_gpus_per_replica, mfu, n_actor_gpus, n_learner_gpus,
             compute_fraction=None, bandwidth_fraction=None, nvlink_fraction=None, fabric_fraction=None, *,
             source="parameters cell") -> Chain:
    """The RL step for catalog entries (model, actor GPU, learner GPU, fabric); the achieved shares default to
    the catalog's. `source`: one text for every parameter's row, or a function of the parameter's name."""
    src = (lambda name: source) if isinstance(source, str) else source
    changed = source if isinstance(source, str) else "parameters cell"
    cf, bf = (compute_fraction or FRACTIONS[0]), (bandwidth_fraction or FRACTIONS[1])
    nvf, fxf = (nvlink_fraction or collectives.LINK_FRACTIONS[0]), (fabric_fraction or collectives.LINK_FRACTIONS[1])
    nvl = catalog.interconnect(acc_a.q("scaleup_link"))
    n = models.param_count(m)
    per_gpu = q(1, "GPU")
    ch = Chain(f"RL step: {m.name}, actors on {acc_a.name}, learners on {acc_l.name}")
    # --- the model and its bytes
    ch.given("N_s", n["total"], "weights stored (every one changes in a full-parameter update)",
             kind="derived", source=MODELS_SOURCE)
    ch.given("N_a", n["active"], "weights multiplied per token", kind="derived", source=MODELS_SOURCE)
    ch.given("N_r", n["total"] - n["embedding"], "weights a decode step reads (all but the embedding lookup)",
             kind="derived", source=MODELS_SOURCE)
    ch.given("b_w", q(weight_bytes_per_param, "byte/parameter"), "bytes per weight", kind="assumption",
             source=src("weight_bytes_per_param"))
    ch.step("W_b", "N_s*b_w", "GB", "weights to broadcast after every update")
    # --- generation: a decode step on one actor replica
    ch.given("P_a", acc_a.q("bf16_dense").to("TFLOP/s") / per_gpu, "actor dense bf16 rate per GPU",
             kind=acc_a["bf16_dense"].kind, source=acc_a["bf16_dense"].cite)
    ch.given("BW_a", acc_a.q("hbm_bandwidth").to("TB/s") / per_gpu, "actor HBM bandwidth per GPU",
             kind=acc_a["hbm_bandwidth"].kind, source=acc_a["hbm_bandwidth"].cite)
    add_fraction_inputs(ch, cf, bf, source=changed)
    ch.given("B", q(decode_batch, "sequence"), "sequences a replica decodes together", kind="assumption",
             source=src("decode_batch"))
    ch.given("g", q(actor_gpus_per_replica, "GPU"), "GPUs per actor replica", kind="assumption",
             source=src("actor_gpus_per_replica"))
    ch.given("tau", q(1, "token/sequence"), "tokens a sequence adds per decode step", kind="derived",
             source="decode: one token per sequence per step")
    ch.given("kappa", models.kv_bytes_per_token(m, KV_BYTES), "KV cache per token, all layers", kind="derived",
             source="utils.models.kv_bytes_per_token, bf16 cache")
    ch.given("T_c", q(mean_context_tokens, "token/sequence"), "mean context while decoding", kind="assumption",
             source=src("mean_context_tokens"))
    ch.step("kv_s", "kappa*T_c", "GB/sequence", "KV cache per sequence at the mean context")
    ch.given("C_a", acc_a.q("hbm_capacity").to("GB") / per_gpu, "actor HBM per GPU (datasheet)",
             kind=acc_a["hbm_capacity"].kind, source=acc_a["hbm_capacity"].cite)
    ch.given("u", _util(), "share of memory the serving engine manages")
    ch.step("M_free", "g*C_a*u - W_b - B*kv_s", "GB", "memory left on a replica after weights and the batch's cache")
    problem = fit_problem(m, acc_a, acc_l, weight_bytes_per_param, mean_context_tokens, decode_batch,
                          actor_gpus_per_replica, n_learner_gpus)
    if problem:
        raise ParameterError(problem)
    ch.given("k_f", q(2, "FLOP/parameter/token"), "FLOPs per weight per token, forward", kind="derived",
             source="one multiply-add per weight")
    ch.given("I_kv", models.kv_term_intensity(m, KV_BYTES), "attention FLOPs per KV byte read", kind="derived",
             source="utils.models.kv_term_intensity")
    ch.step("M_d", "N_r*b_w + B*kv_s", "GB", "bytes one decode step reads on a replica")
    ch.step("m_tok", "M_d/(B*tau)", "GB/token", "bytes read per generated token")
    ch.step("F_d", "B*(k_f*N_a*tau + I_kv*kv_s)", "TFLOP", "FLOPs of one decode step")
    ch.step("t_d", "Max(F_d/(g*eta_P*P_a), M_d/(g*eta_W*BW_a))", "ms", "decode step time (roofline at achieved shares)")
    ch.step("r_a", "B*tau/(g*t_d)", "token/s/GPU", "generation rate per actor GPU")
    # --- the update
    ch.given("P_l", acc_l.q("bf16_dense").to("TFLOP/s") / per_gpu, "learner dense bf16 rate per GPU",
             kind=acc_l["bf16_dense"].kind, source=acc_l["bf16_dense"].cite)
    ch.given("k_t", q(6, "FLOP/parameter/token"), "training FLOPs per weight per token", kind="derived",
             source="the 6ND chapter")
    ch.given("mu", mfu, "learner MFU", kind="assumption", source=src("mfu"))
    ch.step("c_t", "k_t*N_a", "GFLOP/token", "training FLOPs per token")
    ch.step("r_l", "mu*P_l/c_t", "token/s/GPU", "update rate per learner GPU")
    ch.given("a_s", q(ADAM_BYTES, "byte/parameter"), "training state per weight", kind="assumption", source=ADAM_SOURCE)
    ch.given("n_l", q(n_learner_gpus, "GPU"), "learner GPUs", kind="assumption", source=src("n_learner_gpus"))
    ch.step("S_l", "a_s*N_s/n_l", "GB/GPU", "training state per learner GPU, fully sharded")
    # --- the ratio that balances production and consumption
    ch.solve("rho", "rho*r_a = r_l", "", "actor GPUs per learner GPU at which tokens made = tokens trained")
    # --- the broadcast
    bw = fabric["bandwidth_unidirectional"]
    ch.given("B_nic", bw.q.to("GB/s") / per_gpu, f"fabric per GPU, one NIC each, one way ({fabric.name})",
             kind=bw.kind, source=bw.cite)
    ch.given("n_a", q(n_actor_gpus, "GPU"), "actor GPUs", kind="assumption", source=src("n_actor_gpus"))
    collectives.add_link_fraction_inputs(ch, nvf, fxf, fabric.key, source=changed)
    ch.given("h", q(1, "GPU"), "NICs a pipelined broadcast passes each byte through at a time", kind="derived",
             source=PIPE_SOURCE)
    ch.step("t_uni", "(n_a/g)*W_b/(h*eta_x*B_nic)", "s", "one learner NIC sends a full copy to each replica in turn")
    ch.step("t_b", "W_b/(h*eta_x*B_nic)", "s", "a pipelined broadcast, every actor GPU receiving the full copy")
    ch.step("t_sh", "W_b/(Min(g, n_l)*eta_x*B_nic)", "s",
            "one broadcast per tensor-parallel shard: each actor GPU receives its shard")
    nbw = nvl["bandwidth_unidirectional"]
    ch.given("B_nvl", nbw.q.to("GB/s") / per_gpu, f"scale-up link per GPU, one way ({nvl.name})", kind=nbw.kind,
             source=nbw.cite)
    ch.step("t_nvl", "W_b/(g*eta_nv*B_nvl)", "s", "the sharded broadcast inside one NVLink domain")
    # --- one step, synchronous on-policy
    ch.given("R", q(rollout_tokens_per_step, "token"), "tokens generated (and trained on) per step",
             kind="assumption", source=src("rollout_tokens_per_step"))
    ch.step("T_g", "R/(n_a*r_a)", "s", "generation phase")
    ch.step("T_u", "R/(n_l*r_l)", "s", "update phase")
    ch.step("T_s", "T_g + T_u + t_b", "s", "synchronous step: generate, update, broadcast, one after another")
    ch.step("f_l", "(T_g + t_b)/T_s", "", "learner idle fraction, synchronous")
    ch.step("f_a", "(T_u + t_b)/T_s", "", "actor idle fraction, synchronous")
    ch.step("f_b", "t_b/T_s", "", "broadcast's share of the synchronous step")
    ch.step("rho_s", "sqrt(r_l/r_a)", "", "split that minimises the synchronous step for a fixed number of GPUs")
    # --- one step late: asynchronous, off-policy by one step
    ch.step("T_x", "Max(T_g, T_u + t_b)", "s", "asynchronous step: generation overlaps the update")
    ch.step("f_lx", "1 - T_u/T_x", "", "learner idle fraction, asynchronous")
    ch.step("f_ax", "1 - T_g/T_x", "", "actor idle fraction, asynchronous")
    ch.step("S", "T_s/T_x", "", "speed-up of the asynchronous loop")
    ch.solve("rho_b", "R/(rho_b*n_l*r_a) = R/(n_l*r_l) + t_b", "",
             "actor GPUs per learner GPU that balance the asynchronous loop, broadcast included")
    ch.step("M_2", "W_b/g", "GB/GPU", "second copy of the weights per actor GPU, to receive while generating")
    return ch


def _args(p, **over) -> dict:
    a = dict(m=p.model, acc_a=p.gpu, acc_l=p.gpu, fabric=p.link, weight_bytes_per_param=p.weight_bytes_per_param,
             rollout_tokens_per_step=p.rollout_tokens_per_step, mean_context_tokens=p.mean_context_tokens,
             decode_batch=p.decode_batch, actor_gpus_per_replica=p.actor_gpus_per_replica, mfu=p.mfu,
             n_actor_gpus=p.n_actor_gpus, n_learner_gpus=p.n_learner_gpus, compute_fraction=p.compute_fraction,
             bandwidth_fraction=p.bandwidth_fraction, nvlink_fraction=p.nvlink_fraction,
             fabric_fraction=p.fabric_fraction)
    a.update(over)
    return a


def compute(p) -> Chain:
    return rl_chain(**_args(p), source=lambda name: SPEC.source(p, name))


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("Generation is a decode workload and the update is a training workload, and they want different "
         "software on different GPUs. The per-token arithmetic for each side, the 141 GB broadcast that has "
         "to happen every step, the ratio of actor to learner GPUs that follows, and the idle time that "
         "on-policy training builds in.")
CLAIM = dict(broadcast_gb=141)
DEFAULT_MODEL = "llama-3-70b"     # the book's default model, the chain's reading when it matches
CLAIM_INPUTS = dict(gpu="h100-sxm", link="ib-ndr", rollout_tokens_per_step=4194304.0, mean_context_tokens=1536.0,
                    decode_batch=256, actor_gpus_per_replica=8, mfu=0.4, n_actor_gpus=64, n_learner_gpus=64)


def matching_readings() -> list[tuple[str, float]]:
    """Every catalog model and width (1, 2 or 4 bytes per weight) whose weights round to the claim's figure."""
    return [(k, b) for k in catalog.keys("model") for b in (1.0, 2.0, 4.0)
            if round(as_float(models.weight_bytes(catalog.model(k), b), "GB")) == CLAIM["broadcast_gb"]]


def matched_names(hits) -> str:
    """The matching readings as prose: each model's name, its width where it is not bf16."""
    return listing(catalog.model(k).name + ("" if b == 2.0 else f" at {fmt(q(b, 'byte/parameter'))}")
                   for k, b in hits) or "none"


def claim_chain(model="llama-3-70b", b_w=2.0) -> Chain:
    c = CLAIM_INPUTS
    acc = catalog.accelerator(c["gpu"])
    return rl_chain(catalog.model(model), acc, acc, catalog.interconnect(c["link"]), b_w, c["rollout_tokens_per_step"],
                    c["mean_context_tokens"], c["decode_batch"], c["actor_gpus_per_replica"], c["mfu"],
                    c["n_actor_gpus"], c["n_learner_gpus"], source="the claim's implied model")


def by_hand_count(m) -> int:
    """Llama's parameters from its layer shapes: attention q, k, v, o; SwiGLU; two norms; embedding and head."""
    L, d, H, Hkv, hd, dff, V = (int(m.q(k).m) for k in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim",
                                                         "d_ff", "vocab_size"))
    return L * (2 * d * H * hd + 2 * d * Hkv * hd + 3 * d * dff + 2 * d) + 2 * V * d + d


def readings(cc) -> list[tuple[str, object, object, bool]]:
    """(reading, parameters, bytes, rounds to the claim) for the readings of a '141 GB' Llama-3-70B."""
    published = catalog.model("llama-3-70b").q("params_total")
    out = []
    for label, n_, b, unit in (("counted parameters, bf16, decimal GB", cc["N_s"], 2.0, "GB"),
                               ("published 70B, bf16, decimal GB", published, 2.0, "GB"),
                               ("counted parameters, bf16, binary GiB", cc["N_s"], 2.0, "GiB"),
                               ("counted parameters, fp8", cc["N_s"], 1.0, "GB"),
                               ("counted parameters, fp32", cc["N_s"], 4.0, "GB")):
        v = (n_ * q(b, "byte/parameter")).to(unit)
        out.append((label, n_, v, round(v.m) == CLAIM["broadcast_gb"]))
    return out


def claims() -> list[Claim]:
    hits = matching_readings()
    # the chain follows the book's default model where it is one of the matches (a match need not fit the claim's
    # decode batch: Chinchilla's full-head KV cache does not)
    main = next((h for h in hits if h[0] == DEFAULT_MODEL), hits[0] if hits else (DEFAULT_MODEL, 2.0))
    cc = claim_chain(*main)
    m = catalog.model(main[0])
    matched = matched_names(hits)
    published = (m.q("params_total") * q(2, "byte/parameter")).to("GB") if "params_total" in m else None
    return [Claim(
        "broadcast", quote=QUOTE, source="spec/001, paragraph on RL post-training",
        claimed=fmt(q(CLAIM["broadcast_gb"], "GB")),
        derived=f"{fmt(cc['W_b'], digits=4)} ({m.name}, {fmt(cc['N_s'], digits=4)} counted, bf16)",
        verdict=UNCHECKABLE,
        reason=(f"The sentence names no model and no precision, so the figure cannot be checked, only matched: of "
                f"the catalog's models at one, two and four bytes per weight, {matched} (bf16 unless named) give it; "
                f"the chain follows {m.name} ({fmt(cc['W_b'], digits=4)} counted; {fmt(published)} from the published count; "
                f"{fmt(cc['W_b'].to('GiB'))} in binary units); sent every step only in a full-parameter update, "
                f"in {fmt(cc['t_b'])} as one pipelined broadcast over the fabric."))]


# --- the page's sections ----------------------------------------------------------------------------
def chain_glue(p, ch) -> dict:
    kv_share = as_float(ch["B"] * ch["kv_s"] / ch["W_b"], "")
    bound = ("memory bandwidth" if (ch["M_d"] / (ch["eta_W"] * ch["BW_a"])) >= (ch["F_d"] / (ch["eta_P"] * ch["P_a"]))
             else "compute")
    return {"intro-model": p.model.name, "intro-link": p.link.name, "p-gpu": p.gpu.name,
            "p-bw": fmt(ch["BW_a"] * q(1, "GPU"), "TB/s"), "p-peak": fmt(ch["P_a"] * q(1, "GPU"), "TFLOP/s"),
            "p-batch": fmt(p.decode_batch), "p-g": fmt(p.actor_gpus_per_replica),
            "p-ctx": fmt(q(p.mean_context_tokens, "token")), "p-kvs": fmt(ch["kv_s"] * q(1, "sequence")),
            "p-kv-total": fmt(ch["B"] * ch["kv_s"]),
            "p-kv-vs": "outweigh" if kv_share > 1.1 else "rival" if kv_share > 0.5 else "are a fraction of",
            "p-md": fmt(ch["M_d"]), "p-mtok": fmt(ch["m_tok"] * q(1, "token")), "p-td": fmt(ch["t_d"]),
            "p-bound": bound, "p-ct": fmt(ch["c_t"] * q(1, "token"), "TFLOP"), "p-mfu": pct(p.mfu),
            "p-cost-ratio": f"{as_float(ch['r_a'] / ch['r_l'], ''):.1f}", "p-sl": fmt(ch["S_l"] * q(1, "GPU")),
            "p-r": fmt(q(p.rollout_tokens_per_step, "token")), "p-na": fmt(q(p.n_actor_gpus, "GPU")),
            "p-nl": fmt(q(p.n_learner_gpus, "GPU")), "p-tg": fmt(ch["T_g"]), "p-tu": fmt(ch["T_u"]),
            "p-fb": pct(ch["f_b"]), "p-rho-s": fmt(ch["rho_s"], digits=2), "p-rho-b": fmt(ch["rho_b"], digits=3),
            "p-flx": pct(ch["f_lx"]), "p-fax": pct(ch["f_ax"]), "p-speedup": f"{as_float(ch['S'], ''):.2f}",
            "p-m2": fmt(ch["M_2"] * q(1, "GPU")), "p-flx-bal": pct(ch["t_b"] / (ch["T_u"] + ch["t_b"])),
            "p-nic": fmt((ch["eta_x"] * ch["B_nic"] * q(1, "GPU")).to("GB/s")), "p-tuni": fmt(ch["t_uni"]),
            "p-eta-w": pct(as_float(ch["eta_W"])), "p-eta-p": pct(as_float(ch["eta_P"])),
            "p-nrep": fmt(p.n_actor_gpus // p.actor_gpus_per_replica),
            "p-nvl": fmt((ch["eta_nv"] * ch["B_nvl"] * q(1, "GPU")).to("GB/s")),
            "p-tnvl": fmt(ch["t_nvl"], "ms")}


def sync_optimum() -> str:
    """The synchronous step for a fixed number of GPUs is shortest at n_a / n_l = sqrt(r_l / r_a): solved."""
    import sympy as sp
    x, G, a_, b_ = sp.symbols("n_a G a b", positive=True)     # a = R/r_a, b = R/r_l: GPU-seconds per step
    T_sync = a_ / x + b_ / (G - x)
    best = [s for s in sp.solve(sp.diff(T_sync, x), x) if s.subs({a_: 1, b_: 4, G: 10}).is_positive
            and (G - s).subs({a_: 1, b_: 4, G: 10}).is_positive]
    assert len(best) == 1
    assert sp.simplify(sp.simplify(best[0] / (G - best[0])) - sp.sqrt(a_ / b_)) == 0
    return (f"$$T_s(n_a) = {sp.latex(T_sync)} + t_b \\;\\Rightarrow\\; \\frac{{dT_s}}{{dn_a}} = 0 "
            f"\\text{{ at }} \\frac{{n_a}}{{n_l}} = {sp.latex(sp.sqrt(a_ / b_))} = \\sqrt{{r_l / r_a}}$$")


@memoised
def checks() -> dict:
    """The check's numbers: the matching readings, the by-hand count, the bits-over-line-rate route, the
    ratio against a brute-force split, and the idle accounting."""
    hits = matching_readings()
    cc = claim_chain()
    nic_bits = catalog.interconnect("ib-ndr").q("bandwidth_unidirectional")
    t_bits = (cc["W_b"].to("bit") / (cc["eta_x"] * nic_bits)).to("s")
    r_a, r_l = as_float(cc["r_a"], "token/s/GPU"), as_float(cc["r_l"], "token/s/GPU")
    import numpy as np
    split = np.linspace(1, 127, 12601)
    R = CLAIM_INPUTS["rollout_tokens_per_step"]
    t_s = R / (split * r_a) + R / ((128 - split) * r_l)
    best = split[np.argmin(t_s)]
    return dict(hits=hits, chain=cc, by_hand=by_hand_count(catalog.model("llama-3-70b")), readings=readings(cc),
                t_bits=t_bits, nic_bits=nic_bits, bits_ratio=as_float(t_bits / cc["t_b"], ""),
                shard_ratio=as_float(cc["t_b"] / cc["t_sh"], ""), best_split=best / (128 - best),
                idle_identity=abs(as_float(cc["f_l"] + cc["f_a"] - 1 - cc["f_b"], "")),
                h200=catalog.accelerator("h200").q("hbm_capacity").to("GB"))


def check_section() -> tuple[dict, str]:
    ck = checks()
    cc = ck["chain"]
    pub = ck["readings"][1][2]
    glue = {"c-n": fmt(cc["N_s"], digits=4), "c-gb": fmt(cc["W_b"], digits=4), "c-gib": fmt(cc["W_b"].to("GiB")),
            "c-pub": fmt(pub), "c-h200": fmt(ck["h200"]), "c-tb": fmt(cc["t_b"]), "c-tsh": fmt(cc["t_sh"]),
            "c-bits": fmt(ck["t_bits"]), "c-nic-bits": fmt(ck["nic_bits"]), "c-rho": fmt(cc["rho"]),
            "c-fb": pct(cc["f_b"]), "claim-gb": fmt(q(CLAIM["broadcast_gb"], "GB")),
            "c-matched": matched_names(ck["hits"])}
    rows = [[label, fmt(n_), fmt(v, digits=4), "yes" if hit else "no"] for label, n_, v, hit in ck["readings"]]
    return glue, table(["reading", "parameters", "bytes", "rounds to the claim"], rows)


def balanced(p, actor_gpu, context, batch=None, **over):
    """The chain with actors on `actor_gpu` at this mean context, the batch capped where the caches stop
    fitting (None when the weights and one sequence's cache do not fit a replica)."""
    acc = catalog.accelerator(actor_gpu)
    m = over.get("m", p.model)
    g = over.get("actor_gpus_per_replica", p.actor_gpus_per_replica)
    b = over.get("weight_bytes_per_param", p.weight_bytes_per_param)
    budget = acc.q("hbm_capacity").to("GB") * g * _util().q - models.weight_bytes(m, b)
    cap = int(math.floor(as_float(budget / (models.kv_bytes_per_token(m, KV_BYTES) * q(context, "token")), "")))
    try:
        return rl_chain(**_args(p, acc_a=acc, mean_context_tokens=float(context),
                                decode_batch=max(1, min(batch or p.decode_batch, cap)), **over))
    except ParameterError:
        return None


def say(ch, key, unit=None) -> str:
    return "nothing (the model does not fit)" if ch is None else fmt(ch[key], unit)


ACTOR_GPUS = ("h100-sxm", "h200")
LONG_CTX = 16384


def ratio_curves(p, contexts) -> dict:
    """Balanced ratio against mean context, actors on each GPU, learners on the parameters' GPU."""
    out = {}
    for key in ACTOR_GPUS:
        chains_ = [balanced(p, key, c) for c in contexts]
        out[catalog.accelerator(key).name] = [float("nan") if c is None else as_float(c["rho"], "") for c in chains_]
    return out


def gpus_glue(p) -> dict:
    h200_here = balanced(p, "h200", p.mean_context_tokens)
    h100_long, h200_long = balanced(p, "h100-sxm", LONG_CTX), balanced(p, "h200", LONG_CTX)
    h200_learner = rl_chain(**_args(p, acc_l=catalog.accelerator("h200")))
    return {"d-h200-rho": say(h200_here, "rho"), "d-h200-learn": fmt(h200_learner["r_l"]),
            "d-h200-rate": say(h200_here, "r_a"), "d-long": fmt(q(LONG_CTX, "token")),
            "d-h100-long": say(h100_long, "rho"), "d-h200-long": say(h200_long, "rho"),
            "d-h100-long-b": say(h100_long, "B"), "d-h200-long-b": say(h200_long, "B")}


def idle_curves(p, ch) -> dict:
    """Idle fractions against the split of a fixed number of GPUs (the figure's right panel)."""
    G = p.n_actor_gpus + p.n_learner_gpus
    import numpy as np
    split = np.arange(1, G)
    ra, rl = as_float(ch["r_a"], "token/s/GPU"), as_float(ch["r_l"], "token/s/GPU")
    t_b, R = as_float(ch["t_b"], "s"), p.rollout_tokens_per_step
    tg, tu = R / (split * ra), R / ((G - split) * rl)
    ts, tx = tg + tu + t_b, np.maximum(tg, tu + t_b)
    return dict(G=G, ratio=split / (G - split), learners_sync=100 * (tg + t_b) / ts, actors_sync=100 * (tu + t_b) / ts,
                learners_async=100 * (1 - tu / tx), actors_async=100 * (1 - tg / tx))


DECODE_EFF = 0.5   # an illustrative engine efficiency against the roofline floor (this book's assumption)
K_RL = 10          # 6N update + 2N reference forward + 2N old-policy log-probabilities
SMALL_ROLLOUT = 262144.0


def what_changes(p, ch: Chain) -> dict:
    w_ctx = balanced(p, p.gpu, 2 * p.mean_context_tokens)
    w_b2 = rl_chain(**_args(p, decode_batch=max(1, p.decode_batch // 2)))
    w_small = rl_chain(**_args(p, rollout_tokens_per_step=SMALL_ROLLOUT))
    fb_small_sh = w_small["t_sh"] / (w_small["T_g"] + w_small["T_u"] + w_small["t_sh"])
    return {"w-ctx2": fmt(q(2 * p.mean_context_tokens, "token")), "w-rho-ctx2": say(w_ctx, "rho"),
            "w-b2": fmt(max(1, p.decode_batch // 2)), "w-rho-b2": fmt(w_b2["rho"]), "w-eff": pct(DECODE_EFF),
            "w-rho-eff": fmt(ch["rho"] / DECODE_EFF), "w-kt": fmt(K_RL), "w-rho-kt": fmt(ch["rho"] * K_RL / 6),
            "w-r-small": fmt(q(SMALL_ROLLOUT, "token")), "w-fb-small": pct(w_small["f_b"]),
            "w-fb-small-sh": pct(fb_small_sh)}


LORA_RANK, E1_LEARNERS = 64, 64


def exercises(p, ch: Chain) -> dict:
    import sympy as sp
    e1 = balanced(p, "h200", p.mean_context_tokens)
    if e1 is None:
        e1_na = "none (the model does not fit on an H200 replica of this size)"
    else:
        g = p.actor_gpus_per_replica
        e1_na = fmt(q(int(math.ceil(as_float(e1["rho"], "") * E1_LEARNERS / g) * g), "GPU"))
    m = catalog.model("llama-3-70b")
    L, d, H, Hkv, hd, dff = (int(m.q(k).m) for k in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff"))
    shapes = [(d, H * hd), (d, Hkv * hd), (d, Hkv * hd), (H * hd, d), (d, dff), (d, dff), (dff, d)]
    lora_params = q(L * sum(LORA_RANK * (a + b) for a, b in shapes), "parameter")
    lora_bytes = (lora_params * q(2, "byte/parameter")).to("GB")
    full = claim_chain()["W_b"]
    # Exercise 3: the rollout at which a pipelined broadcast is a tenth of the synchronous step.
    Rs, tb_, na_, nl_, ra_, rl_ = sp.symbols("R t_b n_a n_l r_a r_l", positive=True)
    sol = sp.solve(sp.Eq(tb_ / (Rs / (na_ * ra_) + Rs / (nl_ * rl_) + tb_), sp.Rational(1, 10)), Rs)
    assert len(sol) == 1
    assert sp.simplify(sol[0] - 9 * tb_ * na_ * ra_ * nl_ * rl_ / (na_ * ra_ + nl_ * rl_)) == 0
    e3_R = float(sol[0].subs({tb_: as_float(ch["t_b"], "s"), na_: p.n_actor_gpus, nl_: p.n_learner_gpus,
                              ra_: as_float(ch["r_a"], "token/s/GPU"), rl_: as_float(ch["r_l"], "token/s/GPU")}))
    assert abs(as_float(rl_chain(**_args(p, rollout_tokens_per_step=e3_R))["f_b"], "") - 0.1) < 1e-9
    return {"e1-nl": fmt(q(E1_LEARNERS, "GPU")), "e1-ra": say(e1, "r_a"), "e1-rho": say(e1, "rho"), "e1-na": e1_na,
            "e2-r": fmt(LORA_RANK), "e2-params": fmt(lora_params), "e2-bytes": fmt(lora_bytes),
            "e2-share": pct(as_float(lora_bytes / full, "")), "e2-full": fmt(full),
            "e2-t": fmt((lora_bytes / (ch["eta_x"] * ch["B_nic"] * q(1, "GPU"))).to("ms")),
            "e3-faster": f"{as_float(ch['t_b'] / ch['t_sh'], ''):.0f}", "e3-r": fmt(q(e3_R, "token"))}


SPEC = Spec("rl-actor-learner", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
