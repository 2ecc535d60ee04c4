"""Counting training state in PyTorch: train one step of a small MLP under a precision scheme and count
the bytes of every tensor the scheme keeps afterwards, per parameter (the second route to "16 bytes").

Schemes: "zero" (bf16 weights and gradients, fp32 master and Adam moments; the fp32 gradient is consumed
by the update), "amp" (fp32 parameters and gradients, autocast's 16-bit copies transient), "megatron"
(as "zero", keeping the fp32 main gradient). Adam's step counter, one scalar per tensor, is left out.

Chapters: dpo-memory-flops, training-state-memory.
"""
from __future__ import annotations

import torch

SCHEMES = ("zero", "amp", "megatron")


def counted_bytes_per_param(scheme: str, seed: int = 0) -> tuple[float, int]:
    """(bytes kept per parameter, parameters) after one AdamW step of a small MLP under `scheme`."""
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; one of {', '.join(SCHEMES)}")
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
    x = torch.randn(16, 256)
    n = sum(p.numel() for p in net.parameters())
    if scheme == "amp":                                   # fp32 parameters, 16-bit math via autocast
        opt = torch.optim.AdamW(net.parameters(), lr=1e-3, foreach=False)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = net(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        kept = list(net.parameters()) + [p.grad for p in net.parameters()]
    else:                                                 # bf16 model, fp32 master weights in the optimizer
        net = net.to(torch.bfloat16)
        master = [p.detach().float().clone() for p in net.parameters()]
        opt = torch.optim.AdamW(master, lr=1e-3, foreach=False)
        net(x.to(torch.bfloat16)).float().pow(2).mean().backward()
        for mp, p in zip(master, net.parameters()):
            mp.grad = p.grad.float()
        opt.step()
        if scheme == "zero":                              # the fp32 gradient is consumed by the update
            for mp in master:
                mp.grad = None
        kept = (list(net.parameters()) + [p.grad for p in net.parameters()] + master
                + [mp.grad for mp in master if mp.grad is not None])
    state = [t for s in opt.state.values() for k, t in s.items() if k in ("exp_avg", "exp_avg_sq")]
    total = sum(t.numel() * t.element_size() for t in kept + state)
    return total / n, n
