"""The four things Triton's block model does not hand you, which of the book's kernels need them, and
which language to write a kernel in given what it needs.

    from utils.gpu.triton_gaps import inventory, decide
    kernels = inventory()                 # every kernel in utils/gpu/kernels/*.py and utils/gpu/cuda/*.cu, classified
    decide({"sync"}, (3, 3))              # -> "CUDA (or CUTLASS)": warp specialisation before Triton 3.4
    decide({"sync"}, (3, 4))              # -> "Triton": tl.range(..., warp_specialize=True)

Triton's model: a program owns a block of data; the compiler picks the thread layout, the shared-memory
layout (swizzled), the barriers between shared-memory phases and the lowering of reductions to warp
shuffles. What the model does not expose, and CUDA does (the four gaps, GAPS):

    warp     warp-level primitives as a unit you program: lane-indexed shuffles, votes (ballot, any, all),
             match, warp-synchronous algorithms with per-warp state (a per-warp register queue for top-k).
             Block-level collectives (tl.sum, tl.max, tl.cumsum, tl.histogram, tl.sort) Triton lowers to
             shuffles itself, so a reduction gives nothing up (see shuffle_reduction / tree_reduction).
    smem     the shared-memory layout: which element sits in which bank (padding, an explicit swizzle).
    sync     fine-grained synchronisation and warp specialisation: named barriers and mbarriers between
             groups of warps, producer warps that only load (TMA) while consumer warps only compute.
    launch   launch and persistence control: cooperative launch and grid-wide sync, cluster launch,
             the host launch path. (A persistent loop over tiles is writable in Triton, and a CUDA graph
             replays Triton launches too: the book's persistent softmax is a Triton kernel.)

The scanner finds the kernels (a @triton.jit function launched with `name[grid]` in the same file; a
CUDA `__global__` function) so a kernel added to the book is counted or fails a test until it is
classified in NEEDS; for CUDA sources it also detects the constructs of each gap (CUDA_CONSTRUCTS), and
a test holds the classification to them. Standard library only.

Chapters: triton-vs-cuda.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from math import log2
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNEL_DIRS = (("utils/gpu/kernels", "*.py"), ("utils/gpu/cuda", "*.cu"))
WARP = 32

@dataclass(frozen=True)
class Gap:
    key: str
    name: str
    cuda: str            # what CUDA gives you
    triton: str          # what Triton does instead
    matters: str         # when it costs performance
    # (version from which Triton offers it, the tool then, what the feature is, source)
    offered: tuple


GAPS = (
    Gap("warp", "warp-level primitives",
        "`__shfl_*_sync`, `__ballot_sync`, `__match_any_sync`, warp-synchronous code with per-warp state",
        "block-level collectives (tl.sum, tl.max, tl.cumsum, tl.histogram, tl.sort), lowered to shuffles by the compiler",
        "a lane-level algorithm: votes for compaction, a per-warp register queue (the top-k register heap)",
        ()),
    Gap("smem", "shared-memory layout and bank control",
        "`__shared__` arrays laid out by hand: padding, explicit swizzles",
        "the compiler picks a swizzled shared layout for each conversion",
        "an access pattern the compiler's layout does not cover, a layout another kernel or TMA must match",
        (((3, 5), "Gluon", "Gluon: explicit shared-memory layouts (allocate_shared_memory, a bank_conflicts query)",
          "Triton 3.5.0 release notes, 'Gluon & Layout Improvements' (newreleases.io/project/github/triton-lang/"
          "triton/release/v3.5.0); Gluon overview, triton-lang.org/main/gluon/, read 2026-12-01"),)),
    Gap("sync", "fine-grained synchronisation and warp specialisation",
        "named barriers, mbarriers, producer and consumer warpgroups (TMA loads beside wgmma), setmaxnreg",
        "one program, one instruction stream; the compiler software-pipelines loads num_stages deep",
        "Hopper's asynchronous units: overlapping tensor-core work with the softmax or the loads",
        (((3, 4), "Triton", "tl.range(..., warp_specialize=True): the compiler partitions a loop into producer "
          "and consumer warps; tensor descriptors (TMA) out of experimental",
          "pytorch/pytorch PR #158459 (2025-07-16: 'In triton 3.4, ... num_consumer_groups will be determined "
          "automatically by the compiler'); pytorch/FBGEMM issue #4321 (2025-06-11: with triton 3.3.1, 'Warp "
          "specialization is disabled as the Triton build ... doesn't have such support'); triton-lang/triton "
          "PR #6488 (2025-04-14, experimental descriptor API removed, triton.tools.tensor_descriptor); read "
          "2026-12-01"),
         ((3, 5), "Gluon", "Gluon: warp_specialize and mbarrier by hand, as in CUDA",
          "Triton 3.5.0 release notes; Gluon language API (warp_specialize, mbarrier), triton-lang.org, read "
          "2026-12-01"))),
    Gap("launch", "launch and persistence control",
        "cooperative launch and `grid.sync()`, cluster dimensions, the C++ launch path",
        "a grid of programs launched from Python; a persistent loop over tiles is the kernel's own code",
        "kernels so short that the launch is their time, or that need a grid-wide barrier",
        (((0, 0), "Triton", "a CUDA graph captures and replays Triton launches (host side, any Triton version); "
          "persistent kernels as a loop over tl.num_programs (tutorial 09-persistent-matmul)",
          "triton-lang/triton issue #4869 (2024-10-16, pointing to the persistent-matmul tutorial); the book's "
          "launch-overhead measurement replays Triton launches from a CUDA graph; cooperative launch and "
          "grid-wide sync stay CUDA's"),)),
)
GAP = {g.key: g for g in GAPS}
TOOLS = ("Triton", "Gluon", "CUDA (or CUTLASS)")      # from the highest level to the lowest


def tool_for(gap: str, version: tuple) -> str:
    """The highest-level tool that covers one gap with Triton at `version` (a (major, minor) tuple)."""
    if gap not in GAP:
        raise ValueError(f"unknown gap {gap!r}; valid: {', '.join(GAP)}")
    best = TOOLS[-1]
    for since, tool, _, _ in GAP[gap].offered:
        if tuple(version) >= since and TOOLS.index(tool) < TOOLS.index(best):
            best = tool
    return best


def decide(needs, version: tuple = (3, 9)) -> str:
    """What to write a kernel in: Triton when it needs none of the gaps (or Triton at `version` covers all
    it needs), else the lowest-level tool any one of its needs calls for."""
    needs = set(needs)
    if not needs:
        return TOOLS[0]
    return max((tool_for(g, version) for g in needs), key=TOOLS.index)


def decision_rows(version: tuple = (3, 9)) -> list[tuple]:
    """The decision table: (gap, when it matters, what CUDA gives, before Triton offers it, at `version`)."""
    return [(g.name, g.matters, g.cuda, tool_for(g.key, (2, 0)), tool_for(g.key, version)) for g in GAPS]


# --- the book's kernels, found by scanning, classified by what they need ----------------------------
# (file, kernel) -> (gaps it needs to reach its target on Hopper, why). A kernel's need is judged
# against the ceiling its chapter holds it to, not against what the book happened to write it in.
NEEDS = {
    ("utils/gpu/kernels/copy.py", "_copy_kernel"): ((), "streams at copy bandwidth as written"),
    ("utils/gpu/kernels/copy.py", "_tick_kernel"): (("launch",), "does next to nothing: its time is the launch"),
    ("utils/gpu/kernels/vector_add.py", "_add_kernel"): ((), "streams at copy bandwidth as written"),
    ("utils/gpu/kernels/strided.py", "_strided_kernel"): ((), "its cost is the sectors it touches, in any language"),
    ("utils/gpu/kernels/fused_chain.py", "_chain_kernel"): ((), "one read, one write: a copy's bytes"),
    ("utils/gpu/kernels/fused_chain.py", "_chain_exp2_kernel"): ((), "one read, one write: a copy's bytes"),
    ("utils/gpu/kernels/softmax.py", "_softmax_kernel"): ((), "one read, one write; the reductions are tl.max and tl.sum"),
    ("utils/gpu/kernels/softmax.py", "_softmax_persistent_kernel"): ((), "a persistent loop, written in Triton"),
    ("utils/gpu/kernels/exp_rate.py", "_chain_kernel"): ((), "register-bound on one unit; nothing to overlap"),
    ("utils/gpu/kernels/attention.py", "_attention_kernel"):
        (("sync",), "FlashAttention-3's rate on Hopper overlaps the softmax with the products (warp specialisation)"),
    ("utils/gpu/kernels/attention.py", "_attention_exp2_kernel"):
        (("sync",), "as the attention kernel: the overlap is FlashAttention-3's"),
    ("utils/gpu/kernels/matmul.py", "_matmul_kernel"):
        (("sync",), "Hopper's matmul rate wants TMA producers beside wgmma consumers"),
    ("utils/gpu/cuda/transpose.cu", "transpose_tiled"): (("smem",), "the padded tile is the point: bank control"),
    ("utils/gpu/cuda/transpose.cu", "transpose_naive"): ((), "no shared memory; the slow baseline"),
    ("utils/gpu/cuda/vector_copy_add.cu", "copy_kernel"): ((), "a grid-stride loop, writable in Triton"),
    ("utils/gpu/cuda/vector_copy_add.cu", "add_kernel"): ((), "a grid-stride loop, writable in Triton"),
}

# Constructs in CUDA source that only the gap's control gives (a plain __syncthreads() is not one:
# Triton inserts block-wide barriers itself; a grid-stride loop is not one: Triton can loop).
CUDA_CONSTRUCTS = {
    "warp": (r"__shfl\w*_sync", r"__ballot_sync", r"__any_sync", r"__all_sync", r"__match_\w+_sync",
             r"__activemask", r"__syncwarp", r"__reduce_\w+_sync"),
    "smem": (r"__shared__\s+[\w:<>]+\s+\w+\s*\[",),
    "sync": (r"\bbar\.sync\s+\d", r"\bbar\.arrive\b", r"mbarrier", r"cuda::barrier", r"cuda::pipeline",
             r"setmaxnreg", r"wgmma", r"cp\.async\.bulk"),
    "launch": (r"cudaLaunchCooperativeKernel", r"grid\.sync\(\)", r"this_grid\(\)", r"__cluster_dims__",
               r"cudaLaunchKernelEx", r"griddepcontrol"),
}


@dataclass(frozen=True)
class Kernel:
    file: str            # path relative to the repository
    name: str
    language: str        # "Triton" or "CUDA"
    needs: tuple         # gap keys
    why: str
    constructs: tuple    # gap keys whose CUDA constructs the source uses (always () for Triton)


def triton_kernels(source: str) -> list[str]:
    """Names of the @triton.jit functions that the same source launches: as `name[grid](...)`, or handed as a
    value to a launch helper (`_launch(name, ...)`). A jit function only called, `name(...)`, from another kernel
    is inlined into it, not a kernel of its own."""
    names = re.findall(r"@triton\.jit\s*\n\s*def\s+(\w+)", source)
    return [n for n in names if re.search(rf"\b{n}\s*\[", source)
            or re.search(rf"(?<!def )\b{n}\b(?!\s*\()", source)]


def cuda_kernels(source: str) -> dict[str, str]:
    """{name: body} of each __global__ function (a template counts once), the body up to its closing brace."""
    out = {}
    for m in re.finditer(r"__global__\s+void\s+(?:__\w+__\s*\([^)]*\)\s*)*(\w+)\s*\(", source):
        start = source.index("{", m.end())
        depth, i = 0, start
        while True:
            depth += {"{": 1, "}": -1}.get(source[i], 0)
            if depth == 0:
                break
            i += 1
        head = source.rfind("\n", 0, m.start())
        prefix = source[source.rfind("\n", 0, head) + 1:head] if head > 0 else ""
        out[m.group(1)] = (prefix + "\n" if prefix.lstrip().startswith("template") else "") + source[m.start():i + 1]
    return out


def constructs(body: str) -> tuple:
    """The gaps whose CUDA constructs this code uses, in GAPS order."""
    return tuple(g.key for g in GAPS if any(re.search(p, body) for p in CUDA_CONSTRUCTS[g.key]))


def inventory(root: Path | str = ROOT) -> list[Kernel]:
    """Every kernel in the book's kernel sources, with its classification. A kernel missing from NEEDS
    raises KeyError naming it: the count cannot silently leave one out."""
    root = Path(root)
    out = []
    for folder, pattern in KERNEL_DIRS:
        for path in sorted((root / folder).glob(pattern)):
            rel, src = path.relative_to(root).as_posix(), path.read_text()
            found = ([(n, "Triton", ()) for n in triton_kernels(src)] if path.suffix == ".py" else
                     [(n, "CUDA", constructs(body)) for n, body in cuda_kernels(src).items()])
            for name, lang, used in found:
                if (rel, name) not in NEEDS:
                    raise KeyError(f"kernel {name} in {rel} is not classified in utils.gpu.triton_gaps.NEEDS")
                needs, why = NEEDS[(rel, name)]
                out.append(Kernel(rel, name, lang, tuple(needs), why, used))
    return out


def tally(kernels) -> dict:
    """Counts: all kernels, those that need no gap, and per gap those that need it."""
    kernels = list(kernels)
    return {"total": len(kernels), "none": sum(1 for k in kernels if not k.needs),
            **{g.key: sum(1 for k in kernels if g.key in k.needs) for g in GAPS}}


# --- what Triton writes for you: a block reduction, as shuffles or as a shared-memory tree ----------
def _check_threads(threads: int, elem_bytes: int) -> None:
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < WARP or threads & (threads - 1):
        raise ValueError(f"threads must be a power of two of at least a warp ({WARP}), got {threads!r}")
    if elem_bytes not in (2, 4, 8):
        raise ValueError(f"elem_bytes must be 2, 4 or 8, got {elem_bytes!r}")


def tree_reduction(threads: int, elem_bytes: int = 4) -> dict:
    """Sum of one value per thread through shared memory, halving each step: every thread writes its
    value, then step s has threads / 2^s threads read two words and write one, a barrier after each."""
    _check_threads(threads, elem_bytes)
    steps = int(log2(threads))
    return {"steps": steps, "barriers": steps,
            "smem_bytes": threads * elem_bytes + sum(3 * (threads >> s) * elem_bytes for s in range(1, steps + 1))}


def shuffle_reduction(threads: int, elem_bytes: int = 4) -> dict:
    """The same sum as Triton lowers tl.sum: log2(32) shuffles inside each warp, one shared-memory word per
    warp and one barrier, then log2(warps) shuffles in the first warp."""
    _check_threads(threads, elem_bytes)
    warps = threads // WARP
    return {"steps": int(log2(WARP)) + int(log2(warps)), "barriers": 1 if warps > 1 else 0,
            "smem_bytes": 2 * warps * elem_bytes if warps > 1 else 0}
