"""torch-compile's chain: the claim, the stages' order, the failures, bad inputs."""
import pytest

from utils import chains
from utils.chains import torch_compile as tc
from utils.params import ParameterError
from utils.verdicts import READING


def test_claim_holds_under_its_reading():
    (c,) = tc.claims()
    assert c.verdict == READING and "max-autotune" in c.reading


def test_each_stage_buys_and_fusion_matches_the_kernel_fusion_byte_ratio():
    r = chains.derive("torch-compile")
    assert r["eager_time"] > r["inductor_time"] > r["graphs_time"]
    assert r["inductor_speedup"].m == pytest.approx(5.0)      # equal launches: the byte ratio, exactly


def test_breaks_give_the_gain_back_monotonically():
    s = [chains.derive("torch-compile", graph_breaks=b)["broken_speedup"].m for b in (0, 1, 4, 16, 64)]
    assert all(a > b for a, b in zip(s, s[1:]))
    assert s[0] == pytest.approx(chains.derive("torch-compile")["graphs_speedup"].m)


def test_big_tensors_leave_little_for_cuda_graphs():
    r = chains.derive("torch-compile", n_elements=268435456.0)
    assert r["graphs_speedup"].m / r["inductor_speedup"].m < 1.05


@pytest.mark.parametrize("name, value", [("n_blocks", 0), ("launch_overhead_us", -1.0), ("gpu", "h900"),
                                         ("graph_breaks", -1), ("compile_s", 0.0)])
def test_bad_inputs_are_refused(name, value):
    with pytest.raises(ParameterError, match=name if name != "gpu" else "h900"):
        chains.derive("torch-compile", **{name: value})


def test_a_frame_compiles_recompile_limit_shapes_not_one_more():
    # torch/_dynamo/cache_size.py refuses a compile once the entries are >= recompile_limit (the probe: limit 2,
    # 2 compiles), so the default 8 compiles 8 shapes, the first and 7 recompiles
    ch = tc.compute(tc.SPEC.check())
    assert ch["n_s"].m == 8
    ex = tc.exercises(tc.SPEC.check(), ch)
    assert (ex["ex2-shapes"], ex["ex2-recompiles"], ex["ex2-compile"]) == ("8", "7", "5.33 min")


def test_a_training_step_replays_two_graphs():
    # forward and backward are separate graphs under reduce-overhead: two launches at b = 0, 2(b + 1) with breaks
    ch = tc.compute(tc.SPEC.check(graph_breaks=0))
    assert (ch["t_G"] - ch["t_B"]).to("us").m == pytest.approx(0, abs=1e-9)
    assert (ch["t_G"] - 2 * ch["t_L"]).to("us").m == pytest.approx((2 * ch["L"] * ch["M_f"] / ch["W"]).to("us").m)
    assert 28 < ch["S_G"].m < 29


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in tc.compute(tc.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in tc.PARAMETERS}
    assert [sources()[s] for s in ("L", "b", "t_b", "c", "R")] == [
        own["n_blocks"], own["graph_breaks"], own["break_overhead_us"], own["compile_s"], own["recompile_limit"]]
    changed = sources(compile_s=10.0)
    assert changed["c"] == "parameters cell" and changed["L"] == own["n_blocks"]
