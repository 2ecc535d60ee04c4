"""data-pipeline-15t's chain: the three readings, the read rate's own days, bad inputs, properties."""
import pytest

from utils import chains
from utils.chains import data_pipeline_15t as dp
from utils.params import ParameterError
from utils.verdicts import READING, UNCHECKABLE, rounds_to


def test_the_shards_hold_under_their_reading_and_the_rest_cannot_be_checked():
    judged = dp.claims()
    assert [c.name for c in judged] == ["shards", "raw", "read-rate"]
    assert [c.verdict for c in judged] == [READING, UNCHECKABLE, UNCHECKABLE]
    assert "30 TB of shards" in judged[0].reading and not any(c.problems() for c in judged)
    # the book's own figures still land where the page says: a few PB stored; 1.7M tokens/s at two figures
    assert dp.CLAIM["raw_low"] <= ck_stored() < dp.CLAIM["raw_high"]
    assert rounds_to(dp.read_rate()["bom"], 1.7e6, 2)
    ck = dp.claim_chains()
    assert ck["two_byte"]["S"].to("TB").m == pytest.approx(30)      # 15T x 2 B
    assert ck["four_byte"]["S"].to("TB").m == pytest.approx(60)     # Llama 3's 17-bit ids written as int32


def ck_stored():
    return dp.claim_chains()["four_byte"]["W_stored"].to("B").m


def test_days_come_from_the_pages_own_rate_not_the_claimed_one():
    rate = dp.read_rate()["bom"].to("token/s").m
    assert rate == pytest.approx(1.67e6, rel=0.005)                  # rounds to the claim's 1.7M
    ck = dp.claim_chains()
    assert ck["four_byte"]["T_train"].to("day").m == pytest.approx(15e12 / rate / 86400)
    assert round(ck["four_byte"]["T_train"].to("day").m) == 104
    assert round(ck["claimed_rate"]["T_train"].to("day").m) == 102


def test_published_pipeline():
    out = chains.derive("data-pipeline-15t")
    assert out["shard_bytes"].to("TB").m == pytest.approx(60)
    assert out["clean_text_bytes"].to("TB").m == pytest.approx(15e12 * 3.94 / 1e12)
    assert out["raw_bytes"].to("PB").m == pytest.approx(59.1 / (0.03 * 0.46 * 0.5 * 0.5) / 1000)
    assert out["dominant_stage_cores"] <= out["total_cores"]


def test_a_two_byte_id_is_refused_for_llama_3_and_allowed_for_a_small_vocabulary():
    with pytest.raises(ParameterError, match="bytes_per_token_id"):
        chains.derive("data-pipeline-15t", bytes_per_token_id=2.0)
    with pytest.raises(ParameterError, match="not both"):
        chains.derive("data-pipeline-15t", model="llama-3-8b", vocab_size=32000)


@pytest.mark.parametrize("name, value", [("keep_extract", 0.0), ("keep_dedup", 1.5), ("days", 0.0),
                                         ("raw_compression", 0.5), ("rate_extract", -1.0), ("model", "llama3")])
def test_bad_inputs_are_refused_by_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("data-pipeline-15t", **{name: value})


def test_more_time_fewer_cores_and_a_stricter_filter_a_bigger_crawl():
    base = chains.derive("data-pipeline-15t")
    assert chains.derive("data-pipeline-15t", days=28.0)["total_cores"] <= base["total_cores"] / 2 + 1
    assert chains.derive("data-pipeline-15t", keep_quality=0.25)["raw_bytes"].m == pytest.approx(2 * base["raw_bytes"].m)


def test_bits_for_is_the_ceiling_of_log2_in_exact_arithmetic():
    import sympy as sp
    for v in (1, 2, 3, 255, 256, 257, 32000, 65535, 65536, 65537, 128256, 151936, 2 ** 40 + 1):
        assert dp.bits_for(v) == int(sp.ceiling(sp.log(v, 2))), v
    with pytest.raises(ValueError):
        dp.bits_for(0)


def test_published_tokenizer_figures_come_from_the_catalog():
    """The Llama 3 paper's 3.94 and 3.17 characters a token, and Llama 2's 32,000 ids."""
    assert (dp.chars_per_token("llama-3-405b"), dp.chars_per_token("llama-2-7b")) == (3.94, 3.17)
    assert [row[4] for row in dp.vocab_rows()] == ["uint16", "uint16", "int32", "int32"]
    assert dp.SPEC.defaults()["text_bytes_per_token"] == dp.chars_per_token("llama-3-405b")
