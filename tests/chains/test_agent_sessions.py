"""agent-sessions: the claims with their verdicts, the crossover against the building block, bad inputs
refused, and properties (a longer call costs more to hold; a longer context moves the crossover out)."""
import pytest

from utils import chains
from utils.chain import as_float
from utils.chains import agent_sessions as ag
from utils.params import ParameterError
from utils.serving.agent_session import crossover_s, park_cost
from utils.verdicts import HOLDS, READING, UNCHECKABLE, rounds_to


@pytest.fixture(scope="module")
def ck():
    return ag.checks()


def test_claims_and_verdicts(ck):
    got = {c.name: c.verdict for c in ag.claims()}
    assert got == {"steps-per-hour": READING, "kv-survives": HOLDS, "resume-a-step": UNCHECKABLE}
    ch = ck["chain"]
    assert as_float(ch["t_S"], "s") == pytest.approx(100 * 61)
    assert int(as_float(ch["n_h"])) == 59
    # "over an hour" holds read as "more than an hour" and fails read as "within an hour": the reading says both
    steps = next(c for c in ag.claims() if c.name == "steps-per-hour")
    assert '"more than an hour"' in steps.reading and '"within an hour"' in steps.reading and "fails" in steps.reading
    assert ck["tier"] == "host"


def test_chain_crossover_is_the_building_blocks(ck):
    ch, c = ck["chain"], ck["costs"]
    assert as_float(ch["t_x"], "s") == pytest.approx(crossover_s(c), rel=1e-12)
    assert as_float(ch["G_h"], "GPU*s") == pytest.approx(park_cost("hbm", 60.0, c)["gpu_s"], rel=1e-12)


def test_kv_bytes_follow_the_model(ck):
    ch = ck["chain"]
    # Qwen2.5-72B: 80 layers x 8 KV heads x 128 dims x K and V x 2 bytes, at 4,000 + 50 x 700 tokens
    assert as_float(ch["K"], "byte") == pytest.approx(80 * 8 * 128 * 2 * 2 * 39000)


def test_longer_context_moves_the_crossover_out():
    base = chains.derive("agent-sessions")["crossover_s"].m
    assert chains.derive("agent-sessions", tool_result_tokens=1000)["crossover_s"].m > base
    assert chains.derive("agent-sessions", tool_s=120.0)["hbm_hold_gpu_s"].m == pytest.approx(
        2 * chains.derive("agent-sessions")["hbm_hold_gpu_s"].m)


@pytest.mark.parametrize("bad, match", [(dict(model="llama-3-70b"), "context"), (dict(steps=0), "steps"),
                                        (dict(prefill_mfu=1.5), "prefill_mfu"), (dict(n_params=7e10, model="qwen2.5-72b"),
                                         "n_params"),
                                        (dict(tool_s=-1.0), "tool_s"), (dict(gpu="h900"), "gpu")])
def test_bad_inputs_refused(bad, match):
    with pytest.raises(ParameterError, match=match):
        chains.check("agent-sessions", **bad)


def test_host_resume_runs_at_the_measured_share_of_the_pcie_link(ck):
    """The copy back from host memory runs at the published measured share of the link (55.43 of 63.0 GB/s one
    way), not at its peak; the share is a parameter, and the resume time scales inversely with it."""
    default = ag.SPEC.defaults()["host_link_fraction"]
    assert rounds_to(ag.HOST_FRACTION, default, 2)
    ch = ck["chain"]
    assert as_float(ch["B_h"], "GB/s/GPU") == pytest.approx(default * ag.HOST_PEAK.q.to("GB/s").m, rel=1e-12)
    base = chains.derive("agent-sessions")["host_resume_s"].m
    at_peak = chains.derive("agent-sessions", host_link_fraction=1.0)["host_resume_s"].m
    assert at_peak == pytest.approx(base * default, rel=1e-12)


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in ag.compute(ag.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in ag.PARAMETERS}
    at_default = sources()
    assert (at_default["t_t"], at_default["eta_h"], at_default["M_h"]) == (
        own["tool_s"], own["host_link_fraction"], own["host_memory_gb"])
    changed = sources(tool_s=30.0, host_link_fraction=0.5)
    assert changed["t_t"] == changed["eta_h"] == "parameters cell" and changed["M_h"] == own["host_memory_gb"]


def test_the_sandbox_start_default_is_the_catalogs_published_figure():
    assert ag.SPEC.defaults()["sandbox_boot_s"] == ag.BOOT.q.to("s").m
