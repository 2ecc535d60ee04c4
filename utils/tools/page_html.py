"""A re-derived chapter as one standalone HTML file: the reader's own version of the page.

The executed notebook (papermill, with the reader's parameters) is rendered without Sphinx: markdown
through markdown-it, every {glue:text} role replaced by the text the run glued, cross-references and
citations as plain text, answer dropdowns as <details>, cells tagged remove-cell/remove-input/
hide-input honoured, figures inlined as PNG, and MathJax's SVG build inlined, so the file opens offline.
The same prose renderer (prose_html) shows the paragraphs of the copies `make lab` opens (utils/tools/lab.py).
"""
from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt

from utils.tools.book_index import ROOT, glue_texts

GLUE = re.compile(r"\{glue(?::\w+)?\}`([^`:]+)(?::[^`]*)?`")
# {ref}`text <label>`, {term}`KV cache <KV cache>`, {ref}`label`: the text, else the label's heading
ROLE = re.compile(r"\{(ref|numref|doc|term)\}`([^`<]*?)\s*(?:<([^>`]+)>)?`")
CITE = re.compile(r"\{cite(?::\w+)?\}`([^`]+)`")
LABEL = re.compile(r"^\(([\w-]+)\)=\s*$", re.M)
HEADED = re.compile(r"^\(([\w-]+)\)=\s*\n+#+\s+(.+)$", re.M)
# One answer: the title on the directive's own line, options (:class: dropdown) one per line, the body.
ADMONITION = re.compile(r"^:::\{admonition\}[ \t]*([^\n]*)\n((?::\w+:[^\n]*\n)*)(.*?)^:::[ \t]*$", re.M | re.S)
_MATHJAX = ("sphinx-mathjax-offline", "static", "mathjax", "tex-svg.js")


def _protect_math(text: str) -> tuple[str, list[str]]:
    """Take $...$ and $$...$$ out before markdown (which would eat backslashes and underscores)."""
    saved: list[str] = []

    def keep(m):
        saved.append(m.group(0))
        return f"MATH{len(saved) - 1}END"
    text = re.sub(r"\$\$.+?\$\$", keep, text, flags=re.S)
    return re.sub(r"\$[^$\n]+\$", keep, text), saved


def _heading(label: str, labels: dict) -> str:
    """A {ref} without text shows its target's heading: this page's, a chapter's, or a book page's."""
    if label not in labels:
        pages = [*ROOT.glob(f"chapters/*/{label}.ipynb"), *ROOT.glob("book/*.md")]
        for page in pages:
            text = page.read_text()
            if page.suffix == ".ipynb":
                text = "\n".join(c.source for c in nbformat.reads(text, as_version=4).cells if c.cell_type == "markdown")
            labels.update({k: v for k, v in HEADED.findall(text) if k not in labels})
            if label in labels:
                break
    return labels.get(label, label)


def resolve_roles(text: str, labels: dict) -> str:
    """MyST's cross-references, terms, citations and labels as the plain text the page shows (glue untouched)."""
    text = ROLE.sub(lambda m: _heading(m.group(2).strip(), labels) if m.group(1) != "term" and not m.group(3)
                    else m.group(2).strip(), text)
    text = CITE.sub(lambda m: f"[{m.group(1)}]", text)
    return LABEL.sub("", text)


def labels_of(nb) -> dict:
    """A notebook's own labels and the headings they stand above."""
    return dict(HEADED.findall("\n".join(c.source for c in nb.cells if c.cell_type == "markdown")))


def prose_html(text: str, glue: dict, labels: dict, md: MarkdownIt | None = None) -> str:
    """A markdown cell as HTML: each {glue:text} role replaced by its text in `glue`, roles resolved, answers
    folded, math left for MathJax."""
    md = md or MarkdownIt("commonmark", {"html": True}).enable("table")
    text = GLUE.sub(lambda m: glue.get(m.group(1).strip(), m.group(0)), text)
    text, math = _protect_math(resolve_roles(text, labels))
    parts, last = [], 0
    for m in ADMONITION.finditer(text):       # answers stay hidden until opened, as on the site
        parts.append(md.render(text[last:m.start()]))
        summary = html.escape(m.group(1).strip() or "Answer")
        parts.append(f"<details><summary>{summary}</summary>{md.render(m.group(3))}</details>")
        last = m.end()
    parts.append(md.render(text[last:]))
    out = "".join(parts)
    return re.sub(r"MATH(\d+)END", lambda m: html.escape(math[int(m.group(1))]), out)


def _outputs(md: MarkdownIt, cell, glue: dict, labels: dict) -> str:
    out = []
    for o in cell.get("outputs", []):
        data = o.get("data", {})
        if o.get("output_type") == "stream":
            out.append(f"<pre>{html.escape(o.get('text', ''))}</pre>")
        elif "image/png" in data:
            out.append(f'<img alt="figure" src="data:image/png;base64,{data["image/png"]}">')
        elif "text/markdown" in data:
            out.append(prose_html(data["text/markdown"], glue, labels, md))
        elif "text/html" in data:
            out.append(data["text/html"])
        elif "text/plain" in data and not any(k.startswith("application/") for k in data):
            out.append(f"<pre>{html.escape(data['text/plain'])}</pre>")
    return "".join(out)


def render(nb, title: str, note: str) -> str:
    import sysconfig
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    glue = glue_texts(nb)
    labels = labels_of(nb)
    body = [f'<p class="note">{html.escape(note)}</p>']
    for cell in nb.cells:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if "remove-cell" in tags:
            continue
        if cell.cell_type == "markdown":
            body.append(prose_html(cell.source, glue, labels, md))
            continue
        if "remove-input" not in tags and "hide-input" not in tags:
            body.append(f"<pre class='input'>{html.escape(cell.source)}</pre>")
        if "remove-output" not in tags:
            body.append(_outputs(md, cell, glue, labels))
    mathjax = Path(sysconfig.get_paths()["purelib"]).joinpath(*_MATHJAX)
    script = mathjax.read_text() if mathjax.exists() else ""
    css = ("body{max-width:52em;margin:2em auto;font:16px/1.5 system-ui,sans-serif;padding:0 1em}"
           "table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px}"
           "pre{background:#f6f6f6;padding:.5em;overflow-x:auto}img{max-width:100%}"
           ".note{background:#eef;padding:.5em}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{css}</style><script>window.MathJax={{tex:{{inlineMath:[['$','$']]}}}};</script>"
            f"<script>{script}</script></head><body>{''.join(body)}</body></html>")
