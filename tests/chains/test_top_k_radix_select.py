"""top-k-radix-select's chain: the two claims, the row from the model's vocabulary, the passes from the
key's width, the radix select matching a sort, bad inputs refused, and properties."""
import math

import pytest

from utils import catalog, chains
from utils.chains import top_k_radix_select as tk
from utils.params import ParameterError
from utils.verdicts import HOLDS, READING

SLUG = "top-k-radix-select"


def test_claims_verdicts():
    passes, select = tk.claims()
    assert passes.verdict == READING and "fp32" in passes.reading
    assert select.verdict == HOLDS


def test_published_figures():
    r = chains.derive(SLUG)
    assert r["row_bytes"].to("B").m == pytest.approx(128256 * 4)
    assert r["read_time"].to("ns").m == pytest.approx(128256 * 4 / 4.8e12 * 1e9)
    assert r["sort_compares"].m == pytest.approx(128256 * math.log2(128256))
    assert r["select_passes"].m == 4
    assert r["work_ratio"].m == pytest.approx(math.log2(128256) / 4)


def test_second_routes():
    ck = tk.checks()
    assert ck["roofline_agrees"] and abs(ck["counted_ratio"] - 1) < 0.15


def test_radix_select_matches_the_sort_on_fuzzed_rows():
    seen = tk.fuzz_matches()
    assert set(seen) == set(tk.FUZZ_KINDS) and all(n > 0 for n in seen.values())
    tr = tk.trace(chains.check(SLUG))
    assert tr["match"] and len(tr["visited"]) == 4 and tr["visited"][0] == 8 * 128256


def test_the_model_sets_the_row_and_bf16_halves_the_passes():
    kimi = chains.derive(SLUG, model="kimi-k2")
    assert kimi["row_bytes"].to("B").m == pytest.approx(catalog.model("kimi-k2").q("vocab_size").m * 4)
    bf16 = chains.derive(SLUG, bytes_per_logit=2)
    assert bf16["select_passes"].m == 2 and bf16["row_bytes"].m == pytest.approx(chains.derive(SLUG)["row_bytes"].m / 2)


@pytest.mark.parametrize("name,value", [("k", 0), ("k", 10**7), ("bytes_per_logit", 3), ("batch_rows", 0),
                                        ("launch_us", -1.0), ("model", "no-such-model"), ("gpu", "no-such-gpu")])
def test_bad_inputs_are_refused(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **{name: value})


def test_a_loose_vocabulary_is_refused():
    with pytest.raises(ParameterError, match="not both"):
        chains.derive(SLUG, model="llama-3-8b", vocab_size=50000)


def test_faster_memory_reads_faster_and_k_does_not_change_the_passes():
    assert chains.derive(SLUG, gpu="b200")["read_time"].m < chains.derive(SLUG, gpu="h100-sxm")["read_time"].m
    assert chains.derive(SLUG, k=10000)["select_passes"].m == chains.derive(SLUG, k=1)["select_passes"].m


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in tk.compute(tk.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in tk.PARAMETERS}
    assert [sources()[s] for s in ("b", "R", "t_L")] == [own["bytes_per_logit"], own["batch_rows"], own["launch_us"]]
    changed = sources(batch_rows=8)
    assert changed["R"] == "parameters cell" and changed["b"] == own["bytes_per_logit"]
