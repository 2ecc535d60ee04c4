"""Why temperature zero is not deterministic: a reduction whose order depends on the batch, in float32,
with the order controlled so every machine gets the same bits.

    out = split_reduce(h, W, splits=4)            # h (B, K) float32, W (K, N) float32 -> (B, N) float32
    s = splits_for_batch(batch=1, items_per_row=8, n_sm=132)   # the split a batch-variant kernel picks
    out = batch_logits(h, W, policy="variant")    # splits from the batch size: rows change with the batch
    out = batch_logits(h, W, policy="invariant")  # a fixed split SIZE: rows never change with the batch

The rules, stated once (tests/serving/test_determinism.py holds each of them):
- `split_reduce` computes out[b, n] = sum_k h[b, k] W[k, n] as `splits` contiguous chunks of the K axis,
  each accumulated left to right in float32, then the chunk partials added left to right in float32:
  exactly what a split-K matmul (or a split-KV decode-attention kernel) does, one chunk per thread block.
  It uses only elementwise float32 multiplies and adds (numpy ufuncs, each correctly rounded by IEEE 754),
  never BLAS, np.sum or np.dot, whose order depends on the library build and the thread count. So the
  result is a function of the inputs and the chunking alone, the same on every machine.
- Rows never interact: row b's result depends on the batch only through `splits`. That is the whole
  mechanism of batch variance: a kernel that picks its split from the batch size (to fill the GPU's SMs)
  gives the same row different bits in different batches.
- `splits_for_batch` is such a rule, stated plainly (an illustration of the kind, not any library's exact
  heuristic): the largest power of two up to `max_splits` with batch x items_per_row x splits <= n_sm.
- The fix is a fixed split size (`chunk` elements per split, whatever the batch): the order is then a
  function of K alone. A fixed number of splits is not enough across different K (the KV length grows
  during decode), a fixed size is.
- `flip_probability(s, beta)`: the chance that rounding noise of standard deviation s on the top-2 gap
  reverses a greedy choice, when the gap is exponential with mean beta (the gap between the top two of
  i.i.d. Gumbel logits of scale beta is exactly that): P = 1/2 - exp(s^2 / (2 beta^2)) Q(s / beta),
  Q the normal tail; for s << beta, P ~ s / (beta sqrt(2 pi)).

Chapters: deterministic-sampling.
"""
from __future__ import annotations

import math

import numpy as np

F32 = np.float32


def _check(h, W) -> tuple[np.ndarray, np.ndarray]:
    h, W = np.asarray(h), np.asarray(W)
    if h.dtype != F32 or W.dtype != F32:
        raise ValueError(f"h and W must be float32, got {h.dtype} and {W.dtype}")
    if h.ndim != 2 or W.ndim != 2 or h.shape[1] != W.shape[0] or h.shape[1] == 0:
        raise ValueError(f"h must be (B, K) and W (K, N) with the same K > 0, got {h.shape} and {W.shape}")
    return h, W


def chunk_bounds(K: int, splits: int) -> list[tuple[int, int]]:
    """`splits` contiguous chunks of range(K), as equal as possible (the first ones one longer)."""
    if not isinstance(splits, (int, np.integer)) or isinstance(splits, bool) or not 1 <= splits <= K:
        raise ValueError(f"splits must be an integer from 1 to K = {K}, got {splits!r}")
    base, extra = divmod(K, splits)
    bounds, start = [], 0
    for j in range(splits):
        stop = start + base + (1 if j < extra else 0)
        bounds.append((start, stop))
        start = stop
    return bounds


def split_reduce(h, W, splits: int) -> np.ndarray:
    """h @ W in float32 as `splits` sequentially accumulated chunks of K, partials added in order."""
    h, W = _check(h, W)
    return _reduce(h, W, chunk_bounds(h.shape[1], splits))


def split_reduce_fixed(h, W, chunk: int) -> np.ndarray:
    """h @ W in float32 with a fixed split size: chunks of `chunk` elements (the last one shorter)."""
    h, W = _check(h, W)
    if not isinstance(chunk, (int, np.integer)) or isinstance(chunk, bool) or chunk < 1:
        raise ValueError(f"chunk must be an integer >= 1, got {chunk!r}")
    K = h.shape[1]
    return _reduce(h, W, [(s, min(s + chunk, K)) for s in range(0, K, int(chunk))])


def _reduce(h: np.ndarray, W: np.ndarray, bounds: list[tuple[int, int]]) -> np.ndarray:
    B, N = h.shape[0], W.shape[1]
    S, longest = len(bounds), max(stop - start for start, stop in bounds)
    # Chunks padded with zeros to one length: adding an exact 0 * w = 0 leaves a float32 sum unchanged,
    # so chunk j's partial is still the left-to-right sum of its own elements.
    hp = np.zeros((B, S, longest), dtype=F32)
    Wp = np.zeros((S, longest, N), dtype=F32)
    for j, (start, stop) in enumerate(bounds):
        hp[:, j, :stop - start] = h[:, start:stop]
        Wp[j, :stop - start] = W[start:stop]
    partials = np.zeros((S, B, N), dtype=F32)
    # Step i adds element i of every chunk at once: vectorised across chunks, rows and columns,
    # sequential along each chunk.
    for i in range(longest):
        partials += hp[:, :, i].T[:, :, None] * Wp[:, i, None, :]
    out = partials[0].copy()
    for j in range(1, S):                   # the partials, combined in order (one pass, as a kernel would)
        out += partials[j]
    return out


def splits_for_batch(batch: int, *, items_per_row: int, n_sm: int, max_splits: int = 16) -> int:
    """The split a batch-variant kernel picks: the largest power of two <= max_splits that keeps
    batch x items_per_row x splits within the SMs (at least one)."""
    for name, v in (("batch", batch), ("items_per_row", items_per_row), ("n_sm", n_sm), ("max_splits", max_splits)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    s = 1
    while s * 2 <= max_splits and batch * items_per_row * s * 2 <= n_sm:
        s *= 2
    return s


def batch_logits(h, W, *, policy: str, items_per_row: int = 8, n_sm: int = 132, max_splits: int = 16,
                 chunk: int = 256) -> np.ndarray:
    """The batch's outputs under a reduction policy: "variant" splits by the batch size, "invariant" uses
    a fixed split size `chunk`."""
    h, W = _check(h, W)
    if policy == "variant":
        s = splits_for_batch(h.shape[0], items_per_row=items_per_row, n_sm=n_sm, max_splits=max_splits)
        return _reduce(h, W, chunk_bounds(h.shape[1], min(s, h.shape[1])))
    if policy == "invariant":
        return split_reduce_fixed(h, W, chunk)
    raise ValueError(f"policy must be 'variant' or 'invariant', got {policy!r}")


def exact_logits(h, W) -> np.ndarray:
    """The reference: each output as the correctly rounded float64 value of the exact sum (math.fsum)."""
    h, W = _check(h, W)
    hd, Wd = h.astype(np.float64), W.astype(np.float64)
    # each product of two float32s is exact in float64; fsum then rounds the exact sum once
    return np.array([[math.fsum(hd[b] * Wd[:, n]) for n in range(W.shape[1])] for b in range(h.shape[0])])


def ulp_distance(a, b) -> np.ndarray:
    """How many float32 values lie between a and b (0 = identical bits), elementwise, for finite values."""
    ia = np.asarray(a, dtype=F32).view(np.int32).astype(np.int64)
    ib = np.asarray(b, dtype=F32).view(np.int32).astype(np.int64)
    # map the sign-magnitude bit patterns onto a monotone integer line
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def rms(x) -> float:
    """Root mean square with an exactly rounded sum (math.fsum): the same digits on every machine."""
    v = np.asarray(x, dtype=np.float64).ravel()
    return math.sqrt(math.fsum(v * v) / v.size)


def normal_tail(z: float) -> float:
    """Q(z) = P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2))


def flip_probability(s: float, beta: float) -> float:
    """P(rounding noise N(0, s^2) on the top-2 gap exceeds the gap, gap ~ Exponential(mean beta)).

    P = P(G < sZ) = E[1 - exp(-sZ/beta); Z > 0] = 1/2 - exp(s^2/(2 beta^2)) Q(s/beta).
    For small s/beta the difference cancels, so a series is used there; for large s/beta, the asymptote."""
    if not (s >= 0 and beta > 0 and math.isfinite(s) and math.isfinite(beta)):
        raise ValueError(f"need s >= 0 and beta > 0, got s={s!r}, beta={beta!r}")
    a = s / beta
    if a < 1e-3:                       # series: a/sqrt(2 pi) - a^2/4 + a^3/(3 sqrt(2 pi)) ...
        c = 1 / math.sqrt(2 * math.pi)
        return c * a - a * a / 4 + c * a ** 3 / 3
    if a > 30:                         # exp(a^2/2) Q(a) -> (1/(a sqrt(2 pi))) (1 - 1/a^2 + 3/a^4): no overflow
        return 0.5 - (1 - 1 / a ** 2 + 3 / a ** 4) / (a * math.sqrt(2 * math.pi))
    return 0.5 - math.exp(a * a / 2) * normal_tail(a)


def near_tie(h_row, W, *, batch_rows, seed: int = 0, candidates: int = 256, policy_kw=None) -> dict:
    """A real near-tie and the flip it causes. Candidate tokens b are random columns moved (in float64,
    then rounded to float32) so that their exact logit equals the top token a's: what is left of the gap
    is the float32 rounding of the weights, a few millionths. The first candidate for which the
    batch-variant kernel picks a different token at batch 1 and at `batch_rows` rows is returned, with
    the exact gap (math.fsum) and both policies' logits for a and b."""
    h_row = np.asarray(h_row, dtype=F32).reshape(1, -1)
    h_row, W = _check(h_row, W)
    kw = policy_kw or {}
    exact_row = exact_logits(h_row, W)[0]
    a = int(np.argmax(exact_row))
    hd = h_row[0].astype(np.float64)
    rng = np.random.default_rng(seed)
    raw = rng.standard_normal((W.shape[0], candidates)) * float(np.sqrt(1 / W.shape[0]))
    # the set-up sums with math.fsum, not BLAS, so the candidates (and which one flips) are the same everywhere
    hh = math.fsum(hd * hd)
    shift = np.array([(exact_row[a] - math.fsum(hd * raw[:, c])) / hh for c in range(candidates)])
    cols = (raw + hd[:, None] * shift[None, :]).astype(F32)
    pair = np.concatenate([W[:, a:a + 1], cols], axis=1)    # column 0 is a, column 1 + c is candidate c
    filler = np.ascontiguousarray(np.tile(h_row, (batch_rows, 1)))
    filler[1:] *= np.float32(0.5)                           # the other rows' values do not matter: rows never interact
    out = {}
    for policy in ("variant", "invariant"):
        out[policy] = (batch_logits(h_row, pair, policy=policy, **kw)[0],
                       batch_logits(filler, pair, policy=policy, **kw)[0])
    one, many = out["variant"]
    for c in range(candidates):
        if (one[1 + c] > one[0]) != (many[1 + c] > many[0]):   # greedy: the larger logit; a tie goes to a
            exact = exact_logits(h_row, pair[:, [0, 1 + c]])[0]
            return dict(a=a, exact_gap=float(exact[1] - exact[0]), top=float(exact[0]), tried=c + 1,
                        variant={n: (float(v[0]), float(v[1 + c])) for n, v in zip(("one", "many"), out["variant"])},
                        invariant={n: (float(v[0]), float(v[1 + c])) for n, v in zip(("one", "many"), out["invariant"])},
                        column=pair[:, 1 + c].copy())
    raise ValueError(f"no flip among {candidates} candidates; try more")
