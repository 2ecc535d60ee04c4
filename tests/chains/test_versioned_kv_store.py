"""versioned-kv-store's chain: the claim reproduced, the read cost and memory, bad input, properties."""
import pytest

from utils import chains
from utils.chains import versioned_kv_store as chapter
from utils.params import ParameterError
from utils.verdicts import READING

SLUG = "versioned-kv-store"


def test_claim_holds_under_the_reading_and_the_bug_is_only_at_own_writes():
    (c,) = chapter.claims()
    assert c.verdict == READING and c.reading
    ck = chapter.checks()
    assert ck["good"]["wrong"] == [] and ck["good"]["reads"] == 9 * 2001
    bad = ck["bad"]["wrong"]
    assert bad and all(own for *_, own in bad)
    assert set(ck["bad_by_case"]) == {"exact hit", "deleted"}       # never "did not exist yet" or another key's
    assert ck["bad_by_case"]["exact hit"] == ck["good"]["cases"]["exact hit"]   # every live exact hit is wrong
    assert len(ck["per_seed"]) >= 5 and ck["design_right"] and ck["bug_only_at_own"] and ck["caught_at_edges"]
    for r in ck["per_seed"]:                      # every seed, not only the page's
        assert r["good"]["wrong"] == [] and r["at_creation"] > 0 and r["at_delete"] > 0
        assert all(own for *_, own in r["bad"]["wrong"])
    assert "'a key that did not exist yet'" in c.reading and "'a key that was deleted'" in c.reading
    assert "a key that did not exist yet" in chapter.QUOTE and "a key that was deleted" in chapter.QUOTE


def test_rows_cite_the_parameters_sources_at_their_defaults():
    from utils import chains
    rows = {r.name: r for r in chapter.compute(chains.check("versioned-kv-store")).rows}
    assert rows["b_ptr"].source == "a CPython list slot on a 64-bit build"
    changed = {r.name: r for r in chapter.compute(chains.check("versioned-kv-store", pointer_bytes=4.0)).rows}
    assert changed["b_ptr"].source == "parameters cell" and changed["b_ver"].source == rows["b_ver"].source


def test_published_figures():
    r = chains.derive(SLUG)
    assert r["bisect_comparisons"].m == 10 and r["scan_comparisons"].m == pytest.approx(500.5)
    assert r["bytes_per_version"].m == 80 and r["store_bytes"].m == pytest.approx(80)
    assert r["version_overhead"].m == pytest.approx(0.2)
    assert 0.09 < r["off_by_one_wrong_reads"].m < 1 / 9


@pytest.mark.parametrize("name, value", [("n_keys", 0), ("versions_per_key", 2.5), ("value_bytes", -1.0),
                                         ("delete_share", 1.0), ("sim_writes", 0), ("seed", -1),
                                         ("sim_keys", 10**6), ("sim_writes", 10**6)])
def test_bad_input_is_refused_with_its_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **{name: value})


def test_more_versions_cost_logarithmically_and_more_keys_hide_the_bug():
    base = chains.derive(SLUG)
    big = chains.derive(SLUG, versions_per_key=1000 * 1000)
    assert big["bisect_comparisons"].m == 2 * base["bisect_comparisons"].m
    assert big["read_speedup"].m > 100 * base["read_speedup"].m
    assert chains.derive(SLUG, sim_keys=32)["off_by_one_wrong_reads"] < base["off_by_one_wrong_reads"]
    assert chains.derive(SLUG, value_bytes=1000.0)["version_overhead"] < base["version_overhead"]


def test_the_store_keeps_its_contract_in_every_scenario():
    ck = chapter.contract_checks()
    assert ck["scenarios"] == 2 + len(chapter.HOSTILE_KEYS) + len(chapter.HOSTILE_VERSIONS)
    assert ck["held"] == ck["scenarios"] and ck["torn"] == 0
    assert (ck["race"], ck["versions"]) == (chapter.RACE_SNAPSHOTS, chapter.LOG_WRITES)
    # the checks can fail: the off-by-one search disagrees with the log, a mixed snapshot is torn
    assert chapter.log_snapshots(side="left") > 0
    assert chapter.torn({"a": 1, "b": 2}, ["a", "b"]) and not chapter.torn({"a": 2, "b": 1}, ["a", "b"])
