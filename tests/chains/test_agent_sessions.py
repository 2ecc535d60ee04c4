"""agent-sessions: the claims with their verdicts, the crossover against the building block, bad inputs
refused, and properties (a longer call costs more to hold; a longer context moves the crossover out)."""
import pytest

from utils import chains
from utils.chain import as_float
from utils.chains import agent_sessions as ag
from utils.params import ParameterError
from utils.serving.agent_session import crossover_s, park_cost
from utils.verdicts import HOLDS, WRONG


@pytest.fixture(scope="module")
def ck():
    return ag.checks()


def test_claims_and_verdicts(ck):
    got = {c.name: c.verdict for c in ag.claims()}
    assert got == {"steps-per-hour": WRONG, "kv-survives": HOLDS, "resume-a-step": HOLDS}
    ch = ck["chain"]
    assert as_float(ch["t_S"], "s") == pytest.approx(100 * 61)
    assert int(as_float(ch["n_h"])) == 59
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
                                        (dict(prefill_mfu=1.5), "prefill_mfu"), (dict(n_params=7e10), "n_params"),
                                        (dict(tool_s=-1.0), "tool_s"), (dict(gpu="h900"), "gpu")])
def test_bad_inputs_refused(bad, match):
    with pytest.raises(ParameterError, match=match):
        chains.check("agent-sessions", **bad)
