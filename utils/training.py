"""Training compute, shared by every chain that starts from 6ND (six-nd, fleet-size, cost per training
token, the frontier run, the bill of materials).

Where the 6 comes from, derived rather than typed: a (p x q) @ (q x r) product is 2pqr FLOPs, and a
linear layer Y = XW meets each token three times in training (the forward product, the gradient for the
layer below, the gradient for the weight). Divided by parameters x tokens that is 2 + 4 = 6. Attention's
QK^T and AV are the products whose size no weight sets; per trained token and layer they cost
6 T d_attn FLOPs with a causal kernel, 12 T d_attn if the full square is computed.
"""
from __future__ import annotations

import math
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


# --- the fleet equation: compute needed = compute a fleet delivers, C = N_gpu R u T ----------------
def fleet_equation(ch, peak, mfu, run_days, *, peak_label: str = "peak of one GPU (dense bf16)",
                   peak_kind: str = "spec", peak_source: str = "catalog", kind: str = "assumption",
                   source: str = "parameters cell", mfu_source: str | None = None):
    """Add the fleet equation to a chain that already holds C: inputs R (per GPU), u and T, the exact
    count N_gpu solved from C = N_gpu R u T (sympy shows the closed form), and the GPU-hours G = C/(R u).
    `peak` is a rate (FLOP/s); it is taken per GPU. Returns N_gpu."""
    R = peak.to("FLOP/s") / q(1, "GPU") if "GPU" not in str(peak.units) else peak
    ch.given("R", R, peak_label, kind=peak_kind, source=peak_source)
    ch.given("u", q(mfu, ""), "model FLOPs utilisation", kind=kind, source=mfu_source or source)
    ch.given("T", q(run_days, "day"), "run length, wall clock", kind=kind, source=source)
    n = ch.solve("N_gpu", "C = N_gpu*R*u*T", "GPU", "GPUs, exact")
    ch.step("G", "C/(R*u)", "GPU*hour", "GPU-hours at that MFU")
    return n


def next_power_of_two(x) -> int:
    """The smallest power of two >= x (a plain number or a pint count of GPUs). A count a hair above a
    power of two from floating point (8192.0000000001) is that power, not the next."""
    v = float(x.to("GPU").magnitude) if hasattr(x, "units") else float(x)
    if not v > 0:
        raise ValueError(f"a GPU count must be > 0, got {v}")
    n = max(1, math.ceil(round(v, 9)))
    return 1 << (n - 1).bit_length()


def whole_nodes(x, gpus_per_node: int) -> int:
    """x GPUs rounded up to whole nodes of gpus_per_node, in GPUs."""
    v = float(x.to("GPU").magnitude) if hasattr(x, "units") else float(x)
    return int(gpus_per_node * math.ceil(round(v / gpus_per_node, 9)))


def with_headroom(x, headroom: float):
    """x GPUs with a headroom share added for what is not training (failures, stragglers, evaluation,
    checkpoints, data stalls): x (1 + h)."""
    return x * (1 + headroom)


def rounding_orders(n_exact, headroom: float, gpus_per_node: int = 8) -> dict[str, int]:
    """The plan under each order of operations: headroom then rounding (the plan), headroom then whole
    nodes, rounding then headroom then rounding again (which double-counts the margin), and no headroom."""
    h = with_headroom(n_exact, headroom)
    return {
        "headroom, then the next power of two (the plan)": next_power_of_two(h),
        "headroom, then whole nodes": whole_nodes(h, gpus_per_node),
        "the next power of two, then headroom, then round again":
            next_power_of_two(with_headroom(next_power_of_two(n_exact), headroom)),
        "the next power of two, no headroom": next_power_of_two(n_exact),
    }


def free_headroom(n_exact) -> float:
    """The headroom that rides free inside the rounding: next power of two over the exact count, minus 1."""
    v = float(n_exact.to("GPU").magnitude) if hasattr(n_exact, "units") else float(n_exact)
    return next_power_of_two(v) / v - 1


def fat_tree_sizes(radix: int) -> dict[int, int]:
    """GPUs a non-blocking fat tree of radix-k switches holds at one, two and three levels: k/2, k^2/2, k^3/4."""
    return {1: radix // 2, 2: radix ** 2 // 2, 3: radix ** 3 // 4}
