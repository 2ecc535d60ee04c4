"""playground-abuse's chain: the priority claim, the published figures, the catalog price, bad inputs
refused, and properties (controls never cost GPU-hours; the bucket's day matches its bound)."""
import pytest

from utils import catalog, chains
from utils.chains import playground_abuse as chapter
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE


def test_priority_claim_cannot_be_checked_and_shows_the_books_figures():
    """Strict priority bypasses the backlog by construction, and the scenario is the book's: nothing to check."""
    (c,) = chapter.claims()
    assert c.verdict == UNCHECKABLE and not c.reading and not c.nearest_true and "book's" in c.derived
    ch = chapter.priority_chain(**chapter.CLAIM)
    assert ch["W_paid"].to("s").m == pytest.approx(15 / (100 * 64))
    assert ch["W_free"].to("s").m == pytest.approx(0.25 * 600)


def test_published_figures_at_the_defaults():
    r = chains.derive("playground-abuse")
    assert r["ws_memory"].to("KiB").m == pytest.approx(200000 * 70)
    assert r["sse_memory"].to("KiB").m == pytest.approx(20000 * 16)
    assert r["session_bytes"].to("B").m == pytest.approx(16000)
    assert r["session_kv"].to("KiB").m == pytest.approx(4000 * 320)        # Llama-3-70B: 320 KiB a token
    assert r["user_max_per_day"].m == pytest.approx(10 + 5 * 24)
    abusive, ok = 5e6 * 0.3, 5e6 * 0.7 * 500
    left = abusive * 0.5 * 0.6 * 0.4
    usd = 3.99 / 0.6
    assert r["gpu_hours_undefended"].to("GPU*hour").m == pytest.approx((ok + abusive * 2000) / 1500 / 3600)
    assert r["gpu_hours_defended"].to("GPU*hour").m == pytest.approx((ok + left * 1000) / 1500 / 3600)
    assert r["saved_signup"].to("USD").m == pytest.approx(abusive * 0.5 * 2000 / 1500 / 3600 * usd)
    parts = sum(r[k].to("USD").m for k in ("saved_signup", "saved_ip", "saved_captcha", "saved_cap"))
    assert r["saved_total"].to("USD").m == pytest.approx(parts)


def test_the_price_default_is_the_catalog_rate():
    (price,) = [x for x in chapter.PARAMETERS if x.name == "rent_usd_per_gpu_hour"]
    assert price.default == catalog.price("h100-rental").q("lambda_on_demand").to("USD/GPU/hour").m


def test_a_real_bucket_admits_its_bound_in_a_day():
    b = chapter.bucket_day(10, 5.0)
    assert b["admitted"] == 130 == round(b["bound"]) and b["offered"] > b["admitted"]


@pytest.mark.parametrize("name, value", [("open_sessions", -1.0), ("abusive_share", 1.0), ("output_cap", 3000),
                                         ("answer_tokens", 1200), ("utilization", 0.0), ("model", "no-such-model"),
                                         ("user_burst", 2.5), ("kv_bytes_per_token", 0.0)])
def test_bad_input_is_refused_with_its_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("playground-abuse", **{name: value})


def test_controls_only_save_and_more_abuse_saves_more():
    base = chains.derive("playground-abuse")
    assert base["gpu_hours_defended"] < base["gpu_hours_undefended"]
    none = chains.derive("playground-abuse", signup_block=0.0, ip_block=0.0, captcha_block=0.0,
                         output_cap=2000)
    assert none["saved_total"].m == pytest.approx(0, abs=1e-9)
    more = chains.derive("playground-abuse", abusive_share=0.6)
    assert more["saved_total"] > base["saved_total"]


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in chapter.compute(chapter.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in chapter.PARAMETERS}
    at_default = sources()
    assert (at_default["m_ws"], at_default["L_a"], at_default["e_ca"]) == (
        own["ws_kib_per_conn"], own["abusive_answer_tokens"], own["captcha_block"])
    changed = sources(abusive_answer_tokens=3000, captcha_block=0.5)
    assert changed["L_a"] == changed["e_ca"] == "parameters cell" and changed["m_ws"] == own["ws_kib_per_conn"]


def test_the_websocket_memory_default_is_the_catalogs_published_figure():
    assert chapter.SPEC.defaults()["ws_kib_per_conn"] == chapter.WS_MEMORY.q.to("KiB").m
