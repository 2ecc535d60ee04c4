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
        if default is not None:
            return default
        if not _reader(m):
            raise KeyError(f"model {m.key!r} has no {name!r}")
    v = m.q(name)                   # a reader's model answers a gap with MissingField (or a probe's value)
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
        hd, kv = _head_dim(m), _n(m, "n_kv_heads")
        bias = (h * hd + 2 * kv * hd) if m.get("qkv_bias", False) else 0   # Qwen2: q, k, v biases
        bias += d if m.get("o_bias", False) else 0                           # GPT-3, OPT, gpt-oss: o too
        sinks = h if m.get("attention_sinks", False) else 0                  # gpt-oss: one learned logit per head
        # Transformer-XL's relative positions (Gopher, Chinchilla): each layer projects the sinusoidal position
        # embeddings through its own d_model x (heads x head dim) matrix W_R and keeps two biases a head (u, v)
        relative = (d * h * hd + 2 * h * hd) if m.get("relative_positions", False) else 0
        return d * h * hd + 2 * d * kv * hd + h * hd * d + bias + sinks + relative   # q, k, v, o
    q_rank, kv_rank = _n(m, "q_lora_rank", 0), _n(m, "kv_lora_rank")
    nope, rope, vd = _n(m, "qk_nope_head_dim"), _n(m, "qk_rope_head_dim"), _n(m, "v_head_dim")
    if q_rank:
        q = d * q_rank + q_rank + q_rank * h * (nope + rope)       # q_a, q_a_norm, q_b
    else:
        q = d * h * (nope + rope)
    kv = d * (kv_rank + rope) + kv_rank + kv_rank * h * (nope + vd)  # kv_a (latent + RoPE key), norm, kv_b
    o = h * vd * d
    return q + kv + o


def _reader(m) -> bool:
    return getattr(m, "is_reader_model", False)


def _derived(m, name: str, derive):
    """A reader's model's `name`: the value the reader gave, else derived from fields the reader gave, else a
    gap (MissingField naming `name`, or while probing the probe's value). A catalog model derives it."""
    if not _reader(m):
        return derive(m)
    if name in m:
        return m.q(name)
    try:
        with m.strict():
            return derive(m)
    except KeyError:                        # MissingField is a CatalogKeyError
        return m.missing(name).q


class _Counts(dict):
    """A reader's model's counts: total and active as given (or derived), each other part counted from the
    architecture only when a chain asks for it (so a count alone answers what needs only the count)."""

    def __init__(self, m, first: dict):
        super().__init__(first)
        self.m = m

    def __missing__(self, key):
        if isinstance(self.m, _PartBytes):
            return Q_(_count(self.m.m)[key].m * self.m.b, "byte")
        return _count(self.m)[key]


class _PartBytes:
    """What a reader's model's _Counts asks for a part's bytes: the part counted, at the one precision."""

    def __init__(self, m, b: float):
        self.m, self.b = m, b


def param_count(m) -> dict[str, pint.Quantity]:
    """Parameters, in `parameter` units: counted from a catalog model's architecture; for a reader's model the
    reader's n_params (total) and n_active (active; n_params itself for a model without experts, the count
    a paper gives as N), else counted from the fields the reader gave."""
    if not _reader(m):
        return _count(m)
    def counted(key):
        return lambda mm: _count(mm)[key]
    total = _derived(m, "params_total", counted("total"))
    if "params_active" in m or is_moe(m) or "params_total" not in m:
        active = _derived(m, "params_active", counted("active"))
    else:
        active = total
    return _Counts(m, dict(total=Q_(total.m, "parameter"), active=Q_(active.m, "parameter")))


def _count(m) -> dict[str, pint.Quantity]:
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
    b = _bytes(bytes_per_element)
    if _reader(m) and "kv_bytes_per_token" in m:     # the reader's figure, at the precision it was given at
        return Q_(m.q("kv_bytes_per_token").to("byte/token").m, "byte/token")
    return Q_(_derived(m, "kv_elements_per_token", _kv_elements).m * b, "byte/token") if _reader(m) \
        else Q_(_kv_elements(m) * b, "byte/token")


def _kv_elements(m) -> int:
    """Elements one token adds to the cache, summed over layers."""
    layers = _n(m, "n_layers")
    if is_mla(m):
        return layers * (_n(m, "kv_lora_rank") + _n(m, "qk_rope_head_dim"))
    return layers * 2 * _n(m, "n_kv_heads") * _head_dim(m)


def kv_bytes_per_token_mha(m, bytes_per_element) -> pint.Quantity:
    """What the cache would be with full multi-head K and V, one K and one V per query head.

    The baseline that GQA and MLA are compared against: 2 x n_layers x n_heads x head_dim x bytes for a
    GQA model; for an MLA model each head's K is qk_nope + qk_rope wide and its V v_head_dim wide.
    """
    b, layers, h = _bytes(bytes_per_element), _n(m, "n_layers"), _n(m, "n_heads")
    if is_mla(m):
        per_layer = h * (_n(m, "qk_nope_head_dim") + _n(m, "qk_rope_head_dim") + _n(m, "v_head_dim"))
    else:
        per_layer = 2 * h * _head_dim(m)
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
        d_head, h_kv = _head_dim(m), _n(m, "n_kv_heads")
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
    return int(_derived(m, "d_attn", _attention_width)) if _reader(m) else _attention_width(m)


def _attention_width(m) -> int:
    h = _n(m, "n_heads")
    if is_mla(m):
        qk, v = _n(m, "qk_nope_head_dim") + _n(m, "qk_rope_head_dim"), _n(m, "v_head_dim")
        return h * (qk + v) // 2
    return h * _head_dim(m)


def _head_dim(m) -> int:
    """head_dim; a reader's model that gives d_model and n_heads but no head_dim has d_model / n_heads."""
    if _reader(m) and "head_dim" not in m and "d_model" in m and "n_heads" in m:
        return _n(m, "d_model") // _n(m, "n_heads")
    return _n(m, "head_dim")


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


def _biases(m) -> dict[str, int]:
    """The biases (and gpt-oss's sink logits) inside the attention, mlp and experts parts of param_count: a
    checkpoint that quantizes a part's matrices keeps these at the unquantized width."""
    d, layers = _n(m, "d_model"), _n(m, "n_layers")
    mats = _n(m, "ffn_matrices", _SWIGLU)

    def ffn(d_ff: int) -> int:
        return ((mats - 1) * d_ff + d) if m.get("mlp_bias", False) else 0

    attention = 0
    if not is_mla(m):
        h, hd, kv = _n(m, "n_heads"), _head_dim(m), _n(m, "n_kv_heads")
        attention = ((h * hd + 2 * kv * hd) if m.get("qkv_bias", False) else 0) \
            + (d if m.get("o_bias", False) else 0) + (h if m.get("attention_sinks", False) else 0)
    n_dense = _n(m, "n_dense_layers", 0) if is_moe(m) else layers
    experts = (layers - n_dense) * (_n(m, "n_routed_experts") + _n(m, "n_shared_experts", 0)) \
        * ffn(_n(m, "moe_d_ff")) if is_moe(m) else 0
    return {"attention": layers * attention, "mlp": n_dense * ffn(_n(m, "d_ff")), "experts": experts}


def weight_bytes_by_part(m, bytes_per_param) -> dict[str, pint.Quantity]:
    """Bytes of each part's weights (param_count's parts) and their total. Every part is at bytes_per_param
    except those a release stores in another format: the entry's quantized_parts (comma-separated part
    names) hold their matrices at quantized_bytes_per_param and their biases at bytes_per_param, as the
    checkpoints do (gpt-oss: the experts in MXFP4, 4.25 bits a weight with its block scales, the rest bf16)."""
    counts = param_count(m)
    b = _bytes(bytes_per_param)
    if _reader(m) and "quantized_parts" not in m:   # the reader's count, in bytes; a part only when asked for
        return _Counts(_PartBytes(m, b), {"total": Q_(counts["total"].m * b, "byte")})
    quantized = {p.strip() for p in str(m.get("quantized_parts", "")).split(",") if p.strip()}
    q = _bytes(m.q("quantized_bytes_per_param")) if quantized else b
    biases = _biases(m)
    parts = ("embedding", "positions", "lm_head", "attention", "mlp", "experts", "router", "norms")
    out = {}
    for p in parts:
        n = int(counts[p].m)
        if p in quantized:
            out[p] = (n - biases.get(p, 0)) * q + biases.get(p, 0) * b
        else:
            out[p] = n * b
    out["total"] = sum(out.values())
    return {k: Q_(v, "byte") for k, v in out.items()}


# --- a reader's model: which results its fields answer ------------------------------------------------------
# Three made-up architectures, far apart (a toy, a mid-size and a frontier-size decoder), never a catalog model.
# They answer a reader's model's gaps while a chapter is derived three times: a result that comes out the same
# under all three does not depend on any gap, and is printed; every other result is left out, with the fields
# that move it. No probe value can reach a printed result, and no default model is read at all.
_PROBES = (
    dict(d_model=512, n_layers=4, n_heads=8, n_kv_heads=2, head_dim=64, d_ff=1536, vocab_size=32000,
         max_context=2048, weights_dtype="bfloat16", tied_embeddings=False, n_routed_experts=8,
         n_experts_per_token=2, n_shared_experts=0, moe_d_ff=512, n_dense_layers=0, kv_lora_rank=64,
         q_lora_rank=0, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32),
    dict(d_model=20480, n_layers=144, n_heads=160, n_kv_heads=16, head_dim=128, d_ff=73728, vocab_size=262144,
         max_context=262144, weights_dtype="fp8", tied_embeddings=False, n_routed_experts=512,
         n_experts_per_token=12, n_shared_experts=2, moe_d_ff=2560, n_dense_layers=3, kv_lora_rank=640,
         q_lora_rank=2048, qk_nope_head_dim=160, qk_rope_head_dim=96, v_head_dim=160),
    dict(d_model=3072, n_layers=28, n_heads=24, n_kv_heads=8, head_dim=128, d_ff=9216, vocab_size=100352,
         max_context=16384, weights_dtype="float16", tied_embeddings=True, n_routed_experts=64,
         n_experts_per_token=6, n_shared_experts=1, moe_d_ff=1024, n_dense_layers=1, kv_lora_rank=256,
         q_lora_rank=768, qk_nope_head_dim=64, qk_rope_head_dim=32, v_head_dim=64),
)
_SHOWN = {"kv_elements_per_token": "kv_bytes_per_token"}


def _probes() -> list[dict]:
    """Each probe's fields as quantities, with what a reader may give instead of the fields (n_params,
    n_active, d_attn, the KV elements per token) derived from them, so a gap of either kind has an answer."""
    from utils.catalog.specfile import READER_SOURCE, ReaderModel, Value
    out = []
    for i, arch in enumerate(_PROBES):
        q = {k: v if isinstance(v, (bool, str)) else Q_(v, "token" if k == "max_context" else "")
             for k, v in arch.items()}
        for moe in (False, True):
            fields = {k: v for k, v in q.items() if moe or k not in ("n_routed_experts", "kv_lora_rank")}
            m = ReaderModel(f"probe {i}{' moe' if moe else ''}", "probe", {
                k: Value(k, v, READER_SOURCE, "assumption") for k, v in fields.items()})
            counts = _count(m)
            suffix = "_moe" if moe else ""
            q[f"params_total{suffix}"], q[f"params_active{suffix}"] = counts["total"], counts["active"]
        q["d_attn"] = Q_(arch["n_heads"] * arch["head_dim"], "")
        q["kv_elements_per_token"] = Q_(arch["n_layers"] * 2 * arch["n_kv_heads"] * arch["head_dim"], "")
        out.append(q)
    return out


def _same(a, b) -> bool:
    try:
        return float(getattr(a, "m", a)) == float(getattr(b, "m", b))
    except (TypeError, ValueError):
        return a == b


_FAILS = (ValueError, ArithmeticError, KeyError)   # a check, a division, a gap: the probe's run answers nothing


def derive_with_gaps(spec, p) -> tuple[dict, dict[str, str]]:
    """A chapter's results for checked inputs `p` whose model may be a reader's (loose fields, a spec file):
    (the results it answers, {left-out result: the one line naming the fields it needs}). With a complete
    model, or a catalog one, this is the chapter's own derivation and nothing is left out."""
    from utils.catalog.specfile import CatalogKeyError, MissingField, reader_name

    def run(inputs):
        if spec.validate is not None:
            spec.validate(inputs)
        return spec.extract(spec.compute(inputs))

    name = next((k for k, v in p.items() if _reader(v)), None)
    if name is None:
        computed = spec.compute(p)
        return spec.extract(computed), dict(spec.left_out(computed))
    m = p[name]
    try:
        return run(p), {}
    except MissingField:
        pass
    probes = _probes()
    for probe in probes:                     # the MoE counts answer a model the reader gave experts
        if is_moe(m):
            probe["params_total"], probe["params_active"] = probe["params_total_moe"], probe["params_active_moe"]

    def probe_run(probe, tag):
        mm = m.probed(probe, tag)
        try:
            return run(p.replace(**{name: mm})), mm.asked
        except _FAILS as e:
            return e, mm.asked

    outs, asked = [], set()
    for i, probe in enumerate(probes):
        out, a = probe_run(probe, f"probe {i}")
        outs.append(out)
        asked |= a
    shown = sorted({reader_name(_SHOWN.get(f, f)) for f in asked})
    ok = [i for i, out in enumerate(outs) if isinstance(out, dict)]
    if len(ok) < 2:
        errors = {str(e): e for e in outs if not isinstance(e, dict)}
        if not ok and len(errors) == 1:
            raise next(iter(errors.values()))          # the reader's own fields fail, whatever the gaps
        raise CatalogKeyError(f"{spec.slug}: the model's fields given are not enough to compute it: it also "
                              f"needs {' and '.join(shown)}: set them, or model=")
    base, alt = outs[ok[0]], ok[1]
    moved = [r for r in base if any(not _same(outs[i][r], base[r]) for i in ok[1:])]
    need: dict[str, set] = {r: set() for r in moved}
    for f in sorted(asked) if len(asked) > 1 else ():   # one gap at a time: what each left-out result needs
        out, _ = probe_run({**probes[ok[0]], f: probes[alt][f]}, f"probe {ok[0]} with {f} of {alt}")
        for r in moved:
            if not isinstance(out, dict) or not _same(out[r], base[r]):
                need[r].add(reader_name(_SHOWN.get(f, f)))
    left_out = {}
    for r in moved:
        names = sorted(need[r]) or shown     # one gap, or none that moves it alone: every gap it read
        left_out[r] = f"{r} needs {' and '.join(names)}: set {'it' if len(names) == 1 else 'them'}, or model="
    return {r: v for r, v in base.items() if r not in left_out}, left_out
