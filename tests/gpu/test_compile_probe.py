"""utils.gpu.compile_probe: graph breaks and recompiles counted with Dynamo's own explain and counters."""
import pytest

torch = pytest.importorskip("torch")

from utils.gpu import compile_probe as cp  # noqa: E402

X = torch.randn(4, 16, generator=torch.Generator().manual_seed(0))


def test_clean_model_is_one_graph():
    ex = cp.explain(cp.TinyMLP().eval(), X)
    assert (ex["graphs"], ex["breaks"], ex["reasons"]) == (1, 0, [])


def test_item_in_a_python_branch_breaks_the_graph():
    ex = cp.explain(cp.BreakingMLP().eval(), X)
    assert ex["graphs"] == 2 and ex["breaks"] == 1
    assert "item()" in ex["reasons"][0]


@pytest.mark.parametrize("dynamic, mark, recompiles", [(False, False, 2), (None, False, 1), (True, False, 0),
                                                       (False, True, 0)])
def test_recompiles_by_shape_policy(dynamic, mark, recompiles):
    r = cp.count_compiles(cp.TinyMLP().eval(), (4, 8, 12), dynamic=dynamic, mark_dynamic=mark)
    assert r["recompiles"] == recompiles and not r["fell_back"]


def test_same_shape_never_recompiles():
    assert cp.count_compiles(cp.TinyMLP().eval(), (4, 4, 4), dynamic=False)["recompiles"] == 0


def test_recompile_limit_falls_back_to_eager_and_restores_the_limit():
    before = torch._dynamo.config.recompile_limit
    r = cp.count_compiles(cp.TinyMLP().eval(), (4, 5, 6, 7), dynamic=False, recompile_limit=2)
    assert r["fell_back"] and r["compiles"] == 2
    assert torch._dynamo.config.recompile_limit == before


def test_compiled_output_equals_eager_on_every_shape():
    m = cp.BreakingMLP().eval()
    torch._dynamo.reset()
    g = torch.compile(m, backend="aot_eager", dynamic=False)
    with cp.quiet(), torch.no_grad():
        for n in (3, 5):
            x = torch.randn(n, 16, generator=torch.Generator().manual_seed(n))
            assert torch.equal(g(x), m(x))
    torch._dynamo.reset()
