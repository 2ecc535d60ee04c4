"""Counting a model from its catalog entry: parameters, KV-cache bytes per token, weight bytes.

Every function takes a catalog model Entry (utils.catalog.model(key)) and returns quantities in the
book's registry, so a chapter can never add bytes to parameters or forget what a number counts.

Two architectures are covered, both read straight from the config fields in models.toml:
- dense decoders with grouped-query attention (Llama 3): n_heads query heads share n_kv_heads K/V heads;
- DeepSeek-V3-style MoE with multi-head latent attention (DeepSeek-V3, Kimi K2): low-rank Q and KV
  projections, a cached latent of kv_lora_rank plus one shared RoPE key of qk_rope_head_dim per token,
  n_dense_layers dense FFN layers first, then MoE layers with routed and shared SwiGLU experts.

Older and other decoders are read from a few more fields, all optional: a two-matrix GELU/ReLU MLP
(ffn_matrices = 2: GPT-2/3, OPT, BLOOM, GPT-NeoX, Falcon, Phi), biases (qkv_bias, o_bias, mlp_bias,
lm_head_bias), LayerNorm (norm_bias), one norm per layer for a parallel attention/MLP block
(norms_per_layer = 1: Falcon-7B, Phi), a norm after the embedding (embedding_norm: BLOOM), a learned position
table (learned_positions), gpt-oss's attention sinks, and sliding-window layers (kv_bytes_for_context keeps
only the window for those).

"Active" parameters are the ones multiplied per token, so forward FLOPs per token are about 2 x active:
every attention and FFN weight a token passes through, the router and the LM head, but not the input
embedding table, whose use is a one-row lookup. Vendors differ here (DeepSeek's README counts the
embedding in its 36.7B), so "active_with_embedding" is returned too.
"""
from __future__ import annotations

import pint

from utils.units import Q_

_SWIGLU = 3  # gate, up and down projections per FFN / expert


def _ffn(m, d: int, d_ff: int) -> int:
    """One FFN (or expert): ffn_matrices = 3 for SwiGLU (the default), 2 for GPT-3's GELU or OPT's ReLU MLP;
    mlp_bias adds a bias to each matrix's output (GPT-3, OPT, gpt-oss's experts)."""
    mats = _n(m, "ffn_matrices", _SWIGLU)
    bias = ((mats - 1) * d_ff + d) if m.get("mlp_bias", False) else 0
    return mats * d * d_ff + bias


def _n(m, name: str, default=None) -> int:
    """A config integer (stored as a dimensionless quantity) as a Python int."""
    if name not in m:
        if default is None:
            raise KeyError(f"model {m.key!r} has no {name!r}")
        return default
    v = m.q(name)
    return int(v.magnitude) if isinstance(v, pint.Quantity) else int(v)


def is_mla(m) -> bool:
    """True for multi-head latent attention (DeepSeek-V3, Kimi K2): the cache holds a latent, not K and V."""
    return "kv_lora_rank" in m


def is_moe(m) -> bool:
    return "n_routed_experts" in m


def _attention_params(m) -> int:
    """One layer's attention weights, with the norms MLA puts inside the attention block."""
    d, h = _n(m, "d_model"), _n(m, "n_heads")
    if not is_mla(m):
        hd, kv = _n(m, "head_dim"), _n(m, "n_kv_heads")
        bias = (h * hd + 2 * kv * hd) if m.get("qkv_bias", False) else 0   # Qwen2: q, k, v biases
        bias += d if m.get("o_bias", False) else 0                           # GPT-3, OPT, gpt-oss: o too
        sinks = h if m.get("attention_sinks", False) else 0                  # gpt-oss: one learned logit per head
        return d * h * hd + 2 * d * kv * hd + h * hd * d + bias + sinks   # q, k, v, o
    q_rank, kv_rank = _n(m, "q_lora_rank", 0), _n(m, "kv_lora_rank")
    nope, rope, vd = _n(m, "qk_nope_head_dim"), _n(m, "qk_rope_head_dim"), _n(m, "v_head_dim")
    if q_rank:
        q = d * q_rank + q_rank + q_rank * h * (nope + rope)       # q_a, q_a_norm, q_b
    else:
        q = d * h * (nope + rope)
    kv = d * (kv_rank + rope) + kv_rank + kv_rank * h * (nope + vd)  # kv_a (latent + RoPE key), norm, kv_b
    o = h * vd * d
    return q + kv + o


def param_count(m) -> dict[str, pint.Quantity]:
    """Parameters counted from the architecture, in `parameter` units.

    Keys: total, active, active_with_embedding, embedding, positions (a learned position table, GPT-3 and
    OPT), lm_head, attention, mlp (dense FFN layers),
    experts (routed + shared), router (gate weights and the per-expert routing bias DeepSeek-V3-style
    routers carry), norms. DeepSeek's multi-token-prediction module is not part of the
    model's forward pass at inference and is excluded (the 685B on Hugging Face = 671B + 14B MTP).
    """
    d, layers, vocab = _n(m, "d_model"), _n(m, "n_layers"), _n(m, "vocab_size")
    tied = bool(m.get("tied_embeddings", False))
    embedding = vocab * d
    lm_head = (0 if tied else vocab * d) + (vocab if m.get("lm_head_bias", False) else 0)   # Phi: a bias too
    attention = layers * _attention_params(m)
    # pre-attention, pre-FFN, final: RMSNorm has a scale per element, LayerNorm (norm_bias) a bias as well.
    # A parallel block (Falcon-7B, Phi: attention and MLP read one normed input) has one norm per layer;
    # BLOOM normalises the embedding output too (embedding_norm)
    per_layer = _n(m, "norms_per_layer", 2)
    norms = (layers * per_layer * d + d + (d if m.get("embedding_norm", False) else 0)) \
        * (2 if m.get("norm_bias", False) else 1)
    positions = _n(m, "learned_positions", 0) * d                 # GPT-3, OPT: a learned position table
    expert = _ffn(m, d, _n(m, "moe_d_ff", 0)) if "moe_d_ff" in m else 0
    if is_moe(m):
        n_dense = _n(m, "n_dense_layers", 0)
        n_moe = layers - n_dense
        routed, shared, k = _n(m, "n_routed_experts"), _n(m, "n_shared_experts", 0), _n(m, "n_experts_per_token")
        mlp = n_dense * _ffn(m, d, _n(m, "d_ff"))
        experts = n_moe * (routed + shared) * expert
        # gate weight, plus the aux-loss-free routing bias DeepSeek-V3-style routers carry (Mixtral's has none)
        router = n_moe * routed * (d + (1 if m.get("router_bias", True) else 0))
        experts_active = n_moe * (k + shared) * expert
    else:
        mlp = layers * _ffn(m, d, _n(m, "d_ff"))
        experts = router = experts_active = 0
    total = embedding + positions + lm_head + attention + norms + mlp + experts + router
    # With tied embeddings the one matrix is also the LM head, so it is multiplied per token. A learned
    # position table is a lookup, like the token embedding: stored, not multiplied.
    active = attention + norms + mlp + experts_active + router + (embedding + lm_head if tied else lm_head)
    counts = dict(total=total, active=active,
                  active_with_embedding=active + (0 if tied else embedding) + positions,
                  embedding=embedding, positions=positions, lm_head=lm_head, attention=attention, mlp=mlp,
                  experts=experts, router=router, norms=norms)
    return {k: Q_(v, "parameter") for k, v in counts.items()}


def _bytes(x) -> float:
    """Bytes per element (or per parameter): a number, or a quantity in bytes (per element/parameter)."""
    if isinstance(x, pint.Quantity):
        return float(x.to("byte").magnitude) if x.dimensionality == Q_(1, "byte").dimensionality \
            else float(x.to("byte/parameter").magnitude)
    return float(x)


def kv_bytes_per_token(m, bytes_per_element) -> pint.Quantity:
    """KV-cache bytes one token adds, summed over layers.

    GQA: K and V for each KV head, 2 x n_layers x n_kv_heads x head_dim x bytes (only the KV heads are
    stored, which is why using n_heads here overstates Llama-3-70B's cache 8x).
    MLA: n_layers x (kv_lora_rank + qk_rope_head_dim) x bytes, the compressed latent plus the decoupled
    RoPE key shared by all heads; K and V are rebuilt from the latent at attention time.
    """
    b, layers = _bytes(bytes_per_element), _n(m, "n_layers")
    if is_mla(m):
        per_layer = _n(m, "kv_lora_rank") + _n(m, "qk_rope_head_dim")
    else:
        per_layer = 2 * _n(m, "n_kv_heads") * _n(m, "head_dim")
    return Q_(layers * per_layer * b, "byte/token")


def kv_bytes_per_token_mha(m, bytes_per_element) -> pint.Quantity:
    """What the cache would be with full multi-head K and V, one K and one V per query head.

    The baseline that GQA and MLA are compared against: 2 x n_layers x n_heads x head_dim x bytes for a
    GQA model; for an MLA model each head's K is qk_nope + qk_rope wide and its V v_head_dim wide.
    """
    b, layers, h = _bytes(bytes_per_element), _n(m, "n_layers"), _n(m, "n_heads")
    if is_mla(m):
        per_layer = h * (_n(m, "qk_nope_head_dim") + _n(m, "qk_rope_head_dim") + _n(m, "v_head_dim"))
    else:
        per_layer = 2 * h * _n(m, "head_dim")
    return Q_(layers * per_layer * b, "byte/token")


def weight_bytes(m, bytes_per_param) -> pint.Quantity:
    """Bytes to hold every weight (total parameters, not active: storage follows the total)."""
    return (param_count(m)["total"] * Q_(_bytes(bytes_per_param), "byte/parameter")).to("byte")


def kv_term_intensity(m, bytes_per_element) -> pint.Quantity:
    """Decode attention FLOPs per byte of KV cache read (FLOP/byte): fixed by the architecture, not by
    the batch, which is why the KV term never climbs toward the ridge the way the weight term does.
    GQA: QK^T and AV for every query head (4 H d_h FLOPs per cached token and layer) over one K and one V
    per KV head (2 H_kv d_h elements). MLA, absorbed as serving engines run decode: 2 H (2 r + r_rope)
    FLOPs over the cached latent and RoPE key (r + r_rope elements)."""
    h = _n(m, "n_heads")
    if is_mla(m):
        r, rope = _n(m, "kv_lora_rank"), _n(m, "qk_rope_head_dim")
        flops, elements = 2 * h * (2 * r + rope), r + rope
    else:
        d_head, h_kv = _n(m, "head_dim"), _n(m, "n_kv_heads")
        flops, elements = 4 * h * d_head, 2 * h_kv * d_head
    return Q_(flops / (elements * _bytes(bytes_per_element)), "FLOP/byte")


def kv_copies(m, gpus: int) -> float:
    """Copies of each token's KV a tensor-parallel group of `gpus` keeps: KV heads are split over the
    GPUs and copied once the GPUs outnumber them; an MLA latent is shared by all heads, so every GPU
    keeps all of it."""
    if is_mla(m):
        return float(gpus)
    return max(1.0, gpus / _n(m, "n_kv_heads"))


def n_layers(m) -> int:
    return _n(m, "n_layers")


def attention_width(m) -> int:
    """The width d_attn of attention's two products, QK^T and AV, per layer: query heads x head dim.
    Their FLOPs are 2 T^2 (d_qk + d_v) per sequence and layer, so for MLA (whose query/key heads are
    qk_nope + qk_rope wide and value heads v_head_dim wide) d_attn is the mean of the two widths."""
    h = _n(m, "n_heads")
    if is_mla(m):
        qk, v = _n(m, "qk_nope_head_dim") + _n(m, "qk_rope_head_dim"), _n(m, "v_head_dim")
        return h * (qk + v) // 2
    return h * _n(m, "head_dim")


def kv_bytes_for_context(m, context_tokens: int, bytes_per_element) -> pint.Quantity:
    """KV-cache bytes of one sequence of `context_tokens` tokens. With sliding-window layers (gpt-oss:
    n_sliding_layers of its layers attend to the last sliding_window tokens only) those layers keep at
    most the window; the rest keep every token. Without a window it is context x kv_bytes_per_token."""
    per_token = kv_bytes_per_token(m, bytes_per_element)
    if "sliding_window" not in m:
        return (per_token * Q_(context_tokens, "token")).to("byte")
    layers, sliding, window = _n(m, "n_layers"), _n(m, "n_sliding_layers"), _n(m, "sliding_window")
    per_layer = per_token / layers
    kept = (layers - sliding) * context_tokens + sliding * min(context_tokens, window)
    return (per_layer * Q_(kept, "token")).to("byte")
