"""Reading an Nsight Compute report: the sections in their order, the rule that names the bottleneck, a
parser for `ncu --csv` output, and a sector model that predicts the report's DRAM and L1 percentages.

    from utils.gpu.kernel_profile import bottleneck, parse_ncu_csv, profile_metrics, predict, Load, Rates
    bottleneck(compute_pct=14.0, memory_pct=82.0)            # -> High Memory Throughput, Memory Workload Analysis
    predict([Load(analyse(strided(0, 128, 4), 4), reuse=8)], rates)   # -> dram, l1, memory fractions

Sections (Nsight Compute's shipped section files order them by their `Order` field: Speed Of Light 10,
Compute Workload Analysis 20, Memory Workload Analysis 30, Scheduler Statistics 40, Warp State
Statistics 50, Launch Statistics 70, Occupancy 80). Read four, in this order: the Speed Of Light, then
the workload analysis of the side it names, then the warp states when neither side is busy, then the
launch and occupancy that say whether the grid filled the GPU.

The rule (Nsight Compute's SOLBottleneck rule, sections/SpeedOfLight.py, re-implemented here): compare
the SOL's Compute (SM) Throughput and Memory Throughput, both percentages of peak. Either at 80% or more:
high throughput, the work must move off that unit. Both under 60%: latency (or, with under one wave of
blocks per SM, a grid too small). Otherwise the larger by 10 points or more names the side; within 10
points, balanced. Memory Throughput is the largest of its sub-units' percentages (L1, L2, DRAM), so it
says "memory" without saying which memory: the breakdown does.

The model: a warp's load touches `analyse(...).n_sectors` 32-byte sectors (utils.gpu.coalescing); the L1
pipe spends cycles on each request in proportion to what it touches, while DRAM moves each sector once
per `reuse` requests for it (a sector served again from L1 or L2 costs no DRAM bytes). Whichever unit
needs more time per warp limits the kernel and runs at `busy` of its peak; the other's percentage is
its time over the elapsed time. Standard library only.

Chapters: reading-a-kernel-profile.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

from utils.gpu.coalescing import SECTOR, Access

# --- the sections and the rule ---------------------------------------------------------------------

# The primary is NVIDIA's: the Customization Guide says the section files and rules ship in the `sections` folder of
# the Nsight Compute install; their text (which the guide does not reproduce) was read in a copy of that folder.
SOURCE = ("NVIDIA Nsight Compute's section files (sections/*.section: Identifier, DisplayName, Order) and its "
          "SOLBottleneck rule (sections/SpeedOfLight.py, NVIDIA, BSD licence), as shipped in the sections folder of "
          "the Nsight Compute install (NVIDIA, Nsight Compute Customization Guide, Section Files and Rule System, "
          "https://docs.nvidia.com/nsight-compute/CustomizationGuide/index.html, read 2026-12-06); the files' text "
          "read 2026-12-01 in a copy of that folder at https://github.com/xingxerx/Qallow/tree/"
          "e3efc6fc8582f38e81d9b207717e72a213faa5e1/sections")


@dataclass(frozen=True)
class Section:
    order: int            # the section file's Order (the report shows sections in this order)
    identifier: str       # the section file's Identifier (ncu --section <identifier>)
    name: str             # its DisplayName
    read_for: str         # what to read it for


SOL = Section(10, "SpeedOfLight", "GPU Speed Of Light Throughput",
              "Compute (SM) Throughput against Memory Throughput: which side is nearest its peak")
COMPUTE = Section(20, "ComputeWorkloadAnalysis", "Compute Workload Analysis",
                  "which pipeline (FMA, ALU, tensor, LSU) is busiest, and the issue slots used")
MEMORY = Section(30, "MemoryWorkloadAnalysis", "Memory Workload Analysis",
                 "which unit (L1, L2, DRAM) is busy, hit rates, and sectors per request")
WARP_STATE = Section(50, "WarpStateStats", "Warp State Statistics",
                     "why warps are not issuing: the stall reasons, cycles per issued instruction")
LAUNCH = Section(70, "LaunchStats", "Launch Statistics",
                 "grid and block size, registers, waves per SM: did the launch fill the GPU")
OCCUPANCY = Section(80, "Occupancy", "Occupancy", "theoretical and achieved warps per SM, and the limiter")
SECTIONS = (SOL, COMPUTE, MEMORY, WARP_STATE, LAUNCH, OCCUPANCY)   # in the report's Order

HIGH, LATENCY, BALANCED = 80.0, 60.0, 10.0     # percent: the SOLBottleneck rule's thresholds
UNIT_PREFIXES = {"dram": "DRAM", "fbpa": "DRAM", "fbp": "DRAM", "l1tex": "L1", "lts": "L2", "ltc": "L2"}


@dataclass(frozen=True)
class Bottleneck:
    name: str               # the rule's verdict: High Throughput, High Memory Throughput, Latency Issue, ...
    side: str               # "memory", "compute", "both" or "neither"
    unit: str | None        # the memory unit the breakdown names (L1, L2, DRAM), where memory leads
    section: Section        # the section to read next


def _check_pct(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 100:
        raise ValueError(f"{name} must be a percentage from 0 to 100, got {v!r}")
    return float(v)


def memory_unit(breakdown: dict | None) -> str | None:
    """The memory unit of the largest sub-metric in the Memory Throughput breakdown ({metric: percent})."""
    if not breakdown:
        return None
    top = max(breakdown, key=lambda k: breakdown[k])
    if breakdown[top] <= 0:
        return None
    return next((unit for prefix, unit in UNIT_PREFIXES.items() if top.startswith(prefix)), None)


def bottleneck(compute_pct: float, memory_pct: float, waves: float | None = None,
               breakdown: dict | None = None) -> Bottleneck:
    """The SOL rule: the two percentages (and optionally waves per SM and the memory breakdown) to the
    bottleneck and the section to read next."""
    c, m = _check_pct("compute_pct", compute_pct), _check_pct("memory_pct", memory_pct)
    unit = memory_unit(breakdown) if m > c else None
    workload = COMPUTE if c >= m else MEMORY
    if c >= HIGH or m >= HIGH:
        side = "compute" if c >= m else "memory"
        return Bottleneck("High Throughput", side, unit, workload)
    if c < LATENCY and m < LATENCY:
        if waves is not None and waves < 1:
            return Bottleneck("Small Grid", "neither", None, LAUNCH)
        return Bottleneck("Latency Issue", "neither", None, WARP_STATE)
    if abs(c - m) >= BALANCED:
        if c > m:
            return Bottleneck("High Compute Throughput", "compute", None, COMPUTE)
        return Bottleneck("High Memory Throughput", "memory", unit, MEMORY)
    return Bottleneck("Balanced Throughput", "both", None, workload)


def reading_order(compute_pct: float, memory_pct: float, waves: float | None = None) -> tuple:
    """The four sections to read, in order: the SOL; the workload analysis of the side it names; the warp
    states (why warps wait); the launch statistics with occupancy (did the grid fill the GPU)."""
    b = bottleneck(compute_pct, memory_pct, waves)
    second = b.section if b.section in (COMPUTE, MEMORY) else (COMPUTE if compute_pct >= memory_pct else MEMORY)
    return (SOL, second, WARP_STATE, LAUNCH)


# --- ncu --csv ----------------------------------------------------------------------------------------

# The metrics the book's measurement collects (names fixed with the harness): key -> ncu metric.
METRICS = {
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "memory_pct": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "l1_pct": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "compute_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
}
SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"


@dataclass(frozen=True)
class Launch:
    id: str                  # ncu's launch ID
    kernel: str              # the kernel's name
    metrics: dict            # {metric name: (value or None for n/a, unit)}

    def value(self, name: str) -> float | None:
        return self.metrics[name][0] if name in self.metrics else None


def _number(text: str) -> float | None:
    """An ncu value: thousands separators stripped; 'n/a' (a metric the GPU lacks) is None."""
    t = text.strip().replace(",", "")
    if t == "" or t.lower() in ("n/a", "nan"):
        return None
    return float(t)


def parse_ncu_csv(text: str) -> list[Launch]:
    """The launches in `ncu --csv` output (the details page: one row per metric). Lines before the header
    (the application's output, ==PROF== notices) are skipped. Raises ValueError when no header is found
    or a row lacks a column."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no ncu CSV header (a line starting with \"ID\") in the text")
    # ncu interleaves its own notices (==PROF== ...) and the application's output with the rows: every
    # row it writes is quoted, so only lines that open with a quote are CSV.
    body = [line for line in lines[start:] if line.startswith('"')]
    rows = csv.DictReader(io.StringIO("\n".join(body)))
    need = {"ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"}
    missing = need - set(rows.fieldnames or ())
    if missing:
        raise ValueError(f"ncu CSV header lacks {', '.join(sorted(missing))}")
    launches: dict = {}
    for n, row in enumerate(rows, start=2):
        if any(row.get(k) is None for k in need):
            raise ValueError(f"CSV row {n}: a row with missing columns")
        if not row["Metric Name"]:
            continue
        key = (row["ID"], row["Kernel Name"])
        launches.setdefault(key, {})[row["Metric Name"]] = (_number(row["Metric Value"]), row["Metric Unit"])
    return [Launch(i, k, m) for (i, k), m in launches.items()]


def profile_metrics(launch: Launch) -> dict:
    """The book's four numbers from one launch: dram_pct, memory_pct, l1_pct (percent) and
    sectors_per_request (None where a counter is missing or no request was made)."""
    out = {key: launch.value(name) for key, name in METRICS.items()}
    sectors, requests = launch.value(SECTORS), launch.value(REQUESTS)
    out["sectors_per_request"] = sectors / requests if sectors is not None and requests else None
    return out


# --- the sector model ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rates:
    """Peak rates of one GPU. l1_bytes_per_clock: what one SM's L1 data path moves per clock;
    wavefront: 'sectors' (any sectors, l1_bytes_per_clock of them a clock) or 'lines' (one 128-byte
    line per clock per request: a request costs a cycle per distinct line it touches)."""
    sms: int
    clock_hz: float
    l1_bytes_per_clock: float
    dram_bytes_per_s: float
    wavefront: str = "lines"

    def __post_init__(self):
        for name in ("sms", "clock_hz", "l1_bytes_per_clock", "dram_bytes_per_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or not math.isfinite(v):
                raise ValueError(f"{name} must be a positive number, got {v!r}")
        if self.wavefront not in ("sectors", "lines"):
            raise ValueError(f"wavefront must be 'sectors' or 'lines', got {self.wavefront!r}")

    def l1_cycles(self, a: Access) -> float:
        """Cycles one SM's L1 pipe spends on one warp request (at least one, however little it asks)."""
        if self.wavefront == "lines":
            return max(1, a.n_lines)
        return max(1.0, a.bytes_moved / self.l1_bytes_per_clock)

    @property
    def dram_bytes_per_sm_cycle(self) -> float:
        return self.dram_bytes_per_s / (self.sms * self.clock_hz)

    @property
    def ratio(self) -> float:
        """L1 bytes per clock over DRAM bytes per SM-clock: how much faster the SMs' L1s move sectors."""
        return self.l1_bytes_per_clock / self.dram_bytes_per_sm_cycle


@dataclass(frozen=True)
class Load:
    """One warp memory instruction: its access, and how many requests share each DRAM sector it touches
    (reuse = 1: every sector comes from DRAM; 8: each is fetched once and served eight times)."""
    access: Access
    reuse: float = 1.0
    store: bool = False

    def __post_init__(self):
        if isinstance(self.reuse, bool) or not isinstance(self.reuse, (int, float)) or not self.reuse >= 1:
            raise ValueError(f"reuse must be a number >= 1 (requests per DRAM sector), got {self.reuse!r}")


@dataclass(frozen=True)
class Profile:
    dram: float                  # DRAM throughput, fraction of peak
    l1: float                    # L1/TEX throughput, fraction of peak
    limiter: str                 # "DRAM" or "L1"
    sectors_per_request: float   # global-load sectors per load request (stores not counted, like ncu's)
    cycles_per_warp: float       # elapsed SM cycles per warp's worth of instructions, at `busy`

    @property
    def memory(self) -> float:
        """The SOL's Memory Throughput: the larger of its sub-units (L2 not modelled here)."""
        return max(self.dram, self.l1)


def predict(loads: list[Load], rates: Rates, busy: float = 0.82) -> Profile:
    """The DRAM and L1 percentages (as fractions) of a kernel whose every warp issues `loads` once, on a
    GPU with `rates`, the busier unit running at `busy` of its peak."""
    if isinstance(busy, bool) or not isinstance(busy, (int, float)) or not 0 < busy <= 1:
        raise ValueError(f"busy must be a fraction in (0, 1], got {busy!r}")
    if not loads:
        raise ValueError("give at least one load")
    l1 = sum(rates.l1_cycles(ld.access) for ld in loads)
    dram_bytes = sum(SECTOR * ld.access.n_sectors / ld.reuse for ld in loads)
    dram = dram_bytes / rates.dram_bytes_per_sm_cycle
    elapsed = max(l1, dram) / busy
    reads = [ld.access.n_sectors for ld in loads if not ld.store]
    spr = sum(reads) / len(reads) if reads else 0.0
    return Profile(dram=dram / elapsed, l1=l1 / elapsed, limiter="L1" if l1 > dram else "DRAM",
                   sectors_per_request=spr, cycles_per_warp=elapsed)


def reuse_for_ratio(dram_over_l1: float, load: Access, rates: Rates, stores: list[Access] = ()) -> float:
    """The reuse a kernel of this load (and these stores) would need for its DRAM percentage to be
    `dram_over_l1` times its L1 percentage: what a report's pair of numbers asks of the access pattern.
    Raises ValueError where no reuse >= 1 gives it."""
    l1 = rates.l1_cycles(load) + sum(rates.l1_cycles(s) for s in stores)
    store_dram = sum(SECTOR * s.n_sectors for s in stores) / rates.dram_bytes_per_sm_cycle
    load_dram = dram_over_l1 * l1 - store_dram          # DRAM cycles the load may take
    if load_dram <= 0:
        raise ValueError("the stores alone exceed that DRAM share")
    r = SECTOR * load.n_sectors / rates.dram_bytes_per_sm_cycle / load_dram
    if r < 1:
        raise ValueError(f"needs a reuse of {r:.3g}, below one: more DRAM traffic than the sectors touched")
    return r
