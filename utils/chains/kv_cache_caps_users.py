"""kv-cache-caps-users: how many users fit on a node, by memory, against how many its FLOPs could serve.

Memory (utils.serving): the engine manages a share of each GPU's memory, as vLLM does a fraction of
what the driver reports; the weights come out of it and the rest holds KV caches, one per user at the
user's context. Compute: each user costs 2 N_active FLOPs per decode step plus attention over its cache,
so the node's dense rate serves g P / (s f) users at s tokens per second each; bandwidth serves the
users whose caches (and the weights) can be read once per token. Three unknowns are solved in closed
form: the context below which compute would bind, the context at which the node still holds a target
of users, and the per-user rate above which bandwidth, not capacity, binds.
"""
from __future__ import annotations

import functools
import math

from utils import catalog, models, roofline, serving
from utils.chain import Chain, as_float, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.roofline import FRACTIONS, add_fraction_inputs, fraction_params
from utils.serving import per_user_text as per_user
from utils.serving import users_text as users
from utils.units import fmt, pct, q, short
from utils.verdicts import READING, Claim

PARAMETERS = (
    Param("model", "llama-3-70b", "the model: a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-70B, the claim's 70B model"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key", check="accelerator",
          source="catalog: H100 SXM, this page's reading of the claim's GPU"),
    Param("gpus_per_node", 8, "GPUs holding one copy of the model (tensor parallel): one node", check="whole",
          source="an HGX H100 node of eight GPUs (this book's reading)"),
    Param("weight_bytes_per_param", 2.0, "bytes per stored weight: 2 = bf16, 1 = fp8", unit="byte/parameter",
          source="bf16 weights (this book's reading)"),
    Param("kv_bytes_per_element", 2.0, "bytes per cached K or V element: 2 = bf16, 1 = fp8", unit="byte",
          source="bf16 cache (this book's reading)"),
    Param("context_tokens", 8192, "tokens of context each user holds in the KV cache", unit="token",
          check="whole", source="catalog: Llama-3-70B's context window"),
    Param("gpu_memory_utilization", 0.9, "share of each GPU's memory the engine manages (vLLM's default)",
          check="fraction", source="catalog: vLLM's default gpu_memory_utilization"),
    Param("memory_reading", "driver", "which total the share multiplies: driver (what vLLM multiplies), "
          "nvidia-smi or datasheet", check="choice", choices=serving.READINGS,
          source="vLLM multiplies the total the CUDA runtime reports (utils.serving)"),
    Param("tokens_per_second_per_user", 20.0, "decode rate promised to each user", unit="token/s",
          source="this book's assumption, inside MLPerf Inference's Llama-2-70B limits on time per output token"),
    Param("target_users_per_node", 100, "users a node should hold: the page solves for the context that allows",
          unit="sequence", check="whole", source="this book's assumption"),
    *fraction_params(),
)

RESULTS = (
    Result("users_per_node", "sequence", "Users per node (whole KV caches that fit)", of="U"),
    Result("users_per_gpu", "sequence/GPU", "Users per GPU (the node's over its GPUs)", of="U_g"),
    Result("kv_bytes_per_user", "GB/sequence", "KV cache per user, across the node", of="kv_u"),
    Result("memory_for_kv_per_node", "GB", "Memory for the KV cache per node", of="M_kv"),
    Result("compute_users_per_node", "sequence", "Users the dense bf16 rate alone could serve at the promised rate",
           of="U_c"),
    Result("bandwidth_users_per_node", "sequence", "Users HBM bandwidth could serve at the promised rate", of="U_bw"),
    Result("compute_headroom", "", "Compute's users over memory's users", of="x"),
    Result("rate_per_user_when_full", "token/s/sequence", "Decode rate per user with the node full (roofline floor)",
           of="s_U"),
    Result("context_for_target_users", "token/sequence", "Longest context at which a node holds the target users",
           of="T_n"),
    Result("bandwidth_takeover_rate", "token/s/sequence",
           "Per-user rate above which bandwidth, not capacity, caps users", of="s_bw"),
)

_MLPERF = catalog.entry("software", "mlperf-inference")
MLPERF_TPOT = {"server": _MLPERF.q("llama2_70b_server_tpot"), "interactive": _MLPERF.q("llama2_70b_interactive_tpot")}
_CONF = _MLPERF["llama2_70b_server_tpot"].source
RATE_SOURCE = ("this book's assumption, inside MLPerf Inference's Llama-2-70B limits on time per output "
               f"token: {fmt(MLPERF_TPOT['server'])} (server) and {fmt(MLPERF_TPOT['interactive'])} (interactive), "
               f"{_CONF.title}, {_CONF.url}, read {_CONF.read}")
MODELS_SOURCE = serving.MODELS_SOURCE

# The claim: for a 70B model, memory (the KV cache) caps concurrent users before compute does. The GPU,
# node size, context, dtypes and the per-user rate are this page's reading.
CLAIM = dict(n_params=70e9, model="llama-3-70b", gpu="h100-sxm", gpus_per_node=8, weight_bytes=2.0,
             kv_bytes=2.0, rate=20.0)
QUOTE = ("Every token a model has seen leaves a key and a value in every layer. Multiply that out for a "
         "70B model and you will see why memory, not compute, caps how many users a GPU can hold.")
CHIPS = ("h100-sxm", "h200", "b200")
CONTEXTS = (1024, 8192, 32768, 131072)


def validate(p):
    serving.budget(p.model, p.gpu, p.gpus_per_node, p.weight_bytes_per_param, p.kv_bytes_per_element,
                   p.context_tokens, p.gpu_memory_utilization, p.memory_reading)
    n = models.param_count(p.model)
    read = (n["total"] - n["embedding"]) * q(p.weight_bytes_per_param, "byte/parameter")
    s_max = (p.gpus_per_node * p.bandwidth_fraction * p.gpu.q("hbm_bandwidth") / read * q(1, "token")).to("token/s")
    if q(p.tokens_per_second_per_user, "token/s") >= s_max:
        raise ParameterError(f"tokens_per_second_per_user={p.tokens_per_second_per_user:g} is more than one user "
                             f"alone can get: each step reads {fmt(read, 'GB')} of weights at "
                             f"{fmt(p.gpus_per_node * p.bandwidth_fraction * p.gpu.q('hbm_bandwidth'), 'TB/s')} "
                             f"(the achieved share of the bandwidth), at most {fmt(s_max)}")


def users_chain(m, acc, gpus_per_node, weight_bytes_per_param, kv_bytes_per_element, context_tokens,
                gpu_memory_utilization, tokens_per_second_per_user, target_users_per_node,
                memory_reading="driver", compute_fraction=FRACTIONS[0], bandwidth_fraction=FRACTIONS[1], *,
                source="parameters cell", cite=None) -> Chain:
    """Users of model `m` on a node of `gpus_per_node` x `acc` (catalog Entries), by memory, compute and
    bandwidth at the promised rate. Each input cites `source`, or cite(parameter name) where given (the page's
    SPEC.source)."""
    cite = cite or (lambda _name: source)
    chip = roofline.Chip(acc.key, acc.name, acc.q("bf16_dense").to("FLOP/s"), acc.q("hbm_bandwidth").to("byte/s"))
    b = serving.budget(m, acc, gpus_per_node, weight_bytes_per_param, kv_bytes_per_element, context_tokens,
                       gpu_memory_utilization, memory_reading)
    ch = Chain(f"Users of {m.name} on {gpus_per_node} x {acc.name}")
    default_u = gpu_memory_utilization == serving.vllm_utilization()
    serving.add_budget_steps(ch, b, source={"g": cite("gpus_per_node"), "u": cite("gpu_memory_utilization"),
                                            "b_w": cite("weight_bytes_per_param"), "T": cite("context_tokens")},
                             utilization_value=serving.vllm_utilization_value() if default_u else None)
    # Compute and bandwidth: how many users a decode step could serve at the promised rate.
    serving.add_decode_inputs(ch, m, acc, chip, kv_bytes_per_element)
    add_fraction_inputs(ch, compute_fraction, bandwidth_fraction, source)
    ch.step("f", "k*N_a*tau + I_kv*kappa*T", "GFLOP/sequence", "FLOPs per user per decode step")
    ch.given("s", q(tokens_per_second_per_user, "token/s/sequence"), "decode rate promised to each user",
             kind="assumption", source=RATE_SOURCE if tokens_per_second_per_user == CLAIM["rate"]
             else cite("tokens_per_second_per_user"))
    ch.step("U_c", "g*eta_P*P*tau/(s*f)", "sequence", "users compute alone could serve at that rate")
    ch.step("U_bw", "(g*eta_W*W*tau/s - N_r*b_w)/kv_u", "sequence", "users HBM bandwidth could serve at that rate")
    ch.step("x", "U_c/U", "", "compute headroom: compute's users over memory's")
    ch.step("t", "Max(U*f/(g*eta_P*P), (N_r*b_w + U*kv_u)/(g*eta_W*W))", "ms",
            "decode step with the node full, at the achieved shares")
    ch.step("s_U", "tau/t", "token/s/sequence", "rate each user gets with the node full")
    # Three unknowns, solved in closed form.
    turn = as_float(ch["g"] * ch["eta_P"] * ch["P"] * ch["tau"] * ch["rho"] - ch["M_kv"] * ch["s"] * ch["I_kv"],
                    "FLOP*token/s/sequence")
    if turn > 0:
        ch.solve("T_x", "M_kv/(rho*kappa*T_x) = g*eta_P*P*tau/(s*(k*N_a*tau + I_kv*kappa*T_x))", "token/sequence",
                 "context below which compute, not memory, caps users")
    ch.given("U_n", q(target_users_per_node, "sequence"), "users a node should hold", kind="assumption",
             source=cite("target_users_per_node"))
    ch.solve("T_n", "U_n = M_kv/(rho*kappa*T_n)", "token/sequence", "longest context at which it holds them")
    ch.solve("s_bw", "M_kv = g*eta_W*W*tau/s_bw - N_r*b_w", "token/s/sequence",
             "per-user rate above which bandwidth, not capacity, caps users")
    return ch


def has_turn(ch) -> bool:
    return any(row.name == "T_x" for row in ch.rows)


def compute(p) -> Chain:
    return users_chain(p.model, p.gpu, p.gpus_per_node, p.weight_bytes_per_param, p.kv_bytes_per_element,
                       p.context_tokens, p.gpu_memory_utilization, p.tokens_per_second_per_user,
                       p.target_users_per_node, p.memory_reading, p.compute_fraction, p.bandwidth_fraction,
                       cite=functools.partial(SPEC.source, p))


# --- prose -----------------------------------------------------------------------------------------




def prose(p, ch) -> dict:
    """The glue texts the page's prose uses for the reader's parameters."""
    turn_text = (f"only below a context of {per_user(ch['T_x'], 'token')}" if has_turn(ch)
                 else "at every context: at this rate attention's FLOPs over the caches alone outgrow the node")
    out = {
        "p-users": users(ch["U"]), "p-users-2": users(ch["U"]), "p-users-gpu": fmt(as_float(ch["U_g"], "sequence/GPU")),
        "p-compute": users(ch["U_c"]), "p-compute-2": users(ch["U_c"]), "p-bw": users(ch["U_bw"]),
        "p-kv-user": per_user(ch["kv_u"], "GB"), "p-rate-full": per_user(ch["s_U"], "token/s"),
        "p-ctx-target": per_user(ch["T_n"], "token"), "p-s-bw": per_user(ch["s_bw"], "token/s"),
        "intro-model": p.model.name, "intro-gpus": str(p.gpus_per_node), "intro-gpu": p.gpu.name,
        "intro-context": fmt(q(p.context_tokens, "token")), "intro-rate": fmt(q(p.tokens_per_second_per_user, "token/s")),
        "weights-node": fmt(ch["M_w"]), "weights-gpu": fmt(ch["m_w"] * q(1, "GPU")),
        "usable-gpu": fmt(ch["c_u"] * q(1, "GPU")), "kv-gpu": fmt(ch["m_kv"] * q(1, "GPU")),
        "kv-token": fmt(ch["kappa"]), "copies": "once" if ch["rho"].m == 1 else f"{fmt(ch['rho'])} times",
        "flops-user": per_user(ch["f"], "GFLOP"), "target-users": str(p.target_users_per_node),
        "turn-text": turn_text, "intro-turn": turn_text,
        "intro-verdict": (f"so memory is the limit, with compute to spare by a factor of {fmt(ch['x'])}"
                          if ch["x"] > 1 else "so here compute, not memory, is the limit"),
    }
    return out


def readings_text() -> dict:
    """The three readings of an H100's memory, for the prose before the chain."""
    h100 = catalog.accelerator("h100-sxm")
    smi = serving.gpu_memory(h100, "nvidia-smi").total
    drv = serving.gpu_memory(h100, "driver").total
    return {"read-h100-cap": fmt(h100.q("hbm_capacity").to("GB")), "read-h100-mib": fmt(smi.to("MiB")),
            "read-h100-gb": fmt(smi.to("GB")), "read-h100-gib": fmt(smi.to("GiB")),
            "read-h100-driver-gib": fmt(drv.to("GiB"), digits=4), "read-h100-driver-gb": fmt(drv.to("GB")),
            "read-h100-managed-gib": fmt((drv * serving.vllm_utilization()).to("GiB"), digits=4),
            "read-gib-loss": pct(1 - as_float(q(1, "GB") / q(1, "GiB"), ""), digits=2),
            "read-vllm-util": f"{serving.vllm_utilization():g}", "read-reserve": pct(1 - serving.vllm_utilization())}


# --- the claim -------------------------------------------------------------------------------------
def claim_chain(**changes) -> Chain:
    """The claim's reading: Llama-3-70B on a node of H100s at its own window, bf16, vLLM's share."""
    args = dict(m=catalog.model(CLAIM["model"]), acc=catalog.accelerator(CLAIM["gpu"]),
                gpus_per_node=CLAIM["gpus_per_node"], weight_bytes_per_param=CLAIM["weight_bytes"],
                kv_bytes_per_element=CLAIM["kv_bytes"],
                context_tokens=int(catalog.model(CLAIM["model"]).q("max_context").m),
                gpu_memory_utilization=serving.vllm_utilization(), tokens_per_second_per_user=CLAIM["rate"],
                target_users_per_node=100, memory_reading="driver")
    return users_chain(**{**args, **changes}, source="the claim's reading")


def roofline_route(cc) -> dict:
    """Second route, at any rate: a step's intensity B f / (N_r b_w + B kv_u) rises with the batch B towards
    f / kv_u; below the ridge no batch is compute-bound. T_r is the context above which that holds."""
    import numpy as np
    import sympy as sp
    peak = roofline.chip(CLAIM["gpu"])
    chip = roofline.Chip(peak.key, peak.name, peak.peak * FRACTIONS[0], peak.bandwidth * FRACTIONS[1])   # achieved
    i_inf = (cc["f"] / cc["kv_u"]).to("FLOP/byte")
    T_r, k_, Na, tau_, kap, rho_, Ikv, Istar = sp.symbols("T_r k N_a tau kappa rho I_kv I_star", positive=True)
    closed = sp.solve(sp.Eq(Istar, (k_ * Na * tau_ + Ikv * kap * T_r) / (rho_ * kap * T_r)), T_r)[0]
    shown = k_ * Na * tau_ / (kap * (rho_ * Istar - Ikv))      # the same, with a positive denominator
    value = (cc["k"] * cc["N_a"] * cc["tau"] / (cc["kappa"] * (cc["rho"] * chip.ridge - cc["I_kv"]))).to("token/sequence")
    sym = float(closed.subs({k_: 2, Na: as_float(cc["N_a"], "parameter"), tau_: 1,
                             kap: as_float(cc["kappa"], "byte/token"), rho_: cc["rho"].m,
                             Ikv: as_float(cc["I_kv"], "FLOP/byte"), Istar: as_float(chip.ridge, "FLOP/byte")}))
    # At every rate a single user could be served at, bandwidth's users stay below compute's.
    s_max = as_float(cc["g"] * cc["eta_W"] * cc["W"] * cc["tau"] / (cc["N_r"] * cc["b_w"]), "token/s/sequence")
    rates = np.linspace(0.01, 0.999, 400) * s_max
    u_bw = (as_float(cc["g"] * cc["eta_W"] * cc["W"] * cc["tau"], "GB*token/s/sequence") / rates
            - as_float(cc["N_r"] * cc["b_w"], "GB")) / as_float(cc["kv_u"], "GB/sequence")
    u_c = (as_float(cc["g"] * cc["eta_P"] * cc["P"] * cc["tau"], "GFLOP*token/s/sequence") / rates
           / as_float(cc["f"], "GFLOP/sequence"))
    t_floor, bound = roofline.time_floor(cc["U"] * cc["f"] / CLAIM["gpus_per_node"],
                                         (cc["N_r"] * cc["b_w"] + cc["U"] * cc["kv_u"]) / CLAIM["gpus_per_node"], chip)
    return dict(chip=chip, i_inf=i_inf, closed=closed, shown=shown, T_r=value, T_r_sym=sym,
                any_rate=bool(np.all(np.minimum(u_bw, cc["U"].m) < u_c)), t_floor=t_floor, bound=bound,
                simplified=sp.simplify(closed - shown) == 0)


def memory_readings(cc) -> list[tuple]:
    """(label, memory per GPU, KV budget per node, users) for each reading of the claim's H100 memory."""
    out = []
    for label, reading, share in [("driver (what vLLM multiplies), vLLM's share", "driver", None),
                                  ("datasheet, decimal GB, vLLM's share", "datasheet", None),
                                  ("nvidia-smi, all of it", "nvidia-smi", 1.0)]:
        ch = claim_chain(memory_reading=reading, **({} if share is None else {"gpu_memory_utilization": share}))
        out.append((label, serving.gpu_memory(catalog.accelerator(CLAIM["gpu"]), reading).total, ch["M_kv"],
                    int(ch["U"].m), ch["U_c"]))
    return out


def claims() -> list[Claim]:
    cc = claim_chain()
    r = roofline_route(cc)
    holds = bool(cc["U"] < cc["U_c"] and r["i_inf"] < r["chip"].ridge and r["any_rate"]
                 and all(u < uc.m for *_, u, uc in memory_readings(cc)))
    ctx = fmt(cc["T"] * q(1, "sequence"))
    return [Claim(
        "memory-caps-users", quote=QUOTE, source="spec/001, paragraph on the KV cache",
        claimed=f"memory, not compute, caps how many users a GPU can hold ({short(CLAIM['n_params'])} model)",
        derived=f"{users(cc['U'])} users per node of {CLAIM['gpus_per_node']} x H100 "
                f"({fmt(as_float(cc['U_g'], 'sequence/GPU'))} per GPU) by memory, against "
                f"{users(cc['U_c'])} by compute at {per_user(cc['s'], 'token/s')} each ({fmt(cc['x'])} x)",
        verdict=READING if holds else "wrong as stated",
        reading=f"'how many users a GPU can hold' read as the users whose caches one GPU's share of a node holds, "
                f"against the users its FLOPs could serve at any per-user rate: a {short(CLAIM['n_params'])} model's "
                f"bf16 weights fit no single H100, so 'a GPU' is one of a node of {CLAIM['gpus_per_node']} holding one "
                f"copy; 'every token a model has seen' read as a user's whole context, up to the model's window of {ctx}",
        nearest_true="" if holds else "compute caps users first at these inputs",
        reason=f"At any per-user rate a decode step's intensity stays below the ridge at the achieved shares "
               f"({fmt(r['i_inf'])} against {fmt(r['chip'].ridge)} at the window; below it for every context above "
               f"{per_user(r['T_r'], 'token')}), so no batch is compute-bound and memory binds first; at the window "
               f"memory holds {users(cc['U'])} users per node where compute could serve {users(cc['U_c'])} at this "
               f"book's {per_user(cc['s'], 'token/s')} each, under every reading of the memory.")]


@memoised
def checks() -> dict:
    """The check section: the claim's chain, the roofline route, the memory readings, and their glue."""
    import sympy as sp
    cc = claim_chain()
    r = roofline_route(cc)
    rd = memory_readings(cc)
    table = ("| memory reading (H100) | per GPU | KV budget per node | users per node |\n|---|---|---|---|\n"
             + "\n".join(f"| {lab} | {fmt(cap.to('GB'))} | {fmt(b)} | {u} |" for lab, cap, b, u, _ in rd))
    glue = {"check-users": users(cc["U"]), "check-users-gpu": fmt(as_float(cc["U_g"], "sequence/GPU")),
            "check-compute": users(cc["U_c"]), "check-headroom": fmt(cc["x"]) + " x",
            "check-bw": users(cc["U_bw"]), "check-rate-full": per_user(cc["s_U"], "token/s"),
            "check-i-inf": fmt(r["i_inf"]), "check-ridge": fmt(r["chip"].ridge),
            "check-t-r": per_user(r["T_r"], "token"), "check-t-x": per_user(cc["T_x"], "token"),
            "check-datasheet-users": str(rd[1][3]), "check-noreserve-users": str(rd[2][3]),
            "claim-model-size": short(CLAIM["n_params"]), "claim-gpus": str(CLAIM["gpus_per_node"]),
            "claim-context": fmt(cc["T"] * q(1, "sequence")), "claim-rate": fmt(q(CLAIM["rate"], "token/s"))}
    return dict(chain=cc, route=r, readings=rd, table=table, latex=sp.latex(r["shown"]), glue=glue)


# --- the table, the figure, what changes, exercises -------------------------------------------------
def turn_table() -> dict:
    """The claim's chain across chips and contexts: users by memory and by compute, and where compute binds."""
    rows, turns, memory_first = [], {}, True
    for key in CHIPS:
        for ctx in CONTEXTS:
            c = claim_chain(acc=catalog.accelerator(key), context_tokens=ctx)
            memory_first &= bool(c["U"] < c["U_c"])
            turns[key] = c["T_x"] * q(1, "sequence")
            rows.append(f"| {catalog.accelerator(key).short_name} | {fmt(q(ctx, 'token'))} | {users(c['U'])} | "
                        f"{users(c['U_c'])} | {fmt(c['x'])} | {fmt(turns[key])} |")
    table = (f"| node of {CLAIM['gpus_per_node']} | context | users (memory) | users (compute) | compute / memory | "
             "compute binds below |\n|---|---|---|---|---|---|\n" + "\n".join(rows))
    return dict(table=table, memory_first=memory_first,
                turns_below=all(t < q(min(CONTEXTS), "token") for t in turns.values()),
                glue={f"turn-{k}": fmt(v) for k, v in turns.items()})


def users_curves(p, contexts) -> dict:
    """Users that fit and users compute serves, against context, for the claim's chips and the reader's GPU:
    {display name: dict(memory, compute, peak, turn=(context, users) or None)}; chips the inputs reject are
    listed under 'skipped'."""
    import numpy as np
    ctx = np.asarray(contexts, dtype=float)
    out, skipped = {}, []
    for key in dict.fromkeys((*CHIPS, p.gpu.key)):
        acc = p.gpu if key == p.gpu.key else catalog.accelerator(key)
        try:
            c = users_chain(p.model, acc, p.gpus_per_node, p.weight_bytes_per_param, p.kv_bytes_per_element,
                            p.context_tokens, p.gpu_memory_utilization, p.tokens_per_second_per_user,
                            p.target_users_per_node, p.memory_reading, p.compute_fraction, p.bandwidth_fraction)
        except ParameterError as e:
            skipped.append(f"{acc.short_name} ({e})")
            continue
        kv_tok = as_float(c["rho"] * c["kappa"], "GB/token")
        mem = np.floor(as_float(c["M_kv"], "GB") / (kv_tok * ctx))
        f_ctx = (as_float(c["k"] * c["N_a"] * c["tau"], "GFLOP/sequence")
                 + as_float(c["I_kv"] * c["kappa"], "GFLOP/token") * ctx)
        turn = None
        if has_turn(c):
            t_x = as_float(c["T_x"], "token/sequence")
            turn = (t_x, as_float(c["M_kv"], "GB") / (kv_tok * t_x))
        out[acc.short_name] = dict(memory=np.where(mem >= 1, mem, np.nan), peak=as_float(c["P"], "FLOP/s/GPU"),
                                   compute=as_float(c["g"] * c["eta_P"] * c["P"] * c["tau"] / c["s"], "GFLOP") / f_ctx,
                                   turn=turn)
    return dict(curves=out, skipped=skipped)


def what_changes(p, ch: Chain) -> dict:
    cc = claim_chain()
    ctx_long = 32768
    long_c, h200_c, b200_c = (claim_chain(context_tokens=ctx_long), claim_chain(acc=catalog.accelerator("h200")),
                              claim_chain(acc=catalog.accelerator("b200")))
    fp8kv = claim_chain(kv_bytes_per_element=1.0)
    fp8both = claim_chain(kv_bytes_per_element=1.0, weight_bytes_per_param=1.0)
    util_new = as_float(serving.vllm_utilization_value().alternatives[0].q, "")   # vLLM's later default
    res_c = claim_chain(gpu_memory_utilization=util_new)
    rate = {k: (q(1, "token/sequence") / v).to("token/s/sequence") for k, v in MLPERF_TPOT.items()}
    inter = claim_chain(tokens_per_second_per_user=rate["interactive"].m)
    server = claim_chain(tokens_per_second_per_user=rate["server"].m)
    return {"wc-ctx": fmt(cc["T"] * q(1, "sequence")), "wc-users": users(cc["U"]),
            "wc-ctx-long": fmt(q(ctx_long, "token")), "wc-users-long": users(long_c["U"]),
            "wc-h200-users": users(h200_c["U"]), "wc-h200-ratio": fmt(h200_c["U"] / cc["U"]),
            "wc-b200-users": users(b200_c["U"]), "wc-fp8kv-users": users(fp8kv["U"]),
            "wc-fp8w-freed": fmt(cc["M_w"] - fp8both["M_w"]), "wc-fp8both-users": users(fp8both["U"]),
            "wc-reserve-new": pct(util_new), "wc-reserve-users": users(res_c["U"]),
            "wc-interactive-rate": fmt(q(rate["interactive"].m, "token/s")),
            "wc-interactive-compute": users(inter["U_c"]),
            "wc-server-rate": fmt(q(rate["server"].m, "token/s")), "wc-server-compute": users(server["U_c"])}


def exercises(p, ch: Chain) -> dict:
    cc = claim_chain()
    ex1 = claim_chain(acc=catalog.accelerator("b200"), gpus_per_node=1)
    h200_c = claim_chain(acc=catalog.accelerator("h200"))
    ex3 = claim_chain(m=catalog.model("deepseek-v3"), acc=catalog.accelerator("h200"), weight_bytes_per_param=1.0)
    split = math.floor(as_float(ex3["M_kv"] / (ex3["kappa"] * ex3["T"]), "sequence"))
    return {"ex1-context": fmt(cc["T"] * q(1, "sequence")), "ex1-weights": fmt(ex1["m_w"] * q(1, "GPU")),
            "ex1-usable": fmt(ex1["c_u"] * q(1, "GPU")), "ex1-kv": fmt(ex1["M_kv"]), "ex1-users": users(ex1["U"]),
            "ex1-compute": users(ex1["U_c"]), "ex2-h100": per_user(cc["s_bw"], "token/s"),
            "ex2-h200": per_user(h200_c["s_bw"], "token/s"), "ex3-kv-token": fmt(ex3["kappa"]),
            "ex3-copies": fmt(ex3["rho"]), "ex3-users": users(ex3["U"]), "ex3-users-split": fmt(split),
            "ex3-compute": users(ex3["U_c"])}


SPEC = Spec("kv-cache-caps-users", PARAMETERS, RESULTS, compute, validate=validate, closed_form=True)
