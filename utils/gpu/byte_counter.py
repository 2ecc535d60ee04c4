"""Count the bytes eager torch moves: every aten operation it dispatches, with the bytes of the tensors it
reads and writes (used by attention-traffic, fused-softmax and kernel-fusion).

    with ByteCounter(square=n) as counter:
        materialised_attention(q, k, v)
    counter.ops          # [Op(name, reads, writes, square_reads, square_writes), ...]
    counter.passes(b)    # (bytes read / b, bytes written / b): passes over a tensor of b bytes

An operation's reads are its tensor arguments (an `out=` tensor is written, not read), its writes the
tensors it returns. A view (an operation whose result shares its input's storage and that writes no
argument: view, _unsafe_view, transpose) moves nothing and is not recorded; an in-place or out=
operation is (it reads and writes its tensor). With `square=n`,
each Op also says how many of the tensors it reads and writes end in an n x n matrix.

Chapters: attention-traffic, fused-softmax, kernel-fusion.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class Op(NamedTuple):
    name: str
    reads: int            # bytes
    writes: int           # bytes
    square_reads: int     # tensors read that end in an n x n matrix (with square=n)
    square_writes: int


def _tensors(tree) -> list:
    return [t for t in tree_leaves(tree) if isinstance(t, torch.Tensor)]


class ByteCounter(TorchDispatchMode):
    """Records each aten operation eager torch runs, with the bytes it reads and writes."""

    def __init__(self, square: int | None = None):
        super().__init__()
        self.square, self.ops = square, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        ins = _tensors((args, {k: v for k, v in kwargs.items() if k != "out"}))
        outs = _tensors(result)
        if _is_view(func, ins, outs):
            return result
        self.ops.append(Op(func.overloadpacket.__name__, _bytes(ins), _bytes(outs),
                           self._squares(ins), self._squares(outs)))
        return result

    def _squares(self, ts) -> int:
        n = self.square
        return 0 if n is None else sum(1 for t in ts if t.dim() >= 2 and tuple(t.shape[-2:]) == (n, n))

    @property
    def reads(self) -> int:
        return sum(op.reads for op in self.ops)

    @property
    def writes(self) -> int:
        return sum(op.writes for op in self.ops)

    @property
    def square_reads(self) -> int:
        return sum(op.square_reads for op in self.ops)

    @property
    def square_writes(self) -> int:
        return sum(op.square_writes for op in self.ops)

    def passes(self, tensor_bytes: int) -> tuple[float, float]:
        """(reads, writes) in passes over a tensor of `tensor_bytes` bytes."""
        return self.reads / tensor_bytes, self.writes / tensor_bytes


def _is_view(func, ins, outs) -> bool:
    """A result that shares storage with an input, from an operation that writes none of its arguments
    (view, _unsafe_view, transpose, expand): it moves no bytes. An in-place or out= operation does."""
    if getattr(func, "is_view", False):
        return True
    writes = any(a.alias_info is not None and a.alias_info.is_write for a in func._schema.arguments)
    storages = {t.untyped_storage().data_ptr() for t in ins}
    return not writes and bool(outs) and all(t.untyped_storage().data_ptr() in storages for t in outs)


def _bytes(ts) -> int:
    return sum(t.numel() * t.element_size() for t in ts)
