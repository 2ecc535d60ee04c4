"""fleet-10k-rps: ten thousand requests a second on replicas that each keep a prefix cache; which replica a
request meets sets how much of its prompt is prefilled, and the SLO pair sets the batch on every replica.

The router (utils.serving.router) runs over a seeded multi-tenant, multi-turn trace with one RadixCache per replica
(utils.serving.prefix_cache), small enough to run in a fraction of a second: a few hundred sessions over tens of
replicas. Its hit rates then feed the fleet chain, which extrapolates to the fleet: a replica's step is the
decode step on the roofline (utils.serving.batching's form) carrying the prefill chunk its traffic needs, c = B p_u / o
tokens a step for B running sequences; the TPOT objective caps the step and so the batch, the TTFT objective
floors it (a prompt's chunks must finish in time), the KV budget (utils.serving) caps it again. The step's bytes and FLOPs
run at the achieved shares of the datasheet peaks (utils.roofline.fraction_params: published best cases, so
the fleet is a lower bound), and the requests a replica serves a second follow: X = B tau / (o t).
Replicas = ceil(lambda (1 + headroom) / X).
"""
from __future__ import annotations

import numpy as np

from utils import roofline, serving
from utils.chain import Chain, as_float, memoised
from utils.chains.latency_slos_goodput import MLPERF, SLO_SOURCE
from utils.params import Param, ParameterError, Result, Spec
from utils.serving.router import BoundedHashRouter, CacheAwareRouter, RandomRouter, multi_tenant_trace, simulate_fleet
from utils.units import fmt, pct, q
from utils.verdicts import UNCHECKABLE, Claim

SIMULATION = ("a random, a prefix-hash (consistent hashing with bounded loads) and, in the check, a KV-index "
              "router over one RadixCache per replica, on a seeded multi-tenant multi-turn trace (utils.serving.router)")

# The trace: eight tenants of very different sizes, each its own system prompt (this book's assumptions).
TRACE = dict(sessions=(64, 32, 24, 16, 12, 8, 4, 4), system_tokens=(600, 400, 800, 250, 350, 700, 200, 300),
             turns=5, user_tokens=(20, 100), reply_tokens=(40, 160), concurrency=6)
MAX_SIM_REPLICAS = 1000     # the router simulation's replicas, at most (validate)
TRACE_SOURCE = ("this book's assumption: eight tenants, sessions in proportion to a long tail, system prompts of "
                "a few hundred to a couple of thousand tokens, five-turn chats")

PARAMETERS = (
    Param("request_rate", 10000.0, "requests per second the fleet serves", unit="request/s",
          source="the claim (ten thousand requests a second)"),
    Param("model", "llama-3-70b", "the model: a catalog key or a config.json path", check="model",
          source="catalog: Llama-3-70B, this page's reading of the claim"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key or a spec file", check="accelerator",
          source="catalog: H100 SXM, this page's reading of the claim"),
    Param("gpus_per_replica", 8, "GPUs holding one copy of the model (tensor parallel)", check="whole",
          source="this book's assumption: one HGX node per replica"),
    Param("gpus_per_node", 8, "GPUs in one node", check="whole", source="an HGX H100 node of eight GPUs"),
    Param("slo_ttft_s", MLPERF["interactive"][0], "time-to-first-token objective", unit="s", source=SLO_SOURCE),
    Param("slo_tpot_s", MLPERF["interactive"][1], "time-per-output-token objective", unit="s", source=SLO_SOURCE),
    *roofline.fraction_params(),
    Param("headroom", 0.2, "extra replicas beyond the mean load, as a fraction", check="non_negative",
          source="this book's assumption: a replica down and bursts above the mean rate"),
    Param("sim_replicas", 16, "replicas in the router simulation", check="whole",
          source="this book's choice: tens of replicas, so the simulation runs in a fraction of a second"),
    Param("key_tokens", 128, "prompt tokens the prefix-hash router hashes for its key", unit="token", check="whole",
          source="this book's assumption: shorter than every tenant's system prompt, so the key names the tenant"),
    Param("load_epsilon", 0.25, "load bound: no replica above (1 + epsilon) times the mean in flight",
          check="positive", source="this book's assumption; Mirrokni et al. (SODA 2018) analyse epsilon in (0, 1]"),
    Param("in_flight_per_replica", 4, "requests in flight per simulated replica (the load window)", check="whole",
          source="this book's assumption: the simulation's load, scaled down with its replicas"),
    Param("seed", 0, "seed of the trace and the random router", check="non_negative", source="this book's choice"),
)

RESULTS = (
    Result("hit_rate_random", "", "Prefix-cache hit rate, random router (simulation)", of="h_r", percent=True),
    Result("hit_rate_affinity", "", "Prefix-cache hit rate, prefix-hash router (simulation)", of="h_a", percent=True),
    Result("batch_affinity", "sequence", "Running batch per replica, prefix-hash router", of="B_a"),
    Result("step_time_affinity", "ms", "Step time at that batch (TPOT)", of="t_a"),
    Result("requests_per_replica_affinity", "request/s", "Requests per second per replica, prefix-hash router",
           of="X_a"),
    Result("nodes_random", "node", "Nodes, random router", of="n_r"),
    Result("nodes_affinity", "node", "Nodes, prefix-hash router", of="n_a"),
    Result("nodes_saved", "node", "Nodes the prefix-hash router saves", of="dn"),
    Result("prefill_saved", "token/s", "Prefill tokens a second the prefix-hash router saves, fleet-wide", of="S_pf"),
)


def validate(p):
    if p.gpus_per_replica % p.gpus_per_node and p.gpus_per_node % p.gpus_per_replica:
        raise ParameterError(f"gpus_per_replica={p.gpus_per_replica} and gpus_per_node={p.gpus_per_node}: one must "
                             "divide the other")
    if p.slo_tpot_s >= p.slo_ttft_s:
        raise ParameterError(f"slo_tpot_s={p.slo_tpot_s} must be below slo_ttft_s={p.slo_ttft_s}: the first token "
                             "takes at least one step")
    if p.sim_replicas < 2:
        raise ParameterError(f"sim_replicas must be at least 2 for routing to matter, got {p.sim_replicas}")
    if p.sim_replicas > MAX_SIM_REPLICAS:
        raise ParameterError(f"sim_replicas must be at most {MAX_SIM_REPLICAS:,}: the trace's {sum(TRACE['sessions'])} "
                             "sessions leave most of more replicas empty, and the hash ring (points per replica) "
                             "takes past a second to build; the fleet chain answers for any request_rate, got "
                             f"{p.sim_replicas}")
    for field in ("bf16_dense", "hbm_bandwidth"):
        if field not in p.gpu:
            raise ParameterError(f"gpu {p.gpu.key!r} has no {field} in the catalog")


# --- the simulation -------------------------------------------------------------------------------
def trace(seed: int):
    return multi_tenant_trace(**TRACE, seed=seed)


def routers(n: int, p, which=("random", "affinity")) -> dict:
    make = {"random": lambda: RandomRouter(n, p.seed),
            "affinity": lambda: BoundedHashRouter(n, p.key_tokens, p.load_epsilon),
            "index": lambda: CacheAwareRouter(n, 16, p.load_epsilon)}
    return {k: make[k]() for k in which}


def simulate(p, tr=None, n=None, which=("random", "affinity")) -> dict:
    """Each router over the trace, unbounded caches (a node's KV budget holds far more than one replica's
    share of this trace): hit rate, tokens, peak load, prefill imbalance."""
    tr = trace(p.seed) if tr is None else tr
    n = p.sim_replicas if n is None else n
    return {k: simulate_fleet(tr, r, n, None, n * p.in_flight_per_replica) for k, r in routers(n, p, which).items()}


# --- the chain ------------------------------------------------------------------------------------
def add_replica(ch, s: str, hit_symbol: str) -> None:
    """One replica's batch, step and throughput for a router whose hit rate is `hit_symbol` (suffix s)."""
    ch.step(f"p_{s}", f"p*(1 - {hit_symbol})", "token/sequence", "prompt tokens prefilled per request")
    ch.step(f"r_{s}", f"p_{s}/o", "", "prefill tokens per decoded token: each step's chunk, per sequence")
    ch.step(f"x_{s}", f"p*(1 + {hit_symbol})/2", "token/sequence", "mean position of a prefilled token")
    ch.step(f"F_{s}", f"f + r_{s}*(tau*k*N_a + I_kv*kappa*x_{s})", "GFLOP/sequence",
            "FLOPs per running sequence per step, its share of the chunk included")
    ch.step(f"M_{s}", f"kv_u + r_{s}*tau*rho*kappa", "MB/sequence", "bytes per running sequence per step, chunk included")
    ch.step(f"Bm_{s}", f"(eta_W*L*g*W - N_r*b_w)/M_{s}", "sequence", "batch at which the step's bytes take the TPOT")
    ch.step(f"Bc_{s}", f"eta_P*L*g*P/F_{s}", "sequence", "batch at which the step's FLOPs take the TPOT")
    ch.step(f"B_{s}", f"floor(Min(U, Bm_{s}, Bc_{s}))", "sequence", "running batch: the cap that binds")
    ch.step(f"c_{s}", f"r_{s}*B_{s}*tau", "token", "prefill chunk each step carries")
    ch.step(f"t_{s}", f"Max((N_r*b_w + B_{s}*M_{s})/(eta_W*g*W), B_{s}*F_{s}/(eta_P*g*P))", "ms",
            "step time (every step carries its chunk): the TPOT")
    ch.step(f"T1_{s}", f"(nu*p_{s}/c_{s} + 1)*t_{s}", "ms", "time to first token, queueing aside: the chunks, then a step")
    ch.step(f"X_{s}", f"sigma*B_{s}*tau/(o*t_{s})", "request/s", "requests a replica serves a second")
    ch.step(f"R_{s}", f"ceiling(lamda*(1 + H)/X_{s})", "", "replicas")
    ch.step(f"n_{s}", f"ceiling(R_{s}*g/G_n)", "node", "nodes")


def fleet_chain(p, sim: dict, mean_prompt: float, mean_reply: float) -> Chain:
    def src(name: str) -> str:      # the parameter's own source while it holds the default
        return SPEC.source(p, name)

    m, acc = p.model, p.gpu
    chip = roofline.Chip(acc.key, acc.name, acc.q("bf16_dense").to("FLOP/s"), acc.q("hbm_bandwidth").to("byte/s"))
    ch = Chain(f"Ten thousand requests a second: {m.name} on {acc.name}")
    ch.given("lamda", q(p.request_rate, "request/s"), "requests per second", kind="assumption",
             source=src("request_rate"))
    ch.given("p", q(mean_prompt, "token/sequence"), "mean prompt (the trace's, history included)", kind="derived",
             source="the simulated trace")
    ch.given("o", q(mean_reply, "token/sequence"), "mean reply", kind="derived", source="the simulated trace")
    ch.given("h_r", q(sim["random"]["hit_rate"], ""), "hit rate, random router", kind="derived",
             source="simulation (utils.serving.router)")
    ch.given("h_a", q(sim["affinity"]["hit_rate"], ""), "hit rate, prefix-hash router", kind="derived",
             source="simulation (utils.serving.router)")
    serving.add_decode_inputs(ch, m, acc, chip, 2.0)
    b = serving.budget(m, acc, p.gpus_per_replica, 2.0, 2.0, int(round(mean_prompt + mean_reply)))
    serving.add_budget_steps(ch, b, source="bf16 weights and cache; the trace's mean context",
                             utilization_value=serving.vllm_utilization_value(), per_gpu_users=False)
    ch.step("f", "k*N_a*tau + I_kv*kappa*T", "GFLOP/sequence", "FLOPs per decoding sequence per step")
    ch.given("nu", q(1, "sequence"), "one request's sequence", kind="derived", source="a request is one sequence")
    ch.given("sigma", q(1, "request/sequence"), "requests per sequence", kind="derived", source="one each")
    roofline.add_fraction_inputs(ch, p.compute_fraction, p.bandwidth_fraction)
    for sym, name, label in (("L", "slo_tpot_s", "TPOT objective"), ("TTFT", "slo_ttft_s", "TTFT objective")):
        own = src(name)
        ch.given(sym, q(p[name], "s").to("ms"), label, kind="spec" if own != "parameters cell" else "assumption",
                 source=own)
    ch.given("H", q(p.headroom, ""), "headroom", kind="assumption", source=src("headroom"))
    ch.given("G_n", q(p.gpus_per_node, "GPU/node"), "GPUs per node", kind="assumption", source=src("gpus_per_node"))
    add_replica(ch, "r", "h_r")
    add_replica(ch, "a", "h_a")
    ch.step("B_T", "nu*o*L/(tau*(TTFT - L))", "sequence", "smallest batch whose chunks still meet the TTFT")
    ch.step("dn", "n_r - n_a", "node", "nodes the prefix-hash router saves")
    ch.step("S_pf", "lamda*p*(h_a - h_r)/sigma", "token/s", "prefill tokens a second it saves, fleet-wide")
    return ch


def compute(p) -> Chain:
    tr = trace(p.seed)
    sim = simulate(p, tr)
    mean_prompt = float(np.mean([len(r.prompt) for r in tr]))
    mean_reply = float(np.mean([len(r.completion) for r in tr]))
    ch = fleet_chain(p, sim, mean_prompt, mean_reply)
    ch.data["sim"], ch.data["trace"] = sim, tr
    return ch


# --- the same replica arithmetic as plain floats, for sweeps ----------------------------------------
def replica(ch, h: float, *, L: float | None = None, scale: float = 1.0) -> dict:
    """The add_replica rows at hit rate h (and optionally another TPOT objective L in seconds, or both achieved
    shares times `scale`, at most 1), from the chain's inputs, as floats: batch, step (s), requests/s, nodes."""
    import math
    g = as_float(ch["g"], "GPU")
    W, P = as_float(ch["W"], "byte/s/GPU") * g, as_float(ch["P"], "FLOP/s/GPU") * g
    wb = as_float(ch["N_r"] * ch["b_w"], "byte")
    kvu, rk = as_float(ch["kv_u"], "byte/sequence"), as_float(ch["rho"] * ch["kappa"], "byte/token")
    f, kN = as_float(ch["f"], "FLOP/sequence"), as_float(ch["k"] * ch["N_a"], "FLOP/token")
    ik = as_float(ch["I_kv"] * ch["kappa"], "FLOP/token")
    p_, o_ = as_float(ch["p"], "token/sequence"), as_float(ch["o"], "token/sequence")
    L = as_float(ch["L"], "s") if L is None else L
    eP, eW = (min(1.0, scale * as_float(ch[k])) for k in ("eta_P", "eta_W"))
    r = p_ * (1 - h) / o_
    F = f + r * (kN + ik * p_ * (1 + h) / 2)
    M = kvu + r * rk
    B = math.floor(min(as_float(ch["U"], "sequence"), (eW * L * W - wb) / M, eP * L * P / F))
    if B < 1:
        return dict(B=0, t=math.inf, X=0.0, nodes=math.inf)
    t = max((wb + B * M) / (eW * W), B * F / (eP * P))
    X = B / (o_ * t)
    R = math.ceil(as_float(ch["lamda"], "request/s") * (1 + as_float(ch["H"])) / X)
    return dict(B=B, t=t, X=X, nodes=math.ceil(R * g / as_float(ch["G_n"], "GPU/node")))


def hit_curve(ch, hits=None) -> dict:
    """Nodes against the hit rate, for the figure."""
    hits = np.linspace(0, 0.95, 39) if hits is None else np.asarray(hits)
    return dict(hits=hits, nodes=np.array([replica(ch, float(h))["nodes"] for h in hits]))


# --- the claims -----------------------------------------------------------------------------------
QUOTE = ("Ten thousand requests a second is a fleet of hundreds of nodes, a router that has to know what every "
         "replica is caching, and an SLO pair that decides the batch on every one of them.")
SOURCE = "spec/001, paragraph on ten thousand requests a second"
CLAIM = {prm.name: prm.default for prm in PARAMETERS}      # the claim's reading: the page's defaults
READING_MODEL = ("a 70B-class model (Llama-3-70B) on eight-GPU H100 nodes, chat turns of the simulated trace's "
                 "length, under MLPerf's interactive SLO pair")


SEEDS = 5   # the routers' order is checked on this many seeded traces (seed .. seed + 4), not on one draw


@memoised
def checks() -> dict:
    p = SPEC.check(**CLAIM)
    ch = compute(p)
    index = simulate(p, ch.data["trace"], which=("index",))["index"]
    prefilled = []           # per seed: the share of prompt tokens each router leaves to prefill
    for i in range(SEEDS):
        q_ = p.replace(seed=p.seed + i)
        sim = simulate(q_, which=("random", "affinity", "index"))
        prefilled.append({k: 1 - v["hit_rate"] for k, v in sim.items()})
    return dict(chain=ch, index=index, index_row=replica(ch, index["hit_rate"]), p=p, prefilled=prefilled)


def claims() -> list[Claim]:
    ck = checks()
    ch, ix = ck["chain"], ck["index"]
    h_r, h_a, h_i = (as_float(ch["h_r"]), as_float(ch["h_a"]), ix["hit_rate"])
    pf = {k: 1 - h for k, h in (("random", h_r), ("affinity", h_a), ("index", h_i))}
    knows = all(s["index"] < s["affinity"] < s["random"] for s in ck["prefilled"])    # on every seed
    share = (pf["random"] - pf["affinity"]) / (pf["random"] - pf["index"])
    B, U, B_T = (as_float(ch[k], "sequence") for k in ("B_a", "U", "B_T"))
    slo_sets = B < U and B >= B_T
    cap = "compute" if as_float(ch["Bc_a"], "sequence") <= as_float(ch["Bm_a"], "sequence") else "memory bandwidth"
    return [
        # The source names no model, GPU, prompt, reply or objective: the node count is the book's figure, and
        # checking it would compare the book with itself.
        Claim("hundreds-of-nodes", quote=QUOTE.split(", a router")[0] + ".", source=SOURCE,
              claimed="hundreds of nodes for ten thousand requests a second",
              derived=(f"the book's figure: {fmt(ch['n_a'])} with the prefix-hash router, {fmt(ch['n_r'])} with a "
                       "random one"),
              verdict=UNCHECKABLE,
              reason=(f"The source names no model, GPU, prompt length or objective, and the count scales with each, so "
                      f"nothing of the source's can be checked; the book's own figure, for {READING_MODEL}, is "
                      f"{fmt(ch['n_a'])} (prefix-hash router) to {fmt(ch['n_r'])} (random router), at "
                      f"{fmt(ch['X_a'])} and {fmt(ch['X_r'])} per replica.")),
        # "has to know" is a necessity claim: the book's trace can show which router saves the most, never that
        # one must know, and its own figures undercut the words (a hash that knows nothing of the caches gets
        # most of the saving). Every figure here is the book's.
        Claim("router-knows", quote="a router that has to know what every replica is caching", source=SOURCE,
              claimed="a router must know what each replica caches",
              derived=(f"the book's figure: prefilled share of prompt tokens: random {pct(pf['random'])}, prefix hash "
                       f"{pct(pf['affinity'])}, KV index {pct(pf['index'])}"),
              verdict=UNCHECKABLE,
              reason=(f"'Has to know' is a necessity the source gives no numbers for, and the book's own trace can "
                      f"only compare routers with each other: on it a random router prefills {pct(pf['random'])} of "
                      f"prompt tokens, hashing the prefix {pct(pf['affinity'])} and a router that indexes what each "
                      f"replica holds {pct(pf['index'])}, so the hash, knowing nothing of the caches, gets "
                      f"{pct(share)} of the knowing router's saving"
                      + (f" (that order on every one of {SEEDS} seeded traces), which undercuts the words." if knows
                         else f", though the order is not the same on all {SEEDS} seeded traces."))),
        # The source gives no objectives, model or context: whether the pair or the KV budget caps the batch
        # is the book's figure (at MLPerf's interactive pair, and at its server pair, in "What changes"), and
        # both are inputs the source does not give, so neither outcome checks it.
        Claim("slo-pair-batch", quote="an SLO pair that decides the batch on every one of them", source=SOURCE,
              claimed="TTFT and TPOT objectives set the batch",
              derived=(f"the book's figure: batch {fmt(ch['B_a'])}: TPOT caps it ({cap}), TTFT floors it at "
                       f"{fmt(ch['B_T'])}, memory allows {fmt(ch['U'])}"),
              verdict=UNCHECKABLE,
              reason=("The source gives no objectives, model or context, so which cap binds cannot be checked against "
                      "it; in the book's own figure, at MLPerf's interactive pair, "
                      + (f"the TPOT objective of {fmt(ch['L'])} caps the batch at {fmt(ch['B_a'])} (its {cap} side), "
                         f"below the {fmt(ch['U'])} the KV budget holds, and the TTFT objective of {fmt(ch['TTFT'])} "
                         f"floors it at {fmt(ch['B_T'])}." if slo_sets else
                         f"the KV budget of {fmt(ch['U'])}, not the TPOT objective of {fmt(ch['L'])} or the TTFT "
                         f"objective of {fmt(ch['TTFT'])}, sets the batch at {fmt(ch['B_a'])}."))),
    ]


def what_changes(p, ch) -> dict:
    h = as_float(ch["h_a"])
    server = replica(ch, h, L=MLPERF["server"][1])
    lo_e, hi_e = replica(ch, h, scale=0.5), replica(ch, h, scale=1 / min(as_float(ch["eta_P"]), as_float(ch["eta_W"])))
    zero, high = replica(ch, 0.0), replica(ch, 0.9)
    return {"wc-server-tpot": fmt(q(MLPERF["server"][1], "s").to("ms")), "wc-server-nodes": fmt(q(server["nodes"], "node")),
            "wc-server-batch": fmt(q(server["B"], "sequence")),
            "wc-e-lo-nodes": fmt(q(lo_e["nodes"], "node")), "wc-e-hi-nodes": fmt(q(hi_e["nodes"], "node")),
            "wc-h0-nodes": fmt(q(zero["nodes"], "node")), "wc-h9": pct(0.9), "wc-h9-nodes": fmt(q(high["nodes"], "node"))}


def exercises(p, ch) -> dict:
    ck = checks()                  # the exercises are set on the claim's reading
    ch, p = ck["chain"], ck["p"]
    small = SPEC.derive(model="llama-3-8b", gpus_per_replica=1)
    more = simulate(p, ch.data["trace"], n=2 * p.sim_replicas, which=("random", "affinity"))
    return {"ex1-nodes": fmt(small["nodes_affinity"]), "ex1-batch": fmt(small["batch_affinity"]),
            "ex2-replicas": fmt(2 * p.sim_replicas), "ex2-random": pct(more["random"]["hit_rate"]),
            "ex2-affinity": pct(more["affinity"]["hit_rate"]), "ex2-random-base": pct(as_float(ch["h_r"])),
            "ex3-hit": pct(ck["index"]["hit_rate"]), "ex3-nodes": fmt(q(ck["index_row"]["nodes"], "node")),
            "ex3-saved": fmt(q(as_float(ch["n_r"], "node") - ck["index_row"]["nodes"], "node"))}


SPEC = Spec("fleet-10k-rps", PARAMETERS, RESULTS, compute, validate=validate)
