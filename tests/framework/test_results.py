import json

import nbformat
import pytest

from utils import results
from utils.results import CLAIMS_MIME, RESULTS_MIME, Page, read_outputs
from utils.units import q


@pytest.fixture
def glued(monkeypatch):
    seen = {}
    monkeypatch.setattr(results, "_glue", lambda name, text: seen.__setitem__(name, text))
    return seen


def test_publish_glues_formatted_text_and_records_value(glued):
    page = Page("x")
    text = page.publish("train_flops", q(6.3e24, "FLOP"), "FLOP", label="compute")
    assert text == "6.30 YFLOP" and glued["train_flops"] == text
    assert page.published["train_flops"] == {"value": 6.3e24, "unit": "FLOP", "kind": "derived",
                                          "label": "compute"}


def test_publish_converts_units_and_percent(glued):
    page = Page("x")
    page.publish("bw", q(3.35, "TB/s"), "GB/s", label="bw")
    assert page.published["bw"]["value"] == pytest.approx(3350) and page.published["bw"]["unit"] == "GB/s"
    page.publish("share", q(0.25, ""), "", label="share", percent=True)
    assert glued["share"] == "25%" and page.published["share"]["unit"] == ""


def test_duplicate_glue_key_and_bad_verdict_raise(glued):
    page = Page("x")
    page.text("a", 1.0)
    with pytest.raises(ValueError):
        page.text("a", 2.0)
    with pytest.raises(ValueError):
        page.claim("c", quote="q", source="s", claimed="1", derived="1", verdict="maybe", reason="r")


def test_emitted_outputs_round_trip(glued):
    page = Page("x")
    page.publish("n", q(5, "GPU"), "GPU", label="gpus")
    page.claim("c", quote="q", source="s", claimed="1", derived="1", verdict="holds", reason="r")
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("")
    cell.outputs = [nbformat.v4.new_output("display_data", data={RESULTS_MIME: page.published,
                                                                  "text/plain": json.dumps(page.published)}),
                    nbformat.v4.new_output("display_data", data={CLAIMS_MIME: page.claims_made})]
    nb.cells = [cell]
    res, claims = read_outputs(nb)
    assert res["n"]["value"] == 5 and res["n"]["unit"] == "GPU"
    assert claims[0]["verdict"] == "holds"


@pytest.mark.parametrize("text", ["1,280", "1.000000", "6.30e24 FLOP", "40%", "8", "(a)", "it's"])
def test_glued_text_renders_exactly_as_formatted(text):
    # What MyST-NB does with a glued value's text/plain before {glue:text} shows it.
    from IPython.core.formatters import format_display_data
    from myst_nb.core.variables import format_plain_text
    plain = format_display_data(str(text))[0]["text/plain"]
    assert format_plain_text(plain, "") == text
