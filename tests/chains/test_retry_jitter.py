"""The retry-jitter chapter (utils/chains/retry_jitter.py): its claim and verdict, its results against
the closed form, bad input refused by name, and a property of the peak."""
import pytest


def test_chapter_claim_holds_under_the_peak_reading():
    from utils.chains import retry_jitter as chapter
    (c,) = chapter.claims()
    assert c.verdict == "holds under a stated reading" and "peak" in c.reading
    ck = chapter.checks()
    assert ck["exp_peak"] == ck["constant_peak"] == 1000
    assert ck["exp_attempts"] < ck["constant_attempts"]                   # backoff does cut the attempts
    # the herd on every one of the seeds, and jitter below it on every one
    assert ck["spread"]["exponential"] == (1000, 1000)
    assert ck["spread"]["full_jitter"][1] < 250 and ck["spread"]["decorrelated"][1] < 100
    assert "does nothing for a thousand clients" in c.reading and "seeds" in c.derived


def test_chapter_results_and_the_closed_form():
    from utils import chains
    r = chains.derive("retry-jitter")
    assert r["peak_exponential"].m == 10000 and r["expected_first_wave"].m == 1000
    assert 4 < r["peak_reduction_full"].m < 8 and r["peak_reduction_decorrelated"].m > r["peak_reduction_full"].m
    assert r["retries_ratio_cap"].m == 100


@pytest.mark.parametrize("name, value", [("n_clients", 0), ("base", -1.0), ("cap", 0.5), ("max_attempts", 1),
                                         ("bin_s", 2.0), ("bin_s", 1e-4), ("ratio_cap", 1.0), ("seed", -1),
                                         ("client_tokens", 0.5)])
def test_chapter_bad_input_is_refused_with_its_name(name, value):
    from utils import chains
    from utils.params import ParameterError
    with pytest.raises(ParameterError, match=name):
        chains.derive("retry-jitter", **{name: value})


def test_chapter_property_finer_bins_sharpen_the_spike_more_than_the_spread():
    from utils import chains
    coarse = chains.derive("retry-jitter")
    fine = chains.derive("retry-jitter", bin_s=0.01)
    assert fine["peak_exponential"] > coarse["peak_exponential"]
    assert fine["peak_reduction_full"] > coarse["peak_reduction_full"]
