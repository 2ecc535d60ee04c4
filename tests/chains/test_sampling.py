"""utils/components/sampling.py: the distribution is exact, the filters keep what they say, the sampler matches it."""
import numpy as np
import pytest

from utils.components.sampling import nucleus_size, probabilities, sample, softmax, total_variation, tv_bound

RNG_LOGITS = np.random.default_rng(1).normal(0, 3, 1000)
ZIPF = -1.1 * np.log(np.arange(1, 32001))          # logit of rank r: -s ln r, so p_r ~ r^-s


def reference_softmax(z):
    """An independent route: math.fsum in exact-sum order, no max subtraction (only for small logits)."""
    import math
    e = [math.exp(v) for v in z]
    s = math.fsum(e)
    return np.array([v / s for v in e])


@pytest.mark.parametrize("kw", [dict(), dict(temperature=0.7), dict(top_k=50), dict(top_p=0.9),
                                dict(temperature=0.7, top_k=50, top_p=0.9), dict(temperature=0),
                                dict(temperature=3.0, top_p=1.0)])
def test_probabilities_sum_to_one(kw):
    p = probabilities(RNG_LOGITS, **kw)
    assert abs(p.sum() - 1) < 1e-12 and (p >= 0).all()


@pytest.mark.parametrize("t", [0.25, 0.7, 1.0, 2.0])
def test_temperature_is_softmax_of_scaled_logits_and_a_power_of_p(t):
    p = probabilities(RNG_LOGITS, temperature=t)
    np.testing.assert_allclose(p, reference_softmax(RNG_LOGITS / t), rtol=1e-12, atol=1e-300)
    p1 = softmax(RNG_LOGITS)
    powered = p1 ** (1 / t) / (p1 ** (1 / t)).sum()
    np.testing.assert_allclose(p, powered, rtol=1e-9, atol=1e-300)


def test_temperature_zero_is_argmax_lowest_index_on_ties():
    z = np.array([1.0, 5.0, 2.0, 5.0])
    assert probabilities(z, temperature=0).tolist() == [0, 1, 0, 0]
    rng = np.random.default_rng(0)
    assert set(sample(z, temperature=0, rng=rng, size=100).tolist()) == {1}


def test_temperature_to_zero_converges_to_argmax():
    i = int(np.argmax(RNG_LOGITS))
    tops = [probabilities(RNG_LOGITS, temperature=t)[i] for t in (1, 0.1, 0.01, 0.001)]
    assert all(a <= b for a, b in zip(tops, tops[1:])) and tops[0] < 0.9 and tops[-1] > 1 - 1e-12
    # with a tie the limit splits the mass; T = 0 is the lowest-index convention instead
    z = np.array([1.0, 5.0, 2.0, 5.0])
    np.testing.assert_allclose(probabilities(z, temperature=1e-3), [0, 0.5, 0, 0.5], atol=1e-12)


def test_max_subtraction_prevents_overflow():
    z = np.array([1e4, 1e4 - 1, 0.0])
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(z) / np.exp(z).sum()
    assert np.isnan(naive).any()
    p = probabilities(z)
    np.testing.assert_allclose(p, [1 / (1 + np.exp(-1)), np.exp(-1) / (1 + np.exp(-1)), 0], atol=1e-15)


@pytest.mark.parametrize("k", [1, 7, 50, 999, 1000, 5000])
def test_top_k_keeps_exactly_k_most_probable(k):
    p = probabilities(RNG_LOGITS, top_k=k)
    kept = np.flatnonzero(p > 0)
    assert kept.size == min(k, RNG_LOGITS.size)
    assert set(kept) == set(np.argsort(-RNG_LOGITS, kind="stable")[:k])
    full = softmax(RNG_LOGITS)
    np.testing.assert_allclose(p[kept], full[kept] / full[kept].sum(), rtol=1e-12)


def test_top_k_ties_at_the_boundary_keep_lower_indices():
    z = np.array([3.0, 1.0, 2.0, 1.0, 1.0])
    p = probabilities(z, top_k=3)
    assert np.flatnonzero(p > 0).tolist() == [0, 1, 2]


@pytest.mark.parametrize("top_p,n", [(0.5, 1), (0.50001, 2), (0.8, 2), (0.80001, 3), (0.95, 3), (1.0, 4)])
def test_top_p_keeps_smallest_set_reaching_p_inclusive(top_p, n):
    z = np.log([0.5, 0.3, 0.15, 0.05])
    p = probabilities(z, top_p=top_p)
    assert np.flatnonzero(p > 0).tolist() == list(range(n))


def test_top_p_is_minimal_on_a_zipf_row():
    for top_p in (0.5, 0.9, 0.99):
        full = softmax(ZIPF)
        n = nucleus_size(full, top_p)
        s = np.sort(full)[::-1]
        assert s[:n].sum() >= top_p - 1e-12 > s[:n - 1].sum()
        assert (probabilities(ZIPF, top_p=top_p) > 0).sum() == n


def test_top_p_runs_over_the_distribution_renormalised_after_top_k():
    p = probabilities(ZIPF, temperature=0.7, top_k=50, top_p=0.9)
    after_k = probabilities(ZIPF, temperature=0.7, top_k=50)
    assert (p > 0).sum() == nucleus_size(after_k, 0.9) < 50


def test_the_order_of_the_filters_changes_the_support():
    late = probabilities(ZIPF, temperature=0.7, top_p=0.9)
    early = probabilities(ZIPF, temperature=0.7, top_p=0.9, order=("top_p", "temperature", "top_k"))
    assert (early > 0).sum() > (late > 0).sum()
    k_first = probabilities(ZIPF, top_k=50, top_p=0.9)
    p_first = probabilities(ZIPF, top_k=50, top_p=0.9, order=("temperature", "top_p", "top_k"))
    assert (p_first > 0).sum() == 50 > (k_first > 0).sum()


def test_sampling_matches_the_analytic_distribution():
    n = 200_000
    p = probabilities(ZIPF, temperature=0.7, top_k=50, top_p=0.9)
    draws = sample(ZIPF, temperature=0.7, top_k=50, top_p=0.9, rng=np.random.default_rng(0), size=n)
    assert (p[draws] > 0).all()
    empirical = np.bincount(draws, minlength=p.size) / n
    k = int((p > 0).sum())
    assert total_variation(empirical, p) < tv_bound(k, n)
    # and a wrong distribution is caught: the draws are far from the unfiltered one
    assert total_variation(empirical, probabilities(ZIPF, temperature=0.7)) > tv_bound(k, n)


def test_single_draw_returns_an_int():
    assert isinstance(sample(RNG_LOGITS, rng=np.random.default_rng(0)), int)


def test_masked_logits_are_never_drawn():
    z = np.array([-np.inf, 0.0, -np.inf, 0.0])
    draws = sample(z, rng=np.random.default_rng(0), size=10_000)
    assert set(draws.tolist()) == {1, 3}


@pytest.mark.parametrize("kw,msg", [
    (dict(temperature=-1), "temperature must be"),
    (dict(temperature=float("nan")), "temperature must be"),
    (dict(top_p=0), "top_p must be"),
    (dict(top_p=1.5), "top_p must be"),
    (dict(top_k=0), "top_k must be"),
    (dict(top_k=2.5), "top_k must be"),
    (dict(order=("temperature", "top_k")), "order must be"),
])
def test_bad_arguments_raise_one_clear_value_error(kw, msg):
    with pytest.raises(ValueError, match=msg) as e:
        probabilities(RNG_LOGITS, **kw)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("z", [[], [np.nan, 1.0], [np.inf, 1.0], [-np.inf, -np.inf]])
def test_bad_logits_raise(z):
    with pytest.raises(ValueError, match="logits must"):
        probabilities(z)


# --- the sampling chapter's chain (utils/chains/sampling.py) ---------------------------------------

def test_chapter_claim_holds_with_each_pitfall_reproduced():
    from utils.chains import sampling as chapter
    c, size = chapter.claims()
    assert c.verdict == "holds" and size.verdict == "cannot be checked" and size.quote in chapter.QUOTE
    ck = chapter.checks()
    assert ck["t0_nan"] and ck["one_logit_away"] and ck["big_nan"]
    assert (ck["fine"], ck["broken"]) == (11.0, 12.0)                 # ln(65504) = 11.09
    assert min(ck["supports"].values()) < max(ck["supports"].values())


def test_chapter_published_figures_and_the_integral_route():
    from utils import chains
    from utils.chains import sampling as chapter
    r = chains.derive("sampling")
    assert r["support_after_top_k"].m == 50 and r["support_after_top_p"].m == 13
    assert r["tv_distance"] < r["tv_bound"]
    res = chapter.checks()["res"]
    assert abs(res.data["approx"] - res["n_p"].m) < 1


@pytest.mark.parametrize("name, value", [("model", "nope"), ("temperature", -1.0), ("top_p", 1.5), ("top_k", 2.5),
                                         ("vocab", 1), ("n_samples", 0), ("seed", -1), ("vocab", 10 ** 6),
                                         ("n_samples", 10 ** 7)])
def test_chapter_bad_input_is_refused_with_its_name(name, value):
    from utils import chains
    from utils.params import ParameterError
    with pytest.raises(ParameterError, match=name):
        chains.derive("sampling", **{name: value})


def test_chapter_hotter_rows_need_bigger_nuclei_and_more_draws_tighter_bounds():
    from utils import chains
    from utils.chains import sampling as chapter
    cold = chains.derive("sampling", top_k=0, temperature=0.7)
    hot = chains.derive("sampling", top_k=0, temperature=1.0, n_samples=400000)
    assert hot["support_after_top_p"] > cold["support_after_top_p"]
    assert chapter.draws_needed(0.005, 13) > chapter.draws_needed(0.01, 13)
    assert tv_bound(13, chapter.draws_needed(0.005, 13), chapter.DELTA) == pytest.approx(0.005, rel=1e-9)


def test_chapter_tv_is_under_the_bound_on_every_seed_and_sources_follow_the_defaults():
    from utils import chains
    from utils.chains import sampling as chapter
    ch = chapter.compute(chains.check("sampling"))
    runs, bound = ch.data["tv_runs"], ch.data["draws"]["bound"]
    assert len(runs) == chapter.SEEDS >= 5 and len(set(runs)) == len(runs)      # distinct draws
    assert all(tv <= bound for tv in runs)
    d = chains.derive("sampling")
    assert d["tv_distance_max"].m == max(runs) >= d["tv_distance"].m
    rows = {r.name: r for r in ch.rows}
    assert rows["T"].source == "this book's assumption: a common serving default"
    changed = {r.name: r for r in chapter.compute(chains.check("sampling", temperature=0.8)).rows}
    assert changed["T"].source == "parameters cell" and changed["k"].source == rows["k"].source
