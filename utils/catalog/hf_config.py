"""A Hugging Face config.json as a catalog model entry, read offline: `model=path/to/config.json`.

The book's model fields (utils/catalog/models.toml) are the config's, renamed; this maps them:

    hidden_size -> d_model            num_hidden_layers -> n_layers       num_attention_heads -> n_heads
    num_key_value_heads -> n_kv_heads (default: n_heads)                 head_dim (default d_model/n_heads)
    intermediate_size -> d_ff         vocab_size                          tie_word_embeddings -> tied_embeddings
    max_position_embeddings -> max_context   torch_dtype -> weights_dtype (the checkpoint's precision)
    Qwen2 (model_type qwen2): q, k and v carry biases -> qkv_bias
    Mixtral: num_local_experts -> n_routed_experts, num_experts_per_tok, every layer MoE with experts of
             intermediate_size, a router without bias
    Qwen-MoE (qwen2_moe, qwen3_moe): num_experts, moe_intermediate_size, shared_expert_intermediate_size
    DeepSeek-V3 / Kimi K2: n_routed_experts, n_shared_experts, first_k_dense_replace -> n_dense_layers,
             moe_intermediate_size -> moe_d_ff, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
             qk_rope_head_dim, v_head_dim (multi-head latent attention)
    gpt-oss (gpt_oss): Mixtral's expert fields, plus biases everywhere, and a sink logit per head
    Qwen-MoE's mlp_only_layers and decoder_sparse_step -> n_dense_layers; DeepSeek's topk_method -> router_bias
             (V3's noaux_tc router carries a bias per expert, V2's group_limited_greedy router none)
    layer_types (any family): its sliding_attention layers -> n_sliding_layers with their sliding_window;
             Mistral without layer_types: every layer when sliding_window is set; use_sliding_window false: none;
             Gemma 2: alternate layers from the first; Gemma 3's sliding_window_pattern: all but every n-th
    Gemma 2/3: four RMSNorms a layer (before and after attention and MLP), the head tied to the embedding
    quantization_config (mxfp4, fp8) -> quantized_parts (the decoder's linear parts modules_to_not_convert does
             not name), quantized_format and quantized_bytes_per_param, which utils.models.weight_bytes_by_part
             reads: gpt-oss's experts in MXFP4, the rest in the checkpoint's torch_dtype
    OPT (opt): ffn_dim -> d_ff of a two-matrix ReLU MLP, biases (enable_bias), LayerNorm, a learned position
             table of max_position_embeddings + 2 rows, tied embeddings unless the config says otherwise
    GPT-2, BLOOM, GPT-NeoX, Falcon, Phi: a two-matrix GELU MLP, LayerNorm, and what differs by family --
             GPT-2's and BLOOM's own names (n_embd or n_embed, n_layer, n_head, n_inner, n_positions), GPT-2's
             learned position table of n_positions rows, BLOOM's norm after the embedding and ALiBi (no
             position table), an MLP of n_inner (GPT-2), ffn_hidden_size (Falcon) or 4 x hidden_size when
             absent, biases everywhere (GPT-2, BLOOM, Phi with its LM head's; GPT-NeoX's attention_bias;
             Falcon's bias), one norm per layer for a parallel attention/MLP block (Falcon's parallel_attn,
             Phi), Falcon's multi_query (one KV head) or num_kv_heads (new_decoder_architecture); GPT-2,
             BLOOM, Falcon and Gemma tie the LM head to the embedding unless the config says otherwise

Parameter counts are then computed by utils.models from these fields, exactly as for a catalog model.
Every field is checked like a parameter: a count is a whole number >= 1 (>= 0 where zero means none), a
flag is true or false; a config that lacks a field the counts need, or holds one of the wrong type or
sign, raises CatalogFileError of one line naming the file and the field. Not counted: Qwen3's per-head
q/k norms (2 x head_dim per layer, Gemma 3's too) and Qwen2-MoE's shared-expert gate (d_model per
layer), a few parameters per million.
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

from utils.catalog.entries import CatalogFileError, Entry, Source, Value
from utils.catalog.specfile import _text
from utils.units import Q_

_REQUIRED = {"hidden_size": "d_model", "num_hidden_layers": "n_layers", "num_attention_heads": "n_heads",
             "vocab_size": "vocab_size"}


# Older families' own names for the same fields (BLOOM's n_embed is its older spelling of hidden_size)
_ALIASES = {"n_embd": "hidden_size", "n_embed": "hidden_size", "n_layer": "num_hidden_layers",
            "n_head": "num_attention_heads", "n_inner": "intermediate_size",
            "n_positions": "max_position_embeddings"}
_NAMES = "\0names"                           # the config's own name of each renamed field, for messages
_CLASSIC = {"gpt2", "bloom", "gpt_neox", "falcon", "phi"}
_TIED = {"gpt2", "bloom", "falcon", "gemma", "gemma2", "gemma3", "gemma3_text"}  # LM head = embedding unless said
_GEMMA2 = {"gemma2", "gemma3", "gemma3_text"}  # a norm before and after both attention and MLP: 4 a layer
# A quantization_config's format: bytes a quantized weight takes (its block scales included), and the parts it
# quantizes unless modules_to_not_convert names them. MXFP4: 32 four-bit values share one 8-bit scale (4.25
# bits); block FP8: one byte a weight and a float32 scale per 128 x 128 block. Other methods are not read.
_FORMATS = {"mxfp4": ("mxfp4", (32 * 4 + 8) / 32 / 8),
            "fp8": ("fp8 e4m3 (128 x 128 block scales)", 1 + 4 / (128 * 128))}
_LINEAR = ("attention", "mlp", "experts", "router")  # the decoder's linear parts a quantizer converts
# a module name in modules_to_not_convert -> the parts it keeps unquantized: the first pattern it holds, so
# "model.layers.*.mlp.router" keeps the router only; "mlp.gate$" is DeepSeek's and Mixtral's router
_MODULES = (("self_attn", ("attention",)), ("router", ("router",)), ("mlp.gate$", ("router",)),
            ("experts", ("experts",)), ("mlp", ("mlp", "experts", "router")))


def _kept(name: str) -> tuple[str, ...]:
    for pattern, parts in _MODULES:
        if name.endswith(pattern[:-1]) if pattern.endswith("$") else pattern in name:
            return parts
    return ()


def _canonical(cfg: dict) -> dict:
    """The config with each family's own field names also under the names the reader uses."""
    out, names = dict(cfg), {}
    for own, name in _ALIASES.items():
        if cfg.get(name) is None and cfg.get(own) is not None:
            out[name], names[name] = cfg[own], own
    out[_NAMES] = names
    return out


def _read(path: Path) -> dict:
    try:
        cfg = json.loads(_text(path))
    except json.JSONDecodeError as e:
        raise CatalogFileError(f"{path.name} is not valid JSON (line {e.lineno}): {e.msg}") from None
    if not isinstance(cfg, dict):
        raise CatalogFileError(f"{path.name} is not a config object (expected {{...}}, got a {type(cfg).__name__})")
    if "hidden_size" in cfg or "text_config" not in cfg:
        return cfg
    text = cfg["text_config"]                 # a multimodal model: its language model's config
    if not isinstance(text, dict):
        raise CatalogFileError(f"{path.name}: text_config must be an object with the language model's fields, "
                               f"got {text!r}")
    return text


_LARGEST = 2 ** 53                            # the largest whole number a float holds exactly


def _whole(cfg: dict, field: str, path: Path, minimum: int) -> int:
    v = cfg[field]
    if isinstance(v, bool) or not isinstance(v, int) or not minimum <= v <= _LARGEST:
        own = cfg.get(_NAMES, {}).get(field, field)
        raise CatalogFileError(f"{path.name}: {own} must be a whole number >= {minimum}, got {v!r}")
    return v


def _need(cfg: dict, field: str, path: Path, why: str) -> int:
    if field not in cfg or cfg[field] is None:
        raise CatalogFileError(f"{path.name} lacks {field!r}, which the book needs for {why}")
    return _whole(cfg, field, path, 1)


def _optional(cfg: dict, field: str, path: Path, default: int = 0) -> int:
    """A count that may be absent, null or zero (no shared experts, no low-rank query)."""
    return default if cfg.get(field) is None else _whole(cfg, field, path, 0)


def _flag(cfg: dict, field: str, path: Path, default: bool) -> bool:
    v = cfg.get(field)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise CatalogFileError(f"{path.name}: {field} must be true or false, got {v!r}")
    return v


def fields(cfg: dict, path: Path) -> dict:
    """The book's model fields from a config dict (the names models.toml uses)."""
    cfg = _canonical(cfg)
    out = {book: _need(cfg, hf, path, book) for hf, book in _REQUIRED.items()}
    h = out["n_heads"]
    out["n_kv_heads"] = _need(cfg, "num_key_value_heads", path, "the KV cache") \
        if "num_key_value_heads" in cfg and cfg["num_key_value_heads"] is not None else h
    out["head_dim"] = _need(cfg, "head_dim", path, "the head width") if cfg.get("head_dim") is not None \
        else out["d_model"] // h
    if out["head_dim"] < 1:
        raise CatalogFileError(f"{path.name}: hidden_size {out['d_model']} is narrower than its {h} heads")
    kind = str(cfg.get("model_type", ""))
    out["tied_embeddings"] = _flag(cfg, "tie_word_embeddings", path, kind in _TIED)
    if cfg.get("max_position_embeddings") is not None:
        out["max_context"] = _need(cfg, "max_position_embeddings", path, "the context")
    dtype = cfg.get("torch_dtype") or cfg.get("dtype")
    if isinstance(dtype, str) and dtype:
        out["weights_dtype"] = dtype                # the precision the checkpoint is stored in
    elif (cfg.get("quantization_config") or {}).get("quant_method") == "fp8":
        out["weights_dtype"] = "fp8"
    if kind in ("qwen2", "qwen2_moe") or _flag(cfg, "attention_bias", path, False):
        out["qkv_bias"] = True
    if "kv_lora_rank" in cfg and cfg["kv_lora_rank"]:                    # multi-head latent attention
        for f in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            out[f] = _need(cfg, f, path, "multi-head latent attention")
        out["q_lora_rank"] = _optional(cfg, "q_lora_rank", path)
    if "n_routed_experts" in cfg and cfg["n_routed_experts"]:            # DeepSeek-V3, Kimi K2
        out["n_routed_experts"] = _need(cfg, "n_routed_experts", path, "the experts")
        out["n_shared_experts"] = _optional(cfg, "n_shared_experts", path)
        out["n_experts_per_token"] = _need(cfg, "num_experts_per_tok", path, "the active experts")
        out["moe_d_ff"] = _need(cfg, "moe_intermediate_size", path, "the expert width")
        out["n_dense_layers"] = _optional(cfg, "first_k_dense_replace", path)
        out["d_ff"] = _need(cfg, "intermediate_size", path, "the dense FFN layers")
        # DeepSeek-V3's aux-loss-free router carries a bias per expert (topk_method noaux_tc); V2's has none
        if cfg.get("topk_method") is not None:
            out["router_bias"] = cfg["topk_method"] == "noaux_tc"
    elif "num_local_experts" in cfg:                                     # Mixtral
        out["n_routed_experts"] = _need(cfg, "num_local_experts", path, "the experts")
        out["n_experts_per_token"] = _need(cfg, "num_experts_per_tok", path, "the active experts")
        out["moe_d_ff"] = out["d_ff"] = _need(cfg, "intermediate_size", path, "the expert width")
        out["n_shared_experts"], out["n_dense_layers"], out["router_bias"] = 0, 0, False
    elif "num_experts" in cfg and cfg["num_experts"]:                     # Qwen2-MoE, Qwen3-MoE
        out["n_routed_experts"] = _need(cfg, "num_experts", path, "the experts")
        out["n_experts_per_token"] = _need(cfg, "num_experts_per_tok", path, "the active experts")
        out["moe_d_ff"] = _need(cfg, "moe_intermediate_size", path, "the expert width")
        shared = _optional(cfg, "shared_expert_intermediate_size", path)
        if shared and shared % out["moe_d_ff"] != 0:
            raise CatalogFileError(f"{path.name}: a shared expert of {shared} is not a whole number of experts")
        out["n_shared_experts"] = shared // out["moe_d_ff"] if shared else 0
        out["n_dense_layers"], out["router_bias"] = _qwen_dense_layers(cfg, path, out["n_layers"]), False
        out["d_ff"] = _need(cfg, "intermediate_size", path, "the FFN") if cfg.get("intermediate_size") else out["moe_d_ff"]
    elif kind == "opt":                                                   # OPT: a ReLU MLP of ffn_dim
        out["d_ff"] = _need(cfg, "ffn_dim", path, "the FFN")
        out["ffn_matrices"] = 2
        bias = _flag(cfg, "enable_bias", path, True)
        out.update(qkv_bias=bias, o_bias=bias, mlp_bias=bias, norm_bias=True)
        # OPTLearnedPositionalEmbedding keeps 2 rows beyond max_position_embeddings
        out["learned_positions"] = _need(cfg, "max_position_embeddings", path, "the position table") + 2
        out["tied_embeddings"] = _flag(cfg, "tie_word_embeddings", path, True)
    elif kind in _CLASSIC:
        out.update(_classic(cfg, path, kind, out))
    else:
        out["d_ff"] = _need(cfg, "intermediate_size", path, "the FFN")
    if kind == "gpt_oss":   # biases on q, k, v, o, the experts and the router; a sink logit per head
        out.update(qkv_bias=True, o_bias=True, mlp_bias=True, router_bias=True, attention_sinks=True)
    if kind in _GEMMA2:
        out["norms_per_layer"] = 4
    out.update(_sliding(cfg, path, kind, out["n_layers"]))
    out.update(_quantized(cfg, path))
    return out


def _qwen_dense_layers(cfg: dict, path: Path, layers: int) -> int:
    """Qwen-MoE layers with a dense MLP instead of experts: those mlp_only_layers names, and those off the
    decoder_sparse_step (layer i is MoE when (i + 1) % step == 0). Where they sit changes no count."""
    only = cfg.get("mlp_only_layers") or []
    if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only):
        raise CatalogFileError(f"{path.name}: mlp_only_layers must be a list of layer numbers, got {only!r}")
    step = _optional(cfg, "decoder_sparse_step", path, 1) or 1
    return sum(1 for i in range(layers) if i in only or (i + 1) % step != 0)


def _quantized(cfg: dict, path: Path) -> dict:
    """The parts a quantization_config stores in another format, and the bytes a weight takes there:
    gpt-oss's MXFP4 experts (modules_to_not_convert keeps attention, router, embedding and head in bf16),
    DeepSeek's block-FP8 decoder. A method the book does not know leaves every part at the chapter's width."""
    q = cfg.get("quantization_config")
    if q is None:
        return {}
    if not isinstance(q, dict):
        raise CatalogFileError(f"{path.name}: quantization_config must be an object, got {q!r}")
    method = _FORMATS.get(str(q.get("quant_method", "")))
    if method is None:
        return {}
    keep = q.get("modules_to_not_convert") or []
    if not isinstance(keep, list) or not all(isinstance(k, str) for k in keep):
        raise CatalogFileError(f"{path.name}: modules_to_not_convert must be a list of module names, got {keep!r}")
    kept = {part for name in keep for part in _kept(name)}
    parts = [p for p in _LINEAR if p not in kept]
    if not parts:
        return {}
    fmt, width = method
    return {"quantized_parts": ",".join(parts), "quantized_format": fmt, "quantized_bytes_per_param": width}


def _sliding(cfg: dict, path: Path, kind: str, layers: int) -> dict:
    """Layers that attend to the last sliding_window tokens only, and so cache at most that many: those the
    layer_types list names sliding_attention (gpt-oss, Gemma 2/3, any family that writes it), or every layer
    of a Mistral whose config sets a window. A window the config switches off (use_sliding_window false, as
    Qwen2's configs do) caches every token."""
    types = cfg.get("layer_types")
    if types is not None and not isinstance(types, list):
        raise CatalogFileError(f"{path.name}: layer_types must be a list, got {types!r}")
    if not cfg.get("sliding_window") or not _flag(cfg, "use_sliding_window", path, True):
        return {}
    pattern = cfg.get("sliding_window_pattern", cfg.get("_sliding_window_pattern"))
    if types:
        n = sum(t == "sliding_attention" for t in types)
    elif pattern is not None:      # Gemma 3: every pattern-th layer global, the rest local
        n = layers - layers // _need({"sliding_window_pattern": pattern}, "sliding_window_pattern", path,
                                     "the sliding layers")
    elif kind == "gemma2":         # Gemma 2 alternates, starting local: layers 0, 2, 4, ...
        n = (layers + 1) // 2
    else:
        n = layers if kind == "mistral" else 0
    if not n:
        return {}
    return {"n_sliding_layers": n, "sliding_window": _need(cfg, "sliding_window", path, "the sliding window")}


def _classic(cfg: dict, path: Path, kind: str, out: dict) -> dict:
    """GPT-2, BLOOM, GPT-NeoX, Falcon, Phi: a two-matrix GELU MLP and LayerNorm, then each family's own way."""
    d = out["d_model"]
    new = {"ffn_matrices": 2, "norm_bias": True}
    if kind == "bloom":                                   # BloomMLP is always 4h wide; ALiBi, no position table
        new["d_ff"], new["embedding_norm"] = 4 * d, True
    elif kind in ("gpt2", "falcon"):
        field = "intermediate_size" if kind == "gpt2" else "ffn_hidden_size"
        new["d_ff"] = _need(cfg, field, path, "the FFN") if cfg.get(field) is not None else 4 * d
    else:
        new["d_ff"] = _need(cfg, "intermediate_size", path, "the FFN")
    if kind == "gpt2":                                    # wpe: a learned row per position
        new["learned_positions"] = _need(cfg, "max_position_embeddings", path, "the position table")
    bias = {"gpt_neox": _flag(cfg, "attention_bias", path, True),
            "falcon": _flag(cfg, "bias", path, False)}.get(kind, True)
    new.update(qkv_bias=bias, o_bias=bias, mlp_bias=kind == "gpt_neox" or bias)
    if kind == "phi":
        new.update(norms_per_layer=1, lm_head_bias=True)
    if kind == "falcon":
        decoder = _flag(cfg, "new_decoder_architecture", path, False)
        if decoder:
            new["n_kv_heads"] = _need(cfg, "num_kv_heads", path, "the KV cache")
        elif _flag(cfg, "multi_query", path, True):
            new["n_kv_heads"] = 1
        if _flag(cfg, "parallel_attn", path, True) and not decoder:
            new["norms_per_layer"] = 1
    return new


def _size(n: float) -> str:
    """A parameter count as a model's name gives it: 8.03B, 1.03T, 125M."""
    scale, letter = next(((s, x) for s, x in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K"))
                          if n >= s), (1, ""))
    return f"{n / scale:.3g}{letter}"


def _catalog_units() -> dict[str, str]:
    """Each model field's unit as the catalog gives it (max_context and sliding_window are tokens), so a field
    read from a config.json carries the same unit as a catalog model's and a chapter reads either alike."""
    from utils.catalog.entries import load_kind
    out: dict[str, str] = {}
    for e in load_kind("model").values():
        for k, v in e.values.items():
            if hasattr(v.q, "units") and str(v.q.units) != "dimensionless":
                out.setdefault(k, str(v.q.units))
    return out


def model_entry(path: Path) -> Entry:
    """The config at `path` as a catalog model Entry, named after the model: the config's _name_or_path,
    else its model_type and its counted size (never the folder the reader keeps it in). It holds no
    params_total or params_active: those are a model's published figures, and a count stored under their
    names would let a chapter compare the count with itself (utils.models.param_count counts it)."""
    import math

    from utils.models import param_count
    if path.suffix == ".toml":               # a model spec file in the catalog's schema, not a config.json
        from utils.catalog.specfile import model_entry as spec_model
        return spec_model(path)
    cfg = _read(path)
    read = _dt.date.fromtimestamp(path.stat().st_mtime).isoformat()
    src = Source("config-file", f"{path.name} ({path})", path.resolve().as_uri(), read)
    note = "from the config.json the reader gave"
    units = _catalog_units()
    values = {k: Value(k, v if isinstance(v, (bool, str)) else Q_(v, units.get(k, "")), src, "spec", note)
              for k, v in fields(cfg, path).items()}
    counts = param_count(Entry("model", str(path), path.stem, values))
    if not all(math.isfinite(float(q.m)) for q in counts.values()):
        raise CatalogFileError(f"{path.name}: its fields give a parameter count no float holds")
    if "quantized_parts" in values:   # name only the quantized parts the model has (gpt-oss has no dense MLP)
        held = ",".join(p for p in values["quantized_parts"].q.split(",") if counts[p].m > 0)
        values["quantized_parts"] = Value("quantized_parts", held, src, "spec", note)
    given = cfg.get("_name_or_path")
    name = given if isinstance(given, str) and given.strip() else \
        f"{cfg.get('model_type') or 'model'} {_size(float(counts['total'].m))}"
    src = Source("config-file", f"{name} config.json ({path})", src.url, read)
    values = {k: Value(k, v.q, src, v.kind, v.note) for k, v in values.items()}
    return Entry("model", str(path), name, values, notes="read from a config.json")
