"""replica-sizing: users per replica by memory and by throughput, whichever binds, then replicas and nodes.

Memory (utils.serving): the engine's share of the replica's memory (vLLM: a fraction of what the driver
reports), less the weights, over one user's KV cache at full context. Throughput: each user is promised
s tokens a second, so the replica runs s decode steps a second, each on the roofline
t(U) = max(t_w + U t_kv, U t_f), and each user's prefill takes a share u_p of every second; one second
must hold both, s t(U) / tau + U u_p <= 1, solved in closed form for each side of the roofline. The
smaller constraint sets the users per replica; replicas = ceil(users (1 + headroom) / U); nodes follow.
"""
from __future__ import annotations

import math

from utils import catalog, models, roofline, serving
from utils.chain import Chain, as_float, memoised
from utils.chains.kv_cache_caps_users import MLPERF_TPOT, RATE_SOURCE  # the catalog's MLPerf limits
from utils.params import Param, ParameterError, Result, Spec
from utils.roofline import ACHIEVED, add_fraction_inputs, fraction_params
from utils.serving import per_user_text as per_user
from utils.serving import users_text as ucount
from utils.units import fmt, pct, q
from utils.verdicts import UNCHECKABLE, Claim

PARAMETERS = (
    Param("model", "llama-3-70b", "the model: a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-70B (this book's reading of the claim)"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key", check="accelerator",
          source="catalog: H100 SXM (this book's reading)"),
    Param("gpus_per_replica", 8, "GPUs holding one copy of the model (tensor parallel)", check="whole",
          source="one HGX H100 node per replica (this book's reading)"),
    Param("gpus_per_node", 8, "GPUs in one node", check="whole", source="an HGX H100 node of eight GPUs"),
    Param("users", 1000, "concurrent users: requests in flight at once", unit="sequence", check="whole",
          source="the claim (1,000 users)"),
    Param("context_tokens", 4096, "tokens of KV cache each user holds (earlier turns + this request)", unit="token",
          check="whole", source="this book's assumption: the context each user's session holds, at its full length"),
    Param("tokens_per_second_per_user", 20.0, "decode rate promised to each user while its reply streams",
          unit="token/s", source="this book's assumption, inside MLPerf Inference's Llama-2-70B limits"),
    Param("prompt_tokens_per_request", 1024, "new prompt tokens each request brings (prefilled)", unit="token",
          check="whole", source="this book's assumption: about a page of new input per chat turn"),
    Param("output_tokens_per_request", 512, "tokens each reply streams", unit="token", check="whole",
          source="this book's assumption: about half a page of reply"),
    Param("weight_bytes_per_param", 2.0, "bytes per stored weight: 2 = bf16, 1 = fp8", unit="byte/parameter",
          source="bf16 weights (this book's reading)"),
    Param("kv_bytes_per_element", 2.0, "bytes per cached K or V element: 2 = bf16, 1 = fp8", unit="byte",
          source="bf16 cache (this book's reading)"),
    Param("gpu_memory_utilization", 0.9, "share of each GPU's memory the engine manages (vLLM's default)",
          check="fraction", source="catalog: vLLM's default gpu_memory_utilization"),
    Param("memory_reading", "driver", "which total the share multiplies: driver (what vLLM multiplies), "
          "nvidia-smi or datasheet", check="choice", choices=serving.READINGS,
          source="vLLM multiplies the total the CUDA runtime reports (utils.serving)"),
    Param("headroom", 0.2, "extra replicas beyond what the users need, as a fraction", check="non_negative",
          source="this book's assumption: room for a replica down and bursts above the stated concurrency"),
    *fraction_params(),
)

RESULTS = (
    Result("users_per_replica_memory", "sequence", "Users per replica: memory constraint", of="U_m"),
    Result("users_per_replica_throughput", "sequence",
           "Users per replica: throughput constraint (roofline floor, prefill included)", of="U_t"),
    Result("users_per_replica", "sequence", "Users per replica (whichever binds)", of="U"),
    Result("replicas", "", "Replicas, with headroom", of="R"),
    Result("gpus", "GPU", "GPUs", of="G"),
    Result("nodes", "node", "Nodes", of="N_n"),
    Result("rate_per_user_when_full", "token/s/sequence", "Decode rate per user with the replica full (roofline floor)",
           of="s_U"),
    Result("crossover_rate", "token/s/sequence", "Per-user rate above which throughput, not memory, binds", of="s_x"),
    Result("crossover_efficiency", "", "Share of the roofline floor's speed below which throughput binds", of="e_x",
           digits=2),
)

MIX_SOURCE = ("this book's assumption: a chat turn of about a page of new input and half a page of reply, "
              "earlier turns held in the prefix cache")
CONTEXT_SOURCE = "this book's assumption: the context each user's session holds, sized at its full length"
HEADROOM_SOURCE = ("this book's assumption: room for a replica down (failure, rolling update) and bursts "
                   "above the stated concurrency")
MODELS_SOURCE = serving.MODELS_SOURCE

# The claim names the users (1,000) and the method; everything else is this page's reading.
CLAIM = dict(users=1000, model="llama-3-70b", gpu="h100-sxm", gpus_per_replica=8, gpus_per_node=8,
             context=4096, rate=20.0, prompt=1024, output=512, weight_bytes=2.0, kv_bytes=2.0, headroom=0.2)
QUOTE = ("Two constraints per replica, memory and throughput, each derived from the model and the traffic; "
         "whichever binds sets the users per replica, and the replica count follows with headroom. "
         "The full chain from 1,000 users to a number of nodes.")
ARGS = tuple(p.name for p in PARAMETERS)


def validate(p):
    if p.gpus_per_replica % p.gpus_per_node and p.gpus_per_node % p.gpus_per_replica:
        raise ParameterError(f"gpus_per_replica={p.gpus_per_replica} and gpus_per_node={p.gpus_per_node}: a replica "
                             "must fill whole nodes or a node whole replicas (one divides the other)")
    if p.prompt_tokens_per_request + p.output_tokens_per_request > p.context_tokens:
        raise ParameterError(f"a request's prompt and reply ({p.prompt_tokens_per_request} + "
                             f"{p.output_tokens_per_request} tokens) must fit in the context each user holds, "
                             f"context_tokens={p.context_tokens}")
    serving.budget(p.model, p.gpu, p.gpus_per_replica, p.weight_bytes_per_param, p.kv_bytes_per_element,
                   p.context_tokens, p.gpu_memory_utilization, p.memory_reading)


def has(ch, name) -> bool:
    return any(row.name == name for row in ch.rows)


def binds(ch) -> str:
    return "memory" if ch["U_m"] <= ch["U_t"] else "throughput"


def crossings(ch) -> dict:
    """Where memory and throughput meet, against context (T), rate (s), prompt (p) and the share of the
    floor's speed (e), for each side of the roofline (bandwidth b, FLOPs c), as plain floats."""
    Mk, rk = as_float(ch["M_kv"], "byte"), as_float(ch["rho"] * ch["kappa"], "byte/token")
    gW, gP = as_float(ch["g"] * ch["W_e"], "byte/s"), as_float(ch["g"] * ch["P_e"], "FLOP/s")
    Nrbw, kNa = as_float(ch["N_r"] * ch["b_w"], "byte"), as_float(ch["k"] * ch["N_a"], "FLOP/token")
    Ik = as_float(ch["I_kv"] * ch["kappa"], "FLOP/token")
    s = as_float(ch["s"], "token/s/sequence")
    p, o = as_float(ch["p"], "token/request"), as_float(ch["o"], "token/request")
    x = s * p / o
    A = 1 - s * Nrbw / gW
    D_b = A * rk - Mk * (s * rk / gW + x * Ik / gP)
    D_c = rk - Mk * (s + x) * Ik / gP
    T = as_float(ch["T"], "token/sequence")
    Um = Mk / (rk * T)
    f = kNa + Ik * T
    return dict(T_b=Mk * x * kNa / gP / D_b if D_b > 0 else None,
                T_c=Mk * (s + x) * kNa / gP / D_c if D_c > 0 else None,
                s_b=1 / (Nrbw / gW + Um * (rk * T / gW + p * f / (o * gP))),
                s_c=1 / (Um * (f / gP + p * f / (o * gP))),
                e_b=s * Nrbw / gW + Um * (s * rk * T / gW + x * f / gP), e_c=Um * (s + x) * f / gP,
                p_b=o * gP * (A / Um - s * rk * T / gW) / (s * f), p_c=o * (gP / (Um * s * f) - 1))


def sizing_chain(m, acc, gpus_per_replica, gpus_per_node, users, context_tokens, tokens_per_second_per_user,
                 prompt_tokens_per_request, output_tokens_per_request, weight_bytes_per_param, kv_bytes_per_element,
                 gpu_memory_utilization, memory_reading, headroom,
                 compute_fraction=float(ACHIEVED["bf16_dense"].q.m),
                 bandwidth_fraction=float(ACHIEVED["hbm_bandwidth"].q.m), *, prefill="separate",
                 source="parameters cell") -> Chain:
    """Users per replica of model `m` on `gpus_per_replica` x `acc` (catalog Entries), then the fleet. source: one
    source for every input the caller set, or a function of the parameter's name (compute passes the spec's)."""
    src = source if callable(source) else (lambda name: source)
    chip = roofline.Chip(acc.key, acc.name, acc.q("bf16_dense").to("FLOP/s"), acc.q("hbm_bandwidth").to("byte/s"))
    ch = Chain(f"{fmt(users)} concurrent users of {m.name} on replicas of {gpus_per_replica} x {acc.name}")
    # --- Memory: the serving budget of one replica and the users whose caches fit in it.
    b = serving.budget(m, acc, gpus_per_replica, weight_bytes_per_param, kv_bytes_per_element, context_tokens,
                       gpu_memory_utilization, memory_reading)
    default_u = gpu_memory_utilization == serving.vllm_utilization()
    serving.add_budget_steps(ch, b, source={"g": src("gpus_per_replica"), "u": src("gpu_memory_utilization"),
                                            "b_w": src("weight_bytes_per_param"), "m_a": src("kv_bytes_per_element")},
                             context_source=CONTEXT_SOURCE if context_tokens == CLAIM["context"] else src("context_tokens"),
                             utilization_value=serving.vllm_utilization_value() if default_u else None,
                             users="U_m", per_gpu_users=False)
    # --- Traffic: the promised rate and the request mix.
    ch.given("s", q(tokens_per_second_per_user, "token/s/sequence"), "decode rate promised to each user",
             kind="assumption", source=RATE_SOURCE if tokens_per_second_per_user == CLAIM["rate"]
             else src("tokens_per_second_per_user"))
    ch.given("p", q(prompt_tokens_per_request, "token/request"), "new prompt tokens per request",
             kind="assumption", source=MIX_SOURCE if prompt_tokens_per_request == CLAIM["prompt"]
             else src("prompt_tokens_per_request"))
    ch.given("o", q(output_tokens_per_request, "token/request"), "reply tokens per request",
             kind="assumption", source=MIX_SOURCE if output_tokens_per_request == CLAIM["output"]
             else src("output_tokens_per_request"))
    ch.step("lam", "s/o", "request/min/sequence", "requests per user (the next follows each reply)")
    ch.step("x_p", "lam*p", "token/s/sequence", "prompt tokens each user brings per second")
    # --- Throughput: a decode step on the roofline, and prefill's share of each second.
    serving.add_decode_inputs(ch, m, acc, chip, kv_bytes_per_element)
    # No rate at 100% of a datasheet peak: decode and prefill run at the achieved shares others measured.
    add_fraction_inputs(ch, compute_fraction, bandwidth_fraction)
    ch.step("W_e", "eta_W*W", "TB/s/GPU", "achieved HBM bandwidth per GPU")
    ch.step("P_e", "eta_P*P", "TFLOP/s/GPU", "achieved dense bf16 rate per GPU")
    ch.step("t_w", "N_r*b_w/(g*W_e)", "ms", "weight read per decode step")
    if as_float(ch["s"] * ch["t_w"] / ch["tau"], "") >= 1:
        raise ParameterError(f"tokens_per_second_per_user={tokens_per_second_per_user:g} is more than one user alone "
                             f"can get: each step reads {fmt(ch['N_r'] * ch['b_w'], 'GB')} of weights, at most "
                             f"{fmt(as_float(ch['tau'] / ch['t_w'], 'token/s/sequence'))} token/s")
    ch.step("t_kv", "kv_u/(g*W_e)", "ms/sequence", "cache read per user per step")
    ch.step("f", "k*N_a + I_kv*kappa*T/tau", "GFLOP/token", "FLOPs per token, decode or prompt (attending to the whole context)")
    ch.step("t_f", "f*tau/(g*P_e)", "ms/sequence", "compute per user per step")
    ch.step("u_p", "x_p*f/(g*P_e)", "ms/s/sequence", "replica time each user's prefill takes per second")
    if prefill == "separate":
        ch.solve("U_b", "s*(t_w + U_b*t_kv)/tau + U_b*u_p = 1", "sequence",
                 "users the bandwidth side allows: decode reads and prefill fill each second", digits=5)
    else:   # prefill folded into memory-bound decode steps: it costs FLOPs, not step time
        ch.solve("U_b", "s*(t_w + U_b*t_kv)/tau = 1", "sequence",
                 "users the bandwidth side allows: decode reads fill each second (prefill overlapped)", digits=5)
    ch.solve("U_c", "s*U_c*t_f/tau + U_c*u_p = 1", "sequence",
             "users the FLOPs side allows: decode and prefill FLOPs fill each second", digits=5)
    ch.step("U_t", "floor(Min(U_b, U_c))", "sequence", "throughput constraint")
    ch.step("U", "Min(U_m, U_t)", "sequence", "users per replica: whichever binds")
    if ch["U"].m < 1:
        raise ParameterError(f"not one user fits a replica: memory allows {fmt(ch['U_m'].m)} and throughput "
                             f"{fmt(ch['U_t'].m)} at context_tokens={context_tokens} and "
                             f"{tokens_per_second_per_user:g} token/s; lower the context or the rate, or raise "
                             "gpus_per_replica")
    ch.step("t", "Max(t_w + U*t_kv, U*t_f)", "ms", "decode step with the replica full (roofline floor)")
    if prefill == "separate":
        ch.step("s_U", "tau*(1 - U*u_p)/t", "token/s/sequence", "rate each user gets with the replica full")
    # --- The fleet: replicas with headroom, then GPUs and nodes.
    ch.given("N_u", q(users, "sequence"), "concurrent users", kind="assumption", source=src("users"))
    ch.given("h", headroom, "headroom: extra replicas, as a fraction", kind="assumption",
             source=HEADROOM_SOURCE if headroom == CLAIM["headroom"] else src("headroom"))
    ch.step("R", "ceiling(N_u*(1 + h)/U)", "", "replicas")
    ch.given("n", q(gpus_per_node, "GPU/node"), "GPUs per node", kind="assumption", source=src("gpus_per_node"))
    ch.step("G", "R*g", "GPU", "GPUs")
    ch.step("N_n", "ceiling(R*g/n)", "node", "nodes")
    if prefill != "separate":
        return ch
    # --- Where the other constraint takes over (continuous users, before rounding down).
    x = crossings(ch)
    if x["T_b"] is not None and x["T_c"] is not None:
        if x["T_b"] >= x["T_c"]:
            ch.solve("T_x", "M_kv/(rho*kappa*T_x) = (1 - s*t_w/tau)/(s*rho*kappa*T_x/(tau*g*W_e) "
                     "+ x_p*(k*N_a + I_kv*kappa*T_x/tau)/(g*P_e))", "token/sequence",
                     "context below which throughput (bandwidth side) binds")
        else:
            ch.solve("T_x", "M_kv/(rho*kappa*T_x) = 1/((s + x_p)*(k*N_a + I_kv*kappa*T_x/tau)/(g*P_e))",
                     "token/sequence", "context below which throughput (FLOPs side) binds")
    if x["s_b"] <= x["s_c"]:
        ch.solve("s_x", "M_kv/kv_u = (1 - s_x*t_w/tau)/(s_x*t_kv/tau + s_x*p*f/(o*g*P_e))", "token/s/sequence",
                 "rate above which throughput (bandwidth side) binds")
    else:
        ch.solve("s_x", "M_kv/kv_u = 1/(s_x*t_f/tau + s_x*p*f/(o*g*P_e))", "token/s/sequence",
                 "rate above which throughput (FLOPs side) binds")
    if min(x["p_b"], x["p_c"]) > 0:
        if x["p_b"] <= x["p_c"]:
            ch.solve("p_x", "M_kv/kv_u = (1 - s*t_w/tau)/(s*t_kv/tau + s*p_x*f/(o*g*P_e))", "token/request",
                     "prompt per request above which throughput (bandwidth side) binds")
        else:
            ch.solve("p_x", "M_kv/kv_u = 1/(s*t_f/tau + s*p_x*f/(o*g*P_e))", "token/request",
                     "prompt per request above which throughput (FLOPs side) binds")
    if x["e_b"] >= x["e_c"]:
        ch.solve("e_x", "M_kv/kv_u = (e_x - s*t_w/tau)/(s*t_kv/tau + u_p)", "",
                 "share of the roofline floor's speed below which throughput binds")
    else:
        ch.solve("e_x", "M_kv/kv_u = e_x/(s*t_f/tau + u_p)", "",
                 "share of the roofline floor's speed below which throughput binds")
    return ch


def compute(p) -> Chain:
    return sizing_chain(p.model, p.gpu, p.gpus_per_replica, p.gpus_per_node, p.users, p.context_tokens,
                        p.tokens_per_second_per_user, p.prompt_tokens_per_request, p.output_tokens_per_request,
                        p.weight_bytes_per_param, p.kv_bytes_per_element, p.gpu_memory_utilization,
                        p.memory_reading, p.headroom, p.compute_fraction, p.bandwidth_fraction,
                        source=lambda name: SPEC.source(p, name))






def prose(p, ch) -> dict:
    out = {
        "intro-users": fmt(p.users), "intro-users-2": fmt(p.users), "intro-model": p.model.name,
        "intro-gpus": str(p.gpus_per_replica), "intro-gpu": p.gpu.name, "intro-context": fmt(q(p.context_tokens, "token")),
        "intro-rate": fmt(q(p.tokens_per_second_per_user, "token/s")), "intro-binds": binds(ch),
        "intro-um": ucount(ch["U_m"]), "intro-ut": ucount(ch["U_t"]), "intro-headroom": pct(p.headroom),
        "p-weights": fmt(ch["M_w"]), "p-kv-budget": fmt(ch["M_kv"]), "p-kv-user": per_user(ch["kv_u"], "GB"),
        "p-um": ucount(ch["U_m"]), "p-lam": fmt(as_float(ch["lam"], "request/min/sequence")),
        "p-xp": per_user(ch["x_p"], "token/s"), "p-tw": fmt(ch["t_w"]),
        "p-tw-share": pct(as_float(ch["s"] * ch["t_w"] / ch["tau"], "")), "p-tkv": per_user(ch["t_kv"], "ms"),
        "p-up": fmt(as_float(ch["u_p"], "ms/s/sequence")), "p-ub": fmt(math.floor(as_float(ch["U_b"], "sequence"))),
        "p-uc": fmt(math.floor(as_float(ch["U_c"], "sequence"))),
        "p-side": "bandwidth" if ch["U_b"] <= ch["U_c"] else "FLOPs", "p-ut": ucount(ch["U_t"]), "p-binds": binds(ch),
        "p-u": ucount(ch["U"]), "p-step": fmt(ch["t"]), "p-rate-full": per_user(ch["s_U"], "token/s"),
        "p-users": fmt(p.users), "p-need": fmt(p.users * (1 + p.headroom) / as_float(ch["U"], "sequence")),
        "p-gpus-node": str(p.gpus_per_node),
        "p-turn-context": (f"below a context of {per_user(ch['T_x'], 'token')}" if has(ch, "T_x")
                           else "at every context (the throughput constraint binds throughout)"),
        "p-turn-rate": per_user(ch["s_x"], "token/s"),
        "p-turn-prompt": (f"more than {fmt(ch['p_x'] * q(1, 'request'))} of new prompt per request" if has(ch, "p_x")
                          else "whatever the prompt (throughput binds even with none)"),
        "p-turn-eff": pct(ch["e_x"], digits=2),
    }
    return out


# --- the claim ---------------------------------------------------------------------------------------------
def claim_chain(prefill="separate", **changes) -> Chain:
    """The claim's reading: 1,000 users of Llama-3-70B in bf16 on replicas of one H100 node."""
    args = dict(m=catalog.model(CLAIM["model"]), acc=catalog.accelerator(CLAIM["gpu"]),
                gpus_per_replica=CLAIM["gpus_per_replica"], gpus_per_node=CLAIM["gpus_per_node"], users=CLAIM["users"],
                context_tokens=CLAIM["context"], tokens_per_second_per_user=CLAIM["rate"],
                prompt_tokens_per_request=CLAIM["prompt"], output_tokens_per_request=CLAIM["output"],
                weight_bytes_per_param=CLAIM["weight_bytes"], kv_bytes_per_element=CLAIM["kv_bytes"],
                gpu_memory_utilization=serving.vllm_utilization(), memory_reading="driver", headroom=CLAIM["headroom"])
    if "model" in changes:
        changes["m"] = catalog.model(changes.pop("model"))
    if "gpu" in changes:
        changes["acc"] = catalog.accelerator(changes.pop("gpu"))
    return sizing_chain(**{**args, **changes}, prefill=prefill, source="the claim's reading")


def achieved_chip(ch) -> roofline.Chip:
    """One GPU at the chain's achieved shares of its peaks: the second route runs on the same rates."""
    gpu = q(1, "GPU")
    return roofline.Chip("achieved", "achieved", (ch["P_e"] * gpu).to("FLOP/s"), (ch["W_e"] * gpu).to("byte/s"))


def second_per_second(ch, B, chip, overlapped=False) -> float:
    """Seconds of replica time one second of service at batch B takes: utils.roofline.time_floor on one GPU's
    share of a decode step, times the steps a second, plus prefill's compute-bound FLOPs."""
    g = as_float(ch["g"], "GPU")
    dec_flops = B * ch["f"] * ch["tau"] / g
    dec_bytes = (ch["N_r"] * ch["b_w"] + B * ch["kv_u"]) / g
    t_step, _ = roofline.time_floor(dec_flops, dec_bytes, chip)
    steps = as_float(ch["s"] / ch["tau"], "1/s")
    if overlapped:   # prefill rides in the decode steps: one roofline over the step's bytes and all FLOPs
        pre_flops = B * ch["x_p"] * ch["f"] / g / (ch["s"] / ch["tau"])
        t_all, _ = roofline.time_floor(dec_flops + pre_flops, dec_bytes, chip)
        return steps * as_float(t_all, "s")
    return steps * as_float(t_step, "s") + as_float(B * ch["x_p"] * ch["f"] / g / chip.peak, "")


def largest_batch(ch, chip, overlapped=False) -> int:
    """The second route: add one user at a time until memory or the second runs out."""
    budget, kv_u, B = as_float(ch["M_kv"], "GB"), as_float(ch["kv_u"], "GB/sequence"), 0
    while (B + 1) * kv_u <= budget and second_per_second(ch, q(B + 1, "sequence"), chip, overlapped) <= 1:
        B += 1
    return B


@memoised
def _checked() -> dict:
    cc = claim_chain()
    chip = achieved_chip(cc)
    U = int(cc["U"].m)
    h200, fast = claim_chain(gpu="h200"), claim_chain(tokens_per_second_per_user=2 * CLAIM["rate"])
    short_c = claim_chain(context_tokens=CLAIM["prompt"] + CLAIM["output"])
    ov = claim_chain(prefill="overlapped")
    R = int(cc["R"].m)
    tight = (U * as_float(cc["kv_u"], "GB/sequence") <= as_float(cc["M_kv"], "GB")
             and second_per_second(cc, cc["U"], chip) <= 1 and largest_batch(cc, chip) == U and cc["s_U"] >= cc["s"])
    both_needed = "memory" in {binds(c) for c in (cc, h200, fast, short_c)} and \
        "throughput" in {binds(c) for c in (cc, h200, fast, short_c)}
    covers = R * U >= CLAIM["users"] * (1 + CLAIM["headroom"]) > (R - 1) * U
    return dict(cc=cc, chip=chip, U=U, h200=h200, fast=fast, short=short_c, ov=ov, R=R, tight=tight,
                both_needed=both_needed, covers=covers)


def claims() -> list[Claim]:
    k = _checked()
    cc, h = k["cc"], CLAIM["headroom"]
    other = "throughput" if binds(cc) == "memory" else "memory"
    flips = [text for text, c in (("on H200", k["h200"]), (f"at {per_user(k['fast']['s'], 'token/s')} per user", k["fast"]),
                                  (f"at {per_user(k['short']['T'], 'token')} of context", k["short"]))
             if binds(c) != binds(cc)]
    return [Claim(
        "two-constraints", quote=QUOTE, source="spec/001, paragraph on replica sizing",
        claimed=f"two constraints per replica, the binding one sets users per replica; {fmt(CLAIM['users'])} users "
                "-> nodes with headroom",
        derived=f"memory {ucount(cc['U_m'])} vs throughput {ucount(cc['U_t'])} users per replica of "
                f"{CLAIM['gpus_per_replica']} x H100 ({binds(cc)} binds); {fmt(CLAIM['users'])} users x {fmt(1 + h)} -> "
                f"{fmt(cc['R'])} replicas, {fmt(cc['N_n'])}",
        # The source names a method and the users, no model, GPU, context or rate: the node count is the book's
        # own figure at the book's inputs, and checking the method with the book's chain compares it with itself.
        verdict=UNCHECKABLE,
        reason=f"The source names only the users and the method, so nothing of its own can be checked; at this book's "
               f"inputs memory allows {ucount(cc['U_m'])} and throughput {ucount(cc['U_t'])} users per replica, "
               f"feasible and tight by a direct search; {other} binds instead {', '.join(flips)}, so both "
               f"constraints are needed; the book's {fmt(cc['R'])} replicas cover the users with the headroom.")]


@memoised
def checks() -> dict:
    import sympy as sp
    k = _checked()
    cc, h200, fast, short_c, ov, U, R = k["cc"], k["h200"], k["fast"], k["short"], k["ov"], k["U"], k["R"]
    h, n_users = CLAIM["headroom"], CLAIM["users"]
    x = crossings(cc)
    R_util = math.ceil(n_users / (U * (1 - h)))             # headroom read as a utilisation cap of 1 - h
    Ub, s_, tau_, tw, tkv, up = sp.symbols("U_b s tau t_w t_kv u_p", positive=True)
    closed = sp.solve(sp.Eq(s_ / tau_ * (tw + Ub * tkv) + Ub * up, 1), Ub)[0]
    p_ratio = as_float(h200["P"] / cc["P"], "")
    rows = [("this page (separate prefill passes)", cc), ("prefill overlapped with decode", ov),
            ("H200 instead of H100", h200), (f"{fmt(fast['s'].m)} token/s per user", fast),
            (f"{fmt(short_c['T'].m)} tokens of context", short_c)]
    table = ("$U_b = " + sp.latex(closed) + "$\n\n| reading | memory | throughput | binds | replicas | nodes |\n"
             "|---|---|---|---|---|---|\n" + "\n".join(
                 f"| {lab} | {ucount(c['U_m'])} | {ucount(c['U_t'])} | {binds(c)} | {fmt(c['R'])} | {fmt(c['N_n'])} |"
                 for lab, c in rows))
    fits_next = (U + 1) * as_float(cc["kv_u"], "GB/sequence") > as_float(cc["M_kv"], "GB")
    glue = {
        "claim-users": fmt(CLAIM["users"]), "claim-gpus": str(CLAIM["gpus_per_replica"]),
        "claim-context": fmt(q(CLAIM["context"], "token")), "claim-rate": fmt(q(CLAIM["rate"], "token/s")),
        "claim-prompt": fmt(q(CLAIM["prompt"], "token")), "claim-output": fmt(q(CLAIM["output"], "token")),
        "claim-headroom": pct(h),
        "check-um": ucount(cc["U_m"]), "check-ut": ucount(cc["U_t"]), "check-u": ucount(cc["U"]), "check-u1": fmt(U + 1),
        "check-u1-why": "the caches no longer fit" if fits_next else "a second of service takes more than a second",
        "check-binds": binds(cc),
        "check-h200-kv": fmt(as_float(h200["M_kv"] / cc["M_kv"], "")), "check-h200-bw": fmt(as_float(h200["W"] / cc["W"], "")),
        "check-h200-p": "not at all" if abs(p_ratio - 1) < 1e-9 else f"{fmt(p_ratio)} times",
        "check-r": fmt(cc["R"]), "check-nodes": fmt(cc["N_n"]), "check-users": fmt(n_users),
        "check-need": fmt(n_users * (1 + h)), "check-cover": fmt(R * U),
        "check-h200-um": ucount(h200["U_m"]), "check-h200-ut": ucount(h200["U_t"]), "check-h200-binds": binds(h200),
        "check-fast-rate": per_user(fast["s"], "token/s"), "check-fast-um": ucount(fast["U_m"]),
        "check-fast-ut": ucount(fast["U_t"]), "check-fast-binds": binds(fast),
        "check-tx": per_user(cc["T_x"], "token"), "check-sx": per_user(cc["s_x"], "token/s"),
        "check-short-ctx": per_user(short_c["T"], "token"), "check-short-binds": binds(short_c),
        "check-short-um": ucount(short_c["U_m"]), "check-short-ut": ucount(short_c["U_t"]),
        "check-ov-ut": ucount(ov["U_t"]), "check-ov-binds": binds(ov), "check-ov-nodes": fmt(ov["N_n"]),
        "check-r-util": fmt(R_util), "check-one-minus-h": pct(1 - h),
        "read-vllm-util": f"{serving.vllm_utilization():g}", "read-reserve": pct(1 - serving.vllm_utilization()),
    }
    return dict(**k, crossings=x, closed_ok=sp.simplify(closed - (tau_ - s_ * tw) / (s_ * tkv + tau_ * up)) == 0,
                table=table, glue=glue,
                ov_search=largest_batch(ov, k["chip"], overlapped=True) == int(ov["U"].m),
                h200_search=largest_batch(h200, achieved_chip(h200)) == int(h200["U"].m))


# --- figure, what changes, exercises -------------------------------------------------------------------------
def curves(ch, T, s):
    """Continuous users per replica from each constraint, at contexts T (tokens) and rates s (token/s)."""
    import numpy as np
    Mk, rk = as_float(ch["M_kv"], "byte"), as_float(ch["rho"] * ch["kappa"], "byte/token")
    gW, gP = as_float(ch["g"] * ch["W_e"], "byte/s"), as_float(ch["g"] * ch["P_e"], "FLOP/s")
    Nrbw, kNa = as_float(ch["N_r"] * ch["b_w"], "byte"), as_float(ch["k"] * ch["N_a"], "FLOP/token")
    Ik = as_float(ch["I_kv"] * ch["kappa"], "FLOP/token")
    po = as_float(ch["p"] / ch["o"], "")
    f = kNa + Ik * T
    u_p = s * po * f / gP
    U_b = (1 - s * Nrbw / gW) / (s * rk * T / gW + u_p)
    U_c = 1 / (s * f / gP + u_p)
    return Mk / (rk * T), np.minimum(U_b, U_c)


def figure_data(p, ch) -> dict:
    """The two panels: users per replica by each constraint against context and against rate."""
    import numpy as np
    T0, s0 = as_float(ch["T"], "token/sequence"), as_float(ch["s"], "token/s/sequence")
    lo = p.prompt_tokens_per_request + p.output_tokens_per_request
    t_x = as_float(ch["T_x"], "token/sequence") if has(ch, "T_x") else lo
    ctx = np.logspace(np.log10(min(lo, t_x) / 4), np.log10(max(131072, 8 * T0)), 300)
    rates = np.linspace(max(1.0, 0.05 * s0), 0.98 * as_float(ch["tau"] / ch["t_w"], "token/s/sequence"), 300)
    sx = as_float(ch["s_x"], "token/s/sequence")
    return dict(T0=T0, s0=s0, lo=lo, ctx=ctx, rates=rates, by_context=curves(ch, ctx, s0), by_rate=curves(ch, T0, rates),
                turn_context=(t_x, curves(ch, np.array([t_x]), s0)[0][0]) if has(ch, "T_x") else None,
                turn_rate=(sx, curves(ch, T0, np.array([sx]))[0]))


def variants(p) -> str:
    """The what-changes table for the reader's parameters."""
    def variant(**changes):
        args = {**dict(p), **changes}
        try:
            look_up = {"model": catalog.model, "gpu": catalog.accelerator}
            return sizing_chain(*(look_up[a](args[a]) if a in look_up else args[a] for a in ARGS),
                                source="this page's variant")
        except ParameterError as e:
            return str(e)
    rate_i = as_float(q(1, "token") / MLPERF_TPOT["interactive"], "token/s")
    fit = p.prompt_tokens_per_request + p.output_tokens_per_request
    cases = [("the parameters", {}), ("context x 8", dict(context_tokens=8 * p.context_tokens)),
             ("context / 2", dict(context_tokens=max(p.context_tokens // 2, fit))),
             (f"rate {fmt(rate_i)} token/s (MLPerf interactive)", dict(tokens_per_second_per_user=rate_i)),
             ("prompt x 3 per request", dict(prompt_tokens_per_request=3 * p.prompt_tokens_per_request,
                                            context_tokens=max(p.context_tokens, 3 * p.prompt_tokens_per_request
                                                               + p.output_tokens_per_request))),
             ("fp8 KV cache", dict(kv_bytes_per_element=p.kv_bytes_per_element / 2)),
             ("fp8 weights and KV cache", dict(kv_bytes_per_element=p.kv_bytes_per_element / 2,
                                               weight_bytes_per_param=p.weight_bytes_per_param / 2))]
    cases += [(f"on {catalog.accelerator(k).short_name}", dict(gpu=k)) for k in ("h100-sxm", "h200", "b200")
              if k != p.gpu.key]
    rows = []
    for label, ch_ in cases:
        c = variant(**ch_)
        rows.append(f"| {label} | {c} | | | | |" if isinstance(c, str) else
                    f"| {label} | {ucount(c['U_m'])} | {ucount(c['U_t'])} | {binds(c)} | {fmt(c['R'])} | {fmt(c['N_n'])} |")
    return (f"For the parameters' {fmt(p.users)} users with {pct(p.headroom)} headroom:\n\n| change | memory | "
            "throughput | binds | replicas | nodes |\n|---|---|---|---|---|---|\n" + "\n".join(rows))


def _verdict(c) -> str:
    if abs(as_float(c["U_m"] - c["U_t"], "sequence")) <= 1:
        return "the two meet"
    return f"{binds(c)} binds"


def what_changes(p, ch) -> dict:
    cc = claim_chain()
    long_c = claim_chain(context_tokens=8 * CLAIM["context"])
    inter_c = claim_chain(tokens_per_second_per_user=as_float(q(1, "token") / MLPERF_TPOT["interactive"], "token/s"))
    fp8kv = claim_chain(kv_bytes_per_element=CLAIM["kv_bytes"] / 2)
    fp8 = claim_chain(kv_bytes_per_element=CLAIM["kv_bytes"] / 2, weight_bytes_per_param=CLAIM["weight_bytes"] / 2)
    b200, h200 = claim_chain(gpu="b200"), claim_chain(gpu="h200")
    p3 = 3 * CLAIM["prompt"]
    mix = claim_chain(prompt_tokens_per_request=p3)
    facts = dict(long=binds(long_c), inter=binds(inter_c), mix=binds(mix), h200=binds(h200),
                 px_between=has(cc, "p_x") and CLAIM["prompt"] < as_float(cc["p_x"], "token/request") < p3,
                 fp8kv_less=fp8kv["U_t"] / cc["U_t"] < fp8kv["U_m"] / cc["U_m"])
    glue = {"wc-nodes": fmt(cc["N_n"]), "wc-long-ctx": fmt(q(8 * CLAIM["context"], "token")),
            "wc-long-u": ucount(long_c["U"]), "wc-long-nodes": fmt(long_c["N_n"]), "wc-long-binds": binds(long_c),
            "wc-inter-rate": per_user(inter_c["s"], "token/s"), "wc-inter-ut": ucount(inter_c["U_t"]),
            "wc-inter-um": ucount(inter_c["U_m"]), "wc-inter-binds": binds(inter_c), "wc-sx": per_user(cc["s_x"], "token/s"),
            "wc-px": fmt(cc["p_x"] * q(1, "request")) if has(cc, "p_x") else "no prompt at all",
            "wc-p3": fmt(q(p3, "token")), "wc-mix-ut": ucount(mix["U_t"]), "wc-mix-nodes": fmt(mix["N_n"]),
            "wc-h200-nodes": fmt(h200["N_n"]), "wc-h200-sx": per_user(h200["s_x"], "token/s"),
            "wc-b200-u": ucount(b200["U"]), "wc-b200-binds": binds(b200), "wc-b200-nodes": fmt(b200["N_n"]),
            "wc-fp8kv-um": ucount(fp8kv["U_m"]), "wc-fp8kv-ut": ucount(fp8kv["U_t"]), "wc-fp8kv-verdict": _verdict(fp8kv),
            "wc-fp8kv-nodes": fmt(fp8kv["N_n"]), "wc-fp8-um": ucount(fp8["U_m"]), "wc-fp8-ut": ucount(fp8["U_t"]),
            "wc-fp8-verdict": _verdict(fp8), "wc-fp8-nodes": fmt(fp8["N_n"]), "wc-eff": pct(cc["e_x"], digits=2)}
    return dict(facts=facts, glue=glue)


def exercises(p, ch) -> dict:
    ex1 = claim_chain(users=2000)
    ex2 = claim_chain(model="llama-3-8b", gpus_per_replica=1)
    spare = int(as_float(ex2["N_n"], "node")) * CLAIM["gpus_per_node"] - int(ex2["R"].m)
    m405, h100 = catalog.model("llama-3-405b"), catalog.accelerator(CLAIM["gpu"])
    try:
        claim_chain(model="llama-3-405b")
        refused = ""
    except ParameterError as e:
        refused = str(e)
    w405 = models.weight_bytes(m405, CLAIM["weight_bytes"]).to("GB")
    share405 = (CLAIM["gpus_per_node"] * serving.gpu_memory(h100).total * serving.vllm_utilization()).to("GB")
    ex3b = claim_chain(model="llama-3-405b", gpu="h200")
    ex3 = claim_chain(model="llama-3-405b", gpu="h200", weight_bytes_per_param=1.0, kv_bytes_per_element=1.0)
    return dict(refused=bool(refused) and w405 > share405, binds_differ=binds(ex3b) != binds(ex3), glue={
        "ex1-users": fmt(2000), "ex1-u": ucount(ex1["U"]), "ex1-binds": binds(ex1),
        "ex1-need": fmt(2000 * (1 + CLAIM["headroom"])),
        "ex1-exact": fmt(2000 * (1 + CLAIM["headroom"]) / as_float(ex1["U"], "sequence")),
        "ex1-r": fmt(ex1["R"]), "ex1-nodes": fmt(ex1["N_n"]), "ex2-per-node": str(CLAIM["gpus_per_node"]),
        "ex2-um": ucount(ex2["U_m"]), "ex2-ut": ucount(ex2["U_t"]), "ex2-binds": binds(ex2), "ex2-r": fmt(ex2["R"]),
        "ex2-gpus": fmt(ex2["G"]), "ex2-nodes": fmt(ex2["N_n"]), "ex2-spare": fmt(spare),
        "ex2-spare-users": fmt(spare * ex2["U"].m),
        "ex3-h100": f"{m405.name} in bf16 needs {fmt(w405)} for its weights, more than the {fmt(share405)} that "
                    f"{CLAIM['gpus_per_node']} {h100.name} give the engine at its {pct(serving.vllm_utilization())} share "
                    "of what the driver reports",
        "ex3-gpus": str(CLAIM["gpus_per_node"]), "ex3-bf16-weights": fmt(ex3b["M_w"]), "ex3-bf16-um": ucount(ex3b["U_m"]),
        "ex3-bf16-ut": ucount(ex3b["U_t"]), "ex3-bf16-binds": binds(ex3b), "ex3-bf16-nodes": fmt(ex3b["N_n"]),
        "ex3-weights": fmt(ex3["M_w"]), "ex3-um": ucount(ex3["U_m"]), "ex3-ut": ucount(ex3["U_t"]),
        "ex3-binds": binds(ex3), "ex3-nodes": fmt(ex3["N_n"]),
        "ex3-gain-m": fmt(as_float(ex3["U_m"] / ex3b["U_m"], "")) + " x",
        "ex3-gain-t": fmt(as_float(ex3["U_t"] / ex3b["U_t"], "")) + " x",
        "ex3-prefill-share": pct(as_float(ex3["U_t"] * ex3["u_p"], ""), digits=2)})


SPEC = Spec("replica-sizing", PARAMETERS, RESULTS, compute, validate=validate,
            closed_form=True)
