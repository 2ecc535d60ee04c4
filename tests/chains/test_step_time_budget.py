"""step-time-budget's chain: the claim, the budget closing, properties, bad inputs, and a real CPU step
timed against its prediction (the only place this chapter times anything)."""
import time

import pytest

from utils import chains
from utils.chains import step_time_budget as st
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE


def test_claim_is_a_method_with_a_residual_and_cannot_be_checked():
    (c,) = st.claims()
    assert c.verdict == UNCHECKABLE and not c.reading and "by construction" in c.reason


def test_the_default_step_is_a_stand_in_labelled_an_assumption():
    """No measured kind without a measurement: the default step is another model's published rate."""
    ch = st.claim_chain()
    kinds = {r.name: r.kind for r in ch.rows}
    assert kinds["X"] == "assumption" and "measured" not in kinds.values()
    assert st.budget_rows(ch)[-1][0] == "stand-in step"
    mine = st.step_chain(**{**st.CLAIM_INPUTS, "measured_step_s": 20.0})
    assert {r.name: r.kind for r in mine.rows}["t_ref"] == "measured" and st.budget_rows(mine)[-1][0] == "measured step"


def test_budget_closes_and_each_suspect_has_its_own_metric():
    ck = st.checks()
    assert ck["closes"] and ck["one_each"] and len(st.SUSPECTS) == 5
    ch = ck["chain"]
    assert sum(v for _, v in st.parts(ch)) == pytest.approx(ch["t_ref"].to("s").m, rel=1e-12)


def test_compute_is_six_n_d_over_the_fleet():
    r = chains.derive("step-time-budget")
    n = st.claim_chain()["N"].m
    assert r["compute_time"].m == pytest.approx(6 * n * 2 ** 24 / (1024 * 989e12 * 0.5), rel=1e-3)


def test_a_measured_step_sets_the_gap():
    r = chains.derive("step-time-budget", measured_step_s=30.0)
    assert r["gap"].m == pytest.approx(30.0 - r["predicted_step_time"].m)
    assert r["gap_share"].m == pytest.approx(r["gap"].m / 30.0)


def test_higher_mfu_shorter_prediction_and_deeper_pipeline_bigger_bubble():
    base = chains.derive("step-time-budget")
    assert chains.derive("step-time-budget", mfu=0.6)["predicted_step_time"] < base["predicted_step_time"]
    assert chains.derive("step-time-budget", pp=8, dp=16)["bubble_time"] > base["bubble_time"]


@pytest.mark.parametrize("name, value, match", [("mfu", 1.5, "mfu"), ("measured_step_s", -1.0, "measured_step_s"),
                                                ("gpu", "h900", "h900"), ("pp", 3, "pp"),
                                                ("n_layers", 0, "n_layers")])
def test_bad_inputs_are_refused(name, value, match):
    with pytest.raises(ParameterError, match=match):
        chains.derive("step-time-budget", **{name: value})


def test_cpu_training_step_against_its_prediction():
    """A CPU timing (never in the notebook): a tiny GPT's training step, its FLOPs counted, predicted at
    the matmul rate measured in the same run. The step cannot beat its FLOPs at that rate by much, and on a
    CPU with no communication the gap is the framework's own overhead."""
    torch = pytest.importorskip("torch")
    from utils.training.tiny_gpt import TinyGPT, count_training_step
    counted = count_training_step(d=128, layers=2, context=64, batch=8)
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(5):                  # the fastest of five: a busy machine only slows a timing down
        t0 = time.perf_counter()
        for _ in range(20):
            a @ b
        best = min(best, time.perf_counter() - t0)
    rate = 20 * 2 * 256 ** 3 / best
    torch.manual_seed(0)
    model = TinyGPT(512, 128, 2, 4, 64)
    tokens = torch.randint(0, 512, (8, 65))

    def step():
        logits = model(tokens[:, :-1])
        torch.nn.functional.cross_entropy(logits.reshape(-1, 512), tokens[:, 1:].reshape(-1)).backward()
    step()
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        step()
        samples.append(time.perf_counter() - t0)
    measured = sorted(samples)[len(samples) // 2]
    predicted = st.cpu_prediction(counted["flops"], rate)
    assert measured > 0.25 * predicted          # loose: the machine is shared, but FLOPs cannot be skipped
