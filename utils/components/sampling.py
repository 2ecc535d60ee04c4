"""Token sampling from a row of logits: temperature, top-k and top-p (nucleus), numpy only.

    p = probabilities(logits, temperature=0.7, top_k=50, top_p=0.9)   # the exact distribution
    tokens = sample(logits, temperature=0.7, top_k=50, top_p=0.9, rng=np.random.default_rng(0), size=1000)

The rules, stated once (the tests in tests/chains/test_sampling.py hold each of them):
- Order: temperature, then top-k, then top-p over the distribution renormalised after top-k (the order
  Hugging Face's and vLLM's samplers use). `order=` applies the three stages in another order, to show
  that the order changes the answer.
- Softmax subtracts the row's maximum before exponentiating, so no finite logit overflows.
- temperature = 0 means greedy: all the mass on the argmax; ties go to the lowest index. (The limit
  T -> 0 of softmax(l/T) splits the mass evenly over tied maxima: T = 0 is a convention, not that limit.)
- top-k keeps exactly k tokens; where several tokens tie at the k-th probability, the lower indices are
  kept (a stable sort). Implementations that mask `logit < kth_value` keep every tie instead.
- top-p keeps the smallest set of most-probable tokens whose mass is >= p (inclusive: a set that reaches
  exactly p stops there). The cumulative sum is compared with p less a rounding allowance of
  n * machine epsilon, n being the number of tokens summed; top_p = 1 disables the filter.
- `logits` may contain -inf (masked tokens), never +inf or NaN, and at least one entry must be finite.
Bad arguments raise ValueError with one line naming the argument, the rule and the value.

Chapters: deterministic-sampling, sampling.
"""
from __future__ import annotations

import numbers

import numpy as np

STAGES = ("temperature", "top_k", "top_p")


def _check(logits, temperature, top_k, top_p, order) -> np.ndarray:
    x = np.asarray(logits, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"logits must be a non-empty 1-D array, got shape {x.shape}")
    if np.isnan(x).any() or np.isposinf(x).any():
        raise ValueError("logits must not contain NaN or +inf")
    if not np.isfinite(x).any():
        raise ValueError("logits must have at least one finite entry")
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) \
            or not np.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral)
                              or top_k < 1):
        raise ValueError(f"top_k must be None or an integer >= 1, got {top_k!r}")
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, numbers.Real)
                              or not 0 < top_p <= 1):
        raise ValueError(f"top_p must be None or a number in (0, 1], got {top_p!r}")
    if sorted(order) != sorted(STAGES):
        raise ValueError(f"order must be a permutation of {STAGES}, got {tuple(order)!r}")
    return x


def softmax(z) -> np.ndarray:
    """Softmax with the maximum subtracted first; -inf entries get probability 0."""
    z = np.asarray(z, dtype=np.float64)
    e = np.exp(z - z[np.isfinite(z)].max())
    return e / e.sum()


def _ranked(p: np.ndarray) -> np.ndarray:
    """Indices by descending probability, ties in ascending index order."""
    return np.argsort(-p, kind="stable")


def _top_k(z: np.ndarray, k: int) -> np.ndarray:
    alive = int(np.isfinite(z).sum())
    if k >= alive:
        return z
    out = np.full_like(z, -np.inf)
    keep = _ranked(np.where(np.isfinite(z), z, -np.inf))[:k]
    out[keep] = z[keep]
    return out


def nucleus_size(p: np.ndarray, top_p: float) -> int:
    """The number of tokens the top-p filter keeps from distribution p (the rule in the module doc)."""
    if top_p >= 1:
        return int((p > 0).sum())
    sorted_p = p[_ranked(p)]
    cum = np.cumsum(sorted_p)
    allowance = np.arange(1, p.size + 1) * np.finfo(np.float64).eps
    return int(np.argmax(cum >= top_p - allowance)) + 1


def _top_p(z: np.ndarray, top_p: float) -> np.ndarray:
    if top_p >= 1:
        return z
    p = softmax(z)
    n = nucleus_size(p, top_p)
    out = np.full_like(z, -np.inf)
    keep = _ranked(p)[:n]
    out[keep] = z[keep]
    return out


def _temperature(z: np.ndarray, temperature: float) -> np.ndarray:
    if temperature == 0:
        out = np.full_like(z, -np.inf)
        i = int(np.argmax(z))          # the first maximum: ties go to the lowest index
        out[i] = 0.0
        return out
    return z / temperature


def probabilities(logits, temperature: float = 1.0, top_k: int | None = None,
                  top_p: float | None = None, *, order=STAGES) -> np.ndarray:
    """The exact distribution a sampler with these settings draws from (float64, sums to 1)."""
    z = _check(logits, temperature, top_k, top_p, order)
    for stage in order:
        if stage == "temperature":
            z = _temperature(z, temperature)
        elif stage == "top_k" and top_k is not None:
            z = _top_k(z, top_k)
        elif stage == "top_p" and top_p is not None:
            z = _top_p(z, top_p)
    return softmax(z)


def sample(logits, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
           *, rng: np.random.Generator, size: int | None = None, order=STAGES):
    """Draw token indices from `probabilities(...)` by inverting its cumulative distribution.

    One uniform number per draw; a token of probability 0 is never drawn. `size=None` returns one int.
    """
    p = probabilities(logits, temperature, top_k, top_p, order=order)
    cum = np.cumsum(p)
    last = int(np.flatnonzero(p > 0)[-1])
    u = rng.random(1 if size is None else size) * cum[-1]
    idx = np.minimum(np.searchsorted(cum, u, side="right"), last)
    return int(idx[0]) if size is None else idx


def total_variation(p, q) -> float:
    """Total-variation distance: half the L1 distance between two distributions."""
    return 0.5 * float(np.abs(np.asarray(p, float) - np.asarray(q, float)).sum())


def tv_bound(support: int, n_samples: int, delta: float = 1e-6) -> float:
    """A bound the empirical distribution's TV distance from the truth exceeds with probability <= delta.

    E[TV] <= (1/2) sum_i sqrt(p_i (1 - p_i) / N) <= (1/2) sqrt(K / N)  (Jensen, then Cauchy-Schwarz),
    and TV moves by at most 1/N when one draw changes, so McDiarmid adds sqrt(ln(1/delta) / (2N)).
    """
    return 0.5 * np.sqrt(support / n_samples) + np.sqrt(np.log(1 / delta) / (2 * n_samples))
