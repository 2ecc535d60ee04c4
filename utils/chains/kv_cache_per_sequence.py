"""kv-cache-per-sequence: four numbers from a config, one formula, and the query-heads mistake.

Grouped-query attention caches a key and a value per KV head per layer: 2 L H_kv d_h b bytes per token.
Latent attention (DeepSeek-V3, Kimi K2) caches one latent of kv_lora_rank elements and one RoPE key of
qk_rope_head_dim per layer: L (r_kv + d_R) b. The mistake counts the query heads (or, under latent
attention, every head's uncompressed K and V) instead. Times the tokens of a sequence, over the weights
at the precision the model was released in.
"""
from __future__ import annotations

import functools

from utils import catalog
from utils.chain import Chain, as_float, memoised
from utils.display import table
from utils.models import is_mla, kv_bytes_per_token, kv_bytes_per_token_mha, param_count
from utils.params import Param, Result, Spec
from utils.units import fmt, listing, pct, q, short
from utils.verdicts import HOLDS, UNCHECKABLE, WRONG, Claim, within

PARAMETERS = (
    Param("model", "llama-3-70b", "the model: a catalog key or the path of a Hugging Face config.json",
          check="model", source="catalog: Llama-3-70B, the claim's model"),
    Param("context_tokens", 131072, "tokens in the sequence (prompt plus generated)", unit="token", check="whole",
          source="the Llama 3.1 window (catalog: llama-3-405b.max_context), the claim's reading"),
    Param("kv_bytes_per_element", 2, "bytes per cached K, V or latent element: 2 for bf16/fp16, 1 for fp8",
          unit="byte", source="this book's assumption (a bf16 cache)"),
)

RESULTS = (
    Result("kv_bytes_per_token", "B/token", "KV-cache bytes per token", of="k_tok"),
    Result("kv_bytes_per_sequence", "GB", "KV-cache bytes per sequence", of="K_seq"),
    Result("kv_over_weights", "", "One sequence's KV cache over the weight bytes", of="rho", percent=True),
)


def cfg(m, name: str) -> int:
    return int(m.q(name).magnitude)


def cited(v) -> str:
    """A catalog value's source, short enough for a table cell."""
    return "catalog: " + v.source.title.split(" (")[0]


def weight_bytes_per_param(m) -> int:
    """Bytes per stored weight at the precision the model was released in (the catalog's weights_dtype)."""
    dtype = str(m.q("weights_dtype")).lower()
    if "fp8" in dtype or "float8" in dtype:
        return 1
    if dtype in ("bfloat16", "float16"):
        return 2
    raise ValueError(f"{m.key}: no byte width known for weights_dtype {dtype!r}")


def kv_chain(m, context_tokens, kv_bytes, w_bytes, *, fraction=1 / 3, source="parameters cell", w_source=None,
             cite=None) -> Chain:
    """The cache of one sequence for any catalog model, the mistake beside it, and the ratio to the weights.
    Each input cites `source`, or cite(parameter name) where given (the page's SPEC.source)."""
    cite = cite or (lambda _name: source)
    ch = Chain(f"KV cache per sequence: {m.short_name}")
    ch.given("L", cfg(m, "n_layers"), "layers (num_hidden_layers)", kind=m["n_layers"].kind, source=cited(m["n_layers"]))
    if is_mla(m):
        ch.given("r_kv", q(cfg(m, "kv_lora_rank"), "1/token"), "latent elements per layer, per token (kv_lora_rank)",
                 kind=m["kv_lora_rank"].kind, source=cited(m["kv_lora_rank"]))
        ch.given("d_R", q(cfg(m, "qk_rope_head_dim"), "1/token"),
                 "shared RoPE-key elements per layer, per token (qk_rope_head_dim)",
                 kind=m["qk_rope_head_dim"].kind, source=cited(m["qk_rope_head_dim"]))
        ch.given("b", q(kv_bytes, "B"), "bytes per cached element", kind="assumption",
                 source=cite("kv_bytes_per_element"))
        ch.step("k_tok", "L*(r_kv + d_R)*b", "B/token", "KV bytes per token: the latent and the RoPE key")
        ch.given("H", cfg(m, "n_kv_heads"), "num_key_value_heads in the config (= query heads)",
                 kind=m["n_kv_heads"].kind, source=cited(m["n_kv_heads"]))
        ch.given("d_K", q(cfg(m, "qk_nope_head_dim") + cfg(m, "qk_rope_head_dim"), "1/token"),
                 "key elements per head, per token (qk_nope + qk_rope)", kind=m["qk_nope_head_dim"].kind,
                 source=cited(m["qk_nope_head_dim"]))
        ch.given("d_V", q(cfg(m, "v_head_dim"), "1/token"), "value elements per head, per token (v_head_dim)",
                 kind=m["v_head_dim"].kind, source=cited(m["v_head_dim"]))
        ch.step("k_wrong", "L*H*(d_K + d_V)*b", "B/token", "the mistake: K and V for every head, uncompressed")
    else:
        ch.given("H_kv", cfg(m, "n_kv_heads"), "KV heads (num_key_value_heads)", kind=m["n_kv_heads"].kind,
                 source=cited(m["n_kv_heads"]))
        ch.given("d_h", q(cfg(m, "head_dim"), "1/token"), "head dimension: elements per head, per token",
                 kind=m["head_dim"].kind, source=cited(m["head_dim"]))
        ch.given("b", q(kv_bytes, "B"), "bytes per cached element", kind="assumption",
                 source=cite("kv_bytes_per_element"))
        ch.step("k_tok", "2*L*H_kv*d_h*b", "B/token", "KV bytes per token: K and V for each KV head")
        ch.given("H_q", cfg(m, "n_heads"), "query heads (num_attention_heads)", kind=m["n_heads"].kind,
                 source=cited(m["n_heads"]))
        ch.step("k_wrong", "2*L*H_q*d_h*b", "B/token", "the mistake: query heads for KV heads")
    ch.step("x", "k_wrong/k_tok", "", "how many times too big the mistake is")
    ch.given("T", q(context_tokens, "token"), "tokens in the sequence", kind="assumption",
             source=cite("context_tokens"))
    ch.step("K_seq", "k_tok*T", "GB", "KV bytes per sequence")
    ch.step("K_wrong", "k_wrong*T", "GB", "the same with the mistake")
    ch.given("P", param_count(m)["total"], "parameters, counted from the config", kind="derived",
             source="utils.models.param_count")
    ch.given("b_w", q(w_bytes, "B/parameter"), "bytes per weight", kind="spec" if w_source is None else "assumption",
             source=w_source or cited(m["weights_dtype"]) + f" (weights_dtype: {m.q('weights_dtype')})")
    ch.step("W", "P*b_w", "GB", "weight bytes")
    ch.step("rho", "K_seq/W", "", "one sequence's KV over the weights")
    ch.given("f", fraction, "the claim's fraction of the weights", kind="spec", source="spec/001")
    ch.solve("T_f", "f = k_tok*T_f/W", "token", "context at which one sequence's KV is that fraction")
    return ch


def compute(p) -> Chain:
    return kv_chain(p.model, p.context_tokens, p.kv_bytes_per_element, weight_bytes_per_param(p.model),
                    cite=functools.partial(SPEC.source, p))


# --- the claim ------------------------------------------------------------------------------------
CLAIM = dict(model="llama-3-70b", kv_over_weights=1 / 3, mistake_factor=8, kv_bytes_per_element=2,
             weight_bytes_per_param=2)
WINDOW_FROM = "llama-3-405b"   # a Llama 3.1 release: its max_context is the Llama 3.1 window
QUOTES = dict(
    third="Four numbers from the config file, one formula, and a per-sequence result that is a third of the "
          "model's own weights.",
    mistake="Plus the mistake that makes the answer eight times too big.",
    context="Every token a model has seen leaves a key and a value in every layer. Multiply that out for a 70B "
            "model and you will see why memory, not compute, caps how many users a GPU can hold.")
TOLERANCE = 0.10   # "a third" is a round fraction: within a tenth of it


@memoised
def checks() -> dict:
    """The claim's reading (Llama-3-70B, bf16 cache and weights, the Llama 3.1 window), the other window,
    the published parameter count, and the second route through utils.models for every catalog model."""
    llama70, llama31 = catalog.model(CLAIM["model"]), catalog.model(WINDOW_FROM)
    long_ctx, short_ctx = cfg(llama31, "max_context"), cfg(llama70, "max_context")
    b, bw = CLAIM["kv_bytes_per_element"], CLAIM["weight_bytes_per_param"]
    claim = kv_chain(llama70, long_ctx, b, bw, source="the claim's reading", w_source="the claim's reading: bf16 weights")
    short_window = kv_chain(llama70, short_ctx, b, bw, source="Llama 3's own window", w_source="bf16 weights")
    published = as_float(claim["K_seq"], "B") / as_float(llama70.q("params_total") * q(bw, "B/parameter"), "B")
    route = {}
    for key in catalog.keys("model"):
        m = catalog.model(key)
        c = kv_chain(m, long_ctx, 2, weight_bytes_per_param(m))
        route[key] = (as_float(c["k_tok"], "B/token") == as_float(kv_bytes_per_token(m, 2), "B/token")
                      and as_float(c["k_wrong"], "B/token") == as_float(kv_bytes_per_token_mha(m, 2), "B/token"))
    return dict(claim=claim, short=short_window, ratio=as_float(claim["rho"], ""), published=published,
                route=route, llama70=llama70, llama31=llama31)


def claims() -> list[Claim]:
    ck = checks()
    c, s, m = ck["claim"], ck["short"], ck["llama70"]
    third = CLAIM["kv_over_weights"]
    at_window = within(c["rho"], third, TOLERANCE)
    at_short = within(s["rho"], third, TOLERANCE)
    # The sentence names no model, context or precision, and the ratio is linear in the context: some context
    # gives any ratio, so "a third" checks nothing unless the book supplies the context (not a reading).
    verdict = HOLDS if at_window and at_short else UNCHECKABLE
    l8, l405 = catalog.model("llama-3-8b"), ck["llama31"]
    x = as_float(c["x"], "")
    return [
        Claim("kv-third", quote=QUOTES["third"], source="spec/001, paragraph on KV cache per sequence (Llama-3-70B)",
              claimed="a third of the weights",
              derived=(f"{pct(c['rho'])} at {fmt(c['T'])} (bf16 cache and weights); exactly a third at "
                       f"{fmt(c['T_f'])}"),
              verdict=verdict,
              reason=(f"The sentence names no model, context or precision, and the ratio grows in proportion to the "
                      f"context, so a third is always some context's: for {m.short_name} in bf16 it is "
                      f"{pct(s['rho'])} at its own {fmt(s['T'])} window and {pct(c['rho'])} at the {fmt(c['T'])} "
                      f"window of the later release ({l405.short_name}'s), a third exactly at {fmt(c['T_f'])}. "
                      f"Those are this book's figures, at a context the source never gave.")),
        Claim("kv-mistake", quote=QUOTES["mistake"], source="spec/001, paragraph on KV cache per sequence (Llama-3-70B)",
              claimed=f"{CLAIM['mistake_factor']} x", derived=f"{fmt(c['x'])} x",
              verdict=HOLDS if x == CLAIM["mistake_factor"] else WRONG,
              reason=(f"num_attention_heads / num_key_value_heads = {cfg(m, 'n_heads')} / {cfg(m, 'n_kv_heads')} "
                      f"for {m.short_name}; the factor is the GQA group size, so it is "
                      f"{cfg(l8, 'n_heads') // cfg(l8, 'n_kv_heads')} for {l8.short_name} and "
                      f"{cfg(l405, 'n_heads') // cfg(l405, 'n_kv_heads')} for {l405.short_name}."),
              nearest_true="" if x == CLAIM["mistake_factor"] else f"the query-heads count is {fmt(c['x'])} times too big"),
    ]


# --- the page's tables and numbers ----------------------------------------------------------------
def gqa_models() -> list[str]:
    return [k for k in catalog.keys("model") if not is_mla(catalog.model(k))]


def head_dim_cell(m) -> str:
    """How the head width comes out of the config: hidden_size / heads (Llama, Qwen2.5), or a head_dim field
    of its own that differs from that quotient (Qwen3, gpt-oss, PaLM)."""
    d, h, hd = cfg(m, "d_model"), cfg(m, "n_heads"), cfg(m, "head_dim")
    return f"{d} / {h} = {hd}" if d // h == hd else f"{hd} (`head_dim`; {d} / {h} would be {d // h})"


def config_table() -> str:
    """The four numbers for each grouped-query model of the catalog."""
    rows = []
    for k in gqa_models():
        m = catalog.model(k)
        rows.append([m.name, str(cfg(m, "n_layers")), str(cfg(m, "n_heads")), f"**{cfg(m, 'n_kv_heads')}**",
                     head_dim_cell(m), str(m.q("weights_dtype")), str(cfg(m, "n_heads") // cfg(m, "n_kv_heads"))])
    return table(["model", "`num_hidden_layers` $L$", "`num_attention_heads` $H_q$", "`num_key_value_heads` $H_{kv}$",
                  "head width $d_h$", "`torch_dtype`", "query heads per KV head"], rows)


def head_dims_consistent() -> bool:
    """Every head width is hidden_size / heads, or the catalog says where its own head_dim comes from."""
    return all(cfg(m, "head_dim") == cfg(m, "d_model") // cfg(m, "n_heads") or m["head_dim"].note
               for m in map(catalog.model, gqa_models()))


def page_glue(p, ch) -> dict:
    """The intro's and the chain section's numbers for the parameters."""
    m = p.model
    others = {k: kv_chain(catalog.model(k), p.context_tokens, p.kv_bytes_per_element,
                          weight_bytes_per_param(catalog.model(k)))["x"]
              for k in catalog.keys("model") if is_mla(catalog.model(k)) and k != m.key}
    mla_text = listing(f"{fmt(x)} for {catalog.model(k).short_name}" for k, x in others.items())
    if is_mla(m):
        mistake = (f"caching every head's key and value uncompressed, as if the latent attention were multi-head, "
                   f"multiplies {m.short_name}'s answer by {fmt(ch['x'])}" + (f" ({mla_text})" if mla_text else ""))
    else:
        mistake = (f"reading the query heads for the KV heads multiplies {m.short_name}'s answer by {fmt(ch['x'])}, its "
                   f"query heads per KV head; caching every head uncompressed under latent attention multiplies it "
                   f"by {mla_text}")
    window = q(cfg(m, "max_context"), "token") if "max_context" in m else None     # a config.json's is a bare count
    T = q(p.context_tokens, "token")
    if window is None:
        note = "The catalog gives no window for this model."
    elif T > window:
        note = f"Note: {fmt(T)} is past {m.short_name}'s catalog window of {fmt(window)}."
    else:
        note = f"The context is within {m.short_name}'s window of {fmt(window)}."
    return {"model-name": m.name, "context": fmt(T), "kv-bytes": fmt(q(p.kv_bytes_per_element, "B")),
            "intro-mistake": mistake, "kv-wrong-seq": fmt(ch["K_wrong"]), "weights": fmt(ch["W"]),
            "weight-bytes": fmt(q(weight_bytes_per_param(m), "B")), "context-third": fmt(ch["T_f"]),
            "window-note": note, "context-quote": QUOTES["context"]}


def check_section() -> tuple[dict, str]:
    ck = checks()
    c, s, m = ck["claim"], ck["short"], ck["llama70"]
    glue = {"claim-kv-tok": fmt(c["k_tok"]), "claim-context": fmt(c["T"]), "claim-kv-seq": fmt(c["K_seq"]),
            "claim-weights": fmt(c["W"]), "claim-params": short(c["P"]), "claim-ratio": pct(ck["ratio"]),
            "claim-ratio-plain": fmt(ck["ratio"], digits=2), "claim-third": fmt(c["T_f"]),
            "claim-third-over": pct(as_float(c["T_f"], "token") / as_float(c["T"], "token") - 1, digits=2),
            "claim-published-ratio": pct(ck["published"]), "claim-published-params": short(m.q("params_total")),
            "short-context": fmt(s["T"]), "short-seq": fmt(s["K_seq"]), "short-ratio": pct(s["rho"]),
            "claim-x": fmt(c["x"]), "claim-hq": str(cfg(m, "n_heads")), "claim-hkv": str(cfg(m, "n_kv_heads")),
            "claim-wrong-tok": fmt(c["k_wrong"]), "claim-wrong-seq": fmt(c["K_wrong"]),
            "claim-wrong-ratio": pct(c["K_wrong"] / c["W"])}
    rows = [["wrong: $2\\,L\\,H_q\\,d_h\\,b$", fmt(c["k_wrong"]), fmt(c["K_wrong"]), pct(c["K_wrong"] / c["W"])],
            ["right: $2\\,L\\,H_{kv}\\,d_h\\,b$", fmt(c["k_tok"]), fmt(c["K_seq"]), pct(ck["ratio"])]]
    return glue, table(["the pair", "per token", "per sequence at the Llama 3.1 window", "over the weights"], rows)


PRECISIONS = (("bf16", 2, "bf16", 2), ("fp8", 1, "bf16", 2), ("bf16", 2, "fp8", 1), ("fp8", 1, "fp8", 1))


def precision_section() -> tuple[dict, str]:
    ck = checks()
    llama70, T = ck["llama70"], as_float(ck["claim"]["T"], "token")
    chains_ = {(kv, w): kv_chain(llama70, int(T), kb, wb, source="this table", w_source=f"{w} weights")
               for kv, kb, w, wb in PRECISIONS}
    rows = [[kv, w, fmt(c["K_seq"]), fmt(c["W"]), pct(c["rho"]), fmt(c["T_f"])] for (kv, w), c in chains_.items()]
    glue = {"fp8kv-ratio": pct(chains_[("fp8", "bf16")]["rho"]), "fp8w-ratio": pct(chains_[("bf16", "fp8")]["rho"]),
            "fp8w-third": fmt(chains_[("bf16", "fp8")]["T_f"]), "fp8kv-third": fmt(chains_[("fp8", "bf16")]["T_f"])}
    return glue, table(["cache", "weights", "KV per sequence at the Llama 3.1 window", "weights", "KV / weights",
                        "context for a third"], rows)


def model_chains(context_tokens: int) -> dict:
    """Every catalog model at one context, a bf16 cache and its released weight precision."""
    return {k: kv_chain(catalog.model(k), context_tokens, 2, weight_bytes_per_param(catalog.model(k)),
                        source="this table") for k in catalog.keys("model")}


def models_section() -> tuple[dict, str]:
    ck = checks()
    claim = ck["claim"]
    mc = model_chains(int(as_float(claim["T"], "token")))
    rows = [[catalog.model(k).name, "MLA" if is_mla(catalog.model(k)) else "GQA", fmt(c["k_tok"]), fmt(c["k_wrong"]),
             fmt(c["x"]), fmt(c["K_seq"]), f"{fmt(c['W'])} ({catalog.model(k).q('weights_dtype')})", pct(c["rho"])]
            for k, c in mc.items()]
    ds, kimi, dsm, l70 = mc["deepseek-v3"], mc["kimi-k2"], catalog.model("deepseek-v3"), ck["llama70"]
    glue = {"ds-kv-tok": fmt(ds["k_tok"]), "ds-latent": str(cfg(dsm, "kv_lora_rank")),
            "ds-rope": str(cfg(dsm, "qk_rope_head_dim")), "ds-kv-seq": fmt(ds["K_seq"]), "ds-ratio": pct(ds["rho"]),
            "kimi-ratio": pct(kimi["rho"]), "ds-wrong-tok": fmt(ds["k_wrong"]), "ds-x": fmt(ds["x"]),
            "kimi-x": fmt(kimi["x"]), "mla-gain": fmt(as_float(claim["k_tok"] / ds["k_tok"], ""), digits=2),
            "mla-params-gain": fmt(as_float(ds["P"] / claim["P"], ""), digits=2),
            "gqa-per-layer": fmt(2 * cfg(l70, "n_kv_heads") * cfg(l70, "head_dim")),
            "l8-ratio": pct(mc["llama-3-8b"]["rho"]),
            "mla-per-layer": fmt(cfg(dsm, "kv_lora_rank") + cfg(dsm, "qk_rope_head_dim"))}
    return glue, table(["model", "attention", "KV per token", "the mistake per token", "times too big",
                        "KV per sequence at the Llama 3.1 window", "weights", "KV / weights"], rows)


def context_curves(contexts) -> dict:
    """KV per sequence (GB) against context: each GQA model, the MLA models (one cache), and the mistake."""
    import numpy as np
    ck = checks()
    mc = model_chains(int(as_float(ck["claim"]["T"], "token")))
    x = np.asarray(contexts, dtype=float)
    gqa = {catalog.model(k).name: (as_float(c["k_tok"], "GB/token") * x, k == CLAIM["model"])
           for k, c in mc.items() if not is_mla(catalog.model(k))}
    mla_keys = [k for k in mc if is_mla(catalog.model(k))]
    return dict(gqa=gqa, mla_label=listing(catalog.model(k).short_name for k in mla_keys),
                mla=as_float(mc[mla_keys[0]]["k_tok"], "GB/token") * x,
                wrong=as_float(ck["claim"]["k_wrong"], "GB/token") * x,
                third=as_float(ck["claim"]["W"], "GB") * CLAIM["kv_over_weights"],
                window=as_float(ck["claim"]["T"], "token"), crossing=as_float(ck["claim"]["T_f"], "token"),
                claim_name=ck["llama70"].short_name)


def what_changes(p, ch: Chain) -> dict:
    ck = checks()
    m, c = ck["llama70"], ck["claim"]
    tp = 2 * cfg(m, "n_kv_heads")
    return {"tp-wide": str(tp), "tp-wide-share": fmt(c["k_tok"] / min(tp, cfg(m, "n_kv_heads"))),
            "tp-wide-naive": fmt(c["k_tok"] / tp), "fig-x": fmt(c["x"])}


def exercises(p, ch: Chain) -> dict:
    ck = checks()
    claim, llama31 = ck["claim"], ck["llama31"]
    l8 = catalog.model("llama-3-8b")
    ex1 = kv_chain(l8, cfg(l8, "max_context"), 2, weight_bytes_per_param(l8))
    mc405 = kv_chain(llama31, int(as_float(claim["T"], "token")), 2, weight_bytes_per_param(llama31))
    kv_alt = int(llama31["n_kv_heads"].alternatives[0].q.magnitude)
    ex3 = kv_chain(ck["llama70"], int(as_float(claim["T"], "token")), 2, 2, fraction=1, source="exercise 3",
                   w_source="bf16 weights")
    dsm = catalog.model("deepseek-v3")
    ex4 = kv_chain(dsm, int(as_float(claim["T"], "token")), 1, weight_bytes_per_param(dsm), source="exercise 4")
    return {"ex1-context": fmt(ex1["T"]), "ex1-tok": fmt(ex1["k_tok"]), "ex1-seq": fmt(ex1["K_seq"]),
            "ex1-ratio": pct(ex1["rho"]), "ex1-weights": fmt(ex1["W"]), "ex1-x": fmt(ex1["x"]),
            "ex1-x405": fmt(mc405["x"]), "ex2-kv-alt": str(kv_alt), "ex2-kv": str(cfg(llama31, "n_kv_heads")),
            "ex2-seq-alt": fmt(mc405["K_seq"] * kv_alt / cfg(llama31, "n_kv_heads")), "ex2-seq": fmt(mc405["K_seq"]),
            "ex3-context": fmt(ex3["T_f"]), "ex3-sequences": fmt(as_float(ex3["W"] / claim["K_seq"], ""), digits=2),
            "ex4-seq": fmt(ex4["K_seq"]), "ex4-ratio": pct(ex4["rho"]),
            "ex4-tokens": fmt((claim["K_seq"] / ex4["k_tok"]).to("token"))}


SPEC = Spec("kv-cache-per-sequence", PARAMETERS, RESULTS, compute, closed_form=True)
