"""utils/serving/determinism.py: the controlled-order reduction is exactly a left-to-right float32 sum per chunk,
rows never interact, the batch-variant policy changes a row's bits with the batch and the fixed split size
never does, a real near-tie flips, and the flip probability matches its closed form and a simulation."""
import math

import numpy as np
import pytest

from utils.serving.determinism import (
    batch_logits,
    chunk_bounds,
    exact_logits,
    flip_probability,
    near_tie,
    rms,
    split_reduce,
    split_reduce_fixed,
    splits_for_batch,
    ulp_distance,
)

RNG = np.random.default_rng(3)
K, N = 512, 16
H = RNG.standard_normal((8, K)).astype(np.float32)
W = (RNG.standard_normal((K, N)) / math.sqrt(K)).astype(np.float32)


def loop_reference(h, W, bounds):
    """The same order written as plain scalar float32 loops: the definition the vectorised code must match."""
    out = np.zeros((h.shape[0], W.shape[1]), dtype=np.float32)
    for b in range(h.shape[0]):
        for n in range(W.shape[1]):
            total = None
            for start, stop in bounds:
                acc = np.float32(0)
                for k in range(start, stop):
                    acc = np.float32(acc + np.float32(h[b, k] * W[k, n]))
                total = acc if total is None else np.float32(total + acc)
            out[b, n] = total
    return out


@pytest.mark.parametrize("splits", [1, 2, 3, 7, 16])
def test_split_reduce_is_the_stated_order_bit_for_bit(splits):
    h, w = H[:2, :96], W[:96, :5]
    assert np.array_equal(split_reduce(h, w, splits), loop_reference(h, w, chunk_bounds(96, splits)))


def test_fixed_chunks_end_with_a_short_one_and_match_the_reference():
    h, w = H[:2, :100], W[:100, :4]
    bounds = [(0, 32), (32, 64), (64, 96), (96, 100)]
    assert np.array_equal(split_reduce_fixed(h, w, 32), loop_reference(h, w, bounds))


def test_chunk_bounds_cover_the_axis_in_order():
    for k, s in [(10, 3), (4096, 16), (7, 7), (5, 1)]:
        b = chunk_bounds(k, s)
        assert b[0][0] == 0 and b[-1][1] == k and all(x[1] == y[0] for x, y in zip(b, b[1:]))
        assert max(e - s_ for s_, e in b) - min(e - s_ for s_, e in b) <= 1


def test_different_chunkings_differ_in_the_last_bits_and_all_are_close_to_exact():
    exact = exact_logits(H[:1], W)[0]
    outs = {s: split_reduce(H[:1], W, s)[0] for s in (1, 2, 4, 8, 16)}
    assert any(not np.array_equal(outs[1], outs[s]) for s in (2, 4, 8, 16))
    for o in outs.values():
        assert np.max(np.abs(o - exact)) < 64 * np.spacing(np.float32(np.max(np.abs(exact))))


def test_rows_do_not_interact_the_batch_acts_only_through_the_split():
    alone = split_reduce(H[:1], W, 4)[0]
    assert np.array_equal(split_reduce(H, W, 4)[0], alone)
    other = H.copy()
    other[1:] = RNG.standard_normal((7, K)).astype(np.float32)
    assert np.array_equal(split_reduce(other, W, 4)[0], alone)


def test_the_variant_policy_changes_a_row_with_the_batch_and_the_invariant_one_never_does():
    kw = dict(items_per_row=8, n_sm=132)
    assert [splits_for_batch(b, **kw) for b in (1, 2, 4, 8, 16, 64)] == [16, 8, 4, 2, 1, 1]
    rows = {b: batch_logits(H[:b], W, policy="variant", **kw)[0] for b in (1, 2, 4, 8)}
    assert len({r.tobytes() for r in rows.values()}) > 1
    inv = {b: batch_logits(H[:b], W, policy="invariant", chunk=64, **kw)[0] for b in (1, 2, 4, 8)}
    assert len({r.tobytes() for r in inv.values()}) == 1


def test_a_fixed_split_size_keeps_earlier_chunks_when_the_axis_grows():
    # decode: the KV length grows by one; fixed size keeps every full chunk's partial, a fixed count moves them all
    assert chunk_bounds(1000, 4)[0] != chunk_bounds(1001, 4)[0]
    fixed = [(s, min(s + 256, 1001)) for s in range(0, 1001, 256)]
    assert fixed[:3] == [(s, min(s + 256, 1000)) for s in range(0, 1000, 256)][:3]


def test_a_real_near_tie_flips_only_under_the_batch_variant_policy():
    h, w = (RNG.standard_normal((4, 4096)).astype(np.float32),
            (RNG.standard_normal((4096, 32)) / 64).astype(np.float32))
    nt = near_tie(h[0], w, batch_rows=16, seed=1, candidates=64)
    (a1, b1), (an, bn) = nt["variant"]["one"], nt["variant"]["many"]
    assert (b1 > a1) != (bn > an)
    (ia, ib), (ja, jb) = nt["invariant"]["one"], nt["invariant"]["many"]
    assert (ia, ib) == (ja, jb)
    assert abs(nt["exact_gap"]) < 1e-5 * abs(nt["top"])        # a near-tie in exact arithmetic


def test_ulp_distance_counts_representable_values():
    x = np.float32(1.0)
    assert ulp_distance(x, np.nextafter(x, np.float32(2))) == 1
    assert ulp_distance(np.float32(-0.0), np.float32(0.0)) == 0
    assert ulp_distance(-np.nextafter(np.float32(0), np.float32(1)), np.nextafter(np.float32(0), np.float32(1))) == 2


def test_flip_probability_closed_form_series_asymptote_and_simulation():
    for a in (1e-4, 2e-3, 0.1, 0.7, 3.0, 29.0, 31.0, 200.0):
        p = flip_probability(a, 1.0)
        assert 0 <= p < 0.5
    c = 1 / math.sqrt(2 * math.pi)
    assert flip_probability(1e-6, 1.0) == pytest.approx(c * 1e-6, rel=1e-6)
    # the series and the closed form agree where they meet, the asymptote and the closed form too
    assert flip_probability(0.999e-3, 1.0) == pytest.approx(0.5 - math.exp(0.999e-3 ** 2 / 2) * 0.5 *
                                                            math.erfc(0.999e-3 / math.sqrt(2)), rel=1e-7)
    assert flip_probability(30.0001, 1.0) == pytest.approx(flip_probability(29.9999, 1.0), rel=1e-6)
    assert flip_probability(0.3, 2.0) == flip_probability(0.15, 1.0)        # only s / beta matters
    rng = np.random.default_rng(0)
    n, s, beta = 400_000, 0.5, 1.0
    gap, noise = rng.exponential(beta, n), rng.normal(0, s, n)
    sim = float(np.mean(noise > gap))
    assert sim == pytest.approx(flip_probability(s, beta), abs=4 * math.sqrt(0.25 / n))


@pytest.mark.parametrize("bad", [dict(h=H.astype(np.float64)), dict(W=W[:10]), dict(splits=0), dict(splits=K + 1),
                                 dict(splits=2.0)])
def test_bad_arguments_raise(bad):
    h, w, s = bad.get("h", H), bad.get("W", W), bad.get("splits", 2)
    with pytest.raises(ValueError):
        split_reduce(h, w, s)


def test_policy_and_flip_arguments_are_checked():
    with pytest.raises(ValueError, match="policy"):
        batch_logits(H, W, policy="fast")
    with pytest.raises(ValueError, match="batch"):
        splits_for_batch(0, items_per_row=8, n_sm=132)
    with pytest.raises(ValueError):
        flip_probability(-1.0, 1.0)
    assert rms([3.0, 4.0]) == pytest.approx(math.sqrt(12.5))
