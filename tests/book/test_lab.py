"""`make lab`: the copies JupyterLab opens show the prose's numbers, and after a run with new parameters the
numbers of that run, wherever the prose references them (checked in the notebook's outputs, as nbclient keeps
them: Lab shows the same display_data and applies the same update_display_data)."""
from __future__ import annotations

import ast
import re

import nbformat
import papermill

from utils.rederive import notebook
from utils.tools.book_index import glue_texts
from utils.tools.lab import IMPORT, PENDING, lab_copy, main
from utils.tools.page_html import GLUE, prose_html

RAW = re.compile(r"\{(?:glue|term|ref|numref|cite)[^}]*\}`|:::\{")


def prose_cells(nb):
    """(the paragraph's source, the HTML its output shows) for every prose cell of a copy."""
    out = []
    for c in nb.cells:
        if c.cell_type == "code" and c.source.startswith("prose("):
            text = ast.literal_eval(c.source.removeprefix("prose(").removesuffix(")"))   # its one string literal
            html = "".join(o.get("data", {}).get("text/html", "") for o in c.outputs)
            out.append((text, html))
    return out


def shows(nb, glue: dict) -> None:
    """Every prose output shows its paragraph with the texts in `glue`, and nothing raw or pending."""
    paragraphs = prose_cells(nb)
    assert paragraphs and sum(bool(GLUE.search(t)) for t, _ in paragraphs) >= 5
    for text, html in paragraphs:
        assert html == prose_html(text, {k.strip(): glue[k.strip()] for k in GLUE.findall(text)}, {}), text[:200]
        assert PENDING not in html and not RAW.search(html)


def test_a_run_with_new_parameters_shows_its_numbers_in_the_prose(tmp_path):
    chapter = nbformat.read(notebook("fleet-size"), as_version=4)
    committed = glue_texts(chapter)
    copy = lab_copy(chapter)
    assert copy.cells[0].source == IMPORT
    shows(copy, committed)                              # opened, before any run: the committed numbers
    nbformat.write(copy, tmp_path / "fleet-size.ipynb")
    papermill.execute_notebook(str(tmp_path / "fleet-size.ipynb"), str(tmp_path / "run.ipynb"), cwd=str(tmp_path),
                               parameters={"gpu": "b200", "mfu": 0.35, "run_days": 60}, progress_bar=False,
                               kernel_name="python3")
    run = nbformat.read(tmp_path / "run.ipynb", as_version=4)
    glue = glue_texts(run)
    shows(run, glue)
    assert glue["gpus_planned"] == "2,048 GPUs" != committed["gpus_planned"]
    assert sum("2,048 GPUs" in html for _, html in prose_cells(run)) >= 2


def test_every_chapter_has_a_copy_with_no_myst_left_raw(tmp_path):
    assert main([str(tmp_path)]) == 0
    copies = sorted(tmp_path.glob("*/*.ipynb"))
    assert sorted(p.name for p in copies) == sorted(p.name for p in notebook("six-nd").parents[1].glob("*/*.ipynb"))
    for path in copies:
        nb = nbformat.read(path, as_version=4)
        assert not [c for c in nb.cells if c.cell_type == "markdown" and GLUE.search(c.source)], path.name
        for text, html in prose_cells(nb):
            assert not RAW.search(html), (path.name, text[:200])      # (a key the outputs lack is freshness's test)
    edited = copies[0]                                # a reader's edit, saved after its chapter last changed
    nb = nbformat.read(edited, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("the reader's note"))
    nbformat.write(nb, edited)
    assert main([str(tmp_path)]) == 0
    assert "the reader's note" in edited.read_text(), "a copy the reader edited was rewritten"
