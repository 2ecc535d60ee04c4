"""batch-invariance: the same row's logits computed alone and inside batches of 1 to 256 rows with torch's
default matmul (one hidden row times an LM-head-sized weight, in fp32 and in bf16), and the batch-invariant
variant's cost (chapters/serving/deterministic-sampling.ipynb).

fp32 is torch's default fp32 matmul (no TF32: its check's tolerance would catch TF32 switched on); its output
keeps the accumulation's last bits, so it is the headline. bf16 is what an LM head runs in: its output
rounding to eight bits of mantissa hides most accumulation differences, so fewer logits differ there.

For each batch size B the target row h is row 0 of a (B, d) batch whose other rows are random; the default
variant is one `torch.matmul` of the batch by W (the library picks its kernel, tiling and split of the
reduction from the shape, so from B). The batch-invariant variant is the real and simplest one: every row
computed alone, one batch-1 `torch.matmul` per row, so each row's reduction order is the batch-1 kernel's
whatever the batch (it reads W once per row: its cost is the price of invariance by this route; a kernel
with a fixed split size gets invariance for far less, which is the chapter's published figure).

Besides the timing, each size records what the batch did to the row, against the batch-1 default result:
the share of its logits whose bits differ, the largest difference in ulps (of the dtype), whether the
row's argmax changed, and the share of constructed exact ties whose winner changed. The ties: h's second
half repeats its first, and column 2i+1 of W is column 2i with its halves swapped, so the two logits are
equal in exact arithmetic and only the rounding order decides which is larger; columns 0 and 1 are built
to be the row's top two (an exact tie for the argmax). These observations are made in `prepare` (they
are not timings) and kept in _OBSERVED for `metrics`, keyed by size.
"""
from __future__ import annotations

import math

from utils.gpu.measurements.common import (
    _DTYPES,
    Measurement,
    Variant,
    _cycle,
    _dtype,
    _metric,
    _ratio,
    _torch,
    matmul_check,
    register,
    rotation,
)

BATCHES = (1, 8, 64, 256)
DTYPES = ("float32", "bfloat16")      # fp32 first: its output keeps the accumulation's last bits
_TOLERANCE = {"float32": 1e-4, "bfloat16": 1e-2, "float16": 1e-2}
_SEED = 20261201
_OBSERVED: dict = {}          # size key -> what the batch did to the row (filled by prepare)


def _key(size: dict) -> tuple:
    return tuple(sorted(size.items()))


def ties(vocab: int) -> int:
    """Constructed tie pairs (columns 2i and 2i+1) in a weight of `vocab` columns."""
    return max(1, min(512, vocab // 4))


def ordered_bits(x):
    """A float tensor's bit patterns on a monotone integer line (int64): adjacent floats differ by one, so
    the difference of two is their distance in ulps of the dtype (bfloat16, float16 or float32)."""
    torch = _torch()
    itype, mask = {2: (torch.int16, 0x7FFF), 4: (torch.int32, 0x7FFFFFFF)}[x.element_size()]
    i = x.contiguous().view(itype).to(torch.int64)
    return torch.where(i < 0, -(i & mask), i)


def tie_signs(row, n_pairs: int):
    """sign(logit[2i] - logit[2i+1]) for the constructed pairs, as computed (0 where the bits are equal)."""
    torch = _torch()
    a, b = row[0:2 * n_pairs:2].float(), row[1:2 * n_pairs:2].float()
    return torch.sign(a - b)


def _operands(rt, size):
    """W (with clones to rotate), its target row h and the batch-1 default result, once per run and
    weight shape: every batch size sees the same W and h."""
    torch = _torch()
    d, vocab, name = size["d"], size["vocab"], size["dtype"]
    key = ("batch-invariance", d, vocab, name)
    if key not in rt.cache:
        dtype = _dtype(name)
        g = torch.Generator(device=rt.device).manual_seed(_SEED)
        h = torch.randn(d, generator=g, device=rt.device).to(dtype)
        h[d // 2:] = h[: d // 2]                                  # duplicated halves: exact ties below
        w = (torch.randn(d, vocab, generator=g, device=rt.device) * d ** -0.5).to(dtype)
        # column 0 aligned with h: the top logit, about 8 (the others are about standard normal)
        w[:, 0] = w[:, 0].abs() * torch.sign(h) * (12.5 / d ** 0.5)
        n = ties(vocab)
        a = w[:, 0:2 * n:2]
        w[:, 1:2 * n:2] = torch.cat([a[d // 2:], a[: d // 2]])    # the half-swap: equal in exact arithmetic
        ws = [w] + [w.clone() for _ in range(rotation(rt, d * vocab * _DTYPES[name]) - 1)]
        ref = torch.matmul(h[None], w)[0]                         # the default matmul at batch 1
        rt.synchronize()
        rt.cache[key] = (ws, h, ref)
    return rt.cache[key]


def top_ulp(ref) -> float:
    """One ulp of the row's largest logit in its dtype: the scale a top-2 gap is read on."""
    _, e = math.frexp(float(ref.abs().max()))
    return _torch().finfo(ref.dtype).eps * 2.0 ** (e - 1)


def _observe(row, alone_row, ref, n_pairs: int) -> dict:
    torch = _torch()
    differ = row != ref
    return {"share_differ": float(differ.float().mean()),
            "max_ulps": float((ordered_bits(row) - ordered_bits(ref)).abs().max()),
            "max_top_ulps": float((row.double() - ref.double()).abs().max()) / top_ulp(ref),
            "argmax_changed": float(int(torch.argmax(row.float())) != int(torch.argmax(ref.float()))),
            "tie_flips": float((tie_signs(row, n_pairs) != tie_signs(ref, n_pairs)).float().mean()),
            "ties_split_at_1": float((tie_signs(ref, n_pairs) != 0).float().mean()),
            "alone_share_differ": float((alone_row != ref).float().mean())}


def _prepare(rt, size):
    torch = _torch()
    d, vocab, batch, name = size["d"], size["vocab"], size["batch"], size["dtype"]
    dtype = _dtype(name)
    ws, h, ref = _operands(rt, size)
    g = torch.Generator(device=rt.device).manual_seed(_SEED + batch)
    x = torch.randn(batch, d, generator=g, device=rt.device).to(dtype)
    x[0] = h                                                   # the target row, first in its batch
    y = torch.empty(batch, vocab, device=rt.device, dtype=dtype)
    y_alone = torch.empty(batch, vocab, device=rt.device, dtype=dtype)
    nxt = _cycle(ws)

    def default(w, out):
        torch.matmul(x, w, out=out)

    def alone(w, out):                    # batch-invariant: every row its own batch-1 call
        for b in range(batch):
            torch.matmul(x[b:b + 1], w, out=out[b:b + 1])

    def checker(op, out):
        def check():
            out.fill_(float("nan"))
            op(ws[0], out)
            rt.synchronize()
            return matmul_check(out, x, ws[0], _TOLERANCE[name])
        return check

    default(ws[0], y)
    alone(ws[0], y_alone)
    rt.synchronize()
    _OBSERVED[_key(size)] = _observe(y[0], y_alone[0], ref, ties(vocab))
    return [Variant("default", lambda: default(nxt(), y), checker(default, y)),
            Variant("alone", lambda: alone(nxt(), y_alone), checker(alone, y_alone))], []


def _value(value: float, result: dict, note: str) -> dict:
    return {"value": float(value), "unit": "", "variant": result["variant"], "size": dict(result["size"]),
            "note": note}


_SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def _metrics(results):
    at: dict = {}
    for r in results:
        at.setdefault(r["size"]["dtype"], {}).setdefault(r["size"]["batch"], {})[r["variant"]] = r
    out = {}
    for name, by_batch in at.items():
        t, shares = _SHORT[name], []
        for batch in sorted(by_batch):
            v = by_batch[batch]
            seen = _OBSERVED[_key(v["default"]["size"])]
            tag = f"{t}_b{batch}"
            if batch > 1:
                shares.append((seen["share_differ"], v["default"]))
                out[f"share_differ_{tag}"] = _value(seen["share_differ"], v["default"], "share of the row's "
                                                    "logits whose bits differ from the batch-1 result")
                out[f"max_ulps_{tag}"] = _value(seen["max_ulps"], v["default"], "largest difference from the "
                                                "batch-1 result, in ulps of the dtype at each logit (large "
                                                "where a logit is near zero and its ulp tiny)")
                out[f"max_top_ulps_{tag}"] = _value(seen["max_top_ulps"], v["default"], "largest difference "
                                                    "from the batch-1 result, in ulps of the row's largest logit")
                out[f"argmax_changed_{tag}"] = _value(seen["argmax_changed"], v["default"], "1 if the row's "
                                                      "argmax (an exact tie of columns 0 and 1) differs from "
                                                      "batch 1's, else 0")
                out[f"tie_flips_{tag}"] = _value(seen["tie_flips"], v["default"], "share of the constructed "
                                                 "exact ties whose computed winner differs from batch 1's")
                out[f"alone_share_differ_{tag}"] = _ratio(seen["alone_share_differ"], v["alone"], "the "
                                                          "batch-invariant variant's share of the row's logits "
                                                          "that differ from batch 1's (0: invariant)")
            else:
                out[f"ties_split_{t}_b1"] = _value(seen["ties_split_at_1"], v["default"], "share of the "
                                                   "constructed exact ties that batch 1's rounding leaves unequal")
            out[f"time_default_{tag}"] = _metric(v["default"], "time", "median time of the default matmul")
            out[f"time_alone_{tag}"] = _metric(v["alone"], "time", "median time of the rows computed alone")
            out[f"alone_over_default_{tag}"] = _ratio(v["alone"]["median_s"] / v["default"]["median_s"],
                                                      v["alone"], "the batch-invariant variant's median time "
                                                      "over the default matmul's")
        share, r = max(shares, key=lambda x: x[0])
        out[f"share_differ_{t}"] = _value(share, r, "the largest share, over the batch sizes, of the row's "
                                                    "logits whose bits differ from the batch-1 result")
        big = by_batch[max(by_batch)]
        out[f"alone_over_default_{t}"] = _ratio(big["alone"]["median_s"] / big["default"]["median_s"],
                                                big["alone"], "the cost of batch invariance by computing each "
                                                "row alone: its median time over the default matmul's at the "
                                                "largest batch")
    return out


register(Measurement(
    name="batch-invariance",
    what="one hidden row's logits (fp32, then bf16; d = 4096 by a vocabulary of 32,768) computed alone and "
         "inside batches of 8, 64 and 256 rows with torch's default matmul: the share of logits whose bits differ from the "
         "batch-1 result, the largest difference in ulps, whether a constructed exact tie's argmax changes, "
         "and the time of the default matmul against the batch-invariant variant that computes each row alone",
    sizes={"full": [{"d": 4096, "vocab": 32768, "batch": b, "dtype": t} for t in DTYPES for b in BATCHES],
           "quick": [{"d": 4096, "vocab": 8192, "batch": b, "dtype": t} for t in DTYPES for b in BATCHES],
           "tiny": [{"d": 128, "vocab": 256, "batch": b, "dtype": t} for t in DTYPES for b in BATCHES]},
    bytes=lambda s, v: ((s["batch"] if v == "alone" else 1) * s["d"] * s["vocab"]
                        + s["batch"] * (s["d"] + s["vocab"])) * _DTYPES[s["dtype"]],
    flops=lambda s, v: 2 * s["batch"] * s["d"] * s["vocab"],
    prepare=_prepare,
    metrics=_metrics,
    headline="share_differ_fp32",
))
