"""The book's one unit registry, and its one number formatter.

pint's stock registry makes `bit` and `byte` dimensionless, so 3 bytes + 2 parameters would be 5 and a
FLOP/byte ratio would silently become a pure number. Here information is a dimension of its own, and
so are the domain's counting units: FLOP, token, parameter, GPU, node, request, sequence and USD.
Adding bytes to parameters, or FLOP to FLOP/s, raises pint.DimensionalityError.

Import `ureg` and `Q_` from here and nowhere else: quantities from two registries cannot be combined.
"""
from __future__ import annotations

import math
import re
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

_PREFIXES = [(1e30, "Q"), (1e27, "R"), (1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"),
             (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p")]
_SCALE = {p: s for s, p in _PREFIXES if p}
# Units an SI prefix serves: large amounts of these read as 17.1 MW, 480 PFLOP, 3.35 TB/s. Only time and
# electrical units take the small prefixes (5 µs, 20 mW): a millibyte or a microFLOP is no unit an engineer uses.
_SI_LARGE = {"FLOP", "B", "bit", "W", "J", "Hz", "W·h"}
_SI_SMALL = {"s", "W", "J", "Hz", "V", "A"}
# Counts take the field's suffixes instead (69.5B parameters, 15.6T tokens, 4.39M GPU·h, 10.3M USD).
_COUNTS = {"", "token", "parameter", "GPU", "node", "request", "sequence", "USD", "param", "tokens", "parameters",
           "GPUs", "nodes", "requests", "sequences"}
_SUFFIXES = [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")]
PLAIN_RANGE = (1e-3, 1e6)     # "auto" writes magnitudes in this range as plain numbers: 0.00654, 8,192, 987,654


def q(value, unit: str = "") -> pint.Quantity:
    """A quantity in the book's registry: q(80, 'GB')."""
    return Q_(value, unit)


# Counting units read as nouns in prose: 8,192 GPUs, 2,048 tokens (a compound unit stays singular).
_PLURAL = {"token": "tokens", "parameter": "parameters", "GPU": "GPUs", "node": "nodes",
           "request": "requests", "sequence": "sequences"}


def fmt(x, unit: str | None = None, digits: int = 3, style: str = "auto") -> str:
    """Format a number or a quantity for prose and tables; the book's one formatter.

    style: "auto" (the book's default) writes magnitudes from 0.001 to a million plain (6,200 GPUs,
    0.00654 B/FLOP) and larger or smaller ones in engineering form wherever a prefix serves: an SI prefix on a
    measured unit (17.1 MW, 480 PFLOP, 3.35 TB/GPU/s, 5.00 µs), the field's suffix on a count (69.5B
    parameters, 15.6T tokens, 4.39M GPU·h); only where neither serves (a tiny probability, a USD per token)
    does it fall back to scientific form. "sci" gives 6.30e24 FLOP, "eng" 6.30 YFLOP, "plain" 6,200 GPU.
    `digits` is significant digits. Returns a str, so MyST-NB glue never sees a numpy scalar.
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
        if a == 0 or PLAIN_RANGE[0] <= a < PLAIN_RANGE[1]:
            style = "plain"
        else:
            return _engineering(magnitude, unit_text, digits) or fmt(magnitude, unit_text, digits, "sci")
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
    return f"{text} {_noun(unit_text, magnitude)}".strip()


def _noun(unit_text: str, magnitude: float) -> str:
    return _PLURAL.get(unit_text, unit_text) if magnitude != 1 else unit_text


def _split_unit(unit_text: str) -> tuple[str, str]:
    """A unit's leading factor and the rest: 'FLOP/GPU/s' -> ('FLOP', '/GPU/s'), 'GPU·h' -> ('GPU', '·h')."""
    cut = min((i for i in (unit_text.find("/"), unit_text.find("·")) if i > 0), default=len(unit_text))
    if unit_text.startswith("W·h"):
        cut = 3
    return unit_text[:cut], unit_text[cut:]


def _engineering(magnitude: float, unit_text: str, digits: int) -> str | None:
    """`magnitude unit_text` with a prefix or a count suffix, or None where neither serves."""
    lead, rest = _split_unit(unit_text)
    if lead[:1] in _SCALE and lead[1:] in _SI_LARGE | _SI_SMALL and lead not in _SI_LARGE | _SI_SMALL | {"Pa"}:
        magnitude, lead = magnitude * _SCALE[lead[0]], lead[1:]        # an already prefixed unit: 8e6 GB -> 8 PB
    a = abs(magnitude)
    if a >= 1 and lead in _SI_LARGE or a < 1 and lead in _SI_SMALL:
        scale, prefix = next(((s, p) for s, p in _PREFIXES if a >= s), _PREFIXES[-1])
        if PLAIN_RANGE[0] <= a / scale < 1e3 or prefix == "":
            return f"{_plain(magnitude / scale, digits)} {prefix}{lead}{rest}"
    if lead in _COUNTS and unit_text[:1] != "1" and 1e6 <= a < 1e15:
        scale, suffix = next((s, p) for s, p in _SUFFIXES if a >= s)
        return f"{_plain(magnitude / scale, digits)}{suffix} {_noun(unit_text, magnitude)}".strip()
    return None


# A number in scientific form and the unit after it ('1.71e7 W'); not a piece of a word or a commit hash
# ('001712e9': no number is printed with a leading zero).
SCIENTIFIC = re.compile(r"(?<![\w.])(-?(?:0|[1-9]\d*)(?:\.\d+)?e[+-]?\d+)(?![\w.])(?:\s+([^\s,;)]+))?")


def prefix_serves(text: str) -> bool:
    """Whether a number printed in scientific form ('1.71e7 W', '6.95e10 parameters') has an engineering
    form the formatter would have used instead: how the site test finds numbers not written by `fmt`."""
    m = SCIENTIFIC.fullmatch(text.strip())
    if not m:
        raise ValueError(f"not a number in scientific form: {text!r}")
    return _engineering(float(m.group(1)), m.group(2) or "", 3) is not None


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
    for scale, suffix in _SUFFIXES:
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
