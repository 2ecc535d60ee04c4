"""utils.gpu.byte_counter (bytes eager torch moves), utils.display (tables, source) and utils.gpu.kernels.rel_err."""
import math

import pytest

torch = pytest.importorskip("torch")

from utils.display import source_of, table  # noqa: E402
from utils.gpu.byte_counter import ByteCounter  # noqa: E402
from utils.gpu.kernels import rel_err  # noqa: E402


def test_elementwise_ops_are_one_read_and_one_write_each():
    x = torch.randn(1000)
    with ByteCounter() as c:
        y = torch.exp(x - 1.0)
    assert [op.name for op in c.ops] == ["sub", "exp"]
    assert c.passes(x.numel() * 4) == (2.0, 2.0)
    assert y.shape == x.shape


def test_views_move_nothing_and_in_place_ops_count():
    x = torch.randn(8, 8)
    with ByteCounter(square=8) as c:
        x.view(64).view(8, 8).t()
        x.add_(1.0)
        torch.mul(x, 2.0, out=x)
    assert [op.name for op in c.ops] == ["add_", "mul"]
    assert c.ops[1].reads == 256 and c.ops[1].writes == 256        # out= is written, not read
    assert c.square_reads == 2 and c.square_writes == 2


def test_rel_err_is_infinite_on_nan_and_zero_on_equal():
    a = torch.randn(100)
    assert rel_err(a, a) == 0.0
    b = a.clone()
    b[3] = float("nan")
    assert rel_err(b, a) == math.inf
    assert rel_err(a.double() * (1 + 1e-3), a) == pytest.approx(1e-3, rel=1e-6)


def test_rel_err_is_the_harness_one():
    from utils.gpu.measurements import common
    assert common.rel_err is rel_err


def test_table_and_source():
    assert table(["a", "b"], [[1, 2]]) == "| a | b |\n|---|---|\n| 1 | 2 |"
    src = source_of(table)
    assert src.startswith("```python\ndef table") and src.endswith("```")
    assert source_of("utils.display", start="def source_of", stop='"""').startswith("```python\ndef source_of")
