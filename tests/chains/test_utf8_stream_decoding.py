"""utf8-stream-decoding's chain: the claim run, the split counts by a second route, bad input, properties."""
import pytest

from utils import chains
from utils.chains import utf8_stream_decoding as chapter
from utils.components.utf8_stream import REPLACEMENT, count_splits
from utils.params import ParameterError
from utils.verdicts import HOLDS, UNCHECKABLE


def test_claim_holds_by_running_the_decoder():
    c, _ = chapter.claims()
    assert c.verdict == HOLDS
    ck = chapter.checks()
    assert len(ck["three"]) == 3 and ck["raised"] == ck["decodes"] == 9
    assert ck["fixed"] and ck["cut_at_start"] and ck["strict_raises"] and ck["replaced"] == REPLACEMENT


def test_the_dozen_lines_cannot_be_checked_and_the_books_count_is_judged_by_rounding():
    size = chapter.claims()[1]
    assert size.verdict == UNCHECKABLE and size.quote in chapter.QUOTE
    ck = chapter.checks()
    assert ck["lines"] == chapter.decoder_lines() == 15
    assert not ck["lines_round"]                  # 15 to one figure is 20, not the 10 a dozen rounds to


def test_published_counts_and_the_second_routes():
    r = chains.derive("utf8-stream-decoding")
    assert r["splits"].m == 401 and r["naive_broken_splits"].m == 399      # tetranacci(10); 1|2|3|4 and 12|3|4
    assert r["stream_matches"].m == r["splits"].m
    ch = chapter.compute(chains.check("utf8-stream-decoding"))
    assert ch["dp_total"] == r["splits"].m and ch["dp_safe"] == r["splits"].m - r["naive_broken_splits"].m
    assert ch["f_inf"].m == pytest.approx(1 - 2 ** -6)


def test_with_no_cap_on_a_piece_the_closed_form_is_exact():
    r = chains.derive("utf8-stream-decoding", max_piece=10)
    assert r["splits"].m == 2 ** 9 and r["naive_broken_share"].m == pytest.approx(1 - 2 ** -6)


def test_the_bpe_stream_cuts_the_emoji_into_three_tokens():
    tokens = chapter.stream_tokens("ship it 👍 to the café for €5 😀", 100)
    assert [b" \xf0\x9f", b"\x91", b"\x8d"] == tokens[6:9]
    assert chains.derive("utf8-stream-decoding")["bpe_tokens_cut"].m == 11


def test_every_test_case_matches_the_standard_library():
    for row in chapter.case_rows():
        same, tried = row[-1].replace(",", "").split(" of ")
        assert same == tried, row


@pytest.mark.parametrize("name, value", [("max_piece", 0), ("max_piece", 2.5), ("n_merges", 0), ("text", 3),
                                         ("text", ""), ("stream_text", "")])
def test_bad_input_is_refused_with_its_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("utf8-stream-decoding", **{name: value})


def test_a_text_with_too_many_splits_is_refused_naming_max_piece():
    with pytest.raises(ParameterError, match="max_piece"):
        chains.derive("utf8-stream-decoding", text="aé€👍" * 4, max_piece=8)


@pytest.mark.parametrize("text", ["abcdef", "é", "aé", "€€", "Ω😀a", "naïve"])
def test_uncapped_broken_share_is_one_minus_two_to_the_extra_bytes(text):
    n, c = len(text.encode()), len(text)
    r = chains.derive("utf8-stream-decoding", text=text, max_piece=n)
    assert r["naive_broken_share"].m == pytest.approx(1 - 2.0 ** (c - n))
    assert r["stream_matches"].m == r["splits"].m == count_splits(n, n) == 2 ** (n - 1)
    assert (r["naive_broken_splits"].m == 0) == (n == c)          # pure ASCII never breaks
