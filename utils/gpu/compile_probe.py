"""torch.compile's two silent failures, counted with torch's own tools: graph breaks and recompiles.

`explain(fn, *args)` runs TorchDynamo's `torch._dynamo.explain` and returns the graph count, the break
count and one short line per break reason. `count_compiles(fn, shapes, ...)` compiles `fn`, calls it on
one input per shape, and reads `torch._dynamo.utils.counters`: frames compiled (the first compile plus
every recompile), unique graphs, and whether the recompile limit was hit (the frame then runs eager).

Both use backend="eager" by default: graph capture, guards, breaks and recompiles are Dynamo's and do
not depend on the backend, and Inductor's C++ build costs tens of seconds per graph on a small CPU,
which no test or notebook can afford. Everything is seeded and returns counts only, never timings.

Chapters: torch-compile.
"""
from __future__ import annotations

import contextlib
import logging

import torch

RECOMPILE_LIMIT_TEXT = "recompile limit exceeded"   # Dynamo's message when it gives up on a frame


@contextlib.contextmanager
def quiet():
    """Dynamo logs each graph break as a warning on stderr; a page's outputs must not carry it."""
    torch._logging.set_logs(dynamo=logging.ERROR)
    try:
        yield
    finally:
        torch._logging.set_logs()


class TinyMLP(torch.nn.Module):
    """Two matmuls and an elementwise chain between them: what Inductor fuses and what it leaves to BLAS."""

    def __init__(self, width: int = 16, seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        self.up = torch.nn.Linear(width, 2 * width)
        self.down = torch.nn.Linear(2 * width, width)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.up(x)) * 0.5 + 0.1      # elementwise: one fused kernel compiled
        return self.down(h)


class BreakingMLP(TinyMLP):
    """The same model with a deliberate break: a Python branch on a tensor's value (`.item()`), as a
    logging line or a loss-spike check in a training loop does. Dynamo cannot trace a Python `if` on
    data, so it ends the graph there, runs the branch in Python and starts a second graph after it."""

    def forward(self, x):
        h = torch.nn.functional.gelu(self.up(x))
        if h.mean().item() > 10.0:                                   # data-dependent Python branch
            h = h * 0.0
        return self.down(h * 0.5 + 0.1)


def explain(fn, *args) -> dict:
    """Graphs, breaks and reasons as TorchDynamo's explain reports them (first line of each reason)."""
    import torch._dynamo as dynamo  # here: Dynamo imports sympy, which the GPU side does not import at load
    dynamo.reset()
    with quiet():
        ex = dynamo.explain(fn)(*args)
    reasons = [str(b.reason).strip().splitlines()[0] for b in ex.break_reasons]
    return dict(graphs=ex.graph_count, breaks=ex.graph_break_count, ops=ex.op_count, reasons=reasons)


def count_compiles(fn, shapes, *, dynamic=None, backend: str = "eager", recompile_limit: int | None = None,
                   mark_dynamic: bool = False, width: int = 16) -> dict:
    """Compile `fn` and call it once per batch size in `shapes` (inputs of shape (n, width), seeded).

    Returns compiles (frames Dynamo compiled: one plus the recompiles), recompiles, graphs, and
    fell_back (True when the recompile limit was hit and Dynamo left the frame to run eagerly).
    mark_dynamic marks dimension 0 of every input dynamic, as torch._dynamo.mark_dynamic does.
    """
    import torch._dynamo as dynamo
    from torch._dynamo.utils import counters
    dynamo.reset()
    counters.clear()
    g = torch.compile(fn, backend=backend, dynamic=dynamic)
    old_limit = dynamo.config.recompile_limit
    if recompile_limit is not None:
        dynamo.config.recompile_limit = recompile_limit
    gen = torch.Generator().manual_seed(0)
    try:
        with quiet(), torch.no_grad():
            for n in shapes:
                x = torch.randn(n, width, generator=gen)
                if mark_dynamic:
                    dynamo.mark_dynamic(x, 0)
                g(x)
    finally:
        dynamo.config.recompile_limit = old_limit
    compiled = counters["frames"]["ok"]
    fell_back = any(RECOMPILE_LIMIT_TEXT in k.lower() for k in counters["unimplemented"])
    out = dict(compiles=compiled, recompiles=max(compiled - 1, 0), graphs=counters["stats"]["unique_graphs"],
               fell_back=fell_back)
    dynamo.reset()
    return out


def survey(shapes=(4, 8, 12), limit_shapes=(4, 5, 6, 7, 8), limit: int = 2) -> dict:
    """The page's counts: the break found by explain, and the recompiles of each shape policy."""
    model, breaking = TinyMLP().eval(), BreakingMLP().eval()
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        clean, broken = explain(model, x), explain(breaking, x)
    runs = {
        "dynamic=False": count_compiles(model, shapes, dynamic=False),
        "dynamic=None (default)": count_compiles(model, shapes, dynamic=None),
        "dynamic=True": count_compiles(model, shapes, dynamic=True),
        "mark_dynamic(x, 0)": count_compiles(model, shapes, dynamic=False, mark_dynamic=True),
        f"dynamic=False, recompile_limit={limit}": count_compiles(model, limit_shapes, dynamic=False,
                                                                   recompile_limit=limit),
    }
    return dict(clean=clean, broken=broken, runs=runs, shapes=tuple(shapes), limit_shapes=tuple(limit_shapes),
                limit=limit)
