"""attention-forward: the book's tiled Triton attention against materialised attention in torch and
torch's scaled_dot_product_attention (chapters/kernels/attention-traffic.ipynb)."""
from __future__ import annotations

from utils.gpu.measurements.common import (
    _DTYPES,
    CheckResult,
    Measurement,
    Variant,
    _cycle,
    _dtype,
    _metric,
    _ratio,
    _torch,
    register,
    rel_err,
    rotation,
)

ATTENTION_BLOCK_Q = 128               # the Triton kernel's query rows per program (utils.gpu.kernels.attention)
_ATTENTION_TOLERANCE = {"float32": 2e-3, "float16": 2e-3, "bfloat16": 1e-2}   # fp32: tf32 products on a GPU
_ATTENTION_CHECK_HEADS = 2            # heads compared with the float64 reference at each size


def attention_flops(size: dict) -> int:
    """The two matrix products of every head's forward: 4 N^2 d FLOPs per head (non-causal)."""
    return 4 * size["batch"] * size["heads"] * size["n"] ** 2 * size["d"]


def attention_bytes(size: dict, variant: str) -> int:
    """Device-memory bytes by the chapter's count (attention-traffic), e the element size:
    materialised: Q and K read, S written, S read, P written, P and V read, O written: 4 N^2 e + 4 N d e;
    triton: Q read once, O written once, K and V read once per block of 128 query rows, every block load
    counted as a read of device memory: 2 N d e (1 + ceil(N / 128));
    triton_exp2: the same count as triton (the same blocks);
    sdpa and sdpa_<backend>: a fused kernel with its own blocks, counted at the floor any tiled kernel
    moves: 4 N d e (the math backend materialises the scores, so its count is an understatement)."""
    heads, n, d, e = size["batch"] * size["heads"], size["n"], size["d"], _DTYPES[size["dtype"]]
    if variant == "materialised":
        return heads * (4 * n * n * e + 4 * n * d * e)
    if variant in ("triton", "triton_exp2"):
        return heads * 2 * n * d * e * (1 + -(-n // ATTENTION_BLOCK_Q))
    return heads * 4 * n * d * e


def _attention_prepare(rt, size):
    torch = _torch()
    import torch.nn.functional as F

    from utils.gpu.kernels import attention as triton_attention
    from utils.gpu.kernels import materialised_attention
    from utils.gpu.kernels.attention import attention_exp2
    b, h, n, d, name = size["batch"], size["heads"], size["n"], size["d"], size["dtype"]
    dtype = _dtype(name)
    shape = (b, h, n, d)
    count = rotation(rt, 3 * b * h * n * d * _DTYPES[name])
    # The softmax scale 1/sqrt(d) is folded into Q (as a model can fold it into W_q), so every variant
    # computes softmax(Q K^T) V with scale 1 and the materialised one runs exactly three kernels.
    sets = [((torch.randn(shape, device=rt.device) * d ** -0.5).to(dtype), torch.randn(shape, device=rt.device).to(dtype),
             torch.randn(shape, device=rt.device).to(dtype)) for _ in range(count)]
    out = torch.empty(shape, dtype=dtype, device=rt.device)
    nxt = _cycle(sets)

    def checker(op):
        def check():
            q, k, v = sets[0]
            out.fill_(float("nan"))
            o = op(q, k, v)
            rt.synchronize()
            written = bool(torch.isfinite(o).all())
            pick = torch.randperm(b * h)[:_ATTENTION_CHECK_HEADS].tolist()
            flat = [x.reshape(b * h, n, d) for x in (q, k, v, o)]
            ref = torch.stack([torch.softmax(flat[0][i].double() @ flat[1][i].double().t(), dim=-1) @ flat[2][i].double()
                               for i in pick])
            return CheckResult("relative-error norm vs float64 (sampled heads)", rel_err(flat[3][pick], ref),
                               _ATTENTION_TOLERANCE[name], written)
        return check

    def tri(q, k, v):
        return triton_attention(q, k, v, out, scale=1.0)

    def tri_exp2(q, k, v):           # scale folded into one FMA with exp2, masks on boundary blocks only
        return attention_exp2(q, k, v, out, scale=1.0)

    def mat(q, k, v):
        return materialised_attention(q, k, v, out, scale=1.0)

    def sdpa(q, k, v):               # torch's fused attention (it picks the backend); it allocates its output
        return F.scaled_dot_product_attention(q, k, v, scale=1.0)

    variants = [Variant(v, (lambda op=op: op(*nxt())), checker(op))
                for v, op in (("triton", tri), ("triton_exp2", tri_exp2), ("materialised", mat), ("sdpa", sdpa))]
    skipped = []
    for backend, variant, op in _sdpa_backends(F):
        check = checker(op)
        try:
            first = check()                                # a backend this stack cannot run raises here
            if not first.passed:
                raise RuntimeError(f"it failed its check ({first.metric}: {first.error:.3g}, tolerance "
                                   f"{first.tolerance:.3g}, all written: {first.all_written})")
        except Exception as e:  # noqa: BLE001 - an unavailable backend is recorded, not fatal
            text = str(e).strip().splitlines()
            skipped.append((variant, f"SDPA backend {backend} unavailable: {type(e).__name__}: "
                                     f"{text[0] if text else ''}"[:300]))
            continue
        variants.append(Variant(variant, (lambda op=op: op(*nxt())), check))
    return variants, skipped


SDPA_BACKENDS = (("FLASH_ATTENTION", "sdpa_flash"), ("EFFICIENT_ATTENTION", "sdpa_efficient"),
                 ("CUDNN_ATTENTION", "sdpa_cudnn"), ("MATH", "sdpa_math"))


def _sdpa_backends(F):
    """(backend name, variant, op) for each of torch's SDPA backends, the op running scaled_dot_product_
    attention with only that backend allowed (torch.nn.attention.sdpa_kernel); a backend this torch
    does not name gives an op that raises, so it is recorded as skipped."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:                               # an older torch: every backend is a skip
        SDPBackend, sdpa_kernel, missing = None, None, e
    out = []
    for backend, variant in SDPA_BACKENDS:
        member = getattr(SDPBackend, backend, None) if SDPBackend is not None else None

        def op(q, k, v, member=member, backend=backend):
            if member is None:
                raise RuntimeError(f"this torch has no SDPBackend.{backend}"
                                   + ("" if SDPBackend is not None else f" ({missing})"))
            with sdpa_kernel(member):
                return F.scaled_dot_product_attention(q, k, v, scale=1.0)
        out.append((backend, variant, op))
    return out


def _attention_metrics(results):
    at: dict = {}
    for r in results:
        at.setdefault(r["size"]["n"], {})[r["variant"]] = r
    out = {}
    for n, v in sorted(at.items()):
        for name, r in sorted(v.items()):
            out[f"time_{name}_{n}"] = _metric(r, "time", f"median time of the {name} forward at N={n}, all heads")
            out[f"flop_rate_{name}_{n}"] = _metric(r, "flop_rate", f"4 N^2 d FLOPs per head over the median "
                                                   f"time, {name}, N={n}")
        out[f"bandwidth_materialised_{n}"] = _metric(v["materialised"], "bandwidth", "materialised attention's "
                                                     f"counted bytes (4 N^2 e + 4 N d e per head) over its median time, N={n}")
        out[f"speedup_vs_materialised_{n}"] = _ratio(v["materialised"]["median_s"] / v["triton"]["median_s"],
                                                     v["triton"], f"materialised median time over the Triton "
                                                     f"kernel's, N={n}")
    big = at[max(at)]
    out["speedup_vs_materialised"] = _ratio(big["materialised"]["median_s"] / big["triton"]["median_s"], big["triton"],
                                            "materialised attention's median time over the tiled Triton kernel's, "
                                            "at the longest context")
    out["triton_over_sdpa"] = _ratio(big["sdpa"]["median_s"] / big["triton"]["median_s"], big["triton"],
                                     "torch scaled_dot_product_attention's median time over the Triton kernel's, "
                                     "at the longest context (1 = as fast)")
    if "triton_exp2" in big:
        e2 = big["triton_exp2"]
        out["triton_exp2_over_triton"] = _ratio(big["triton"]["median_s"] / e2["median_s"], e2, "the tiled Triton "
                                                "kernel's median time over the exp2 variant's (scale folded into one "
                                                "FMA, masks on boundary blocks only), at the longest context")
        out["triton_exp2_over_sdpa"] = _ratio(big["sdpa"]["median_s"] / e2["median_s"], e2, "torch "
                                              "scaled_dot_product_attention's median time over the exp2 Triton "
                                              "kernel's, at the longest context (1 = as fast)")
        out["flop_rate_triton_exp2"] = _metric(e2, "flop_rate", "the exp2 Triton kernel's FLOP rate (4 N^2 d per "
                                               "head) at the longest context")
    for _, variant in SDPA_BACKENDS:
        if variant in big:
            out[f"triton_over_{variant}"] = _ratio(big[variant]["median_s"] / big["triton"]["median_s"], big["triton"],
                                                   f"{variant}'s median time (SDPA with only that backend allowed) "
                                                   "over the tiled Triton kernel's, at the longest context")
    out["flop_rate_triton"] = _metric(big["triton"], "flop_rate", "the Triton kernel's FLOP rate (4 N^2 d per "
                                      "head) at the longest context")
    return out


def _attention_sizes(n_batch, d=128, heads=16, dtype="bfloat16"):
    return [{"batch": b, "heads": heads, "n": n, "d": d, "dtype": dtype} for n, b in n_batch]


register(Measurement(
    name="attention-forward",
    what="attention forward, softmax(Q K^T) V in bf16 with head dimension 128, at 1k, 4k and 8k context: the "
         "book's tiled Triton kernel (online softmax, the scores never written) and its exp2 variant against materialised "
         "attention in torch (Q K^T, softmax, P V, each through memory) and torch's "
         "scaled_dot_product_attention, chosen by torch and with each backend forced (a backend that cannot run "
         "is recorded as skipped); batch x heads sized so Q, K and V are four times the L2 cache",
    sizes={"full": _attention_sizes([(1024, 16), (4096, 4), (8192, 2)]),
           "quick": _attention_sizes([(1024, 4), (4096, 1)]),
           "tiny": [{"batch": 1, "heads": 2, "n": 130, "d": 32, "dtype": "float32"},
                    {"batch": 2, "heads": 1, "n": 64, "d": 16, "dtype": "float16"}]},
    bytes=attention_bytes,
    flops=lambda s, v: attention_flops(s),
    prepare=_attention_prepare,
    metrics=_attention_metrics,
    headline="speedup_vs_materialised",
))
