"""Attention forward, tiled in Triton (FlashAttention-style), beside the materialised version in torch.

    O = softmax(Q K^T * scale) V          per head; Q, K, V and O of shape (..., N, d)

Only the standard library, torch and triton are imported here: the GPU machines have nothing else.
Under the Triton interpreter (TRITON_INTERPRET=1, set before triton is imported) the kernel runs on CPU
tensors, which is how the tests and the chapter check it on a machine with no GPU. Under the
interpreter, test in float32 or float16 only: tl.dot on bfloat16 operands returns garbage there.

attention      the tiled kernel. One program per block of BLOCK_Q query rows of one head (grid: query
               blocks fastest, then heads, so programs running at the same time share one head's K and
               V in L2). The program loads its Q block once, then loops over the keys BLOCK_K at a time:
               S = Q K_j^T in registers, a running row max m and running row sum l (the online-softmax
               identity: when the max grows from m to m', everything accumulated so far is rescaled by
               exp(m - m')), and the output accumulator acc = acc * exp(m - m') + P_j V_j, all in float32.
               After the last block it writes O = acc / l once. The N x N scores never reach memory.
               Bytes moved per head, counting every K and V block load as a read of device memory:
               Q read once, O written once, K and V read once per query block: 2 N d e (1 + ceil(N / BLOCK_Q)).
               causal=True masks keys after each query and skips the key blocks that lie wholly after a
               query block.
materialised   the same attention as three torch operations: S = Q K^T (written to memory), P = softmax(S)
               (S read, P written), O = P V (P read). Bytes per head: 4 N^2 e + 4 N d e. The scale is
               applied to Q first where it is not 1, which adds a read and a write of Q.
reference      float64 on the CPU, for checks.

FLOPs per head, forward, counting the two matrix products only: 4 N^2 d (half of that, nearly, causal).
"""
from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

BLOCK_Q = 128           # query rows per program
BLOCK_K = 64            # keys per step of the inner loop
_LOG2E = 1.4426950408889634


@triton.jit
def _attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx, qk_scale,
                      stride_qh, stride_qn, stride_kh, stride_kn, stride_vh, stride_vn, stride_oh, stride_on,
                      HEAD_DIM: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr,
                      CAUSAL: tl.constexpr):
    start_q = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    offs_q = start_q * BLOCK_Q + tl.arange(0, BLOCK_Q)
    offs_k = tl.arange(0, BLOCK_K)
    offs_d = tl.arange(0, HEAD_DIM)
    q_mask = offs_q < n_ctx
    q = tl.load(q_ptr + head * stride_qh + offs_q[:, None] * stride_qn + offs_d[None, :],
                mask=q_mask[:, None], other=0.0)
    m_i = tl.full([BLOCK_Q], float("-inf"), dtype=tl.float32)     # running row max (base-2 logits)
    l_i = tl.zeros([BLOCK_Q], dtype=tl.float32)                    # running row sum of exp2(s - m)
    acc = tl.zeros([BLOCK_Q, HEAD_DIM], dtype=tl.float32)          # running sum of exp2(s - m) v
    if CAUSAL:
        hi = tl.minimum(n_ctx, (start_q + 1) * BLOCK_Q)            # key blocks past the query block: skipped
    else:
        hi = n_ctx
    for start_k in range(0, hi, BLOCK_K):
        cols = start_k + offs_k
        k_mask = cols < n_ctx
        k = tl.load(k_ptr + head * stride_kh + cols[:, None] * stride_kn + offs_d[None, :],
                    mask=k_mask[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale                      # scores times log2(e): exp2 below
        valid = k_mask[None, :]
        if CAUSAL:
            valid = valid & (offs_q[:, None] >= cols[None, :])
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))                 # finite: key 0 is valid for every row
        alpha = tl.exp2(m_i - m_new)                               # rescales what was summed under m_i
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + head * stride_vh + cols[:, None] * stride_vn + offs_d[None, :],
                    mask=k_mask[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + head * stride_oh + offs_q[:, None] * stride_on + offs_d[None, :],
             out.to(o_ptr.dtype.element_ty), mask=q_mask[:, None])


def _heads(x: torch.Tensor, name: str) -> torch.Tensor:
    """(..., N, d) as (heads, N, d) without copying; each row of d contiguous."""
    if x.dim() < 2:
        raise ValueError(f"attention: {name} must have shape (..., N, d)")
    if x.stride(-1) != 1:
        raise ValueError(f"attention: {name}'s last dimension must be contiguous")
    return x.reshape(-1, x.shape[-2], x.shape[-1])


def _checked(q, k, v, out, block_q: int, block_k: int) -> tuple:
    """The tiled kernels' one argument check: (qh, kh, vh, oh, out, n_ctx, d), out allocated when None."""
    if not (q.shape == k.shape == v.shape):
        raise ValueError("attention: q, k and v must have one shape (..., N, d)")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError("attention: q, k and v must share one dtype: float32, float16 or bfloat16")
    n_ctx, d = q.shape[-2], q.shape[-1]
    if d < 16 or d > 256 or d & (d - 1):
        raise ValueError(f"attention: head dimension {d} must be a power of two from 16 to 256")
    for b, what in ((block_q, "block_q"), (block_k, "block_k")):
        if b < 16 or b & (b - 1):
            raise ValueError(f"attention: {what} must be a power of two of at least 16")
    if out is None:
        out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    if out.shape != q.shape or out.dtype != q.dtype:
        raise ValueError("attention: out must have q's shape and dtype")
    if not out.is_contiguous():
        raise ValueError("attention: out must be contiguous")
    qh, kh, vh, oh = (_heads(x, n) for x, n in ((q, "q"), (k, "k"), (v, "v"), (out, "out")))
    return qh, kh, vh, oh, out, n_ctx, d


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor | None = None, *,
              causal: bool = False, scale: float | None = None, block_q: int = BLOCK_Q,
              block_k: int = BLOCK_K, num_warps: int | None = None, num_stages: int | None = None
              ) -> torch.Tensor:
    """softmax(q k^T * scale) v per head, tiled (the N x N scores never reach memory); returns out.

    q, k, v, out: tensors of one shape (..., N, d) and one dtype (float32, float16 or bfloat16); d a power
    of two from 16 to 256. scale defaults to 1 / sqrt(d)."""
    return _launch(_attention_kernel, q, k, v, out, causal, scale, block_q, block_k, num_warps, num_stages)


def _launch(kernel, q, k, v, out, causal, scale, block_q, block_k, num_warps, num_stages) -> torch.Tensor:
    """One launch path for both attention kernels (they take the same arguments): checks, grid, launch."""
    qh, kh, vh, oh, out, n_ctx, d = _checked(q, k, v, out, block_q, block_k)
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if qh.shape[0] and n_ctx:
        grid = (triton.cdiv(n_ctx, block_q), qh.shape[0])
        extra = {} if num_stages is None else {"num_stages": num_stages}
        kernel[grid](qh, kh, vh, oh, n_ctx, scale * _LOG2E,
                     qh.stride(0), qh.stride(1), kh.stride(0), kh.stride(1),
                     vh.stride(0), vh.stride(1), oh.stride(0), oh.stride(1),
                     HEAD_DIM=d, BLOCK_Q=block_q, BLOCK_K=block_k, CAUSAL=bool(causal),
                     num_warps=num_warps or (8 if block_q >= 128 else 4), **extra)
    return out


def materialised(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor | None = None, *,
                 causal: bool = False, scale: float | None = None) -> torch.Tensor:
    """The same attention as torch runs it without a fused kernel: S = q k^T and P = softmax(S) are
    each written to memory and read back. With scale 1 (folded into q), exactly three kernels."""
    d, n_ctx = q.shape[-1], q.shape[-2]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    if scale != 1.0:
        q = q * scale
    s = torch.matmul(q, k.transpose(-2, -1))
    if causal:
        s = s.masked_fill(torch.ones(n_ctx, n_ctx, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    p = torch.softmax(s, dim=-1)
    if out is None:
        return torch.matmul(p, v)
    return torch.matmul(p, v, out=out)


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = False,
              scale: float | None = None) -> torch.Tensor:
    """The attention in float64 on the CPU (the check's reference)."""
    q, k, v = (x.detach().to("cpu", torch.float64) for x in (q, k, v))
    d, n_ctx = q.shape[-1], q.shape[-2]
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    s = (q @ k.transpose(-2, -1)) * scale
    if causal:
        s = s.masked_fill(torch.ones(n_ctx, n_ctx, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def tiled_bytes(n_ctx: int, head_dim: int, element_bytes: int, block_q: int = BLOCK_Q) -> int:
    """Bytes one head moves in the tiled kernel, every K and V block load counted as a device-memory
    read: Q once, O once, K and V once per query block."""
    return 2 * n_ctx * head_dim * element_bytes * (1 + -(-n_ctx // block_q))


def materialised_bytes(n_ctx: int, head_dim: int, element_bytes: int) -> int:
    """Bytes one head moves in materialised attention (scale folded into Q): Q and K read, S written,
    S read, P written, P and V read, O written."""
    return 4 * n_ctx * n_ctx * element_bytes + 4 * n_ctx * head_dim * element_bytes


def flops(n_ctx: int, head_dim: int) -> int:
    """FLOPs of one head's forward, non-causal: two matrix products of 2 N^2 d each."""
    return 4 * n_ctx * n_ctx * head_dim


# --------------------------------------------------------------------------------------------------
# attention_exp2: the same tiled attention with the inner loop trimmed as the Triton tutorial's kernel is.
#
# The softmax scale times log2(e) is folded into one FMA per score: the running max is kept in scaled
# units, m' = max(m, max_j(s) * qk_scale), and p = exp2(s * qk_scale - m'), so no separate multiply of
# the scores; the final division is one reciprocal per row and a multiply per element. Masks only on the
# boundary blocks: key blocks wholly inside the context (and, causal, wholly at or before the query
# block's first row) load K and V and compute p with no mask; only the last partial key block and the
# causal diagonal blocks mask. The blocks run in order from key 0, so every row's running max is finite
# after its first block (key 0 is valid for every row).

@triton.jit
def _attention_exp2_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_q, offs_k, offs_d,
                          lo, hi, n_ctx, qk_scale, BLOCK_K: tl.constexpr, MASKED: tl.constexpr,
                          CAUSAL: tl.constexpr):
    for start_k in range(lo, hi, BLOCK_K):
        cols = start_k + offs_k
        if MASKED:
            k_mask = cols < n_ctx
            k = tl.load(k_base + cols[:, None] * stride_kn + offs_d[None, :], mask=k_mask[:, None], other=0.0)
        else:
            k = tl.load(k_base + cols[:, None] * stride_kn + offs_d[None, :])
        s = tl.dot(q, tl.trans(k))
        if MASKED:
            valid = k_mask[None, :]
            if CAUSAL:
                valid = valid & (offs_q[:, None] >= cols[None, :])
            s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1) * qk_scale)
        p = tl.exp2(s * qk_scale - m_new[:, None])                 # one FMA and one exp2 per score
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        if MASKED:
            v = tl.load(v_base + cols[:, None] * stride_vn + offs_d[None, :], mask=k_mask[:, None], other=0.0)
        else:
            v = tl.load(v_base + cols[:, None] * stride_vn + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _attention_exp2_kernel(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx, qk_scale,
                           stride_qh, stride_qn, stride_kh, stride_kn, stride_vh, stride_vn, stride_oh,
                           stride_on, HEAD_DIM: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr,
                           CAUSAL: tl.constexpr):
    start_q = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64)
    q0 = start_q * BLOCK_Q
    offs_q = q0 + tl.arange(0, BLOCK_Q)
    offs_k = tl.arange(0, BLOCK_K)
    offs_d = tl.arange(0, HEAD_DIM)
    q_mask = offs_q < n_ctx
    q = tl.load(q_ptr + head * stride_qh + offs_q[:, None] * stride_qn + offs_d[None, :],
                mask=q_mask[:, None], other=0.0)
    k_base = k_ptr + head * stride_kh
    v_base = v_ptr + head * stride_vh
    m_i = tl.full([BLOCK_Q], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_Q], dtype=tl.float32)
    acc = tl.zeros([BLOCK_Q, HEAD_DIM], dtype=tl.float32)
    full = (n_ctx // BLOCK_K) * BLOCK_K                            # key blocks wholly inside the context
    if CAUSAL:
        hi = tl.minimum(n_ctx, q0 + BLOCK_Q)
        lo = tl.minimum(full, ((q0 + 1) // BLOCK_K) * BLOCK_K)     # wholly at or before the block's first row
    else:
        hi = n_ctx
        lo = full
    acc, l_i, m_i = _attention_exp2_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_q,
                                          offs_k, offs_d, 0, lo, n_ctx, qk_scale, BLOCK_K, False, CAUSAL)
    acc, l_i, m_i = _attention_exp2_inner(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_q,
                                          offs_k, offs_d, lo, hi, n_ctx, qk_scale, BLOCK_K, True, CAUSAL)
    out = acc * (1.0 / l_i)[:, None]
    tl.store(o_ptr + head * stride_oh + offs_q[:, None] * stride_on + offs_d[None, :],
             out.to(o_ptr.dtype.element_ty), mask=q_mask[:, None])


def attention_exp2(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor | None = None, *,
                   causal: bool = False, scale: float | None = None, block_q: int = BLOCK_Q,
                   block_k: int = BLOCK_K, num_warps: int | None = None, num_stages: int | None = None
                   ) -> torch.Tensor:
    """attention's arguments and result, by the exp2 kernel (scale folded into one FMA, masks only on
    boundary blocks); returns out."""
    return _launch(_attention_exp2_kernel, q, k, v, out, causal, scale, block_q, block_k, num_warps, num_stages)
