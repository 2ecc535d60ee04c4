"""The chapters as `make lab` opens them: copies under _build/lab whose prose shows its numbers, and follows them.

JupyterLab renders a markdown cell as CommonMark, so every MyST {glue:text} role would stay a raw placeholder.
jupyterlab-myst renders no glue roles (only {eval} inline expressions, evaluated when their markdown cell
runs, and about two in five of the book's glued references stand above the cell that computes them), and
myst-nb renders {eval} only with a kernel at build time, which the book's build never starts. So each copy
turns every markdown cell that uses MyST into a code cell with its source folded (`jupyter.source_hidden`),
`prose(...)`, whose output is that paragraph rendered by the re-derived page's renderer (page_html.prose_html)
with this run's numbers. It is displayed under a display id, and after every cell the kernel runs, each prose
output whose numbers changed is rendered again in place (IPython's post_run_cell event, Jupyter's
update_display_data): a number glued below its paragraph reaches it when its cell runs. A number not yet
computed in this run shows as an ellipsis. Until the reader runs the chapter, the outputs hold the committed
numbers. Code cells the book hides (remove-input, hide-input, remove-cell) start folded.

    python -m utils.tools.lab [OUT]      # OUT: _build/lab; a copy is rewritten only when its chapter is newer,
                                         # so a reader's edits to a copy survive the next `make lab`
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from utils.tools.page_html import GLUE, labels_of, prose_html, resolve_roles

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "_build" / "lab"
PENDING = "…"                   # a number this run has not computed yet
IMPORT = "from utils.tools.lab import prose  # each paragraph below shows this run's numbers"
_MYST = ("{glue", "{ref}", "{numref}", "{doc}", "{term}", "{cite", ":::{", "```{")
_HIDDEN = {"remove-input", "hide-input", "remove-cell"}

_shown: dict[str, tuple[str, str]] = {}     # display id -> (the paragraph's source, the HTML its output shows)


def _glued() -> dict[str, str]:
    """The texts this run has glued so far: those of the chapter's Page, bound to `page` in every chapter."""
    from IPython import get_ipython
    page = get_ipython().user_ns.get("page")
    return dict(getattr(page, "_glued", {}))


def _bundle(text: str, glue: dict) -> dict:
    """The paragraph as HTML (and as markdown for a front end without HTML), each glued number filled in."""
    glue = {m.strip(): glue.get(m.strip(), PENDING) for m in GLUE.findall(text)}
    return {"text/html": prose_html(text, glue, {}),
            "text/plain": GLUE.sub(lambda m: glue[m.group(1).strip()], text)}


def prose(text: str) -> None:
    """Show a paragraph of the chapter with this run's numbers, and keep it current as the run glues more."""
    from IPython import get_ipython
    from IPython.display import display
    ip = get_ipython()
    if _refresh not in ip.events.callbacks["post_run_cell"]:
        ip.events.register("post_run_cell", _refresh)
    key = "prose-" + hashlib.sha1(text.encode()).hexdigest()[:16]
    bundle = _bundle(text, _glued())
    _shown[key] = (text, bundle["text/html"])
    display(bundle, raw=True, display_id=key)


def _refresh(result=None) -> None:
    from IPython.display import update_display
    glue = _glued()
    for key, (text, html) in list(_shown.items()):
        bundle = _bundle(text, glue)
        if bundle["text/html"] != html:
            _shown[key] = (text, bundle["text/html"])
            update_display(bundle, raw=True, display_id=key)


def _source(text: str) -> str:
    """`prose(r'''...''')`: the paragraph readable in the folded source; repr only where a raw string cannot hold it."""
    for q in ("'''", '"""'):
        if q not in text and not text.endswith("\\"):
            return f"prose(r{q}{text}{q})"
    return f"prose({text!r})"


def lab_copy(nb):
    """The chapter (an nbformat node with its committed outputs) as JupyterLab should open it."""
    import nbformat

    from utils.tools.book_index import glue_texts
    committed, labels = glue_texts(nb), labels_of(nb)
    cells = [nbformat.v4.new_code_cell(IMPORT, metadata={"jupyter": {"source_hidden": True}})]
    for cell in nb.cells:
        if cell.cell_type == "markdown" and any(m in cell.source for m in _MYST):
            text = resolve_roles(cell.source, labels)          # references do not change with the numbers
            out = nbformat.v4.new_output("display_data", data=_bundle(text, committed))
            cells.append(nbformat.v4.new_code_cell(_source(text), outputs=[out],
                                                   metadata={"jupyter": {"source_hidden": True}}))
            continue
        if cell.cell_type == "code" and _HIDDEN & set(cell.metadata.get("tags", [])):
            cell.metadata["jupyter"] = {"source_hidden": True, **cell.metadata.get("jupyter", {})}
        cells.append(cell)
    nb.cells = cells
    return nb


def main(argv: list[str]) -> int:
    import nbformat
    out = Path(argv[0]) if argv else OUT
    written = 0
    for path in sorted((ROOT / "chapters").glob("*/*.ipynb")):
        target = out / path.parent.name / path.name
        if target.exists() and target.stat().st_mtime >= path.stat().st_mtime:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(lab_copy(nbformat.read(path, as_version=4)), target)
        written += 1
    print(f"{written} chapter(s) copied to {out} for JupyterLab; each paragraph shows the numbers of the latest run")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
