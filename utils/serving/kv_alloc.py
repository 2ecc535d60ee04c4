"""A real KV cache, allocated in torch on the CPU, against the formula (utils.models.kv_bytes_per_token).

Two small models of the book's own making (one grouped-query, one latent) project seeded random hidden
states through per-layer key, value and latent projections and store the results the way a cache stores
them: one key and one value tensor per layer with the KV heads only, or one latent tensor per layer. The
bytes the stored tensors allocate, `element_size() * nelement()`, are compared with the formula times the
tokens; the transient tensor that attention builds when it repeats each KV head for its group of query
heads is what the query-heads formula (kv_bytes_per_token_mha) counts.

A count, not a timing: it runs on the CPU and needs no GPU.

Chapters: kv-cache-per-sequence.
"""
from __future__ import annotations

import torch

from utils.catalog import Entry, Source, Value
from utils.models import kv_bytes_per_token, kv_bytes_per_token_mha
from utils.units import q

TOY_SOURCE = Source("this-book", "a toy configuration made up for the allocation check", "", "2026-11-29")
TOY_GQA = dict(n_layers=4, d_model=512, n_heads=8, n_kv_heads=2, head_dim=64)
TOY_MLA = dict(n_layers=4, d_model=512, n_heads=8, kv_lora_rank=64, qk_rope_head_dim=16, qk_nope_head_dim=32,
               v_head_dim=32)
DTYPES = (torch.float32, torch.bfloat16, torch.float8_e4m3fn)


def toy_model(key: str, **fields) -> Entry:
    """A catalog-shaped entry for a made-up config, so utils.models counts it like any catalog model."""
    return Entry("model", key, key, {k: Value(k, q(v, ""), TOY_SOURCE, "assumption") for k, v in fields.items()})


def _n(m, name: str) -> int:
    return int(m.q(name).magnitude)


def nbytes(tensors) -> int:
    return sum(t.element_size() * t.nelement() for t in tensors)


def fill_gqa(m, hidden, dtype) -> tuple[int, int]:
    """Bytes of the stored K and V (KV heads only) over all layers, and of the heads repeated for the
    query heads (what a kernel without native grouped heads builds transiently)."""
    L, Hkv, Hq, dh, d = (_n(m, k) for k in ("n_layers", "n_kv_heads", "n_heads", "head_dim", "d_model"))
    batch, tokens, _ = hidden.shape
    keys, values, expanded = [], [], []
    for _ in range(L):
        wk = torch.nn.Linear(d, Hkv * dh, bias=False, dtype=hidden.dtype)
        wv = torch.nn.Linear(d, Hkv * dh, bias=False, dtype=hidden.dtype)
        with torch.no_grad():
            k = wk(hidden).view(batch, tokens, Hkv, dh).transpose(1, 2).contiguous().to(dtype)
            v = wv(hidden).view(batch, tokens, Hkv, dh).transpose(1, 2).contiguous().to(dtype)
        keys.append(k)
        values.append(v)
        expanded += [k.repeat_interleave(Hq // Hkv, dim=1), v.repeat_interleave(Hq // Hkv, dim=1)]
    assert keys[0].shape == (batch, Hkv, tokens, dh)
    return nbytes(keys + values), nbytes(expanded)


def fill_mla(m, hidden, dtype) -> int:
    """Bytes of the stored latents (latent and RoPE key together) over all layers."""
    L, r, dR, d = (_n(m, k) for k in ("n_layers", "kv_lora_rank", "qk_rope_head_dim", "d_model"))
    latents = []
    for _ in range(L):
        w_dkv = torch.nn.Linear(d, r + dR, bias=False, dtype=hidden.dtype)
        with torch.no_grad():
            latents.append(w_dkv(hidden).to(dtype))
    assert latents[0].shape == (hidden.shape[0], hidden.shape[1], r + dR)
    return nbytes(latents)


def allocation_check(batch: int = 2, tokens: int = 300, seed: int = 0) -> dict:
    """Allocated bytes against the formula for each dtype: rows of (tensor, dtype, allocated, formula)."""
    gqa, mla = toy_model("toy-gqa", **TOY_GQA), toy_model("toy-mla", **TOY_MLA)
    torch.manual_seed(seed)
    hidden = torch.randn(batch, tokens, TOY_GQA["d_model"], dtype=torch.bfloat16)
    held = q(batch * tokens, "token")
    rows = []
    for dtype in DTYPES:
        b = torch.empty((), dtype=dtype).element_size()
        gqa_bytes, expanded = fill_gqa(gqa, hidden, dtype)
        name = str(dtype).removeprefix("torch.")
        for what, got, want in (
                ("GQA cache (KV heads)", gqa_bytes, kv_bytes_per_token(gqa, b) * held),
                ("GQA heads repeated to the query heads", expanded, kv_bytes_per_token_mha(gqa, b) * held),
                ("MLA latent cache", fill_mla(mla, hidden, dtype), kv_bytes_per_token(mla, b) * held)):
            rows.append((what, name, got, int(round(float(want.to("B").magnitude)))))
    return dict(rows=rows, batch=batch, tokens=tokens, group=TOY_GQA["n_heads"] // TOY_GQA["n_kv_heads"],
                exact=all(got == want for *_, got, want in rows))
