"""top-k: torch.topk against a full sort and the book's radix select in torch ops
(chapters/kernels/top-k-radix-select.ipynb)."""
from __future__ import annotations

from utils.gpu.measurements.common import (
    CheckResult,
    Measurement,
    Variant,
    _cycle,
    _logits,
    _metric,
    _ratio,
    _torch,
    register,
    rotation,
)


def _topk_prepare(rt, size):
    torch = _torch()
    from utils.gpu.kernels.topk import radix_topk_torch
    rows, cols, k = size["rows"], size["cols"], size["k"]
    count = rotation(rt, rows * cols * 4)
    xs = [_logits(rows, cols, torch.float32, rt.device) for _ in range(count)]
    nxt = _cycle(xs)

    def checker(op):
        def check():
            x = xs[0]
            vals, idx = op(x)
            rt.synchronize()
            ref, _ = torch.topk(x, k, dim=-1)
            differ = int((vals != ref).sum()) + int((x.gather(1, idx) != vals).sum())
            return CheckResult("fraction of top-k values that differ from torch.topk's (or from x at the "
                               "returned indices)", differ / max(1, ref.numel()), 0.0, True)
        return check

    def topk_(x):
        return torch.topk(x, k, dim=-1)

    def sort_(x):                      # the whole row sorted, then the first k kept
        v, i = torch.sort(x, dim=-1, descending=True)
        return v[:, :k], i[:, :k]

    def radix(x):
        return radix_topk_torch(x, k)

    return [Variant(v, (lambda op=op: op(nxt())), checker(op))
            for v, op in (("topk", topk_), ("sort", sort_), ("radix", radix))], []


def _topk_metrics(results):
    at: dict = {}
    for r in results:
        at.setdefault(r["size"]["k"], {})[r["variant"]] = r
    out = {}
    for k, v in sorted(at.items()):
        for name, r in sorted(v.items()):
            out[f"time_{name}_k{k}"] = _metric(r, "time", f"median time of {name} top-{k} over all rows")
        out[f"sort_over_topk_k{k}"] = _ratio(v["sort"]["median_s"] / v["topk"]["median_s"], v["topk"],
                                             f"torch.sort's median time over torch.topk's, k={k}")
        out[f"radix_over_topk_k{k}"] = _ratio(v["radix"]["median_s"] / v["topk"]["median_s"], v["topk"],
                                              f"the torch-op radix select's median time over torch.topk's, k={k}")
    mid = sorted(at)[len(at) // 2]
    out["sort_over_topk"] = _ratio(at[mid]["sort"]["median_s"] / at[mid]["topk"]["median_s"], at[mid]["topk"],
                                   f"torch.sort's median time over torch.topk's at the middle k ({mid})")
    return out


register(Measurement(
    name="top-k",
    what="top-k of each row of a batch of fp32 logits (64 rows of a 128,256-entry vocabulary; k = 1, 50, "
         "1024): torch.topk against a full torch.sort and the book's four-pass radix select in torch ops, "
         "each checked against torch.topk's values exactly",
    sizes={"full": [{"rows": 64, "cols": 128256, "k": k} for k in (1, 50, 1024)],
           "quick": [{"rows": 64, "cols": 128256, "k": k} for k in (1, 50)],
           "tiny": [{"rows": 3, "cols": 1000, "k": k} for k in (1, 5, 17)]},
    bytes=lambda s, v: s["rows"] * s["cols"] * 4,
    flops=lambda s, v: 0,
    prepare=_topk_prepare,
    metrics=_topk_metrics,
    headline="sort_over_topk",
))
