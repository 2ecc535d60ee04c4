"""The CUDA occupancy calculation: a kernel's registers per thread, shared memory per block and threads per
block to the blocks and warps one SM holds, and which limit binds; and the parser of `nvcc -Xptxas -v`'s
resource report that supplies the first two.

The rule is the CUDA Occupancy Calculator's, for compute capability 8.0 and 9.0 (the limits are
utils/catalog/sm_limits.toml, one table per GPU):
- warps: a block of T threads is ceil(T/32) warps; at most max_warps warps and max_blocks blocks per SM.
- registers: allocated per warp, ceil(regs x 32 / 256) x 256 registers a warp; an SM's register file holds
  floor(registers / per-warp) warps, rounded DOWN to the warp allocation granularity (4: one per
  sub-partition), and whole blocks of those.
- shared memory: each block takes its bytes plus the runtime's 1 KB, rounded up to 128 bytes.
Occupancy is resident warps over max_warps. It is a means: speed follows bytes (or FLOPs) in flight.
The rule, the parser and `sm_limits` need only the standard library (the GPU harness, which has no pint,
calls them).

Chapters: occupancy.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

WARP = 32
LIMITS = ("warps", "blocks", "registers", "shared memory")


def ceil_to(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class SMLimits:
    max_warps: int = 64
    max_blocks: int = 32
    registers: int = 65536
    max_registers_per_thread: int = 255
    max_threads_per_block: int = 1024
    shared_memory: int = 233472
    max_shared_memory_per_block: int = 232448
    register_unit: int = 256
    warp_granularity: int = 4
    shared_memory_unit: int = 128
    shared_memory_reserved_per_block: int = 1024


SM_LIMITS_FILE = Path(__file__).resolve().parents[1] / "catalog" / "sm_limits.toml"
_META = ("name", "source", "notes", "kind", "compute_capability")


def sm_limit_tables(path: Path = SM_LIMITS_FILE) -> dict[str, dict]:
    """Every GPU's per-SM limits as plain numbers, by catalog key, from the catalog's sm_limits.toml read with
    tomllib (the catalog's own loader checks the file's sources; this side has no pint). Each table keeps its
    compute capability."""
    data = tomllib.loads(path.read_text())
    return {key: {"compute_capability": str(e.get("compute_capability")),
                  **{k: (v["value"] if isinstance(v, dict) else v) for k, v in e.items() if k not in _META}}
            for key, e in data.get("sm_limit", {}).items()}


def sm_limits(gpu) -> SMLimits:
    """The per-SM limits of a catalog GPU (its key or accelerator Entry); KeyError for a GPU without a table."""
    key = gpu if isinstance(gpu, str) else gpu.key
    table = sm_limit_tables()[key]
    return SMLimits(**{f: int(table[f]) for f in SMLimits.__dataclass_fields__})


@dataclass(frozen=True)
class Occupancy:
    warps_per_block: int
    registers_per_warp: int        # after rounding to the allocation unit
    shared_per_block: int          # bytes, with the reserved KB and rounding
    blocks_by: dict                # {limit: blocks per SM that limit allows}
    blocks: int                    # resident blocks per SM: the smallest
    warps: int                     # resident warps per SM
    occupancy: float               # warps / max_warps
    limiter: str                   # the limit that binds (ties: the first in LIMITS)


def occupancy(threads_per_block: int, registers_per_thread: int, shared_per_block: int = 0,
              limits: SMLimits = SMLimits()) -> Occupancy:
    """Theoretical occupancy of one SM. Raises ValueError for a launch the hardware refuses (the launch
    would fail, so no occupancy exists): too many threads, registers or shared bytes for one block."""
    t, r, s, L = int(threads_per_block), int(registers_per_thread), int(shared_per_block), limits
    if not 1 <= t <= L.max_threads_per_block:
        raise ValueError(f"threads_per_block must be 1..{L.max_threads_per_block}, got {t}")
    if not 1 <= r <= L.max_registers_per_thread:
        raise ValueError(f"registers_per_thread must be 1..{L.max_registers_per_thread}, got {r}")
    if not 0 <= s <= L.max_shared_memory_per_block:
        raise ValueError(f"shared_per_block must be 0..{L.max_shared_memory_per_block} bytes, got {s}")
    wpb = -(-t // WARP)
    reg_warp = ceil_to(r * WARP, L.register_unit)
    # Whole warps of registers, rounded down to the granularity the SM's sub-partitions allocate in.
    reg_warps = (L.registers // reg_warp) // L.warp_granularity * L.warp_granularity
    if reg_warps < wpb:
        raise ValueError(f"{r} registers x {t} threads do not fit one SM's {L.registers} registers")
    smem = ceil_to(s + L.shared_memory_reserved_per_block, L.shared_memory_unit)
    by = {"warps": L.max_warps // wpb, "blocks": L.max_blocks, "registers": reg_warps // wpb,
          "shared memory": L.shared_memory // smem if s else L.max_blocks}
    blocks = min(by.values())
    limiter = next(k for k in LIMITS if by[k] == blocks)
    return Occupancy(wpb, reg_warp, smem, by, blocks, blocks * wpb, blocks * wpb / L.max_warps, limiter)


def max_registers_for(warps: int, threads_per_block: int, limits: SMLimits = SMLimits()) -> int:
    """The most registers per thread that still lets `warps` warps reside (what __launch_bounds__ or
    --maxrregcount asks the compiler for): the largest r whose occupancy reaches that many warps."""
    for r in range(limits.max_registers_per_thread, 0, -1):
        try:
            if occupancy(threads_per_block, r, 0, limits).warps >= warps:
                return r
        except ValueError:
            continue
    raise ValueError(f"no register count reaches {warps} warps with {threads_per_block}-thread blocks")


# --- ptxas's resource report ------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelResources:
    name: str                 # the mangled entry name ptxas reports
    arch: str                 # sm_XX
    registers: int
    shared_bytes: int         # static shared memory (smem)
    stack_bytes: int
    spill_stores: int         # bytes of registers spilled to local memory
    spill_loads: int
    barriers: int = 0

    @property
    def spills(self) -> bool:
        return bool(self.spill_stores or self.spill_loads)


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_BAR = re.compile(r"used (\d+) barriers")


def parse_ptxas(text: str) -> list[KernelResources]:
    """Every entry function in `nvcc -Xptxas -v` output (stderr), in order. A report line belongs to the
    entry function named last; an entry without its 'Used N registers' line is an error (truncated log)."""
    out, cur = [], None

    def close():
        if cur is not None:
            if "registers" not in cur:
                raise ValueError(f"ptxas report for {cur['name']} has no 'Used N registers' line")
            out.append(KernelResources(**cur))

    for line in text.splitlines():
        if m := _ENTRY.search(line):
            close()
            cur = dict(name=m[1], arch=m[2], shared_bytes=0, stack_bytes=0, spill_stores=0, spill_loads=0)
        elif cur is None:
            continue                    # global lines (gmem, cmem[3]) before any entry
        elif m := _PROPS.search(line):
            cur.update(stack_bytes=int(m[1]), spill_stores=int(m[2]), spill_loads=int(m[3]))
        elif m := _USED.search(line):
            cur["registers"] = int(m[1])
            if s := _SMEM.search(line):
                cur["shared_bytes"] = int(s[1])
            if b := _BAR.search(line):
                cur["barriers"] = int(b[1])
    close()
    return out


CUDA_DIR = Path(__file__).parent / "cuda"


def ptxas_report(arch: str = "sm_90", files=None, maxrregcount: int | None = None) -> list[KernelResources] | None:
    """Compile the book's kernels with `nvcc -Xptxas -v` and parse the report; None where nvcc is absent."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return None
    out = []
    for f in files or sorted(CUDA_DIR.glob("*.cu")):
        cmd = [nvcc, "-c", "-o", "/dev/null", f"-arch={arch}", "-Xptxas", "-v", str(f)]
        if maxrregcount:
            cmd.insert(1, f"--maxrregcount={maxrregcount}")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True)
        out += parse_ptxas(r.stderr + r.stdout)
    return out


# The report of the book's kernels (utils/gpu/cuda/*.cu), captured with nvcc 13.0 (V13.0.88),
# `nvcc -c -arch=sm_90 -Xptxas -v`, on 2026-12-01 ("Compile time" lines dropped): the page shows this, so its
# output is the same on machines without nvcc; a test recompiles where nvcc exists and compares.
BOOK_KERNELS_PTXAS = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z15transpose_tiledILi33EEvPKfPfii' for 'sm_90'
ptxas info    : Function properties for _Z15transpose_tiledILi33EEvPKfPfii
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 30 registers, used 1 barriers, 4224 bytes smem
ptxas info    : Compiling entry function '_Z15transpose_tiledILi32EEvPKfPfii' for 'sm_90'
ptxas info    : Function properties for _Z15transpose_tiledILi32EEvPKfPfii
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 30 registers, used 1 barriers, 4096 bytes smem
ptxas info    : Compiling entry function '_Z15transpose_naivePKfPfii' for 'sm_90'
ptxas info    : Function properties for _Z15transpose_naivePKfPfii
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 26 registers, used 0 barriers
ptxas info    : Compiling entry function '_Z11fill_kernelPfmm' for 'sm_90'
ptxas info    : Function properties for _Z11fill_kernelPfmm
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 14 registers, used 0 barriers
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z10add_kernelPKfS0_Pfm' for 'sm_90'
ptxas info    : Function properties for _Z10add_kernelPKfS0_Pfm
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 16 registers, used 0 barriers
ptxas info    : Compiling entry function '_Z11copy_kernelPKfPfm' for 'sm_90'
ptxas info    : Function properties for _Z11copy_kernelPKfPfm
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
ptxas info    : Compiling entry function '_Z11fill_kernelPfmm' for 'sm_90'
ptxas info    : Function properties for _Z11fill_kernelPfmm
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 14 registers, used 0 barriers
"""
