"""Two small things the kernel chapters show: a Markdown table from rows, and a piece of the book's
own source as a Python code block (a kernel, a recurrence), so the page shows the code that runs."""
from __future__ import annotations

import importlib
import inspect


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
