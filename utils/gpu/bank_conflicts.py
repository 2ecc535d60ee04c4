"""What one warp's shared-memory request costs: the banks its lanes hit and the wavefronts it takes.

    from utils.gpu.bank_conflicts import analyse, column_walk
    r = analyse(column_walk(pitch=32), width=4)
    r.degree, r.wavefronts            # 32, 32: every lane in bank 0, the request replayed 32 times
    analyse(column_walk(pitch=33)).wavefronts                      # 1: padding by one column

The rule implemented (NVIDIA, CUDA C++ Programming Guide, "Shared Memory" for compute capability 5.x
and later, which Hopper keeps): shared memory has 32 banks; successive 4-byte words map to successive
banks, so the bank of byte address a is (a // 4) % 32; each bank serves one 4-byte word per clock. A
request whose lanes hit distinct banks is served at once (one wavefront). Lanes that read the same
4-byte word are served together (a broadcast; for a write, one of them wins): they are not a conflict.
Lanes that hit different words of one bank are serialised: the request is replayed once per distinct
word, so it takes as many wavefronts as the most-loaded bank has distinct words.

Wide accesses: a lane's 8-byte access covers two consecutive words (two banks), a 16-byte access four.
The hardware serves them in phases, as the guide describes for 64-bit and 128-bit accesses: an 8-byte
request is split into two half-warps (lanes 0-15, 16-31), a 16-byte request into four quarter-warps
(lanes 0-7, 8-15, ...), and conflicts are counted within a phase only (one phase moves at most
32 words = 128 bytes, one wavefront's worth). So a request takes, summed over its phases, the largest
number of distinct words any bank must serve in that phase; phases with no active lane cost nothing.
The phase split of 8- and 16-byte accesses is the documented rule for those widths; on recent chips
the profiler's wavefront counts agree with it for the aligned patterns used here, but NVIDIA does not
promise it for every pattern, so treat it as the model this book uses.

`degree` is the conflict degree: the largest number of distinct words one bank serves within one
phase (1: conflict-free). `wavefronts` = phases x degree when every phase is equally loaded.

Addresses are byte offsets into shared memory, one per lane (None for an inactive lane, which asks for
nothing); fewer than 32 means the remaining lanes are inactive. Each address must be a multiple of the
access width, as the hardware requires. Standard library only.

Chapters: bank-conflicts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

WARP = 32            # lanes per warp
BANKS = 32           # shared-memory banks
BANK_BYTES = 4       # bytes per bank word: successive 4-byte words map to successive banks
WIDTHS = (4, 8, 16)  # bytes one lane may access in one request (32-, 64-, 128-bit)


def bank(address: int) -> int:
    """The bank of a byte address: (address // 4) % 32."""
    return (address // BANK_BYTES) % BANKS


def lanes_per_phase(width: int) -> int:
    """Lanes served together: 32 for 4-byte accesses, 16 (a half-warp) for 8-byte, 8 for 16-byte."""
    _check_width(width)
    return WARP * BANK_BYTES // width


@dataclass(frozen=True)
class Request:
    width: int                       # bytes per lane
    banks: tuple                     # per lane: the bank of its address (None where inactive)
    words_per_bank: tuple            # per bank (32): distinct 4-byte words it serves over the request
    phase_degrees: tuple             # per phase: the most distinct words one bank serves (0: no lane active)
    lanes: int                       # active lanes

    @property
    def wavefronts(self) -> int:
        """Shared-memory wavefronts (passes through the banks) the request takes: 1 is conflict-free."""
        return sum(self.phase_degrees)

    @property
    def degree(self) -> int:
        """The conflict degree: n for an n-way conflict, 1 for none, 0 when no lane is active."""
        return max(self.phase_degrees)

    @property
    def ideal(self) -> int:
        """The fewest wavefronts these lanes could take: one per phase that has an active lane."""
        return sum(1 for d in self.phase_degrees if d)

    @property
    def replays(self) -> int:
        """Wavefronts beyond the ideal: what the conflict costs."""
        return self.wavefronts - self.ideal


def _check_width(width) -> None:
    if isinstance(width, bool) or not isinstance(width, int) or width not in WIDTHS:
        raise ValueError(f"width must be one of {WIDTHS} bytes, got {width!r}")


def analyse(addresses: Sequence[int | None], width: int = 4) -> Request:
    """Banks, words per bank and wavefronts of one warp's shared-memory request (see the module doc)."""
    _check_width(width)
    addrs = list(addresses)
    if len(addrs) > WARP:
        raise ValueError(f"a warp has {WARP} lanes: at most {WARP} addresses, got {len(addrs)}")
    addrs += [None] * (WARP - len(addrs))
    for lane, a in enumerate(addrs):
        if a is None:
            continue
        if isinstance(a, bool) or not isinstance(a, int) or a < 0:
            raise ValueError(f"lane {lane}: an address is a non-negative integer (bytes), got {a!r}")
        if a % width:
            raise ValueError(f"lane {lane}: address {a} is not a multiple of the access width {width} B")
    words = width // BANK_BYTES
    per_phase = lanes_per_phase(width)
    all_words: dict[int, set] = {b: set() for b in range(BANKS)}
    degrees = []
    for start in range(0, WARP, per_phase):
        phase: dict[int, set] = {}
        for a in addrs[start:start + per_phase]:
            if a is None:
                continue
            for k in range(words):
                w = a // BANK_BYTES + k
                phase.setdefault(w % BANKS, set()).add(w)
                all_words[w % BANKS].add(w)
        degrees.append(max((len(s) for s in phase.values()), default=0))
    return Request(width=width, banks=tuple(None if a is None else bank(a) for a in addrs),
                   words_per_bank=tuple(len(all_words[b]) for b in range(BANKS)),
                   phase_degrees=tuple(degrees), lanes=sum(a is not None for a in addrs))


# --- walks over a 2-D tile stored row-major in shared memory with a row pitch (elements per row) ----

def column_walk(pitch: int, column: int = 0, elem_bytes: int = 4, first_row: int = 0) -> list:
    """Lane i reads element (first_row + i, column) of a tile whose rows are `pitch` elements apart:
    what a warp does when it reads a column of the tile (the transpose's second half)."""
    _check_pitch(pitch, column)
    return [((first_row + lane) * pitch + column) * elem_bytes for lane in range(WARP)]


def row_walk(pitch: int, row: int = 0, elem_bytes: int = 4, first_column: int = 0) -> list:
    """Lane i reads element (row, first_column + i): a warp reading (or writing) one row of the tile."""
    _check_pitch(pitch, 0)
    return [(row * pitch + first_column + lane) * elem_bytes for lane in range(WARP)]


def _check_pitch(pitch, column) -> None:
    if isinstance(pitch, bool) or not isinstance(pitch, int) or pitch < 1:
        raise ValueError(f"pitch must be a whole number of elements >= 1, got {pitch!r}")
    if isinstance(column, bool) or not isinstance(column, int) or column < 0:
        raise ValueError(f"column must be a non-negative integer, got {column!r}")


def pitch_rule(pitch: int, elem_bytes: int = 4) -> int:
    """The conflict degree of a column walk with this row pitch, in closed form: gcd(pitch, L) where L
    is the lanes per phase (32 for 4-byte elements, 16 for 8-byte, 8 for 16-byte).

    Why: lane i's element starts at word i*p*w (w = elem_bytes / 4 words per element), i.e. in bank
    group (i*p) mod L when the 32 banks are seen as L groups of w banks. Lanes i and j of one phase
    share a group exactly when L divides (i - j)*p, i.e. when L/gcd(p, L) divides i - j; among the L
    lanes of a phase each group is therefore hit by gcd(p, L) lanes, each at a different word."""
    _check_pitch(pitch, 0)
    return math.gcd(pitch, lanes_per_phase(elem_bytes))
