"""Training compute, shared by every chain that starts from 6ND (six-nd, fleet-size, cost per training
token, the frontier run, the bill of materials).

Where the 6 comes from, derived rather than typed: a (p x q) @ (q x r) product is 2pqr FLOPs, and a
linear layer Y = XW meets each token three times in training (the forward product, the gradient for the
layer below, the gradient for the weight). Divided by parameters x tokens that is 2 + 4 = 6. Attention's
QK^T and AV are the products whose size no weight sets; per trained token and layer they cost
6 T d_attn FLOPs with a causal kernel, 12 T d_attn if the full square is computed.
"""
from __future__ import annotations

from functools import lru_cache

import sympy as sp

from utils.units import q


def matmul_flops(p, q_, r):
    """FLOPs of a (p x q) @ (q x r) product: p*r outputs, each q multiply-adds of 2 FLOPs."""
    return 2 * p * q_ * r


@lru_cache(maxsize=None)
def linear_layer_passes() -> dict[str, sp.Expr]:
    """The three products of a linear layer Y = XW (b tokens, m x n weight) in one training step."""
    b, m, n = sp.symbols("b m n", positive=True)
    return {
        r"forward $Y = XW$": matmul_flops(b, m, n),
        r"backward $\partial X = \partial Y\,W^\top$": matmul_flops(b, n, m),
        r"backward $\partial W = X^\top \partial Y$": matmul_flops(m, b, n),
    }


@lru_cache(maxsize=None)
def flops_per_parameter_token() -> dict[str, int]:
    """{'forward': 2, 'backward': 4, 'train': 6, 'recompute': 8}, from the products above."""
    b, m, n = sp.symbols("b m n", positive=True)
    per = [sp.simplify(v / (m * n * b)) for v in linear_layer_passes().values()]
    forward, backward = int(per[0]), int(sum(per[1:]))
    # Activation recomputation runs the forward pass again in the backward pass.
    return {"forward": forward, "backward": backward, "train": forward + backward,
            "recompute": 2 * forward + backward}


@lru_cache(maxsize=None)
def attention_flops_per_token() -> dict[str, int]:
    """Training FLOPs per token, per layer, per context token, per unit of attention width:
    {'causal': 6, 'full': 12} (forward QK^T and AV, backward twice the forward)."""
    T, d = sp.symbols("T d_attn", positive=True)
    forward_full = matmul_flops(T, d, T) + matmul_flops(T, T, d)     # per sequence, per layer
    train_full = 3 * forward_full
    full = int(sp.simplify(train_full / T / (T * d)))
    return {"causal": full // 2, "full": full}


def six_nd(ch, n_params, n_tokens, *, kind: str = "assumption", source: str = "parameters cell",
           label_n: str = "parameters multiplied per token"):
    """Add the 6ND rule to a chain: inputs N and D, the constant k = 6, C = k N D. Returns C."""
    ch.given("N", n_params if hasattr(n_params, "units") else q(n_params, "parameter"), label_n,
             kind=kind, source=source)
    ch.given("D", n_tokens if hasattr(n_tokens, "units") else q(n_tokens, "token"), "training tokens",
             kind=kind, source=source)
    ch.given("k", q(flops_per_parameter_token()["train"], "FLOP/parameter/token"),
             "FLOPs per parameter per token", kind="derived", source="2 forward + 4 backward (six-nd)")
    return ch.step("C", "k*N*D", "FLOP", "training compute, the 6ND rule")
