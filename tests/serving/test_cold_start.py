"""utils.serving.cold_start: stage times from bytes and rates, overlap on the critical path, and the graph's
rules (the bug: summing stages that run side by side, or starting one before its inputs are there)."""
import pytest

from utils.serving.cold_start import Stage, critical_path, timeline


def test_a_stage_is_bytes_over_rate_plus_fixed():
    assert Stage("pull", nbytes=10e9, rate=100e6).seconds == pytest.approx(100.0)
    assert Stage("ctx", fixed=3.0).seconds == 3.0
    with pytest.raises(ValueError):
        _ = Stage("bad", nbytes=1.0).seconds


def test_serial_stages_add_and_parallel_ones_overlap():
    serial = [Stage("a", fixed=2.0), Stage("b", fixed=3.0, after=("a",))]
    assert timeline(serial)["ready"] == 5.0 == timeline(serial)["serial"]
    side = [Stage("image", fixed=100.0), Stage("weights", fixed=6.0),
            Stage("copy", fixed=1.0, after=("image", "weights"))]
    t = timeline(side)
    assert t["ready"] == 101.0 and t["serial"] == 107.0 and t["starts"]["copy"] == 100.0
    assert critical_path(side) == ["image", "copy"]


def test_a_stage_cannot_wait_for_one_not_yet_listed():
    with pytest.raises(ValueError, match="not listed before"):
        timeline([Stage("b", fixed=1.0, after=("a",)), Stage("a", fixed=1.0)])
    with pytest.raises(ValueError, match="twice"):
        timeline([Stage("a", fixed=1.0), Stage("a", fixed=1.0)])
