"""What a page shows besides its chain: a Markdown table from rows, a piece of the book's own source as a
Python code block (a kernel, a recurrence), so the page shows the code that runs, long math that wraps, and
the figure style.

A figure is drawn at about 7.5 in wide and shown at the text column's width (about 730 px on a desktop),
so 10 pt type shows at about 9 pt or more. `style(fig)` sets every text of a finished figure to at least
that and tidies the layout; chapters call it once before plt.show().
"""
from __future__ import annotations

import importlib
import inspect

MIN_POINTS = 10


def table(header: list, rows: list) -> str:
    """A Markdown table: one header row and the rows, each cell as str()."""
    lines = ["| " + " | ".join(map(str, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def source_of(obj, *, start: str | None = None, stop: str | None = None) -> str:
    """The source of a function, class or module (or a dotted module name) as a ```python block;
    with start/stop, only the text from the first `start` up to the first `stop` after it."""
    if isinstance(obj, str):
        obj = importlib.import_module(obj)
    src = inspect.getsource(obj)
    if start is not None:
        src = src[src.index(start):]
    if stop is not None:
        src = src[:src.index(stop)]
    return "```python\n" + src.rstrip() + "\n```"


# A formula longer than this (in characters a reader sees) is cut at its top-level operators, so a table cell
# wraps it over several lines instead of hiding its end behind a scroll bar (MathJax 3 breaks no lines itself).
WRAP_CHARS = 24
LINE_CHARS = 30               # about what one line of a chain table's "how" cell holds at 1400 px
FRACTION_CHARS = 34           # a fraction stays a fraction while each half is at most this wide


def seen_width(latex: str) -> float:
    """About how wide `latex` renders, in characters of body text: a named function (max, log) as its name,
    an operator with its spacing as two, any other command as one, a fraction (set smaller inline) as three
    quarters of its wider half."""
    import re
    while (m := re.search(r"\\frac\{", latex)):
        num, i = _group(latex, m.end() - 1)
        den, j = _group(latex, i)
        latex = latex[:m.start()] + ("x" * round(0.75 * max(seen_width(num), seen_width(den)))) + latex[j:]
    latex = re.sub(r"\\(?:left|right|text|mathrm|operatorname)\b", "", latex)
    latex = re.sub(r"\\(max|min|log|exp|sin|cos)\b", r"\1", latex)
    latex = re.sub(r"\\times\b|[=+,]|(?<=\S) - ", "xx", latex)
    latex = re.sub(r"\\[a-zA-Z]+", "x", latex)
    return len(re.sub(r"[{}\s^_]", "", latex))


def _group(latex: str, start: int) -> tuple[str, int]:
    """The text of the brace group opening at latex[start], and the index past its close."""
    depth = 0
    for i in range(start, len(latex)):
        depth += {"{": 1, "}": -1}.get(latex[i], 0)
        if depth == 0:
            return latex[start + 1:i], i + 1
    raise ValueError(f"unbalanced braces in {latex!r}")


def math_pieces(expr, width: int = WRAP_CHARS, **settings) -> list[str]:
    """LaTeX for a sympy expression as pieces that read as one formula when set side by side, cut at its
    top-level + and - and the factors of a product (a fraction too wide for a line becomes (a)/(b), a power of
    a wide base (base pieces)^n, max/min/ceiling/floor their arguments), so each
    piece can be its own inline math and the line breaks between them. `settings` go to sympy.latex."""
    import sympy as sp
    latex = sp.latex(expr, **settings)
    if seen_width(latex) <= width or expr.is_Atom:
        return [latex]
    if expr.is_Add:
        out = []
        for k, term in enumerate(expr.args if settings.get("order") == "none" else expr.as_ordered_terms()):
            negative = term.could_extract_minus_sign()
            parts = math_pieces(-term if negative else term, width, **settings)
            if k or negative:
                parts[0] = ("- " if negative else "+ ") + parts[0]
            out += parts
        return out
    if expr.is_Mul:
        numer, denom = sp.fraction(expr, exact=True)
        if denom != 1:
            if max(seen_width(sp.latex(numer, **settings)), seen_width(sp.latex(denom, **settings))) <= FRACTION_CHARS:
                return [latex]
            halves = [(h, math_pieces(h, width, **settings)) for h in (numer, denom)]
            numer, denom = [_wrapped(p) if h.is_Add or h.is_Mul else p for h, p in halves]
            return numer + ["/ " + denom[0]] + denom[1:]
        out = []
        for k, factor in enumerate(expr.args):
            parts = math_pieces(factor, width, **settings)
            parts = _wrapped(parts) if factor.is_Add else parts
            if k:
                parts[0] = r"\times " + parts[0]
            out += parts
        return out
    if expr.is_Pow:                               # a wide base: (its pieces), the exponent on the last one
        base, exponent = expr.as_base_exp()
        parts = math_pieces(base, width, **settings)
        if len(parts) == 1:
            return [latex]
        parts = _wrapped(parts)
        parts[-1] += "^{" + sp.latex(exponent, **settings) + "}"
        return parts
    brackets = {sp.Max: (r"\max(", ")"), sp.Min: (r"\min(", ")"), sp.ceiling: (r"\lceil ", r" \rceil"),
                sp.floor: (r"\lfloor ", r" \rfloor")}
    if expr.func in brackets:
        opening, closing = brackets[expr.func]
        out = []
        for k, arg in enumerate(expr.args):
            parts = math_pieces(arg, width, **settings)
            parts[0] = (", " if k else opening) + parts[0]
            out += parts
        out[-1] += closing
        return out
    return [latex]


def _wrapped(parts: list[str]) -> list[str]:
    """Pieces in parentheses: \\left( \\right) around one piece, plain ones opening on the first piece and
    closing on the last when there are several (a \\left( cannot close in another piece)."""
    if len(parts) == 1:
        return [r"\left(" + parts[0] + r"\right)"]
    return ["(" + parts[0], *parts[1:-1], parts[-1] + ")"]


def style(fig, min_points: float = MIN_POINTS):
    """Raise every text on the figure (titles, labels, ticks, legends, annotations) to min_points."""
    for text in fig.findobj(match=lambda a: hasattr(a, "get_fontsize") and hasattr(a, "set_fontsize")):
        if text.get_fontsize() < min_points:
            text.set_fontsize(min_points)
    fig.tight_layout()
    return fig
