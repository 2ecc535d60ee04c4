"""prefix-caching: a shared prefix prefilled once instead of at every request, keyed by content, and the
prefix tree that lets multi-turn and branching traffic share it.

One prefill of P tokens costs 2 N P FLOPs plus causal attention, 2 L d_attn P^2; without a cache each of
R requests an hour pays it, with one the first does. The cache holds kappa P bytes of KV. The caches
themselves (a radix tree, vLLM's chained block hashes, a flat whole-prompt table) run over a seeded
multi-turn trace in utils.serving.prefix_cache.
"""
from __future__ import annotations

from utils import catalog, models, serving
from utils.chain import Chain, as_float, memoised
from utils.params import Param, ParameterError, Result, Spec
from utils.roofline import ACHIEVED, FRACTIONS, fraction_params
from utils.serving.prefix_cache import BlockHashCache, ExactPromptCache, RadixCache, block_hashes, multi_turn_trace, simulate
from utils.units import fmt, pct, q
from utils.verdicts import READING, Claim

K_MATMUL = 2        # FLOPs per weight per token: one multiply-add
K_ATTN = 2          # causal forward attention FLOPs per layer, per token pair, per unit of d_attn
TRACE = dict(n_conversations=48, turns=8, user_tokens=(50, 250), reply_tokens=(100, 500),
             regenerate_fraction=0.1, edit_fraction=0.1, concurrency=16)   # this book's assumptions
SEEDS = range(5)    # the trace is drawn on each seed: the hit rate is reported as a range, checked on every seed
NODE_GPUS = 8       # one HGX node (this book's assumption for scale)

SIMULATION = "three prefix caches over a seeded multi-turn trace (utils.serving.prefix_cache)"

PARAMETERS = (
    Param("prefix_tokens", 2000, "the shared prefix (system prompt)", unit="token", check="whole",
          source="the claim (the same 2,000 tokens)"),
    Param("requests_per_hour", 1000.0, "requests that repeat it", unit="1/hour",
          source="the claim (a thousand times an hour)"),
    Param("model", "llama-3-70b", "the model: a catalog key or a config.json path", check="model",
          source="catalog: Llama-3-70B, this page's reading of the claim"),
    Param("gpu", "h100-sxm", "the accelerator: a catalog key or a spec file", check="accelerator",
          source="catalog: H100 SXM, this page's reading of the claim"),
    fraction_params()[0],     # a long prefill is compute-bound: it runs at the shared achieved share of the peak
    Param("kv_bytes_per_element", 2, "KV-cache element size (2 = bf16, 1 = fp8)", unit="byte",
          source="this book's assumption: a bf16 cache"),
    Param("block_tokens", 16, "tokens per KV block of the block-hash cache", unit="token", check="whole",
          source="vLLM's default block size on CUDA GPUs (--block-size)"),
    Param("cache_capacity_tokens", 65536, "prefix-cache capacity for the trace simulation", unit="token",
          check="whole", source="this book's assumption: above the trace's working set"),
)
CLAIM = {prm.name: prm.default for prm in PARAMETERS}

RESULTS = (
    Result("prefill_flops_saved_per_hour", "FLOP", "Prefill FLOPs saved per hour", of="F_s"),
    Result("gpu_seconds_saved_per_hour", "s", "GPU-seconds saved per hour", of="G"),
    Result("prefix_kv_bytes", "byte", "KV bytes the cached prefix holds", of="M"),
    Result("trace_hit_rate", "", f"Radix-tree hit rate on the synthetic trace, lowest over {len(SEEDS)} seeds "
           "(simulation)", of="h_tr", percent=True),
    Result("trace_hit_rate_high", "", f"The same, highest over {len(SEEDS)} seeds (simulation)", of="h_trh",
           percent=True),
)


def validate(p):
    ctx = int(p.model.q("max_context").m)
    if p.prefix_tokens >= ctx:
        raise ParameterError(f"prefix_tokens={p.prefix_tokens} leaves no room in {p.model.name}'s context of {ctx} tokens")
    if p.cache_capacity_tokens < p.block_tokens:
        raise ParameterError(f"cache_capacity_tokens={p.cache_capacity_tokens} holds no block of {p.block_tokens} tokens")
    if p.requests_per_hour < 1:
        raise ParameterError(f"requests_per_hour must be at least 1, got {p.requests_per_hour!r}")
    for field in ("bf16_dense", "hbm_capacity"):
        if field not in p.gpu:
            raise ParameterError(f"gpu {p.gpu.key!r} has no {field} in the catalog")


def prefix_chain(prefix_tokens, requests_per_hour, model, gpu, compute_fraction, kv_bytes_per_element, block_tokens,
                 *, source="parameters cell", sources=None) -> Chain:
    """sources: each input's source by parameter name (SPEC.source), else `source` for every one."""
    m, g = model, gpu
    src = (lambda name: sources[name]) if sources else (lambda name: source)
    counted = models.param_count(m)
    ch = Chain(f"Caching a shared prefix: {m.name} on {g.name}")
    ch.given("P", q(prefix_tokens, "token"), "shared prefix", kind="assumption", source=src("prefix_tokens"))
    ch.given("R", q(requests_per_hour, "1/hour"), "requests repeating it", kind="assumption",
             source=src("requests_per_hour"))
    ch.given("H", q(1, "hour"), "window, with the prefix cached throughout", kind="assumption",
             source="the claim's reading")
    ch.given("N", counted["active"], "weights multiplied per token", kind="spec",
             source=f"counted from {m['n_layers'].cite} (utils.models.param_count)")
    ch.given("f", q(K_MATMUL, "FLOP/parameter/token"), "FLOPs per weight per token", kind="derived",
             source="one multiply-add")
    ch.given("L", m["n_layers"], "layers")
    ch.given("d_attn", q(models.attention_width(m), ""), "query heads x head dim", kind="spec", source=m["n_heads"].cite)
    ch.given("a", q(K_ATTN, "FLOP/token**2"), "causal attention FLOPs per token pair per width",
             kind="derived", source="QK^T and AV, lower triangle")
    ch.step("F", "f*N*P + a*L*d_attn*P**2", "FLOP", "one prefill of the prefix")
    ch.step("T_nc", "P*R", "token/hour", "prefill tokens without a cache")
    ch.step("T_c", "P/H", "token/hour", "prefill tokens with the prefix cached")
    ch.step("F_s", "F*(R*H - 1)", "FLOP", "prefill FLOPs saved per hour")
    ch.given("R_pk", g["bf16_dense"], "dense bf16 peak")
    if compute_fraction == FRACTIONS[0]:
        ch.given("eta_P", ACHIEVED["bf16_dense"], "achieved share of the dense peak")
    else:
        ch.given("eta_P", q(compute_fraction, ""), "achieved share of the dense peak", kind="assumption",
                 source=src("compute_fraction"))
    ch.step("G", "F_s/(eta_P*R_pk)", "s", "GPU-seconds saved per hour")
    ch.given("B", q(block_tokens, "token"), "tokens per KV block", kind="assumption", source=src("block_tokens"))
    ch.step("n_b", "floor(P/B)", "", "block-table lookups per request")
    ch.given("kappa", models.kv_bytes_per_token(m, kv_bytes_per_element), "KV bytes per token",
             kind="derived", source=f"utils.models.kv_bytes_per_token, {kv_bytes_per_element} B/element")
    ch.step("M", "kappa*P", "MB", "KV the cached prefix holds")
    ch.given("C", g["hbm_capacity"], "HBM per GPU")
    ch.step("s_m", "M/C", "", "share of one GPU's HBM")
    ch.step("G_m", "s_m*H", "s", "GPU-seconds of HBM held per hour, pro rata")
    ch.step("rho", "G/G_m", "", "compute saved per unit of memory held")
    ch.solve("R_be", "F*(R_be*H - 1)/(eta_P*R_pk) = s_m*H", "1/hour", "request rate at which caching pays")
    return ch


def chain_of(p) -> Chain:
    names = ("prefix_tokens", "requests_per_hour", "compute_fraction", "block_tokens")
    return prefix_chain(p.prefix_tokens, p.requests_per_hour, p.model, p.gpu, p.compute_fraction,
                        p.kv_bytes_per_element, p.block_tokens, sources={n: SPEC.source(p, n) for n in names})


def trace(prefix_tokens: int, seed: int = SEEDS[0]):
    """The seeded synthetic multi-turn trace, the page's prefix as its system prompt."""
    return multi_turn_trace(system_tokens=prefix_tokens, seed=seed, **TRACE)


def caches_on_trace(cache_capacity_tokens: int, block_tokens: int, tr, radix: dict | None = None) -> dict:
    """The three caches over the trace (a simulation: exact token counts, no timing); `radix`: the radix tree's
    run on it, where already run."""
    return {"radix tree": radix or simulate(RadixCache(cache_capacity_tokens), tr),
            f"block hash, B = {block_tokens}": simulate(BlockHashCache(block_tokens, cache_capacity_tokens), tr),
            "flat table (whole prompt), unbounded": simulate(ExactPromptCache(), tr)}


@memoised
def seed_trace(prefix_tokens: int, seed: int):
    return trace(prefix_tokens, seed)


@memoised
def radix_run(prefix_tokens: int, cache_capacity_tokens: int, seed: int) -> dict:
    """The radix tree over one seed's trace: what the results need (the other caches are the page's tables)."""
    return simulate(RadixCache(cache_capacity_tokens), seed_trace(prefix_tokens, seed))


@memoised
def trace_runs(prefix_tokens: int, cache_capacity_tokens: int, block_tokens: int) -> tuple:
    """The first seed's trace and the three caches over each seed's trace. The simulation reads only these three
    inputs (not the model or the GPU), so a re-derivation that changes anything else does not redraw it."""
    traces = [seed_trace(prefix_tokens, s) for s in SEEDS]
    return traces[0], [caches_on_trace(cache_capacity_tokens, block_tokens, tr,
                                       radix=radix_run(prefix_tokens, cache_capacity_tokens, s))
                       for s, tr in zip(SEEDS, traces)]


def sims(ch) -> list:
    """The three caches on every seed's trace, for the page's tables (compute runs only the radix tree)."""
    return trace_runs(*ch.data["trace_inputs"])[1]


def compute(p) -> Chain:
    """The chain, then the radix tree's hit rate on the synthetic trace drawn on each of SEEDS (rows h_tr, h_trh);
    the tables and the figure show the first seed's trace (sims(ch): every cache on every seed)."""
    ch = chain_of(p)
    ch.data["trace"] = seed_trace(p.prefix_tokens, SEEDS[0])
    ch.data["trace_inputs"] = (p.prefix_tokens, p.cache_capacity_tokens, p.block_tokens)
    rates = [radix_run(p.prefix_tokens, p.cache_capacity_tokens, s)["hit_rate"] for s in SEEDS]
    how = f"utils.serving.prefix_cache.simulate on seeds {SEEDS[0]} to {SEEDS[-1]}, a simulation"
    ch.given("h_tr", min(rates), "radix-tree hit rate on the synthetic trace, lowest seed", kind="derived", source=how)
    ch.given("h_trh", max(rates), "radix-tree hit rate on the synthetic trace, highest seed", kind="derived",
             source=how)
    return ch


def ordered_on_every_seed(sims: list, block_key: str) -> bool:
    """Prefix matching is what shares: on every seed the radix tree serves at least what the block table does,
    and both serve far more than a whole-prompt table given unbounded memory."""
    return all(s["flat table (whole prompt), unbounded"]["hit_rate"] + 0.5 < s[block_key]["hit_rate"]
               <= s["radix tree"]["hit_rate"] for s in sims)


def chain_texts(ch, p) -> dict:
    attn = as_float(ch["F"] - ch["f"] * ch["N"] * ch["P"], "FLOP") / as_float(ch["F"], "FLOP")
    return {"prefix-kv-mb": fmt(ch["M"]), "intro-prefix": fmt(q(p.prefix_tokens, "token")),
            "intro-rate": f"{fmt(p.requests_per_hour)} times an hour", "intro-model": p.model.name,
            "intro-prefills": fmt(p.requests_per_hour), "intro-gpu": p.gpu.name,
            "intro-capacity": fmt(q(p.cache_capacity_tokens, "token")), "one-prefill": fmt(ch["F"]),
            "attn-share": pct(attn), "gpu-share-hour": pct(as_float(ch["G"], "s") / 3600), "hbm-share": pct(as_float(ch["s_m"])),
            "mem-seconds": fmt(ch["G_m"]), "rho": fmt(round(as_float(ch["rho"]))),
            "r-break-even": f"{fmt(as_float(ch['R_be'], '1/hour'))} an hour", "n-lookups": fmt(as_float(ch["n_b"])),
            "kappa": fmt(ch["kappa"].to("kB/token")), "eta-p": pct(as_float(ch["eta_P"])), "n-seeds": fmt(len(SEEDS))}


# --- by content, multi-turn, branching -------------------------------------------------------------
def chained_key_demo() -> dict:
    """One block after two different prefixes: its own-token key collides, its chained key does not."""
    B = 4
    ctx_a, ctx_b, block = (1, 2, 3, 4), (9, 8, 7, 6), (50, 51, 52, 53)
    h_a, h_b = block_hashes(ctx_a + block, B), block_hashes(ctx_b + block, B)
    demo = BlockHashCache(B)
    demo.insert(ctx_a + block)
    return dict(B=B, chained=(h_a[1], h_b[1]), own=(hash(block), hash(block)), hit_other=demo.match(ctx_b + block))


def chained_key_table(d: dict) -> str:
    (pa, pb), (ha, hb) = d["own"], d["chained"]
    return ("| key of the second block | after `1 2 3 4` | after `9 8 7 6` | same key? |\n|---|---|---|---|\n"
            f"| own tokens only | `{pa & 0xffff:04x}` | `{pb & 0xffff:04x}` | yes: would serve the wrong KV |\n"
            f"| chained over the prefix | `{ha & 0xffff:04x}` | `{hb & 0xffff:04x}` | no |\n\n"
            "(low 16 bits of each hash shown)")


@memoised
def symbols() -> tuple:
    """S u a T t C (sympy imported only for the closed forms)."""
    import sympy as sp
    return sp.symbols("S u a T t C", positive=True)


def multi_turn_forms() -> dict:
    """Prefill tokens per conversation of T turns, without and with a prefix cache (sympy)."""
    import sympy as sp
    S, u_, a_, T, t, C = symbols()
    no_cache = sp.factor(sp.summation(S + (t - 1) * (u_ + a_) + u_, (t, 1, T)))
    with_cache = S + T * u_
    return dict(no_cache=no_cache, with_cache=with_cache, fleet_no_cache=C * no_cache, fleet_with_cache=S + C * T * u_,
                ratio=sp.simplify(no_cache / with_cache))


def multi_turn_texts(prefix_tokens: int) -> tuple[dict, str]:
    import sympy as sp
    S, u_, a_, T, _, _ = symbols()
    f = multi_turn_forms()
    u_mean, a_mean = sum(TRACE["user_tokens"]) / 2, sum(TRACE["reply_tokens"]) / 2
    subs = {S: prefix_tokens, u_: u_mean, a_: a_mean, T: TRACE["turns"]}
    T10 = sp.Symbol("T_10", positive=True)
    t10 = [s for s in sp.solve(sp.Eq(f["no_cache"].subs(T, T10), 10 * f["with_cache"].subs(T, T10)).subs(
        {k: v for k, v in subs.items() if k is not T}), T10) if s.is_real and s > 0]
    assert len(t10) == 1
    table = ("| | prefill tokens per conversation of $T$ turns |\n|---|---|\n"
             f"| no cache | ${sp.latex(f['no_cache'])}$ |\n| prefix cache | ${sp.latex(f['with_cache'])}$ |\n"
             f"| ratio | ${sp.latex(f['ratio'])}$ |")
    return ({"mt-turns": fmt(TRACE["turns"]), "mt-u": fmt(q(u_mean, "token")), "mt-a": fmt(q(a_mean, "token")),
             "mt-ratio": fmt(float(f["ratio"].subs(subs)), digits=2), "mt-t10": fmt(float(t10[0]), digits=2)}, table)


def _seq(start: int, n: int) -> tuple:
    return tuple(range(start, start + n))


def branching_demo() -> dict:
    """Two conversations on one system prompt; the first regenerates, then edits, its second turn."""
    M = dict(system=_seq(0, 40), u1=_seq(100, 12), a1=_seq(200, 30), u2=_seq(300, 9), a2=_seq(400, 25),
             a2r=_seq(500, 22), u2e=_seq(600, 11), a2e=_seq(700, 27), v1=_seq(800, 14), b1=_seq(900, 33))
    owner = {tok: name for name, toks in M.items() for tok in toks}
    reqs = [("turn 1", M["system"] + M["u1"], M["a1"]),
            ("turn 2", M["system"] + M["u1"] + M["a1"] + M["u2"], M["a2"]),
            ("regenerate", M["system"] + M["u1"] + M["a1"] + M["u2"], M["a2r"]),
            ("edit", M["system"] + M["u1"] + M["a1"] + M["u2e"], M["a2e"]),
            ("other conversation", M["system"] + M["v1"], M["b1"])]
    tree, blocks = RadixCache(), BlockHashCache(8)
    served = [(label, tree.serve(pr, c), blocks.serve(pr, c)) for label, pr, c in reqs]
    lines = []

    def walk(node, depth):
        for child in sorted(node.children.values(), key=lambda n: n.key[0]):
            names = list(dict.fromkeys(owner[x] for x in child.key))
            lines.append("    " * depth + f"{' + '.join(names)}  ({len(child.key)} tokens)")
            walk(child, depth + 1)
    walk(tree.root, 0)
    assert tree.size_tokens == sum(len(v) for v in M.values())
    rows = [f"{label:>18}: radix reuses {rt[0]:>3}, blocks of 8 reuse {bl[0]:>3} of {rt[0] + rt[1]:>3} prompt tokens"
            for label, rt, bl in served]
    return dict(tree="\n".join(lines), rows="\n".join(rows))


# --- the trace: capacity, per turn ----------------------------------------------------------------
def trace_texts(ch, p) -> dict:
    sim = sims(ch)[0]
    radix, block = sim["radix tree"], sim[f"block hash, B = {p.block_tokens}"]
    return {"tr-hit": pct(radix["hit_rate"]), "tr-prompt": fmt(q(radix["prompt_tokens"], "token")),
            "tr-prefilled": fmt(q(radix["prefilled_tokens"], "token")),
            "tr-saved": fmt(q(radix["matched_tokens"], "token")), "tr-block-hit": pct(block["hit_rate"]),
            "tr-flat-hit": pct(sim["flat table (whole prompt), unbounded"]["hit_rate"]),
            "tr-requests": fmt(len(ch.data["trace"])),
            "tr-convs": fmt(TRACE["n_conversations"]), "tr-turns": fmt(TRACE["turns"]),
            "tr-system": fmt(q(p.prefix_tokens, "token")), "tr-u-lo": fmt(TRACE["user_tokens"][0]),
            "tr-u-hi": fmt(q(TRACE["user_tokens"][1], "token")), "tr-a-lo": fmt(TRACE["reply_tokens"][0]),
            "tr-a-hi": fmt(q(TRACE["reply_tokens"][1], "token")), "tr-regen": pct(TRACE["regenerate_fraction"]),
            "tr-edit": pct(TRACE["edit_fraction"]), "tr-conc": fmt(TRACE["concurrency"])}


def trace_table(ch) -> str:
    return ("| cache (simulation) | prompt tokens | served from cache | prefilled | hit rate |\n|---|---|---|---|---|\n"
            + "\n".join(f"| {k} | {fmt(v['prompt_tokens'])} | {fmt(v['matched_tokens'])} | "
                        f"{fmt(v['prefilled_tokens'])} | {pct(v['hit_rate'])} |" for k, v in sims(ch)[0].items()))


def capacity_figure(ch, p) -> dict:
    """Hit rate against capacity for both caches, and prompt and prefilled tokens by turn."""
    import numpy as np
    tr, B = ch.data["trace"], p.block_tokens
    capacities = sorted({int(round(c / B)) * B for c in np.geomspace(4096, 262144, 6)} | {int(p.cache_capacity_tokens)})
    sweep = {name: [simulate(make(c), tr)["hit_rate"] for c in capacities]
             for name, make in (("radix tree", RadixCache), (f"block hash, B = {B}", lambda c: BlockHashCache(B, c)))}
    unbounded_cache = RadixCache()
    unbounded = simulate(unbounded_cache, tr)
    per_turn, per_turn_pf, counts = (np.zeros(TRACE["turns"]) for _ in range(3))
    replay = RadixCache(p.cache_capacity_tokens)
    for r in tr:
        _, pf = replay.serve(r.prompt, r.completion)
        per_turn[r.turn] += len(r.prompt)
        per_turn_pf[r.turn] += pf
        counts[r.turn] += 1
    return dict(capacities=capacities, sweep=sweep, unbounded=unbounded, stored=unbounded_cache.size_tokens,
                turns=np.arange(1, TRACE["turns"] + 1), prompt=per_turn / counts, prefilled=per_turn_pf / counts,
                flat=sims(ch)[0]["flat table (whole prompt), unbounded"]["hit_rate"])


def capacity_texts(d: dict, p) -> dict:
    m, gpu = catalog.model(CLAIM["model"]), catalog.accelerator(CLAIM["gpu"])
    b = serving.budget(m, gpu, NODE_GPUS, 2.0, 2.0, 1)     # the node's KV budget (vLLM's share of driver memory)
    return {"unbounded-hit": pct(d["unbounded"]["hit_rate"]), "tokens-stored": fmt(q(d["stored"], "token")),
            "low-cap": fmt(q(d["capacities"][0], "token")), "node-gpus": str(NODE_GPUS),
            "node-kv-tokens": fmt(b.tokens), "low-cap-hit": pct(d["sweep"]["radix tree"][0]),
            "low-cap-block-hit": pct(d["sweep"][f"block hash, B = {p.block_tokens}"][0])}


# --- the claim ------------------------------------------------------------------------------------
QUOTE = ("The same 2,000 tokens are prefilled a thousand times an hour. Caching their KV by content turns "
         "that into one prefill and a table lookup, and a radix tree is what makes multi-turn and branching "
         "agents share it too.")
SUFFIX, REPLY = 64, 128     # the claim's simulation: a distinct user message and reply per request


@memoised
def checks() -> dict:
    p = SPEC.check(**CLAIM)
    cc = chain_of(p)
    P_c, R_c, B_c = CLAIM["prefix_tokens"], int(CLAIM["requests_per_hour"]), CLAIM["block_tokens"]
    prefix = _seq(10**7, P_c)
    reqs = [(prefix + _seq(2 * 10**7 + i * SUFFIX, SUFFIX), _seq(3 * 10**7 + i * REPLY, REPLY)) for i in range(R_c)]
    cap = 2 * (P_c + SUFFIX + REPLY)
    counts = {}
    for name, cache in (("radix", RadixCache(cap)), ("block", BlockHashCache(B_c, cap))):
        res = [cache.serve(pr, c) for pr, c in reqs]
        counts[name] = (sum(pf for _, pf in res) - R_c * SUFFIX, sum(1 for m_, _ in res if m_ >= P_c))
    churn, churned = RadixCache(cap), 0            # other traffic of a cache's capacity between two uses
    for i, (pr, c) in enumerate(reqs):
        churned += churn.serve(pr, c)[1] - SUFFIX
        churn.serve(_seq(4 * 10**7 + i * cap, cap))
    # the published count: the claim's model is a catalog key (a reader's config.json publishes none)
    published = as_float(catalog.model(CLAIM["model"]).q("params_total"), "parameter")
    route2 = 2 * published * P_c
    attn = as_float(cc["F"] - cc["f"] * cc["N"] * cc["P"], "FLOP") / as_float(cc["F"], "FLOP")
    S, u_, a_, T, _, C = symbols()
    fixed = dict(n_conversations=6, turns=7, user_tokens=(40, 40), reply_tokens=(90, 90), concurrency=3, seed=1)
    fixed_sim = simulate(RadixCache(), multi_turn_trace(system_tokens=P_c, **fixed))
    f = multi_turn_forms()
    vals = {S: P_c, u_: 40, a_: 90, T: fixed["turns"], C: fixed["n_conversations"]}
    runs = sims(compute(p))
    return dict(chain=cc, counts=counts, cap=cap, churned=churned, route2=route2, route2_ratio=as_float(cc["F"], "FLOP") / route2,
                attn=attn, fixed_sim=fixed_sim, fixed_prompt=int(f["fleet_no_cache"].subs(vals)),
                fixed_prefilled=int(f["fleet_with_cache"].subs(vals)), sims=runs, block_key=f"block hash, B = {B_c}",
                rates={k: [s[k]["hit_rate"] for s in runs] for k in runs[0]})


def check_holds(ck: dict) -> bool:
    cc, P_c, R_c = ck["chain"], CLAIM["prefix_tokens"], int(CLAIM["requests_per_hour"])
    return all([as_float(cc["T_nc"], "token/hour") == P_c * R_c, as_float(cc["T_c"], "token/hour") == P_c,
                all(c == (P_c, R_c - 1) for c in ck["counts"].values()), P_c % CLAIM["block_tokens"] == 0,
                ck["churned"] == P_c * R_c, abs(ck["route2_ratio"] - 1) < ck["attn"] + 0.02,
                ck["fixed_sim"]["prompt_tokens"] == ck["fixed_prompt"],
                ck["fixed_sim"]["prefilled_tokens"] == ck["fixed_prefilled"],
                ordered_on_every_seed(ck["sims"], ck["block_key"])])


def span(rates) -> str:
    """A hit rate over the seeds: 'lo to hi'."""
    return f"{pct(min(rates))} to {pct(max(rates))}"


def claims() -> list[Claim]:
    ck = checks()
    cc, r = ck["chain"], ck["rates"]
    radix, block, flat = r["radix tree"], r[ck["block_key"]], r["flat table (whole prompt), unbounded"]
    P_c, R_c = CLAIM["prefix_tokens"], CLAIM["requests_per_hour"]
    seeds = f"{len(SEEDS)} seeded traces"
    return [Claim(
        "prefill-once", quote=QUOTE, source="spec/001, paragraph on prefix caching",
        claimed=f"{fmt(q(P_c * R_c, 'token'))}/hour prefilled -> one prefill ({fmt(q(P_c, 'token'))}) and lookups",
        derived=(f"{fmt(q(P_c, 'token'))}/hour prefilled while cached; saves {fmt(cc['F_s'])}/hour = {fmt(cc['G'])} of "
                 f"H100 time at {pct(CLAIM['compute_fraction'])} of the dense peak, for {fmt(cc['M'])} of KV; on "
                 f"{seeds}, radix {span(radix)}, block hash {span(block)}, flat table {span(flat)}"),
        verdict=READING,
        reading=(f'"Caching their KV by content turns that into one prefill and a table lookup" as a cache keyed by '
                 f"content that keeps the prefix between uses (used every {fmt(q(3600 / R_c, 's'))}, it stays the "
                 f'most recently used), and "a radix tree is what makes multi-turn and branching agents share it too" '
                 f"as: sharing across turns and branches takes longest-prefix matching, which a radix tree gives "
                 f"and a table keyed by the whole prompt does not"),
        reason=(f"Prefill falls from {fmt(cc['T_nc'])} to {fmt(cc['T_c'])} while the prefix stays cached (it is "
                f"{fmt(q(ck['churned'], 'token'))} again if a cache's worth of other KV arrives between uses); on "
                f"{seeds} of multi-turn traffic with regenerations and edits a radix tree serves {span(radix)} of "
                f"prompt tokens and a whole-prompt table {span(flat)}. Read as 'only a radix tree', it is wrong: "
                f"vLLM's chained block hashes, no radix tree, serve {span(block)}."))]


def check_texts(ck: dict) -> dict:
    cc, P_c = ck["chain"], CLAIM["prefix_tokens"]
    return {"claim-tokens-before": fmt(q(as_float(cc["T_nc"], "token/hour"), "token")),
            "claim-tokens-after": fmt(q(as_float(cc["T_c"], "token/hour"), "token")),
            "claim-prefix": fmt(q(P_c, "token")), "claim-rate": f"{fmt(CLAIM['requests_per_hour'])} times an hour",
            "claim-eta": pct(CLAIM["compute_fraction"]), "claim-requests": fmt(int(CLAIM["requests_per_hour"])),
            "claim-suffix": fmt(q(SUFFIX, "token")), "claim-lookups": fmt(P_c // CLAIM["block_tokens"]),
            "claim-b": fmt(q(CLAIM["block_tokens"], "token")), "claim-small-cap": fmt(q(ck["cap"], "token")),
            "claim-other": fmt(q(ck["cap"], "token")), "claim-flops-saved": fmt(cc["F_s"]), "claim-gpu-s": fmt(cc["G"]),
            "claim-kv": fmt(cc["M"]), "claim-rho": fmt(round(as_float(cc["rho"]))), "claim-route2": fmt(q(ck["route2"], "FLOP")),
            "claim-f": fmt(cc["F"]), "claim-route2-ratio": fmt(ck["route2_ratio"], digits=4),
            "mt-check-prompt": fmt(q(ck["fixed_sim"]["prompt_tokens"], "token")),
            "mt-check-prefilled": fmt(q(ck["fixed_sim"]["prefilled_tokens"], "token")),
            "ck-radix": span(ck["rates"]["radix tree"]), "ck-block": span(ck["rates"][ck["block_key"]]),
            "ck-flat": span(ck["rates"]["flat table (whole prompt), unbounded"])}


def what_changes(p, ch) -> dict:
    lo = prefix_chain(p.prefix_tokens, 10.0, p.model, p.gpu, p.compute_fraction, p.kv_bytes_per_element,
                      p.block_tokens)
    long_p = int(p.model.q("max_context").m) - 192
    long = prefix_chain(long_p, p.requests_per_hour, p.model, p.gpu, p.compute_fraction, p.kv_bytes_per_element,
                        p.block_tokens)
    long_attn = as_float(long["F"] - long["f"] * long["N"] * long["P"], "FLOP") / as_float(long["F"], "FLOP")
    big, small = 64, 8
    return {"wc-rate-lo": f"{fmt(10.0)} requests an hour", "wc-rho-lo": fmt(as_float(lo["rho"]), digits=2),
            "wc-long": fmt(q(long_p, "token")), "wc-long-gpu-s": fmt(long["G"]), "wc-long-attn": pct(long_attn),
            "wc-b-big": fmt(q(big, "token")), "wc-b-small": fmt(q(small, "token")),
            "wc-b-big-hit": pct(simulate(BlockHashCache(big, p.cache_capacity_tokens), ch.data["trace"])["hit_rate"]),
            "wc-b-small-hit": pct(simulate(BlockHashCache(small, p.cache_capacity_tokens), ch.data["trace"])["hit_rate"])}


def exercises(p, ch) -> dict:
    cc = checks()["chain"]          # the exercises are set on the claim's inputs
    ex1 = prefix_chain(8000, 20000.0, catalog.model("llama-3-8b"), catalog.accelerator("h100-sxm"),
                       CLAIM["compute_fraction"],
                       CLAIM["kv_bytes_per_element"], CLAIM["block_tokens"])
    S, u_, a_, T, _, _ = symbols()
    f = multi_turn_forms()
    vals = {S: CLAIM["prefix_tokens"], u_: sum(TRACE["user_tokens"]) / 2, a_: sum(TRACE["reply_tokens"]) / 2, T: 20}
    nc, c = float(f["no_cache"].subs(vals)), float(f["with_cache"].subs(vals))
    tr, B_ex = trace(CLAIM["prefix_tokens"]), 32
    later = sum(1 for r in tr if r.turn > 0)
    pred = later * (B_ex - 1) / 2
    unbounded = simulate(RadixCache(), tr)
    gap = unbounded["hit_rate"] - simulate(BlockHashCache(B_ex), tr)["hit_rate"]
    return {"ex1-prefix": fmt(q(8000, "token")), "ex1-rate": f"{fmt(20000)} times an hour", "ex1-flops": fmt(ex1["F_s"]),
            "ex1-gpu-s": fmt(ex1["G"]), "ex1-kv": fmt(ex1["M"].to("GB")),
            "ex1-kv-ratio": pct(as_float(ex1["kappa"] / cc["kappa"], "")),
            "ex1-be": f"{fmt(as_float(ex1['R_be'], '1/hour'))} requests an hour", "ex2-turns": fmt(20),
            "ex2-no-cache": fmt(q(nc, "token")), "ex2-cache": fmt(q(c, "token")), "ex2-ratio": fmt(nc / c, digits=2),
            "ex3-b": fmt(q(B_ex, "token")), "ex3-later": fmt(later), "ex3-pred": fmt(q(pred, "token")),
            "ex3-pred-gap": pct(pred / unbounded["prompt_tokens"]), "ex3-sim-gap": pct(gap)}


SPEC = Spec("prefix-caching", PARAMETERS, RESULTS, compute, validate=validate)
