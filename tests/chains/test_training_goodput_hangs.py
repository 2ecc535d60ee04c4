"""training-goodput-hangs: the claims, the cost of a stalled minute, the timeout's effect, refusals."""
import re

import pytest

from utils import chains
from utils.chains import training_goodput_hangs as tgh
from utils.params import ParameterError
from utils.training import failures
from utils.verdicts import HOLDS, READING


def test_the_clue_holds_by_nvml_and_the_times_under_the_timeout_reading():
    assert [c.verdict for c in tgh.claims()] == [HOLDS, READING, READING]
    assert all(c.reading.startswith("'") for c in tgh.claims()[1:])       # each reading quotes the words it reads


def test_the_ten_minute_watchdog_is_pytorchs_not_nccls():
    """The 10-minute timeout is ProcessGroupNCCL's default in PyTorch; NCCL itself sets no collective timeout."""
    minutes = {c.name: c for c in tgh.claims()}["minutes"]
    assert "ProcessGroupNCCL" in minutes.reason and not re.search(r"\bNCCL's default", minutes.reason)
    assert "ProcessGroupNCCL" in {r.name: r for r in tgh.compute(chains.check("training-goodput-hangs")).rows}["t_w"].label


def test_nvml_counts_any_kernel_and_sm_activity_counts_the_sms():
    """NVML's utilisation is the share of time one or more kernels runs: a spinning kernel on a few SMs reads
    100%, like a step of kernels on every SM; SM activity tells them apart. A gap between kernels lowers both."""
    c = tgh.clue()
    assert c["hang"]["nvml_util"] == c["work"]["nvml_util"] == 1.0
    assert c["hang"]["sm_active"] == pytest.approx(16 / 132) and c["work"]["sm_active"] == pytest.approx(1.0)
    gappy = tgh.counters([(0.0, 0.4, 132), (0.5, 0.9, 132), (0.3, 0.45, 8)], 1.0, 132)
    assert gappy["nvml_util"] == pytest.approx(0.85)      # overlaps count once: 0-0.45 and 0.5-0.9


def test_cost_per_minute_at_16384_gpus():
    r = chains.derive("training-goodput-hangs")
    assert r["gpu_minutes_per_stalled_minute"].to("GPU").m == 16384
    assert r["usd_per_stalled_minute"].to("USD/minute").m == pytest.approx(16384 * 2.35 / 60)
    assert r["usd_per_hang_default"].to("USD").m == pytest.approx(16384 * 2.35 / 60 * 10)


def test_goodput_is_the_shared_formula():
    r = chains.derive("training-goodput-hangs")
    m = 1 / (5.27e-4 * 16384) * 24 * 60
    tau = failures.young_interval(1.0, m / 0.9)
    assert r["goodput"].m == pytest.approx(failures.goodput(tau, 1.0, m / 0.9, 10 + 0.1 * 10, m))


def test_a_smaller_timeout_raises_goodput_and_a_longer_one_costs_more():
    r = chains.derive("training-goodput-hangs")
    assert r["goodput_short_timeout"] > r["goodput"]
    longer = chains.derive("training-goodput-hangs", timeout_minutes=30.0)
    assert longer["usd_per_hang_default"].m == pytest.approx(3 * r["usd_per_hang_default"].m)
    assert longer["goodput"] < r["goodput"]
    no_hangs = chains.derive("training-goodput-hangs", hang_fraction=0.0)
    assert no_hangs["goodput"].m == pytest.approx(no_hangs["goodput_short_timeout"].m)


@pytest.mark.parametrize("name,value", [("n_gpus", -1), ("timeout_minutes", 0.0), ("hang_fraction", 1.5),
                                        ("price", "no-such-price")])
def test_bad_inputs_are_refused(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("training-goodput-hangs", **{name: value})
