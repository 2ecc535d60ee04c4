"""The book's one unit registry, and its one number formatter.

pint's stock registry makes `bit` and `byte` dimensionless, so 3 bytes + 2 parameters would be 5 and a
FLOP/byte ratio would silently become a pure number. Here information is a dimension of its own, and
so are the domain's counting units: FLOP, token, parameter, GPU, node, request, sequence and USD.
Adding bytes to parameters, or FLOP to FLOP/s, raises pint.DimensionalityError.

Import `ureg` and `Q_` from here and nowhere else: quantities from two registries cannot be combined.
"""
from __future__ import annotations

import math
from pathlib import Path

import pint

_PINT_DIR = Path(pint.__file__).parent


def _definitions() -> list[str]:
    text = (_PINT_DIR / "default_en.txt").read_text()
    if "\nbit = []\n" not in text or "@import constants_en.txt" not in text:
        raise RuntimeError("pint's default_en.txt changed shape; review utils/units.py")
    text = text.replace("\nbit = []\n", "\nbit = [information]\n")
    # flexparser cannot follow @import from a list of lines, so inline the one file it imports.
    text = text.replace("@import constants_en.txt", (_PINT_DIR / "constants_en.txt").read_text())
    return text.splitlines()


ureg = pint.UnitRegistry(None)
ureg.load_definitions(_definitions())
for _line in (
    # "_" means no separate symbol, so the short form prints the name itself (6.30e24 FLOP).
    "FLOP = [compute] = _ = flop",
    "token = [token] = _ = tokens",
    "parameter = [parameter] = _ = param = params",
    "GPU = [gpu] = _ = gpu = GPUs",
    "node = [node] = _ = nodes",
    "request = [request] = _ = req = requests",
    "sequence = [sequence] = _ = seq = sequences",
    "USD = [currency] = _ = usd = dollar",
):
    ureg.define(_line)
ureg.formatter.default_format = "~P"
Q_ = ureg.Quantity
DimensionalityError = pint.DimensionalityError

_PREFIXES = [(1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"),
             (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n")]


def q(value, unit: str = "") -> pint.Quantity:
    """A quantity in the book's registry: q(80, 'GB')."""
    return Q_(value, unit)


# Counting units read as nouns in prose: 8,192 GPUs, 2,048 tokens (a compound unit stays singular).
_PLURAL = {"token": "tokens", "parameter": "parameters", "GPU": "GPUs", "node": "nodes",
           "request": "requests", "sequence": "sequences"}


def fmt(x, unit: str | None = None, digits: int = 3, style: str = "auto") -> str:
    """Format a number or a quantity for prose and tables; the book's one formatter.

    style: "sci" gives 6.30e24 FLOP, "eng" gives 6.30 YFLOP, "plain" gives 6,200 GPU,
    "auto" picks plain for values from 0.01 to 1e6, sci otherwise. `digits` is significant digits.
    Returns a str, so MyST-NB glue never sees a numpy scalar.
    """
    if isinstance(x, pint.Quantity):
        if unit is not None:
            x = x.to(unit)
        magnitude, unit_text = float(x.magnitude), "" if x.unitless else f"{x.units:~P}"
    else:
        magnitude, unit_text = float(x), unit or ""
    if not math.isfinite(magnitude):
        raise ValueError(f"cannot format a non-finite value: {magnitude}")
    a = abs(magnitude)
    if style == "auto":
        style = "plain" if (a == 0 or 0.01 <= a < 1e6) else "sci"
    if style == "sci":
        text = f"{magnitude:.{digits - 1}e}"
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    elif style == "eng":
        scale, prefix = next(((s, p) for s, p in _PREFIXES if a >= s), _PREFIXES[-1])
        text = _plain(magnitude / scale, digits)
        unit_text = prefix + unit_text
    elif style == "plain":
        text = _plain(magnitude, digits)
    else:
        raise ValueError(f"unknown style {style!r}")
    if unit_text in _PLURAL and magnitude != 1:
        unit_text = _PLURAL[unit_text]
    return f"{text} {unit_text}".strip()


def _plain(v: float, digits: int) -> str:
    """Round to `digits` significant digits, thousands separators, no trailing '.0'."""
    if v == 0:
        return "0"
    if v == int(v) and abs(v) < 1e6:  # an exact count reads as one: 80 layers, not 80.0
        return f"{int(v):,}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    return f"{round(v, decimals):,.{decimals}f}"


def listing(items) -> str:
    """Texts as prose lists them: "a", "a and b", "a, b and c"."""
    items = list(items)
    return " and ".join(items) if len(items) < 3 else f"{', '.join(items[:-1])} and {items[-1]}"


def pct(fraction, digits: int = 3) -> str:
    """A fraction as a percentage: pct(0.4) -> '40%'."""
    f = float(fraction.to("").magnitude) if isinstance(fraction, pint.Quantity) else float(fraction)
    text = _plain(100 * f, digits)
    return (text.rstrip("0").rstrip(".") if "." in text else text) + "%"


def short(x, digits: int = 3) -> str:
    """A count the way the field says it, without its unit: 70B, 15.6T, 8.19k (prose adds the noun)."""
    v = float(x.magnitude) if isinstance(x, pint.Quantity) else float(x)
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            text = _plain(v / scale, digits)
            return (text.rstrip("0").rstrip(".") if "." in text else text) + suffix
    return _plain(v, digits)


def bound(error: float, below: float = 1e-12) -> str:
    """A rounding residue printed as a bound: 'below 1e-12', or the value itself when it is not noise.

    An error of 3e-16 differs with the thread count and the BLAS build, so printing it makes a notebook's
    outputs machine-dependent; the bound is what the reader needs and is the same everywhere."""
    error = float(error)
    if not math.isfinite(error) or error < 0:
        raise ValueError(f"an error must be finite and >= 0, got {error}")
    return f"below {below:.0e}".replace("e-0", "e-") if error < below else fmt(error, digits=2, style="sci")


def num(x, digits: int = 3) -> str:
    """A plain count for prose and tables, without trailing zeros: 8, 59.5, 300."""
    text = fmt(x, style="plain", digits=digits)
    return text.rstrip("0").rstrip(".") if "." in text.split(" ")[0] else text


def counted(x, noun: str, digits: int = 3) -> str:
    """A number with a noun that is not a unit, for prose: counted(1280, "nodes") -> '1,280 nodes'."""
    return f"{fmt(x, digits=digits)} {noun}"


def duration(x, digits: int = 3) -> str:
    """A time for prose: µs, ms or s below a minute, then minutes, hours or days (never e-notation)."""
    s = float(x.to("s").magnitude) if isinstance(x, pint.Quantity) else float(x)
    for limit, unit in ((1e-3, "µs"), (1, "ms"), (120, "s"), (2 * 3600, "min"), (2 * 86400, "h")):
        if abs(s) < limit:
            return fmt(Q_(s, "s").to(unit), digits=digits)
    return fmt(Q_(s, "s").to("day"), digits=digits)


def auto_bytes(x, digits: int = 3) -> str:
    """Bytes in the decimal prefix that reads best: 512 MB, 1.61 TB (GiB only where a chapter says so)."""
    b = float(x.to("B").magnitude) if isinstance(x, pint.Quantity) else float(x)
    for scale, unit in ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(b) >= scale:
            return fmt(Q_(b, "B").to(unit), digits=digits)
    return fmt(Q_(b, "B"), digits=digits)


def escape_dollars(text: str) -> str:
    """A source title's dollar signs are prices, not math: escape them for MyST."""
    return text.replace("$", "\\$")


def entry_name(entry) -> str:
    """A catalog entry's name without its detail, for tables and figures: 'NVIDIA GB200 NVL72', 'Kimi K2'."""
    return entry.short_name.split(",")[0]
