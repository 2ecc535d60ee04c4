"""fused-softmax's chain: the two claims, the kernel's own rules re-derived, bad inputs, properties."""
import pytest

from utils import chains
from utils.chains import fused_softmax as fs
from utils.gpu import harness as measure
from utils.params import ParameterError
from utils.verdicts import HOLDS, READING


def test_claims_and_their_verdicts():
    one_pass, done = fs.claims()
    assert one_pass.verdict == HOLDS
    assert done.verdict == READING and "roof" in done.reading
    ck = fs.checks()
    assert all(r["bound"] == "memory" for r in ck["rows"]) and ck["worst_phi"] < 0.5


def test_the_shapes_and_counts_are_the_harness_ones():
    assert list(fs.SHAPES) == measure.sizes("fused-softmax")
    assert fs.FLOPS_PER_ELEMENT == measure.SOFTMAX_FLOPS_PER_ELEMENT
    for s in fs.SHAPES:
        ch = fs.softmax_chain("h200", s["rows"], s["cols"], measure.element_bytes(s["dtype"]))
        assert ch["M"].to("B").m == measure.bytes_counted("fused-softmax", s, "triton")


def test_the_block_rule_and_the_row_limit_are_the_kernels():
    pytest.importorskip("torch")
    from utils.gpu.kernels.softmax import MAX_COLS, block_size
    assert all(fs.block_size(c) == block_size(c) for c in (1, 15, 16, 17, 1000, 1024, 1025, 4096, 50000))
    assert chains.derive("fused-softmax")["wide_row_limit"].m == MAX_COLS


def test_the_unfused_softmax_makes_eight_passes():
    torch = pytest.importorskip("torch")
    from utils.gpu.byte_counter import ByteCounter
    x = torch.randn(64, 1000).to(torch.bfloat16)
    with ByteCounter() as c:
        m = x.amax(dim=-1, keepdim=True)
        e = torch.exp(x - m)
        e / e.sum(dim=-1, keepdim=True)
    assert round(sum(c.passes(x.numel() * 2))) == fs.UNFUSED_PASSES


def test_a_running_sum_stalls_where_the_mantissa_runs_out():
    torch = pytest.importorskip("torch")
    for dtype, bits in ((torch.bfloat16, 8), (torch.float16, 11)):
        s = torch.zeros((), dtype=dtype)
        for v in torch.ones(4096, dtype=dtype):
            s = s + v
        assert float(s) == fs.stalled_sum(4096, bits)


def test_published_figures():
    r = chains.derive("fused-softmax")
    assert r["bytes_moved"].to("B").m == 2 * 32768 * 4096 * 2
    assert r["block_size"].m == 4096
    assert r["done_time"].m == pytest.approx(r["predicted_time"].m / 0.9)


@pytest.mark.parametrize("name, value", [("gpu", "nope"), ("n_rows", 0), ("n_cols", 2.5), ("bytes_per_element", 0.0)])
def test_bad_input_is_refused_with_its_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("fused-softmax", **{name: value})


def test_more_bandwidth_less_time_and_fp32_twice_the_bytes():
    base = chains.derive("fused-softmax")
    assert chains.derive("fused-softmax", gpu="h100-sxm")["predicted_time"] > base["predicted_time"]
    fp32 = chains.derive("fused-softmax", bytes_per_element=4.0)
    assert fp32["bytes_moved"].m == 2 * base["bytes_moved"].m


def test_register_file_and_thread_cap_are_the_catalogs():
    """REGISTERS_PER_SM and MAX_THREADS come from the per-SM limits of the chapter's GPU (the gpu default)."""
    from utils.gpu.occupancy import sm_limits
    lim = sm_limits(fs.PARAMETERS[0].default)
    assert (fs.REGISTERS_PER_SM, fs.MAX_THREADS) == (lim.registers, lim.max_threads_per_block) == (65536, 1024)


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in fs.compute(fs.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in fs.PARAMETERS}
    assert [sources()[s] for s in ("R", "C", "e")] == [own["n_rows"], own["n_cols"], own["bytes_per_element"]]
    changed = sources(n_cols=1024)
    assert changed["C"] == "parameters cell" and changed["R"] == own["n_rows"]
