"""Two register-bound microbenchmarks, the exponential against the fused multiply-add, and the op counts
of one FlashAttention tile (chapters/kernels/flash-attention-versions.ipynb).

Only the standard library, torch and triton are imported here: the GPU machines have nothing else.
Under the Triton interpreter (TRITON_INTERPRET=1, set before triton is imported) the kernels run on CPU
tensors, which is how the tests check them on a machine with no GPU.

exp_chain   out[i] = f^R(x[i]) with f(x) = exp2(a * x): each element is loaded once, pushed through R
            dependent base-two exponentials in registers, and stored once. exp2 of an fp32 value is one
            instruction of the multi-function unit (MUFU) on NVIDIA GPUs; the multiply by a runs on the
            FP32 pipe, which has eight times the MUFU's throughput, so the MUFU is the bottleneck. With
            a = -1 the map is a contraction (|f'| = ln 2 * 2^-x < 1 for x > -0.53) toward x* ~ 0.6412,
            so no value overflows whatever R is. The runtime scalar a keeps the compiler from folding it.
fma_chain   out[i] = g^R(x[i]) with g(x) = a * x + b: the same structure with R dependent FMAs (two FLOPs
            each); with a = -0.5, b = 0.75 a contraction toward 0.5.
            Both kernels give each thread several independent elements (BLOCK / (32 * num_warps)) and
            unroll UNROLL steps per loop trip, so the dependent chains are latency-hidden and the loop
            overhead is a few percent of the instructions.
*_reference the same recurrence in float64 with numpy or torch, for the checks.

Counts (the measurement's and the chapter's):
exp_count(n, reps)      n * reps exponentials
fma_flops(n, reps)      2 * n * reps FLOPs
chain_bytes(n)          8 * n: one fp32 read and one fp32 write per element (the kernels are register-bound:
                        at reps = 256 that is 32 exps per byte)
tile_ops(b_q, b_k, d, version)
                        the work of one B_q x B_k tile of the attention forward for FlashAttention version
                        1 or 2 (3 does the same work as 2, overlapped): a dict of matmul FLOPs (QK^T and PV,
                        4 B_q B_k d), MUFU ops (an exp per score, plus per row: v2 one exp for the rescale
                        factor, v1 two exps and a reciprocal) and other FP32 FLOPs (max, subtract, sum and
                        scale per score, plus the output accumulator's rescale: v1 two scalings and an add
                        per output element, 3 B_q d; v2 one scaling, B_q d, the add being the MMA's own
                        accumulation).
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

DEFAULT_BLOCK = 1024
DEFAULT_WARPS = 4
UNROLL = 8
EXP_A = -1.0                       # exp2(-x): contraction toward 0.6412
FMA_A, FMA_B = -0.5, 0.75          # -x/2 + 3/4: contraction toward 0.5
SOFTMAX_ALU_PER_SCORE = 4          # max, subtract, sum, scale: the book's softmax count (5) less the exp


@triton.jit
def _step(x, a, b, EXP: tl.constexpr):
    if EXP:
        return tl.exp2(x * a)           # one MUFU instruction per element (after the multiply)
    else:
        return x * a + b                # one fused multiply-add per element


@triton.jit
def _chain_kernel(x_ptr, out_ptr, n, reps, a, b, EXP: tl.constexpr, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
    """x -> step(x) applied reps times to each element in registers: one load, one store, so the
    step's unit (MUFU for EXP, the FP32 pipes otherwise) is the bottleneck. EXP is a compile-time flag:
    the two chains are two kernels sharing one body."""
    pid = tl.program_id(0).to(tl.int64)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    for _ in range(0, reps // UNROLL):
        for _u in tl.static_range(UNROLL):
            x = _step(x, a, b, EXP)
    for _ in range(0, reps % UNROLL):
        x = _step(x, a, b, EXP)
    tl.store(out_ptr + offs, x, mask=mask)


def _launch_args(x: torch.Tensor, out: torch.Tensor | None, reps: int, block: int, name: str):
    if isinstance(reps, bool) or not isinstance(reps, int) or reps < 0:
        raise ValueError(f"{name}: reps must be a whole number >= 0, got {reps!r}")
    if x.dtype != torch.float32 or x.dim() != 1 or not x.is_contiguous():
        raise ValueError(f"{name}: x must be a contiguous 1-D float32 tensor")
    if block <= 0 or block & (block - 1):
        raise ValueError(f"{name}: block must be a power of two")
    if out is None:
        out = torch.empty_like(x)
    if out.shape != x.shape or out.dtype != x.dtype or not out.is_contiguous():
        raise ValueError(f"{name}: out must be a contiguous float32 tensor of x's shape")
    return out


def exp_chain(x: torch.Tensor, reps: int, out: torch.Tensor | None = None, *, a: float = EXP_A,
              block: int = DEFAULT_BLOCK, num_warps: int = DEFAULT_WARPS) -> torch.Tensor:
    """out[i] = (x -> exp2(a x)) applied reps times to x[i]; returns out."""
    out = _launch_args(x, out, reps, block, "exp_chain")
    n = x.numel()
    if n:
        _chain_kernel[(triton.cdiv(n, block),)](x, out, n, reps, a, 0.0, EXP=True, BLOCK=block, UNROLL=UNROLL,
                                                num_warps=num_warps)
    return out


def fma_chain(x: torch.Tensor, reps: int, out: torch.Tensor | None = None, *, a: float = FMA_A,
              b: float = FMA_B, block: int = DEFAULT_BLOCK, num_warps: int = DEFAULT_WARPS) -> torch.Tensor:
    """out[i] = (x -> a x + b) applied reps times to x[i]; returns out."""
    out = _launch_args(x, out, reps, block, "fma_chain")
    n = x.numel()
    if n:
        _chain_kernel[(triton.cdiv(n, block),)](x, out, n, reps, a, b, EXP=False, BLOCK=block, UNROLL=UNROLL,
                                                num_warps=num_warps)
    return out


def exp_reference(x: torch.Tensor, reps: int, a: float = EXP_A) -> torch.Tensor:
    """The exp chain in float64, on x's device."""
    y = x.double()
    for _ in range(reps):
        y = torch.exp2(y * a)
    return y


def fma_reference(x: torch.Tensor, reps: int, a: float = FMA_A, b: float = FMA_B) -> torch.Tensor:
    """The FMA chain in float64, on x's device."""
    y = x.double()
    for _ in range(reps):
        y = y * a + b
    return y


# Tolerances for inputs in [-1, 1]. After the first step every value lies in [1/4, 2] (exp: 2^-x of
# [-1, 1] is [1/2, 2], and 2^-x of that is [1/4, 2^-1/2]) or [1/4, 5/4] (FMA), where the map's slope is
# at most L = ln2 * 2^-(1/4) (exp) or 1/2 (FMA). An error e made at each step then accumulates to at
# most e / (1 - L). Per step: the hardware exp2 (ex2.approx) is within 2 ulp, 2^-22 relative, plus the
# fp32 rounding of its input's product, 2^-24, on values of at most 2; an fp32 FMA rounds once, 2^-24
# relative, on values of at most 5/4. Over the smallest value a chain holds, 1/4, that bounds every
# element's relative error, so the relative-error norm.
EXP_TOLERANCE = (2.0 ** -22 + 2.0 ** -24) * 2 / (1 - math.log(2) * 2 ** -0.25) / 0.25
FMA_TOLERANCE = (2.0 ** -24 * 1.25 * 2) / (1 - 0.5) / 0.25


def exp_count(n: int, reps: int) -> int:
    """Exponentials the exp chain performs."""
    return n * reps


def fma_flops(n: int, reps: int) -> int:
    """FLOPs of the FMA chain: two per fused multiply-add."""
    return 2 * n * reps


def chain_bytes(n: int) -> int:
    """Bytes either chain moves: one fp32 read and one fp32 write per element."""
    return 8 * n


def tile_ops(b_q: int, b_k: int, d: int, version: int = 2) -> dict:
    """The work of one B_q x B_k tile of the attention forward, FlashAttention version 1, 2 or 3."""
    if version not in (1, 2, 3):
        raise ValueError(f"tile_ops: version must be 1, 2 or 3, got {version!r}")
    scores = b_q * b_k
    if version == 1:
        mufu = scores + 3 * b_q                  # exp per score; per row exp(m - m'), exp(m~ - m'), 1 / l'
        out = 3 * b_q * d                        # O = a O + b (P V): a multiply, and an FMA (2 FLOPs)
    else:
        mufu = scores + b_q                      # exp per score; per row exp(m - m')
        out = b_q * d                            # acc = acc * alpha; the MMA adds P V into it
    return {"matmul_flops": 4 * scores * d, "mufu": mufu,
            "alu_flops": SOFTMAX_ALU_PER_SCORE * scores + out, "scores": scores}


def epilogue_ops(b_q: int, d: int, version: int = 2) -> dict:
    """Work once per query block after the key loop: v2 and v3 divide by l there (a reciprocal per row,
    a multiply per output element); v1 did it in every tile (counted in tile_ops)."""
    if version == 1:
        return {"mufu": 0, "alu_flops": 0}
    return {"mufu": b_q, "alu_flops": b_q * d}
