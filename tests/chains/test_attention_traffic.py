"""attention-traffic's chain: the claim and its reading, the counts re-derived, bad inputs, properties."""
import pytest

from utils import chains
from utils.chains import attention_traffic as at
from utils.gpu import harness as measure
from utils.params import ParameterError
from utils.verdicts import READING


def test_claim_holds_under_its_reading():
    (c,) = at.claims()
    assert c.verdict == READING and "two-byte" in c.reading
    ck = at.checks()
    assert ck["exact"] == 8192 ** 2 * 2 == 134_217_728                 # 134 MB decimal, 128 MiB binary
    assert round(ck["exact"] / 1e6) == 134 and ck["exact"] / 2 ** 20 == 128
    assert round(ck["fp32"].to("MB").m) == 268                          # fp32 would not be 134 MB


def test_the_square_matrix_is_counted_from_eager_torch():
    torch = pytest.importorskip("torch")
    from utils.gpu.byte_counter import ByteCounter
    from utils.gpu.kernels import materialised_attention
    n, d = 64, 16
    qkv = [torch.randn(1, n, d).half() for _ in range(3)]
    with ByteCounter(square=n) as counter:
        materialised_attention(*qkv, scale=1.0)
    assert (counter.square_reads, counter.square_writes) == (at.SQUARE_READS, at.SQUARE_WRITES)
    size = {"batch": 1, "heads": 1, "n": n, "d": d, "dtype": "float16"}
    assert counter.reads + counter.writes == measure.bytes_counted("attention-forward", size, "materialised")
    ch = at.attention_chain("h200", n, d, 2, 128, 64)
    assert ch["M_m"].to("B").m == counter.reads + counter.writes


def test_the_harness_counts_are_the_chains():
    cc = at.claim_chain()
    size = {"batch": 1, "heads": 1, "n": 8192, "d": 128, "dtype": "bfloat16"}
    for variant, key in (("materialised", "M_m"), ("triton", "M_t"), ("sdpa", "M_0")):
        assert measure.bytes_counted("attention-forward", size, variant) == cc[key].to("B").m
    assert measure.flops_counted("attention-forward", size, "triton") == cc["F"].to("FLOP").m


def test_published_figures():
    r = chains.derive("attention-traffic")
    assert r["score_matrix_bytes"].to("B").m == 8192 ** 2 * 2
    assert r["bytes_materialised"].to("B").m == 4 * 8192 ** 2 * 2 + 4 * 8192 * 128 * 2
    assert r["bytes_tiled"].to("B").m == 2 * 8192 * 128 * 2 * (1 + 8192 // 128)
    assert r["traffic_ratio"].m == pytest.approx(2.0, rel=0.01)


def test_the_online_softmax_identity_and_recurrence():
    assert at.online_softmax_identity() == 0
    op = at.one_pass_check(n=200, blocks=(1, 16, 200))
    assert max(op["errors"].values()) < 1e-12 and op["naive_nan_rows"] > 0


@pytest.mark.parametrize("name, value", [("gpu", "h999"), ("context_tokens", 0), ("head_dim", 12.5),
                                         ("bytes_per_element", -2.0), ("block_q", 0)])
def test_bad_input_is_refused_with_its_name(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("attention-traffic", **{name: value})


def test_bigger_query_blocks_fewer_bytes_and_context_squares_the_matrix():
    base = chains.derive("attention-traffic")
    big = chains.derive("attention-traffic", block_q=256)
    assert big["bytes_tiled"] < base["bytes_tiled"] and big["intensity_tiled"] > base["intensity_tiled"]
    long = chains.derive("attention-traffic", context_tokens=16384)
    assert long["score_matrix_bytes"].m == pytest.approx(4 * base["score_matrix_bytes"].m)
    assert long["traffic_ratio"].m == pytest.approx(base["traffic_ratio"].m, rel=0.02)


def test_inputs_cite_their_parameters_at_the_defaults():
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    def sources(**changes):
        return {r.name: r.source for r in at.compute(at.SPEC.check(**changes)).rows}
    own = {p.name: p.source for p in at.PARAMETERS}
    assert [sources()[s] for s in ("N", "d", "B_r")] == [own["context_tokens"], own["head_dim"], own["block_q"]]
    changed = sources(block_q=64)
    assert changed["B_r"] == "parameters cell" and changed["N"] == own["context_tokens"]
