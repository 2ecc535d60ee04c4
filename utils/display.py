"""What a page shows besides its chain: a Markdown table from rows, a piece of the book's own source as a
Python code block (a kernel, a recurrence), so the page shows the code that runs, and the figure style.

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


def style(fig, min_points: float = MIN_POINTS):
    """Raise every text on the figure (titles, labels, ticks, legends, annotations) to min_points."""
    for text in fig.findobj(match=lambda a: hasattr(a, "get_fontsize") and hasattr(a, "set_fontsize")):
        if text.get_fontsize() < min_points:
            text.set_fontsize(min_points)
    fig.tight_layout()
    return fig
