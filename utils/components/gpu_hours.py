"""GPU-hours billing: usage records in, money out, with the three decisions made explicitly.

1. The numeric type. Money is Decimal and time is whole seconds (int). A record's usage is an integer
   count of GPU-seconds, usage is summed as integers (exact), and each invoice line is priced once:
   GPU-seconds x price per GPU-hour / 3,600, rounded half up to the cent. A float price is refused: the
   float 3.99 is 3.9900000000000002131628..., and a float running total drifts (float_running_sum shows
   by how much, exactly, without adding a billion floats one by one).
2. Partial hours. The rounding rule is a parameter, applied per record: "second" bills the seconds used,
   "minute" and "hour" bill every started minute or hour. billed_seconds does it in integer arithmetic;
   the float route (hours = seconds / 3600, then ceil) bills an extra unit whenever the float lands a
   hair above a whole number.
3. Records that make no sense are refused with a reason, never repaired: an end before its start (or
   at it), a GPU count that is not a whole number >= 1, a time that is not whole seconds, a SKU with no
   price, a duplicated record id, and two records that claim the same device for the same second
   (both are refused: which one is right is a question for the source, not for the bill).

Chapters: gpu-hours-billing.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from utils.components.intervals import overlaps

ROUNDINGS = {"second": 1, "minute": 60, "hour": 3600}
SECONDS_PER_HOUR = 3600
CENT = Decimal("0.01")


@dataclass(frozen=True)
class Usage:
    """One usage record: `gpus` GPUs of type `sku` on `device` (a GPU or a node: the unit that cannot
    be in two records at once) for tenant `tenant`, from `start` to `end` in epoch seconds, half-open."""
    id: str
    tenant: str
    device: str
    sku: str
    gpus: int
    start: int
    end: int

    @property
    def seconds(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Refusal:
    record: Usage
    reason: str


@dataclass
class Bill:
    rounding: str
    lines: dict = field(default_factory=dict)        # (tenant, sku) -> Decimal, to the cent
    invoices: dict = field(default_factory=dict)     # tenant -> Decimal: the sum of its lines
    gpu_seconds: dict = field(default_factory=dict)  # (tenant, sku) -> GPU-seconds billed (int)
    used_seconds: int = 0                            # GPU-seconds actually used, before rounding
    billed_seconds: int = 0                          # GPU-seconds billed, after the rounding rule
    refused: list = field(default_factory=list)      # Refusal, in record order

    @property
    def total(self) -> Decimal:
        return sum(self.invoices.values(), Decimal("0.00"))


def _whole(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def price_of(value) -> Decimal:
    """A price per GPU-hour as a Decimal; a float is refused (it is already not the price)."""
    if isinstance(value, float):
        raise TypeError(f"a price must be a Decimal or a string, not a float ({value!r} is "
                        f"{Decimal(value)} as a float)")
    d = Decimal(value)
    if not d.is_finite() or d < 0:
        raise ValueError(f"a price must be a finite amount >= 0, got {value!r}")
    return d


def billed_seconds(seconds: int, rounding: str = "second") -> int:
    """Seconds billed for a record of `seconds` under the rounding rule: every started unit, in ints."""
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
    if not _whole(seconds) or seconds < 0:
        raise ValueError(f"seconds must be a whole number >= 0, got {seconds!r}")
    unit = ROUNDINGS[rounding]
    return -(-seconds // unit) * unit


def billed_seconds_float(seconds: int, rounding: str = "second") -> int:
    """The float route, for contrast: hours as a float, then the started units by math.ceil."""
    unit = ROUNDINGS[rounding]
    hours = seconds / SECONDS_PER_HOUR
    return math.ceil(hours * (SECONDS_PER_HOUR / unit)) * unit


def problem(r: Usage, prices) -> str | None:
    """Why one record makes no sense on its own, or None."""
    for name in ("start", "end"):
        v = getattr(r, name)
        if not _whole(v):
            return f"{name} must be whole seconds (an int), got {v!r}"
    if r.end < r.start:
        return f"ends {r.start - r.end} s before it starts"
    if r.end == r.start:
        return "zero length: ends when it starts"
    if not _whole(r.gpus) or r.gpus < 1:
        return f"GPU count must be a whole number >= 1, got {r.gpus!r}"
    if r.sku not in prices:
        return f"no price for sku {r.sku!r}"
    return None


def validate(records, prices) -> tuple[list[Usage], list[Refusal]]:
    """Split records into the billable and the refused (each with its reason), in record order."""
    reasons: dict[int, str] = {}
    seen: dict[str, int] = {}
    for i, r in enumerate(records):
        why = problem(r, prices)
        if why is None and r.id in seen:
            why = f"duplicate id: record {r.id!r} already seen"
        if why is not None:
            reasons[i] = why
        seen.setdefault(r.id, i)
    by_device = defaultdict(list)
    for i, r in enumerate(records):
        if i not in reasons:
            by_device[r.device].append(i)
    for device, idx in by_device.items():
        for a, b in overlaps([(records[i].start, records[i].end) for i in idx]):
            ra, rb = records[idx[a]], records[idx[b]]
            shared = min(ra.end, rb.end) - max(ra.start, rb.start)
            for mine, other in ((idx[a], rb), (idx[b], ra)):
                reasons.setdefault(mine, f"overlaps record {other.id!r} on device {device!r} for {shared} s")
    good = [r for i, r in enumerate(records) if i not in reasons]
    return good, [Refusal(records[i], reasons[i]) for i in sorted(reasons)]


def amount(gpu_seconds: int, price_per_hour: Decimal) -> Decimal:
    """GPU-seconds at a price per GPU-hour, rounded half up to the cent, priced once."""
    return (Decimal(gpu_seconds) * price_per_hour / SECONDS_PER_HOUR).quantize(CENT, ROUND_HALF_UP)


def bill(records, prices, rounding: str = "second") -> Bill:
    """The bill for `records` at `prices` ({sku: Decimal or str per GPU-hour}) under `rounding`."""
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
    prices = {k: price_of(v) for k, v in prices.items()}
    records = list(records)
    good, refused = validate(records, prices)
    out = Bill(rounding=rounding, refused=refused)
    usage = defaultdict(int)
    for r in good:
        usage[(r.tenant, r.sku)] += r.gpus * billed_seconds(r.seconds, rounding)
        out.used_seconds += r.gpus * r.seconds
    out.billed_seconds = sum(usage.values())
    for key in sorted(usage):
        out.gpu_seconds[key] = usage[key]
        out.lines[key] = amount(usage[key], prices[key[1]])
        out.invoices[key[0]] = out.invoices.get(key[0], Decimal("0.00")) + out.lines[key]
    return out


# --- the float trap, computed exactly -----------------------------------------------------------
FORMATS = {"float64": 53, "float32": 24}   # significand bits


def _round_to(x: Fraction, bits: int) -> Fraction:
    """x rounded to the nearest float with `bits` significand bits (ties to even), for x > 0."""
    if x == 0:
        return x
    e = math.floor(math.log2(x))
    while Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    ulp = Fraction(2) ** (e - bits + 1)
    q, r = divmod(x, ulp)
    if r > ulp / 2 or (r == ulp / 2 and q % 2):
        q += 1
    return q * ulp


def _segments(c: Fraction, n: int, bits: int):
    """The float running sum s_{i+1} = fl(s_i + c), n times, as segments (i0, s0, k, d): from step i0
    the sum is s0 and each of the next k steps adds exactly d. Within one binade [2^E, 2^(E+1)) every
    sum is a multiple of the same ulp, so fl(s + c) - s is one constant d until the sum leaves it: a
    month of per-second records costs a few hundred segments, not billions of additions."""
    s, i = Fraction(0), 0
    while i < n:
        nxt = _round_to(s + c, bits)
        d = nxt - s
        if s == 0 or d == 0:
            k = n - i if d == 0 else 1              # a sum too large for c stops growing for good
            yield i, s, k, d
            s, i = s + k * d, i + k
            continue
        e = math.floor(math.log2(s))
        while Fraction(2) ** (e + 1) <= s:
            e += 1
        while Fraction(2) ** e > s:
            e -= 1
        ulp, top = Fraction(2) ** (e - bits + 1), Fraction(2) ** (e + 1)
        tie = (c / ulp) - math.floor(c / ulp) == Fraction(1, 2)
        # steps j with s + j d + c < top stay on this binade's grid and add exactly d. On a tie the
        # rounding goes to the even multiple of the ulp, so from an even sum d is constant too; from an
        # odd one, take that one step alone
        odd = tie and (s / ulp) % 2 == 1
        k = 1 if odd else max(1, min(n - i, math.ceil((top - s - c) / d)))
        yield i, s, k, d
        s, i = s + k * d, i + k


def float_running_sum(c: float, n: int, fmt: str = "float64") -> float:
    """What `total = 0.0; for _ in range(n): total += c` gives, exactly, in float64 or float32."""
    bits = FORMATS[fmt]
    cf = _round_to(Fraction(c), bits)
    s = Fraction(0)
    for _i0, s0, k, d in _segments(cf, n, bits):
        s = s0 + k * d
    return float(s)


def first_off_by(c: float, exact: Fraction, threshold: Fraction, n: int, fmt: str = "float64") -> int | None:
    """The first count of additions i <= n at which the float running sum of c is off from i x exact by
    at least `threshold`, or None. Within a segment the error is linear in the step, so it is solved."""
    bits = FORMATS[fmt]
    cf = _round_to(Fraction(c), bits)
    for i0, s0, k, d in _segments(cf, n, bits):
        e0, slope = s0 - i0 * exact, d - exact          # error after i0 + j additions: e0 + j slope
        if abs(e0) >= threshold:
            return i0
        for sign in (1, -1):
            if sign * slope > 0:
                j = math.ceil((threshold - sign * e0) / (sign * slope))
                if j <= k:
                    return i0 + j
    return None
