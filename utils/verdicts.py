"""A claim from the source documents and the book's verdict on it: one of four, by one rule.

- holds: true as written, at the inputs the source names or implies;
- holds under a stated reading: true under a reading the source's own words admit; `reading` quotes the
  words it reads (in quotation marks, verbatim from the claim's quote) and names the reading, and the page
  shows what changes under the others;
- wrong as stated: false under every reading the words admit (an input back-solved to make the claim
  come out is not a reading; two halves that need different readings are not one reading);
  `nearest_true` gives the statement that is true;
- cannot be checked: the source gives no number or no inputs to check.

A chain module's `claims()` returns `Claim`s judged on the claim's own inputs; the verdict comes from
the arithmetic (`judge`, `within`), and the reason is built from formatted numbers, never typed ones.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

HOLDS, READING, WRONG, UNCHECKABLE = ("holds", "holds under a stated reading", "wrong as stated",
                                      "cannot be checked")
VERDICTS = (HOLDS, READING, WRONG, UNCHECKABLE)
# A quoted span: "..." or curly double quotes, or '...' / curly single quotes standing apart from a word (so an
# apostrophe in "the source's" opens nothing).
_QUOTED = re.compile(r'"([^"]+)"|\u201c([^\u201d]+)\u201d|(?<![\w])[\'\u2018]([^\'\u2019]+?)[\'\u2019](?![\w])')


def quoted_spans(text: str) -> list[str]:
    """The spans of `text` in quotation marks."""
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]


def _words(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").replace("\u2018", "'").casefold().split())


@dataclass(frozen=True)
class Claim:
    name: str                 # page-local id: glue keys claim-<name>-quote, -verdict, -reason
    quote: str                # the source's words
    source: str               # which document and paragraph
    claimed: str              # the number the source asserts, formatted
    derived: str              # what the chain gives on the claim's own inputs, formatted
    verdict: str
    reason: str               # one line, numbers formatted from code
    reading: str = ""         # for "holds under a stated reading": the reading taken
    nearest_true: str = ""    # for "wrong as stated": the true statement

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"claim {self.name}: verdict must be one of {VERDICTS}, got {self.verdict!r}")

    def problems(self) -> list[str]:
        """What the rule asks of this verdict and the claim lacks (tests/chains/test_contract.py holds every
        chain module's claims to none)."""
        out = []
        if self.verdict == READING and not self.reading:
            out.append("'holds under a stated reading' needs the reading")
        elif self.verdict == READING and not any(_words(span.strip(" .,;:")) in _words(self.quote)
                                                 for span in quoted_spans(self.reading)):
            out.append("a reading quotes the words it reads: put the source's words it reads, verbatim from the "
                       "claim's quote, in quotation marks")
        if self.verdict == WRONG and not self.nearest_true:
            out.append("'wrong as stated' needs the nearest true statement")
        return out

    def record(self) -> dict:
        return {k: getattr(self, k) for k in ("name", "quote", "source", "claimed", "derived", "verdict",
                                               "reason", "reading", "nearest_true")}


def ratio(derived, claimed) -> float:
    """derived / claimed as a plain float (quantities in any compatible units)."""
    r = derived / claimed
    return float(r.to("").magnitude) if hasattr(r, "units") else float(r)


def within(derived, claimed, rel: float) -> bool:
    """True when derived is within a relative `rel` of claimed: the tolerance the claim's wording
    allows (two significant figures: half a unit of the second; "about": the rounding it implies)."""
    return abs(ratio(derived, claimed) - 1) <= rel


def sig_fig_tolerance(claimed, figures: int = 2) -> float:
    """Half a unit in the last stated figure, relative: 6.3e24 to two figures -> 0.05/6.3."""
    import math
    v = abs(float(claimed.magnitude if hasattr(claimed, "units") else claimed))
    unit = 10 ** (math.floor(math.log10(v)) - figures + 1)
    return 0.5 * unit / v


def rounds_to(derived, claimed, figures: int) -> bool:
    """True when `derived`, rounded to `figures` significant figures, is `claimed` (the claim's own precision):
    5.85 million to one figure is 6 million, so it does not round to a claimed 10 million, though it is within
    sig_fig_tolerance's +-50% of it. Quantities are compared in the claimed quantity's unit."""
    import math
    if hasattr(claimed, "units"):
        derived, claimed = derived.to(claimed.units).magnitude, claimed.magnitude
    d, c = float(derived.magnitude if hasattr(derived, "units") else derived), float(claimed)
    if c == 0 or d == 0:
        return d == c
    def rounded(x):
        return round(x, figures - 1 - math.floor(math.log10(abs(x))))
    return math.isclose(rounded(d), rounded(c), rel_tol=1e-12)


def judge(derived, claimed, rel: float) -> str:
    """HOLDS when the chain lands within the claim's tolerance, WRONG otherwise. A chain that needs a
    reading to land sets READING itself, naming it."""
    return HOLDS if within(derived, claimed, rel) else WRONG
