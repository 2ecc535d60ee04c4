"""utils.fleet.eval_cache: the key fixes everything that decides the output, and nothing else."""
import pytest

from utils.fleet.eval_cache import EvalCache, canonical, key

GREEDY = {"temperature": 0.0, "max_tokens": 256}


def test_same_content_same_key_whatever_the_dict_order():
    a = key("ckpt-sha:1", "2+2=", {"temperature": 0.7, "top_p": 0.9, "seed": 1})
    b = key("ckpt-sha:1", "2+2=", {"seed": 1, "top_p": 0.9, "temperature": 0.7})
    assert a == b and len(a) == 64


@pytest.mark.parametrize("change", [("ckpt-sha:2", "2+2=", GREEDY), ("ckpt-sha:1", "2+2= ", GREEDY),
                                    ("ckpt-sha:1", "2+2=", {"temperature": 0.0, "max_tokens": 512}),
                                    ("ckpt-sha:1", "2+2=", {"temperature": 0.7, "seed": 1})])
def test_any_change_is_a_new_key(change):
    assert key(*change) != key("ckpt-sha:1", "2+2=", GREEDY)


def test_greedy_ignores_seed_and_top_p():
    assert key("c", "p", {"temperature": 0, "seed": 3, "top_p": 0.5, "max_tokens": 256}) == key("c", "p", GREEDY)


def test_unseeded_sampling_and_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="seed"):
        canonical({"temperature": 1.0})
    with pytest.raises(ValueError, match="temperature"):
        canonical({"temperature": -1.0})
    with pytest.raises(ValueError, match="checkpoint"):
        key("", "p", GREEDY)


def test_hits_across_checkpoints_only_where_the_key_repeats():
    calls = []
    c = EvalCache()
    run = lambda p: calls.append(p) or p.upper()          # noqa: E731
    prompts = [f"q{i}" for i in range(10)]
    for ckpt in ("base", "step-1000", "step-2000"):
        for p in prompts:
            c.get_or_run(ckpt, p, GREEDY, run)             # the checkpoint's own outputs: all misses
            c.get_or_run("base", p, GREEDY, run)           # the baseline: a hit after the first pass
    assert c.misses == 30 and c.hits == 30 and len(calls) == 30
    assert c.get_or_run("step-1000", "q3", GREEDY, run) == "Q3" and c.hits == 31
    assert c.hit_rate == pytest.approx(31 / 61)
