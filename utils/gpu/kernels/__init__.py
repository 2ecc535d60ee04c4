"""The book's Triton kernels (imports only the standard library, torch and triton).

Set TRITON_INTERPRET=1 before the first kernel is used to run them on CPU tensors.

The kernels load on first use (`from utils.gpu.kernels import attention` imports triton then), so the
measurement harness can import `rel_err` from here without paying for torch and triton at import time.
"""
from __future__ import annotations

import importlib
import math
import sys
import types

# exported name -> (submodule, attribute)
_EXPORTS = {
    "DEFAULT_BLOCK": ("copy", "DEFAULT_BLOCK"), "copy": ("copy", "copy"), "tick": ("copy", "tick"),
    "attention": ("attention", "attention"), "materialised_attention": ("attention", "materialised"),
    "attention_reference": ("attention", "reference"),
    "chain_reference": ("fused_chain", "chain_reference"), "eager_chain": ("fused_chain", "eager_chain"),
    "fused_chain": ("fused_chain", "fused_chain"), "softmax": ("softmax", "softmax"),
}

__all__ = sorted([*_EXPORTS, "rel_err"])


def rel_err(out, ref) -> float:
    """||out - ref|| / ||ref||, in float64 (ref is moved to out's device); infinite when out holds a NaN
    or an infinity, so an unwritten or overflowed output can never pass a tolerance."""
    import torch
    o, r = out.double(), ref.double().to(out.device)
    if not bool(torch.isfinite(o).all()):
        return math.inf
    num, den = float(torch.linalg.vector_norm(o - r)), float(torch.linalg.vector_norm(r))
    return num / den if den > 0 else num


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _EXPORTS[name]
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """Importing a submodule binds it on its package; where a kernel shares its submodule's name
    (attention, copy, softmax, fused_chain) the package keeps the kernel, as an eager import did."""

    def __setattr__(self, name, value):
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
