"""Tensor parallelism, run: one Llama-style layer (pre-norm attention and a SwiGLU MLP, residuals) split
over t simulated GPUs exactly as Megatron-LM splits it (query, key and value heads and the MLP's gate and
up projections by column, the output projections by row), every sum across GPUs recorded, and the split
layer's output and input gradient compared with the unsplit layer's, in float64.

Chapters: parallelism-placement.
"""
from __future__ import annotations

import math

import torch


def rms(x):
    return x / x.pow(2).mean(-1, keepdim=True).add(1e-6).sqrt()


def attention(x, wq, wk, wv, wo, heads):
    """Causal multi-head attention over `heads` heads (wq: h x heads*hd, wo: heads*hd x h)."""
    T, hd = x.shape[0], wq.shape[1] // heads
    qh, kh, vh = (rms(x) @ w for w in (wq, wk, wv))
    qh, kh, vh = (z.view(T, heads, hd).transpose(0, 1) for z in (qh, kh, vh))
    scores = (qh @ kh.transpose(1, 2)) / hd ** 0.5
    scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return (scores.softmax(-1) @ vh).transpose(0, 1).reshape(T, heads * hd) @ wo


def mlp(x, wg, wu, wd):
    y = rms(x)
    return (torch.nn.functional.silu(y @ wg) * (y @ wu)) @ wd


def megatron_layer(x, W, t, heads, log):
    """The layer split over t GPUs: its output and a backward function; `log` records every sum across
    GPUs (an all-reduce of the full activation) as (pass, block, shape)."""
    hd = W["wq"].shape[1] // heads

    def col(w, i, n):
        return w[:, i * n:(i + 1) * n]      # column slice: GPU i's heads or FFN columns

    def row(w, i, n):
        return w[i * n:(i + 1) * n, :]      # row slice
    ha, fa = heads // t * hd, W["wg"].shape[1] // t
    xa = [x.detach().clone().requires_grad_() for _ in range(t)]        # each GPU's copy of the input
    za = [attention(xa[i], col(W["wq"], i, ha), col(W["wk"], i, ha), col(W["wv"], i, ha),
                    row(W["wo"], i, ha), heads // t) for i in range(t)]
    log.append(("forward", "attention", tuple(za[0].shape)))
    x1 = x.detach() + sum(z.detach() for z in za)                       # all-reduce 1
    xm = [x1.clone().requires_grad_() for _ in range(t)]
    zm = [mlp(xm[i], col(W["wg"], i, fa), col(W["wu"], i, fa), row(W["wd"], i, fa)) for i in range(t)]
    log.append(("forward", "MLP", tuple(zm[0].shape)))
    y = x1 + sum(z.detach() for z in zm)                                # all-reduce 2

    def backward(gy):
        for z in zm:
            z.backward(gy)
        log.append(("backward", "MLP", tuple(xm[0].grad.shape)))
        g1 = gy + sum(v.grad for v in xm)                               # all-reduce 3
        for z in za:
            z.backward(g1)
        log.append(("backward", "attention", tuple(xa[0].grad.shape)))
        return g1 + sum(v.grad for v in xa)                             # all-reduce 4
    return y, backward


def simulate(ts=(2, 4, 8), tokens=16, h=64, heads=8, ffn=160, seed=0) -> list[tuple]:
    """For each t: (t, sums forward, sums backward, output relative error, input-gradient relative error)."""
    torch.manual_seed(seed)
    shapes = dict(wq=(h, h), wk=(h, h), wv=(h, h), wo=(h, h), wg=(h, ffn), wu=(h, ffn), wd=(ffn, h))
    W = {k: torch.randn(*s, dtype=torch.float64) / math.sqrt(s[0]) for k, s in shapes.items()}
    x = torch.randn(tokens, h, dtype=torch.float64, requires_grad=True)
    g = torch.randn(tokens, h, dtype=torch.float64)
    x1 = x + attention(x, W["wq"], W["wk"], W["wv"], W["wo"], heads)
    y_ref = x1 + mlp(x1, W["wg"], W["wu"], W["wd"])
    y_ref.backward(g)
    rows = []
    for t in ts:
        log = []
        y, back = megatron_layer(x, W, t, heads, log)
        gx = back(g)
        err_y = float((y - y_ref).detach().norm() / y_ref.detach().norm())
        err_g = float((gx - x.grad).detach().norm() / x.grad.norm())
        if not all(shape == (tokens, h) for _, _, shape in log):
            raise AssertionError("a sum across GPUs was not of a full activation")
        rows.append((t, sum(p == "forward" for p, _, _ in log), sum(p == "backward" for p, _, _ in log), err_y, err_g))
    return rows
