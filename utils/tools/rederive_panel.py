"""Re-derive on the page: a Sphinx extension that puts a panel under each chapter's answer-first box.

The panel is a <details> closed by default, its root carrying data-rederive="<slug>"; nothing loads until a
reader opens it. On a closed-form chapter (its SPEC says closed_form=True: the results need no array and no
random draw) it holds the chapter's inputs, from its parameter spec (name, unit, meaning, default; a catalog
key is a select of the catalog's keys with their full names), and its published results with their labels,
the page's own values (the chapter's committed outputs, read through utils.tools.book_index like the answer-
first box) beside the re-derived ones. book/_static/rederive.js runs the chapter's own chain in the browser
(Pyodide, the runtime utils/tools/browser_bundle.py builds) through utils.rederive.answer, the function the
command line's --json uses, so a bad value gets the command's one-line error. Opened from disk (file://) it
says how to serve the site. Every panel shows the command line that re-derives the same inputs.

On a chapter that computes with numpy (arrays, a seeded simulation) the panel says so, shows the command line
and links to the page's own "What changes the answer" section, where the inputs that swing the answer are
swept (precomputed, like the rest of the page).
Registered in _config.yml under sphinx: extra_extensions, after utils.tools.answer_first.
"""
from __future__ import annotations

import functools
import hashlib
import html
from pathlib import Path

from docutils import nodes

PANEL_CLASS = "rederive"
SUMMARY = "Re-derive with your own inputs"
SERVE = "python3 -m http.server -d _build/html"
SWEEP = "What changes the answer"           # the section that sweeps the inputs that swing the answer


@functools.lru_cache(maxsize=1)
def _chapters() -> dict:
    from utils.tools import answer_first
    return answer_first._chapters()       # the same committed outputs the answer-first box reads, read once


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _input(slug: str, p: dict) -> str:
    ident = f"rederive-{slug}-{p['name']}"
    attrs = f'id="{ident}" data-param="{_e(p["name"])}" data-default="{_e(p["default"])}"'
    if p["choices"]:
        options = "".join(
            f'<option value="{_e(v)}"{" selected" if v == p["default"] else ""}>'
            f'{_e(v if v == name else f"{v}: {name}")}</option>' for v, name in p["choices"])
        field = f"<select {attrs}>{options}</select>"
    else:
        field = f'<input type="text" inputmode="decimal" spellcheck="false" {attrs} value="{_e(p["default"])}">'
    unit = f" <span class=\"rederive-unit\">{_e(p['unit'])}</span>" if p["unit"] else ""
    return (f'<tr><th scope="row"><label for="{ident}"><code>{_e(p["name"])}</code></label></th>'
            f"<td>{field}{unit}</td><td>{_e(p['meaning'])}</td></tr>")


def _page_value(ch, result) -> str:
    """The page's own value of a result: its glued text, else its published record printed as the page prints."""
    from utils.rederive import text
    if result.name in ch.glue:
        return ch.glue[result.name]
    record = ch.results.get(result.name)
    return text(result, record) if record else ""


def _cli(slug: str) -> str:
    return ('<p class="rederive-cli">On your own machine: '
            f'<code class="rederive-command">python -m utils.rederive {_e(slug)}</code> '
            "(add <code>--set name=value</code> for each input you change, <code>--json</code> for every digit)</p>")


def closed_panel(slug: str, ch) -> str:
    from utils.tools.browser_bundle import spec_record
    record = spec_record(slug)
    params = record["parameters"]
    inputs = "".join(_input(slug, p) for p in params)
    from utils import chains
    results = "".join(
        f'<tr><th scope="row">{_e(r.label)}</th><td class="rederive-page">{_e(_page_value(ch, r))}</td>'
        f'<td class="rederive-value" data-result="{_e(r.name)}"></td></tr>' for r in chains.results(slug))
    return (
        f'<details class="{PANEL_CLASS}" data-rederive="{_e(slug)}"><summary>{SUMMARY}</summary>'
        '<p class="rederive-note">Change an input and this chapter\'s own chain code (Python, checked by pint) '
        "re-derives the results here in your browser: nothing is sent anywhere. The first time, the runtime "
        "loads from this site (a few MB, a few seconds).</p>"
        f'<p class="rederive-disk" hidden>This page was opened from disk, where the browser will not run the '
        f"book's code. Serve the site and open it from there: <code>{_e(SERVE)}</code>, then "
        f"http://localhost:8000. Or re-derive on the command line below.</p>"
        '<form class="rederive-form"><table class="rederive-inputs"><thead><tr><th>Input</th><th>Value</th>'
        f"<th>Meaning</th></tr></thead><tbody>{inputs}</tbody></table>"
        '<button type="submit">Re-derive</button></form>'
        '<p class="rederive-error" role="alert" hidden></p>'
        '<table class="rederive-results"><thead><tr><th>Result</th><th>On this page</th><th>Re-derived</th></tr>'
        f'</thead><tbody>{results}</tbody></table><p class="rederive-status" aria-live="polite"></p>'
        f"{_cli(slug)}</details>")


def static_panel(slug: str, sweep: str | None = None) -> str:
    """The panel of a chapter that computes with numpy: the command line, and a link to the page's own
    "What changes the answer" section (`sweep`, its anchor), the inputs that swing the answer, precomputed."""
    where = (f' Or see how the inputs that swing the answer move it: <a class="rederive-sweep" href="#{_e(sweep)}">'
             f"{_e(SWEEP)}</a>, below." if sweep else "")
    body = ('<p class="rederive-note">This chapter\'s results come from arrays or a seeded simulation, which '
            f"need numpy, so they re-derive on your own machine, not in the page.{where}</p>")
    return (f'<details class="{PANEL_CLASS} rederive-static" data-rederive="{_e(slug)}"><summary>{SUMMARY}'
            f"</summary>{body}{_cli(slug)}</details>")


def panel(slug: str, ch, sweep: str | None = None) -> str | None:
    """The panel's HTML for a chapter page, or None for a page with no chain module; `sweep`: the anchor of
    the page's "What changes the answer" section."""
    from utils import chains
    if slug not in chains.slugs():
        return None
    if getattr(chains.spec(slug), "closed_form", False):
        return closed_panel(slug, ch)
    return static_panel(slug, sweep)


def sweep_anchor(doctree: nodes.document) -> str | None:
    """The id of the page's "What changes the answer" section (AUTHORING.md's section 9), if it has one."""
    for section in doctree.findall(nodes.section):
        if section.children and isinstance(section[0], nodes.title) and section[0].astext() == SWEEP:
            return section["ids"][0] if section["ids"] else None
    return None


def insert(doctree: nodes.document, markup: str) -> bool:
    """Put the panel right under the answer-first box (or the title, on a page without one)."""
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not section.children or not isinstance(section[0], nodes.title):
        return False
    after = next((i for i, n in enumerate(section.children)
                  if isinstance(n, nodes.Element) and "answer-first" in n.get("classes", [])), 0)
    section.insert(after + 1, nodes.raw("", markup, format="html"))
    return True


def _on_doctree_read(app, doctree) -> None:
    ch = _chapters().get(app.env.docname)
    if ch is not None and (markup := panel(ch.slug, ch, sweep_anchor(doctree))):
        insert(doctree, markup)


def setup(app):
    app.connect("doctree-read", _on_doctree_read)
    app.add_js_file("rederive.js")
    app.add_css_file("rederive.css")
    # As answer_first, and more: an edit of this file or of what a panel renders (a chain's spec, its closed_form
    # mark, a catalog key's full name) re-reads every page, so no incremental build keeps an old panel.
    utils = Path(__file__).resolve().parents[1]
    sources = [Path(__file__), utils / "tools" / "browser_bundle.py", *sorted((utils / "chains").glob("*.py")),
               *sorted((utils / "catalog").glob("*.toml"))]
    version = int(hashlib.sha256(b"".join(f.read_bytes() for f in sources)).hexdigest()[:12], 16)
    return {"version": "1", "env_version": version, "parallel_read_safe": True, "parallel_write_safe": True}
