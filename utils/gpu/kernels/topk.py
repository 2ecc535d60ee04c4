"""Top-k of each row by a four-pass radix select: a numpy reference and the same passes in torch ops.

Only the standard library, numpy and torch are imported here: the GPU machines have nothing else.

The order. A float32 value maps to a uint32 key whose unsigned order is the float's order: a
non-negative float gets its sign bit set, a negative one has all its bits flipped (`keys`). -0.0 is
first made +0.0, so the two zeros are a tie, as they are for `<` (and for np.sort and torch.topk).
Infinities are ordinary keys (the largest and the smallest). NaN has no place in that order: both
functions here refuse a row holding a NaN (ValueError), where torch.topk would rank it above +inf.

The selection. "The top k" is defined exactly as a stable sort defines it: order the row by value,
largest first, ties by index, smallest index first, and take the first k. `reference_topk` is that
definition written with np.argsort; `radix_topk` reaches the same k (values and indices, in that order)
without sorting the row:

    pass 1..4   histogram one byte of the keys (the top byte first) over the elements still in the
                running, 256 buckets; walk the buckets from the top, adding counts, to the bucket that
                holds the k-th largest; elements in buckets above it are in the top k for certain, those
                below are out, and only the bucket's own elements stay in the running for the next byte.
    after four  the four chosen bytes are the k-th largest key T, exactly, and `need` says how many
                elements equal to T belong to the top k.
    gather      every element with key > T, and the first `need` elements with key == T by index, then
                order those k (k log k, not n log n).

Each pass reads the row's keys once; the sort it replaces reads and writes them many times.

`radix_topk_torch` runs the same four passes with torch operations (bincount for the histogram), so it
runs on a CUDA tensor or a CPU one, for every row of a batch at once; it is a composition of torch
kernels, several per pass, not one fused kernel, which is what the measurement's numbers mean.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:          # numpy is imported in each array function, so the book's closed-form chapters
    import numpy as np  # can read this module's constants without it

DIGIT_BITS = 8
PASSES = 32 // DIGIT_BITS            # four passes of 8-bit digits over 32-bit keys
BUCKETS = 1 << DIGIT_BITS


def keys(x: np.ndarray) -> np.ndarray:
    """The order-preserving uint32 key of each float32 value (-0.0 made +0.0 first)."""
    import numpy as np
    x = np.ascontiguousarray(x, dtype=np.float32) + np.float32(0.0)   # -0.0 + 0.0 = +0.0
    u = x.view(np.uint32)
    neg = (u >> np.uint32(31)).astype(bool)
    return np.where(neg, ~u, u | np.uint32(0x80000000))


def _checked(x, k: int) -> np.ndarray:
    import numpy as np
    x = np.asarray(x)
    if x.dtype != np.float32:
        raise ValueError("topk: x must be float32")
    if x.ndim not in (1, 2):
        raise ValueError("topk: x must be a row or a 2-D batch of rows")
    n = x.shape[-1]
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 1 <= k <= n:
        raise ValueError(f"topk: k must be a whole number from 1 to the row's length {n}, not {k!r}")
    if np.isnan(x).any():
        raise ValueError("topk: a row holds NaN, which has no place in the order")
    return x


def reference_topk(x, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, indices) of the top k of each row by a stable sort: largest first, ties by index."""
    import numpy as np
    x = _checked(x, k)
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]      # -x is exact in float32
    return np.take_along_axis(x, idx, axis=-1), idx


def radix_thresholds(kk: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, list]:
    """The four passes over a (rows, n) array of keys: (the k-th largest key T of each row, how many
    elements equal to T are in the top k, and the number of elements each pass histogrammed)."""
    import numpy as np
    rows, n = kk.shape
    active = np.ones((rows, n), dtype=bool)
    need = np.full(rows, k, dtype=np.int64)
    prefix = np.zeros(rows, dtype=np.uint32)
    visited = []
    row_base = (np.arange(rows, dtype=np.int64) * BUCKETS)[:, None]
    for p in range(PASSES):
        shift = np.uint32(32 - DIGIT_BITS * (p + 1))
        digit = ((kk >> shift) & np.uint32(BUCKETS - 1)).astype(np.int64)
        visited.append(int(active.sum()))
        counts = np.bincount((row_base + digit)[active], minlength=rows * BUCKETS).reshape(rows, BUCKETS)
        from_top = counts[:, ::-1].cumsum(axis=1)                  # elements in this bucket or above
        j = (from_top >= need[:, None]).argmax(axis=1)             # first bucket from the top reaching k
        bucket = BUCKETS - 1 - j
        need = need - (from_top[np.arange(rows), j] - counts[np.arange(rows), bucket])
        prefix = prefix | (bucket.astype(np.uint32) << shift)
        active &= digit == bucket[:, None]
    return prefix, need, visited


def radix_topk(x, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, indices) of the top k of each row by the four-pass radix select; the same arrays as
    reference_topk, element for element."""
    import numpy as np
    x = _checked(x, k)
    one_row = x.ndim == 1
    x2 = x[None, :] if one_row else x
    kk = keys(x2)
    t, need, _ = radix_thresholds(kk, k)
    above = kk > t[:, None]
    equal = kk == t[:, None]
    chosen = above | (equal & (np.cumsum(equal, axis=1) <= need[:, None]))
    idx = np.nonzero(chosen)[1].reshape(x2.shape[0], k)         # k per row, ascending index
    order = np.argsort(~np.take_along_axis(kk, idx, axis=1), axis=1, kind="stable")
    idx = np.take_along_axis(idx, order, axis=1)
    vals = np.take_along_axis(x2, idx, axis=1)
    return (vals[0], idx[0]) if one_row else (vals, idx)


def radix_topk_torch(x, k: int):
    """The same four passes on a 2-D float32 torch tensor (any device): (values, indices), rows in the
    order of reference_topk. NaN is not checked here (a check would synchronise); keep it out."""
    import torch
    if x.dim() != 2 or x.dtype != torch.float32:
        raise ValueError("radix_topk_torch: x must be a 2-D float32 tensor")
    rows, n = x.shape
    if not 1 <= k <= n:
        raise ValueError(f"radix_topk_torch: k must be from 1 to {n}")
    u = (x + 0.0).contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    kk = torch.where(u >= 0x80000000, 0xFFFFFFFF - u, u | 0x80000000)
    dev = x.device
    need = torch.full((rows,), k, dtype=torch.int64, device=dev)
    prefix = torch.zeros(rows, dtype=torch.int64, device=dev)
    active = torch.ones((rows, n), dtype=torch.bool, device=dev)
    base = torch.arange(rows, device=dev, dtype=torch.int64)[:, None] * (BUCKETS + 1)
    ar = torch.arange(rows, device=dev)
    for p in range(PASSES):
        shift = 32 - DIGIT_BITS * (p + 1)
        digit = (kk >> shift) & (BUCKETS - 1)
        slot = base + torch.where(active, digit, BUCKETS)          # inactive elements go to a spare bin
        counts = torch.bincount(slot.reshape(-1), minlength=rows * (BUCKETS + 1)).reshape(rows, BUCKETS + 1)
        counts = counts[:, :BUCKETS]
        from_top = counts.flip(1).cumsum(1)
        j = (from_top >= need[:, None]).to(torch.int8).argmax(1)
        bucket = BUCKETS - 1 - j
        need = need - (from_top[ar, j] - counts[ar, bucket])
        prefix = prefix | (bucket << shift)
        active = active & (digit == bucket[:, None])
    above = kk > prefix[:, None]
    equal = kk == prefix[:, None]
    chosen = above | (equal & (torch.cumsum(equal.to(torch.int32), 1) <= need[:, None]))
    idx = chosen.nonzero()[:, 1].reshape(rows, k)
    sel = kk.gather(1, idx)
    sel_sorted, order = torch.sort(sel, dim=1, descending=True, stable=True)
    idx = idx.gather(1, order)
    return x.gather(1, idx), idx
