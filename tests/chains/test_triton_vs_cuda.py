"""triton-vs-cuda: the claim reproduced by counting the book's kernels, each gap's price equal to the
chain of the chapter that owns it, bad inputs refused, and the properties (a later Triton covers more; a
bigger tensor hides the launches)."""
import pytest

from utils import catalog, chains
from utils.chain import as_float
from utils.chains import bank_conflicts as bc
from utils.chains import flash_attention_versions as fa
from utils.chains import top_k_radix_select as tk
from utils.chains import torch_compile as tc
from utils.chains import triton_vs_cuda as m
from utils.gpu.triton_gaps import inventory, tally
from utils.params import ParameterError

SLUG = "triton-vs-cuda"


def test_claim_cannot_be_checked_against_the_books_own_inventory():
    # the source names no inventory: the book's own count is shown, labelled, and decides nothing
    (c,) = m.claims()
    t = tally(inventory())
    assert c.verdict == "cannot be checked" and not c.problems() and "book's" in c.derived
    assert t["none"] / t["total"] > 0.5
    assert (t["total"], t["none"], t["warp"], t["smem"], t["sync"], t["launch"]) == (16, 11, 0, 1, 3, 1)


def test_each_gap_is_priced_by_its_own_chapters_chain():
    d = chains.derive(SLUG)
    b = bc.bank_chain("h200", 4, 32, 33, 16384, 1.98)
    assert as_float(d["smem_given_up"], "") == pytest.approx(as_float(b["s"], ""))
    f = fa.flash_chain("h200", 128, 128, 128, 16.0, 1.83, 8, 16384)
    assert as_float(d["sync_given_up"], "") == pytest.approx(as_float(f["g"], ""))
    s = tc.compile_chain(**{**tc.CLAIM_INPUTS, "gpu": "h200"})
    assert as_float(d["launch_given_up"], "") == pytest.approx(as_float(s["t_I"] / s["t_G"], ""))
    v = 128256
    assert as_float(d["warp_given_up"], "") == pytest.approx(4 * v / float(tk.heap_work(v, 50)))


def test_the_others_figure_is_below_flashattention_3():
    o = m.others()
    assert 0 < o["tutorial_tflops"].to("TFLOP/s").m < o["fa3_tflops"].to("TFLOP/s").m
    assert o["flex_ws_ms"] < o["flex_ms"]
    for key in ("triton-attention-tutorial", "flash-attention-3", "flex-attention"):
        for v in catalog.entry("software", key).values.values():
            assert v.kind == "measured-by-others" and v.source.read.startswith("2026"), (key, v.name)
    assert o["cite"] == "pytorch/benchmark pull request 2391, July 2024"


def test_a_later_triton_writes_more_of_the_book_in_triton():
    assert m.written_in_triton((3, 3)) < m.written_in_triton((3, 9)) <= tally(inventory())["total"]


def test_a_larger_k_shrinks_the_warp_gap_and_a_bigger_tensor_hides_the_launches():
    d50, d1024 = chains.derive(SLUG, k=50), chains.derive(SLUG, k=1024)
    assert as_float(d1024["warp_given_up"], "") < as_float(d50["warp_given_up"], "")
    fast = chains.derive(SLUG, launch_us=1.0)
    assert as_float(fast["launch_given_up"], "") < as_float(chains.derive(SLUG)["launch_given_up"], "")


@pytest.mark.parametrize("bad, name", [({"triton_version": "three"}, "triton_version"),
                                       ({"k": 10 ** 7}, "k"), ({"k": 0}, "k"), ({"launch_us": -1.0}, "launch_us"),
                                       ({"gpu": "no-such-gpu"}, "gpu"), ({"model": "no-such-model"}, "model")])
def test_bad_inputs_are_refused_naming_the_parameter(bad, name):
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **bad)


def test_tables_cover_every_gap_and_kernel():
    ch = m.compute(chains.inputs(SLUG, chains.defaults(SLUG)))
    assert len(m.gap_rows(ch)) == 4 and len(m.decision_rows((3, 9))) == 4
    assert len(m.inventory_rows()) == tally(inventory())["total"]
    assert [r[0] for r in m.version_rows()] == ["any", "3.4", "3.5", "3.5"]


def test_the_gaps_closed_between_the_two_versions_are_counted_not_typed():
    assert m.claim_numbers()["c-closed"] == "two"           # warp specialisation (Triton 3.4), layouts (Gluon 3.5)
