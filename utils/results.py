"""Publishing a chapter's numbers: glue for the prose, and a machine-readable record in the outputs.

    from utils.results import Page
    page = Page("six-nd")
    page.text("n_params", N)                       # a number the prose uses: glued, not published
    page.publish("train_flops", C, "FLOP", label="Training compute")   # a headline result
    page.claim("train-flops", quote=..., source=..., claimed=..., derived=..., verdict="holds", reason=...)
    page.emit()                                    # last cell (tagged remove-cell): the JSON record

A chapter whose chain lives in utils/chains/ publishes through its module in one call each:
    page.results(chain)            # every Result of the module, from compute()'s output
    page.claims()                  # every Claim of the module's claims(), judged on its own inputs
    page.glue({"ex1-flops": ...})  # many prose numbers at once (exercise answers, comparisons)

`emit` displays two JSON outputs that the re-derive command and the book's index pages read from a
notebook: RESULTS_MIME = {name: {"value": float, "unit": str, "kind": "derived"|"measured", "label"}},
CLAIMS_MIME = [{name, quote, source, claimed, derived, verdict, reason}]. Every value is formatted by
utils.units.fmt before glue, so MyST-NB never sees a numpy scalar.
"""
from __future__ import annotations

import json

from utils.units import fmt, pct
from utils.verdicts import VERDICTS, Claim

RESULTS_MIME = "application/vnd.aibook.results+json"
CLAIMS_MIME = "application/vnd.aibook.claims+json"
RESULT_KINDS = ("derived", "measured")


def _glue(name: str, text: str) -> None:
    # A plain str: its text/plain is the quoted repr, which MyST-NB literal_evals back to exactly this
    # text. (An unquoted "1,280" would come back as the tuple (1, 280).)
    from myst_nb import glue  # imported late: tests and the CLI use this module without a kernel
    glue(name, str(text), display=False)


def _as_record(x, unit: str | None) -> dict:
    if hasattr(x, "units"):
        x = x.to(unit) if unit else x
        return {"value": float(x.magnitude), "unit": "" if x.unitless else f"{x.units:~C}"}
    return {"value": float(x), "unit": unit or ""}


class Page:
    def __init__(self, slug: str):
        self.slug = slug
        self.published: dict[str, dict] = {}
        self.claims_made: list[dict] = []
        self._glued: dict[str, str] = {}

    def text(self, name: str, x, unit: str | None = None, *, percent: bool = False, **fmt_args) -> str:
        """Glue a formatted number for the prose ({glue:text}`name`) and return the text."""
        if name in self._glued:
            raise ValueError(f"glue key {name!r} used twice on {self.slug}")
        text = x if isinstance(x, str) else (pct(x, **fmt_args) if percent else fmt(x, unit, **fmt_args))
        self._glued[name] = text
        _glue(name, text)
        return text

    def publish(self, name: str, x, unit: str | None = None, *, label: str, kind: str = "derived",
                **fmt_args) -> str:
        """A headline result: glued under `name` and recorded machine-readably in `unit`."""
        if kind not in RESULT_KINDS:
            raise ValueError(f"kind must be one of {RESULT_KINDS}")
        record = _as_record(x, unit)
        self.published[name] = {**record, "kind": kind, "label": label}
        return self.text(name, x, unit, **fmt_args)

    def claim(self, name: str, *, quote: str, source: str, claimed: str, derived: str,
              verdict: str, reason: str, reading: str = "", nearest_true: str = "") -> None:
        """A claim from the source documents and the book's verdict on it (shown on the claims page).
        Glues claim-<name>-quote, claim-<name>-verdict and claim-<name>-reason for the check section."""
        self.add_claim(Claim(name, quote, source, claimed, derived, verdict, reason, reading, nearest_true))

    def add_claim(self, c: Claim) -> None:
        if c.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}")
        self.claims_made.append(c.record())
        self.text(f"claim-{c.name}-quote", c.quote)
        self.text(f"claim-{c.name}-verdict", c.verdict)
        self.text(f"claim-{c.name}-reason", c.reason)
        if c.reading:
            self.text(f"claim-{c.name}-reading", c.reading)
        if c.nearest_true:
            self.text(f"claim-{c.name}-true", c.nearest_true)

    # --- a chapter with a chain module (utils/chains/<slug>.py) ---------------------------------
    def results(self, computed) -> dict:
        """Publish every Result of this chapter's chain module from compute()'s output, in order."""
        from utils import chains
        gaps = chains.spec(self.slug).left_out(computed)
        for r in chains.results(self.slug):
            if r.name in gaps:         # no value at these inputs: the chain says why
                continue
            self.publish(r.name, computed[r.key], r.unit, label=r.label, percent=r.percent, digits=r.digits)
        return chains.extract(self.slug, computed)

    def claims(self) -> list[Claim]:
        """Judge and publish every claim of this chapter's chain module (on the claims' own inputs)."""
        from utils import chains
        judged = chains.claims(self.slug)
        for c in judged:
            self.add_claim(c)
        return judged

    def glue(self, texts: dict) -> None:
        """Glue many prose numbers at once: {key: quantity, number or already formatted str}."""
        for name, x in texts.items():
            self.text(name, x)

    def emit(self):
        """Display the machine-readable record (the last cell of every chapter)."""
        from IPython.display import display
        display({RESULTS_MIME: self.published,
                 "text/plain": json.dumps(self.published, indent=1, sort_keys=True)}, raw=True)
        display({CLAIMS_MIME: self.claims_made,
                 "text/plain": json.dumps(self.claims_made, indent=1, sort_keys=True)}, raw=True)


def read_outputs(nb) -> tuple[dict, list]:
    """The results and claims a notebook (an nbformat node) emitted, from its outputs."""
    results, claims = {}, []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            results.update(data.get(RESULTS_MIME, {}))
            claims.extend(data.get(CLAIMS_MIME, []))
    return results, claims
