"""frontier-run-400b's chain: the claims on their own inputs, Llama 3's layout, bad inputs, properties."""
import pytest

from utils import chains
from utils.chains import frontier_run_400b as frontier
from utils.params import ParameterError
from utils.units import q
from utils.verdicts import READING, UNCHECKABLE, rounds_to


def test_compute_and_days_hold_under_the_reading_of_the_sources_fleet_mfu():
    judged = {c.name: c for c in frontier.claims()}
    c = judged["frontier-run"]
    assert c.verdict == READING and not c.problems()        # the paragraph names no MFU: the days need a reading
    assert frontier.DAYS_WORDS in frontier.QUOTE and f'"{frontier.DAYS_WORDS}"' in c.reading
    assert "40% MFU" in c.reading and "17.1 d" in c.reason  # the reading named; read as the peak, 17.1 days
    ch = frontier.checks()["chain"]
    assert ch["C"].to("FLOP").m == pytest.approx(2.4e25, rel=1e-12)
    assert ch["T"].to("day").m == pytest.approx(2.4e25 / (16384 * 989.4e12 * 0.4) / 86400, rel=1e-9)
    assert round(ch["T"].to("day").m) == 43
    peak = (ch["C"] / (ch["N_run"] * ch["R"])).to("day").m
    assert peak == pytest.approx(2.4e25 / (16384 * 989.4e12) / 86400) and not rounds_to(peak, 43.0, 2)


def test_about_380_interruptions_rests_on_a_rate_the_source_never_gives():
    ck = frontier.checks()
    r = ck["readings"]
    assert r[frontier.READINGS[0]] == pytest.approx(466 / (54 * 16384) * 16384 * ck["chain"]["T"].to("day").m)
    assert round(r[frontier.READINGS[0]]) == 370
    c = {c.name: c for c in frontier.claims()}["interruptions"]
    assert c.verdict == UNCHECKABLE and "370" in c.reason and "402" in c.reason and "bracketing" in c.reason


def test_layout_is_llama3s():
    assert frontier.checks()["layout"] == (8, 16, 128)


def test_published_defaults():
    out = chains.derive("frontier-run-400b")
    assert out["checkpoint_size"].m == pytest.approx(4.8) and out["checkpoint_write_seconds"].m == pytest.approx(2.4)
    assert out["goodput"].m == pytest.approx(1 - (2 * 2.4 / (out["job_mtbi_hours"].m * 3600 / 0.9)) ** 0.5
                                             - 600 / (out["job_mtbi_hours"].m * 3600), rel=1e-9)


@pytest.mark.parametrize("values, message", [
    ({"n_gpus": 64}, "n_gpus must be at least"),
    ({"mfu": 1.5}, "mfu must be a fraction"),
    ({"restart_minutes": -1.0}, "restart_minutes must be >= 0"),
    ({"interruptions_per_gpu_day": 0.0}, "interruptions_per_gpu_day must be > 0"),
    ({"interruptions_per_gpu_day": 0.05}, "never finishes"),
    ({"gpu": "nope"}, "unknown accelerator"),
])
def test_bad_inputs_are_refused(values, message):
    with pytest.raises(ParameterError, match=message):
        chains.derive("frontier-run-400b", **values)


def test_properties():
    base = chains.derive("frontier-run-400b")
    half = chains.derive("frontier-run-400b", n_gpus=8192)
    assert half["compute_days"].m == pytest.approx(2 * base["compute_days"].m)
    assert half["interruptions"].m == pytest.approx(base["interruptions"].m)      # same GPU-days
    assert half["goodput"] > base["goodput"]
    slow = chains.derive("frontier-run-400b", checkpoint_write_gb_per_s=200.0)
    assert slow["checkpoint_interval"].m == pytest.approx(base["checkpoint_interval"].m * 10 ** 0.5)
    assert slow["wall_clock_days"] > base["wall_clock_days"]


def test_the_claimed_numbers_hold_by_their_own_rounding():
    ch = frontier.checks()["chain"]
    assert rounds_to(ch["C"], q(2.4e25, "FLOP"), 2) and rounds_to(ch["T"], q(43, "day"), 2)
    assert not rounds_to(ch["T"], q(44, "day"), 2)


def test_rows_show_the_parameters_sources_at_their_defaults():
    rows = {r.name: r for r in frontier.compute(chains.check("frontier-run-400b")).rows}
    assert rows["N_gpu"].source == "the claim (16,384 H100s)" and rows["t_r"].source != "parameters cell"
    rows = {r.name: r for r in frontier.compute(chains.check("frontier-run-400b", n_gpus=8192, restart_minutes=5.0)).rows}
    assert rows["N_gpu"].source == rows["t_r"].source == "parameters cell" and rows["N_gpu"].kind == "assumption"
