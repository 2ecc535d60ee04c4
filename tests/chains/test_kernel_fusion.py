"""kernel-fusion's chain: the claim and its reading, the counts re-derived from eager torch, bad inputs,
properties."""
import pytest

from utils import catalog, chains
from utils.chains import kernel_fusion as kf
from utils.gpu import harness as measure
from utils.params import ParameterError
from utils.verdicts import READING


def test_claim_holds_under_its_reading():
    (c,) = kf.claims()
    assert c.verdict == READING and "scalars" in c.reading
    ck = kf.checks()
    assert ck["big"]["r"].m == 5.0
    assert ck["ratios"]["tensors"] == pytest.approx(14 / 6) and ck["ratios"]["vectors"] == pytest.approx(10.0625 / 2.0625)
    assert ck["small_launch"] > 100 and ck["big_launch"] < 0.05


def test_the_harness_sizes_and_bytes_are_the_chains():
    assert [s["n"] for s in measure.sizes("kernel-fusion")] == list(kf.HARNESS_SIZES)
    big = measure.sizes("kernel-fusion")[-1]
    cc = kf.claim_chain()
    assert cc["M_u"].to("B").m == measure.bytes_counted("kernel-fusion", big, "eager")
    assert cc["M_f"].to("B").m == measure.bytes_counted("kernel-fusion", big, "triton")


@pytest.mark.parametrize("operands", ["scalars", "tensors", "vectors"])
def test_eager_torch_makes_the_passes_counted(operands):
    torch = pytest.importorskip("torch")
    from utils.gpu.byte_counter import ByteCounter
    rows, cols = (kf.VECTOR_ROWS, 512)
    x = torch.randn(rows, cols).to(torch.bfloat16)
    shape = {"scalars": None, "tensors": (rows, cols), "vectors": (cols,)}[operands]
    ops = [0.7, -0.3, 1.1, -0.9] if shape is None else [torch.randn(shape).to(torch.bfloat16) for _ in range(4)]
    y = torch.empty_like(x)
    with ByteCounter() as c:
        t = torch.nn.functional.gelu(x * ops[0] + ops[1], approximate="tanh") * ops[2]
        torch.add(t, ops[3], out=y)
    assert sum(c.passes(x.numel() * 2)) == pytest.approx(kf.operand_passes(operands)[0])


def test_the_epilogue_share_matches_its_closed_form():
    cases = kf.epilogue_cases(catalog.accelerator("h200"))
    assert [c["bound"] for c in cases] == ["compute", "compute", "memory"]
    for c in cases[:2]:
        assert (c["t_epi"] / c["t_mm"]).to("").m == pytest.approx(c["closed_form"], rel=1e-9)


@pytest.mark.parametrize("name, value", [("gpu", "nope"), ("n_elements", 0.5), ("n_ops", 0),
                                         ("launch_overhead_us", -1.0), ("bytes_per_element", 0.0)])
def test_bad_input_is_refused_with_its_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("kernel-fusion", **{name: value})


def test_longer_chains_save_more_and_dearer_launches_move_the_crossover():
    base = chains.derive("kernel-fusion")
    assert chains.derive("kernel-fusion", n_ops=8)["byte_ratio"].m == 8
    dear = chains.derive("kernel-fusion", launch_overhead_us=20.0)
    assert dear["crossover_elements"].m == pytest.approx(4 * base["crossover_elements"].m)
    small = chains.derive("kernel-fusion", n_elements=4096.0)
    assert small["fusion_speedup"].m == pytest.approx(5.0, rel=0.01)   # equal launches: launch ratio = byte ratio


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in kf.compute(kf.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in kf.PARAMETERS}
    assert [sources()[s] for s in ("N", "e", "k")] == [own["n_elements"], own["bytes_per_element"], own["n_ops"]]
    changed = sources(n_ops=3)
    assert changed["k"] == "parameters cell" and changed["N"] == own["n_elements"]
