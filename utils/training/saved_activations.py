"""Counting what autograd saves for the backward pass: a GPT-style block (the layer Korthikanti et al.
count), the bytes every saved tensor holds (each storage once, parameters excluded), with and without
torch.utils.checkpoint, and the matrix-product FLOPs of both (FlopCounterMode).

The block runs on PyTorch's meta device: what autograd saves and what each product costs depend on the
operations and shapes, not on the numbers, so the count is what a GPU run saves and takes no time.
Dropout goes through torch.native_dropout, which keeps a one-byte mask as the CUDA kernel does.

Chapters: activation-recompute.
"""
from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint
from torch.utils.flop_counter import FlopCounterMode


class Block(torch.nn.Module):
    """A GPT-style pre-norm layer: LN, attention with explicit products, dropout, LN, GELU MLP, dropout."""

    def __init__(self, h, heads, p_drop=0.1):
        super().__init__()
        self.heads, self.p_drop = heads, p_drop
        self.ln1, self.ln2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
        self.qkv, self.proj = torch.nn.Linear(h, 3 * h), torch.nn.Linear(h, h)
        self.fc1, self.fc2 = torch.nn.Linear(h, 4 * h), torch.nn.Linear(4 * h, h)

    def drop(self, x):
        return torch.native_dropout(x, self.p_drop, True)[0]     # one-byte mask, like the CUDA kernel

    def forward(self, x):
        B, T, h = x.shape
        hd = h // self.heads
        q_, k_, v_ = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, hd).permute(2, 0, 3, 1, 4).unbind(0)
        att = self.drop(((q_ @ k_.transpose(-1, -2)) * hd ** -0.5).softmax(-1))
        x = x + self.drop(self.proj((att @ v_).transpose(1, 2).reshape(B, T, h)))
        return x + self.drop(self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x)))))


def saved_bytes(fn, param_storages):
    """(fn's output, bytes autograd saves while fn runs): each storage once, parameters excluded."""
    seen = {}

    def pack(t):
        st = t.untyped_storage()
        if st._cdata not in param_storages:
            seen[st._cdata] = st          # held, so no storage is freed and its address reused
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, sum(st.nbytes() for st in seen.values())


def count_stack(h=64, heads=8, seq=512, batch=1, layers=2) -> dict:
    """{checkpointed: {forward: bytes saved, recompute: bytes saved again in backward, flops}} for a
    stack of `layers` blocks in bf16, plus the layernorm statistic's element size."""
    stack = torch.nn.ModuleList(Block(h, heads) for _ in range(layers)).to(device="meta", dtype=torch.bfloat16)
    pstor = {p.untyped_storage()._cdata for p in stack.parameters()}
    x0 = torch.randn(batch, seq, h, dtype=torch.bfloat16, device="meta", requires_grad=True)

    def run(ckpt):
        y = x0
        for blk in stack:
            y = checkpoint(blk, y, use_reentrant=True, preserve_rng_state=False) if ckpt else blk(y)
        return y

    counts = {}
    for ckpt in (False, True):
        y, fwd = saved_bytes(lambda c=ckpt: run(c), pstor)
        _, bwd = saved_bytes(lambda y=y: y.float().sum().backward(), pstor)   # what the recompute saves again
        with FlopCounterMode(display=False) as fc:
            run(ckpt).float().sum().backward()
        counts[ckpt] = dict(forward=fwd, recompute=bwd, flops=fc.get_total_flops())
    counts["ln_stat_bytes"] = torch.native_layer_norm(x0[:1, :1].detach(), (h,), None, None, 1e-5)[1].element_size()
    return counts
