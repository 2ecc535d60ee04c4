"""What one warp load costs: the 32-byte sectors (and 128-byte cache lines) its 32 addresses touch.

    from utils.gpu.coalescing import analyse, strided
    a = analyse(strided(0, stride_bytes=8, width=4), width=4)
    a.sectors, a.bytes_requested, a.bytes_moved, a.efficiency      # 8, 128, 256, 0.5

A warp issues one load instruction for its 32 lanes; the memory system turns the lanes' addresses into
requests for 32-byte sectors, and every sector touched is moved whole, however few of its bytes a lane
wanted. So the cost of a load is the number of distinct sectors its active lanes touch, and its
efficiency is the bytes the lanes asked for over the bytes moved (32 per sector).

`analyse` takes the 32 lane addresses in bytes (None for an inactive lane, which touches nothing) and
the access width in bytes, one width for every lane or one per lane. A lane reads bytes
[address, address + width), so an access that straddles a sector boundary touches both sectors (on a
GPU a load must be naturally aligned to its width; `aligned` says whether every lane's is, and the
count for a misaligned one is what the bytes would cost if the hardware split it). Bytes two lanes both
ask for (a broadcast) are counted once: they are fetched once.

`pattern` is the address-delta test: with the active lanes' addresses in lane order, a constant delta
per lane equal to the width is contiguous, a delta of zero a broadcast, any other constant delta a
stride, and anything else irregular. Standard library only.

Chapters: coalescing, reading-a-kernel-profile.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

WARP = 32            # lanes per warp
SECTOR = 32          # bytes per sector: the unit the memory system moves
LINE = 128           # bytes per cache line (four sectors)
WIDTHS = (1, 2, 4, 8, 16)   # bytes one lane can load in one instruction (16: a 128-bit vector load)


@dataclass(frozen=True)
class Access:
    lanes: int                   # active lanes
    sectors: tuple               # indices (address // 32) of the distinct sectors touched, ascending
    lines: tuple                 # indices (address // 128) of the distinct cache lines touched, ascending
    bytes_requested: int         # distinct bytes the active lanes asked for
    aligned: bool                # every active lane's address a multiple of its width
    pattern: str                 # 'contiguous', 'broadcast', 'strided', 'irregular' or 'none'
    stride: int | None           # bytes between consecutive lanes where the pattern has one

    @property
    def n_sectors(self) -> int:
        return len(self.sectors)

    @property
    def n_lines(self) -> int:
        return len(self.lines)

    @property
    def bytes_moved(self) -> int:
        return SECTOR * len(self.sectors)

    @property
    def efficiency(self) -> float:
        """Bytes requested over bytes moved (1.0 when no lane is active: nothing asked, nothing moved)."""
        return self.bytes_requested / self.bytes_moved if self.sectors else 1.0


def _widths(width, n: int) -> list[int]:
    ws = [width] * n if isinstance(width, int) and not isinstance(width, bool) else list(width)
    if len(ws) != n:
        raise ValueError(f"width: one per lane ({n}), got {len(ws)}")
    for w in ws:
        if isinstance(w, bool) or not isinstance(w, int) or w not in WIDTHS:
            raise ValueError(f"width must be one of {WIDTHS} bytes, got {w!r}")
    return ws


def analyse(addresses: Sequence[int | None], width: int | Sequence[int] = 4) -> Access:
    """The sectors, lines and bytes of one warp load: `addresses` are the 32 lanes' byte addresses
    (None for an inactive lane); `width` is the bytes each lane loads (one for all, or one per lane)."""
    addrs = list(addresses)
    if len(addrs) != WARP:
        raise ValueError(f"a warp has {WARP} lanes: give {WARP} addresses (None for inactive), got {len(addrs)}")
    ws = _widths(width, WARP)
    active = []
    for lane, (a, w) in enumerate(zip(addrs, ws)):
        if a is None:
            continue
        if isinstance(a, bool) or not isinstance(a, int) or a < 0:
            raise ValueError(f"lane {lane}: an address is a non-negative integer (bytes), got {a!r}")
        active.append((lane, a, w))
    touched = set()
    for _, a, w in active:
        touched.update(range(a, a + w))
    sectors = tuple(sorted({b // SECTOR for b in touched}))
    lines = tuple(sorted({b // LINE for b in touched}))
    pattern, stride = classify([(lane, a) for lane, a, _ in active], {w for *_, w in active})
    return Access(lanes=len(active), sectors=sectors, lines=lines, bytes_requested=len(touched),
                  aligned=all(a % w == 0 for _, a, w in active), pattern=pattern, stride=stride)


def classify(lane_addresses: list[tuple[int, int]], widths: set[int]) -> tuple[str, int | None]:
    """The address-delta test on (lane, address) pairs of the active lanes, in lane order: a constant
    delta per lane (over any inactive lanes between) is contiguous when it equals the one width, a
    broadcast when zero, a stride otherwise; any other pattern is irregular."""
    if not lane_addresses:
        return "none", None
    if len(lane_addresses) == 1:
        return "contiguous", None
    (l0, a0), (l1, a1) = lane_addresses[0], lane_addresses[1]
    if (a1 - a0) % (l1 - l0):
        return "irregular", None
    d = (a1 - a0) // (l1 - l0)
    if any(a != a0 + d * (lane - l0) for lane, a in lane_addresses):
        return "irregular", None
    if d == 0:
        return "broadcast", 0
    if len(widths) == 1 and d == next(iter(widths)):
        return "contiguous", d
    return "strided", d


def strided(base: int, stride_bytes: int, width: int = 4, *, active: Sequence[bool] | None = None) -> list:
    """The 32 addresses of lanes reading base + lane * stride_bytes (None where `active` is False)."""
    mask = list(active) if active is not None else [True] * WARP
    if len(mask) != WARP:
        raise ValueError(f"active: one flag per lane ({WARP})")
    return [base + lane * stride_bytes if on else None for lane, on in enumerate(mask)]


def column_walk(row_elements: int, bytes_per_element: int, column: int = 0, first_row: int = 0) -> list:
    """A warp walking down a column of a row-major matrix: lane i reads element (first_row + i, column),
    so consecutive lanes are a whole row apart."""
    row_bytes = row_elements * bytes_per_element
    return [(first_row + lane) * row_bytes + column * bytes_per_element for lane in range(WARP)]


def row_walk(row_elements: int, bytes_per_element: int, row: int = 0, first_column: int = 0) -> list:
    """A warp walking along a row of a row-major matrix: lane i reads element (row, first_column + i)."""
    base = row * row_elements * bytes_per_element
    return [base + (first_column + lane) * bytes_per_element for lane in range(WARP)]
