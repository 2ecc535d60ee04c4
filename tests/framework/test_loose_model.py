"""A reader's model of loose numbers (--set n_params=175e9) or of a spec file: those fields are the model, nothing
is taken from the default model, and a result that needs a field the reader did not give is left out, named."""
from __future__ import annotations

import dataclasses
import json

import pytest

from utils import catalog, chains
from utils.catalog.specfile import MissingField
from utils.params import ParameterError
from utils.rederive import main
from utils.units import fmt, q

MODEL_CHAPTERS = [s for s in chains.slugs() if any(p.check == "model" for p in chains.parameters(s))]


def _outcome(spec, **values):
    """(results, left out) or the one-line error, as re-derive would give them."""
    try:
        results, left_out = spec.derive_with_gaps(spec.check(**values))
    except (ParameterError, catalog.CatalogKeyError, catalog.CatalogFileError) as e:
        return "error", str(e)
    return {k: getattr(v, "m", v) for k, v in results.items()}, left_out


def _with_default(spec, key):
    params = tuple(dataclasses.replace(p, default=key) if p.check == "model" else p for p in spec.parameters)
    return type(spec)(spec.slug, params, spec.results, spec.compute, validate=spec.validate, refused=spec.refused)


@pytest.mark.parametrize("slug", MODEL_CHAPTERS)
def test_a_405b_count_is_never_mixed_with_the_default_model(slug):
    """The same answer, results and refusals alike, whether the default model underneath is 70B or 8B."""
    spec = chains.spec(slug)
    a = _outcome(_with_default(spec, "llama-3-70b"), n_params=405e9)
    b = _outcome(_with_default(spec, "llama-3-8b"), n_params=405e9)
    assert a == b


def test_six_nd_from_a_papers_count():
    out = chains.spec("six-nd")
    results, left_out = out.derive_with_gaps(out.check(n_params=175e9, n_tokens=300e9))
    assert results["train_flops"].to("FLOP").m == pytest.approx(3.15e23)
    assert set(left_out) == {"attention_flops", "attention_share", "train_flops_with_attention", "context_at_10pct"}
    assert left_out["attention_flops"] == "attention_flops needs d_attn and n_layers: set them, or model="


def test_a_complete_set_of_fields_gives_the_catalog_models_results():
    """Llama-3-70B's fields given one by one (no count) derive exactly what model=llama-3-70b derives."""
    m = catalog.model("llama-3-70b")
    fields = {k: int(m.q(k).m) for k in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff",
                                          "vocab_size")}
    loose = chains.derive("six-nd", **fields)
    assert loose == chains.derive("six-nd")


def test_the_fields_given_answer_what_they_can():
    results, left_out = _outcome(chains.spec("six-nd"), n_params=175e9, n_layers=96, d_attn=12288)
    assert not left_out and results["attention_flops"] > 0


def test_mixing_a_model_and_its_fields_is_refused():
    with pytest.raises(ParameterError, match="not both"):
        chains.check("six-nd", model="llama-3-8b", n_params=405e9)



def test_a_chapter_cannot_refuse_a_field_the_loose_model_takes():
    """A refusal of n_params beside one model parameter could never fire: the field becomes the model first."""
    spec = chains.spec("six-nd")
    with pytest.raises(ValueError, match="n_params"):
        type(spec)(spec.slug, spec.parameters, spec.results, spec.compute, refused={"n_params": "set model="})

@pytest.mark.parametrize("values, message", [
    (dict(n_params=-1), "n_params must be a finite number > 0"),
    (dict(n_params=10 ** 400), "n_params must be a finite number > 0"),
    (dict(n_params="nan"), "n_params must be a finite number > 0"),
    (dict(n_layers=0), "n_layers must be a whole number >= 1"),
    (dict(n_layers=2.5), "n_layers must be a whole number >= 1"),
    (dict(n_heads=8, n_kv_heads=3), "n_kv_heads 3 must divide n_heads 8"),
    (dict(n_params=1e9, n_active=2e9), "n_active .* is more than n_params"),
    (dict(dtype=""), "dtype must be a dtype name"),
])
def test_bad_loose_values_are_refused_in_one_line(values, message):
    with pytest.raises(ParameterError, match=message):
        chains.check("six-nd", **values)


def test_a_gap_outside_the_rederive_path_is_one_line():
    p = chains.check("six-nd", n_params=175e9)
    with pytest.raises(MissingField, match="no n_layers: set it, or model="):
        chains.module("six-nd").compute(p)


def test_the_command_prints_the_left_out_results(capsys):
    assert main(["six-nd", "--set", "n_params=175e9", "--set", "n_tokens=300e9"]) == 0
    out = capsys.readouterr().out
    assert fmt(q(3.15e23, "FLOP")) in out and "left out: attention_flops needs d_attn and n_layers" in out
    assert main(["six-nd", "--set", "n_params=175e9", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["left_out"]["context_at_10pct"].startswith("context_at_10pct needs")
    assert payload["parameters"]["model"].startswith("model(n_params=1.75e+11")
    assert main(["six-nd", "--set", "n_params=0"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["six-nd", "--notebook", "--set", "n_params=175e9"]) == 2


SPEC_FILE = """
[sources.gpt3]
title = "Language Models are Few-Shot Learners, Table 2.1"
url = "https://arxiv.org/abs/2005.14165"
read = "2020-05-28"

[model.gpt-3]
name = "GPT-3 175B"
source = "gpt3"
params_total = { value = 175e9, unit = "parameter" }
n_layers = 96
d_model = 12288
n_heads = 96
"""


def test_a_model_spec_file(tmp_path):
    path = tmp_path / "gpt3.toml"
    path.write_text(SPEC_FILE)
    results, left_out = _outcome(chains.spec("six-nd"), model=str(path), n_tokens=300e9)
    assert results["train_flops"] == pytest.approx(3.15e23) and not left_out
    assert results["attention_flops"] == pytest.approx(6 * 96 * 8192 * 12288 * 300e9)
    _, left_out = _outcome(chains.spec("kv-cache-per-sequence"), model=str(path))
    assert "n_kv_heads" in left_out["kv_bytes_per_token"]


@pytest.mark.parametrize("body, message", [
    ("n_layers = 0", "n_layers must be a whole number >= 1"),
    ("n_layers = -3", "n_layers must be a whole number >= 1"),
    ("d_model = 1.5", "d_model must be a whole number"),
    ('params_total = { value = 175e9, unit = "GB" }', "expected a unit like parameter"),
    ("heads = 8", "heads is not a model field"),
])
def test_a_bad_model_spec_file_is_one_line(tmp_path, body, message):
    path = tmp_path / "bad.toml"
    path.write_text(f'[sources.s]\ntitle = "t"\nurl = "u"\nread = "2025-01-01"\n[model.x]\nsource = "s"\n{body}\n')
    with pytest.raises(ParameterError, match=message):
        chains.check("six-nd", model=str(path))
