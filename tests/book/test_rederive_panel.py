"""The re-derive panel without a browser: the runtime folder utils/tools/browser_bundle.py writes (what its zip
holds, its manifest, its one line without npm) and the panel's HTML utils/tools/rederive_panel.py puts on each
chapter page (inputs from the spec, results beside the page's values). tests/book/test_site_rederive.py runs
the runtime in Chromium."""
from __future__ import annotations

import html
import io
import json
import re
import shutil
import subprocess
import sys
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from utils import catalog, chains, rederive
from utils.params import Result
from utils.tools import book_index, browser_bundle, rederive_panel

CLOSED = [s for s in chains.slugs() if getattr(chains.spec(s), "closed_form", False)]
PAGES = {ch.slug: ch for ch in book_index.chapters()}


class _Tags(HTMLParser):
    """Every start tag as (tag, attrs), and the text inside each element that has a data-* or class attribute
    (of the innermost such element)."""

    def __init__(self, markup: str):
        super().__init__()
        self.tags, self.texts, self._open = [], {}, []
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag not in ("input", "br"):
            self._open.append((tag, len(self.tags) - 1))

    def handle_endtag(self, tag):
        while self._open and self._open.pop()[0] != tag:
            pass

    def handle_data(self, data):
        if self._open:
            i = self._open[-1][1]
            self.texts[i] = self.texts.get(i, "") + data

    def find(self, **want) -> list[int]:
        return [i for i, (_, a) in enumerate(self.tags) if all(a.get(k) == v for k, v in want.items())]


# ---- the runtime folder ------------------------------------------------------------------------------------

def _imported_by_closed_form() -> set[str]:
    """The book's module files a fresh interpreter loads to derive every closed-form chapter (the command
    line's own path), relative to the repository."""
    code = ("import json, sys\nfrom utils import rederive\n"
            f"for s in {CLOSED!r}:\n    rederive.answer(s, {{}})\n"
            "root = sys.argv[1]\n"
            "print(json.dumps(sorted(m.__file__[len(root) + 1:] for n, m in list(sys.modules.items())\n"
            "                        if n.split('.')[0] == 'utils' and getattr(m, '__file__', None))))")
    r = subprocess.run([sys.executable, "-c", code, str(browser_bundle.ROOT)], capture_output=True, text=True,
                       cwd=browser_bundle.ROOT, check=True)
    return set(json.loads(r.stdout))


def _wheel(tmp_path) -> Path:
    """A wheel with code, data, a test suite and metadata, as the pinned ones have."""
    path = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name in ("demo/__init__.py", "demo/defs.txt", "demo/testsuite/test_demo.py", "demo/tests/t.py",
                     "demo-1.0.dist-info/METADATA", "demo-1.0.dist-info/RECORD",
                     "demo-1.0.dist-info/licenses/LICENSE"):
            z.writestr(name, "x = 1\n")
    return path


def test_the_zip_holds_every_module_a_closed_form_chapter_imports_and_nothing_of_tools_or_tests(tmp_path):
    entries = browser_bundle._entries(CLOSED, [_wheel(tmp_path)])
    missing = _imported_by_closed_form() - set(entries)
    assert not missing, f"modules the closed-form chapters import, missing from the runtime: {sorted(missing)}"
    assert not [n for n in entries if n.startswith("utils/tools/")]
    assert not [n for n in entries if {"tests", "testsuite"} & set(n.split("/")[:-1])]
    assert {n for n in entries if n.startswith("demo")} == {"demo/__init__.py", "demo/defs.txt",
                                                             "demo-1.0.dist-info/METADATA"}
    # Every chain module is listed (the page's registry names every chapter); the others are stubs.
    listed = {n for n in entries if n.startswith("utils/chains/") and n.count("/") == 2}
    assert listed == {f"utils/chains/{p.name}" for p in (browser_bundle.UTILS / "chains").glob("*.py")}
    stubs = {n for n in listed if entries[n] == browser_bundle.STUB}
    assert stubs and not stubs & {f"utils/chains/{s.replace('-', '_')}.py" for s in CLOSED}


def test_the_harness_ships_only_where_a_record_is_there_to_read(tmp_path, monkeypatch):
    harness = browser_bundle.UTILS / "gpu" / "harness.py"
    monkeypatch.setattr(browser_bundle, "MEASUREMENTS", tmp_path)
    assert harness not in browser_bundle.book_files(CLOSED)
    (tmp_path / "copy-bandwidth--h100--20260101T000000Z.json").write_text("{}")
    assert harness in browser_bundle.book_files(CLOSED)


def test_without_npm_it_says_so_in_one_line_and_writes_a_manifest_without_a_runtime(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(browser_bundle, "PYODIDE", tmp_path / "node_modules" / "pyodide")
    monkeypatch.setattr(browser_bundle.shutil, "which", lambda name: None)
    out = tmp_path / "rederive"
    assert browser_bundle.main([str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and "npm is not installed" in printed and "static numbers" in printed
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["runtime"] is None
    assert manifest["closed_form"] == CLOSED and manifest["chapters"] == chains.slugs()
    assert list(json.loads((out / "specs.json").read_text())) == CLOSED
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "specs.json"]


@pytest.mark.skipif(not (browser_bundle.PYODIDE / "pyodide.mjs").is_file() or not shutil.which("node"),
                    reason="needs node and node_modules/pyodide (npm ci)")
def test_the_bytecode_is_compiled_by_the_pages_own_python():
    compiled = browser_bundle.bytecode({"demo/__init__.py": b"ANSWER = 6 * 7\n", "demo/data.txt": b"1\n"})
    assert not isinstance(compiled, str), compiled
    (name, pyc), = compiled.items()
    version = json.loads((browser_bundle.PYODIDE / "pyodide-lock.json").read_text())["info"]["python"]
    assert name == f"demo/__pycache__/__init__.cpython-{''.join(version.split('.')[:2])}.pyc"
    assert int.from_bytes(pyc[4:8], "little") == 0b01, "not an unchecked-hash .pyc"


def test_a_default_shows_as_text_the_command_line_parses_back():
    for value in (15600000000000.0, 0.35, 8192, 1e-7, 0.0, True, "h100"):
        text = browser_bundle.shown(value)
        param = SimpleNamespace(name="x", default=value, check="")
        assert type(value)(rederive._parse(param, text)) == value
    assert browser_bundle.shown(15600000000000.0) == "1.56e13"


# ---- the panel's HTML --------------------------------------------------------------------------------------

def test_every_chapter_page_gets_a_panel_with_its_slug():
    for slug, ch in PAGES.items():
        markup = rederive_panel.panel(slug, ch, "what-changes-the-answer")
        assert markup and f'data-rederive="{slug}"' in markup, slug
        assert ("rederive-static" not in markup) == (slug in CLOSED), slug
        assert f"python -m utils.rederive {slug}" in markup


def _a_closed_chapter_with_a_catalog_key() -> str:
    return next(s for s in CLOSED if s in PAGES and any(p.is_key for p in chains.parameters(s)))


def test_the_inputs_come_from_the_spec_with_units_and_catalog_choices():
    slug = _a_closed_chapter_with_a_catalog_key()
    markup = rederive_panel.panel(slug, PAGES[slug])
    page = _Tags(markup)
    for p in chains.parameters(slug):
        (i,) = page.find(**{"data-param": p.name})
        tag, attrs = page.tags[i]
        assert attrs["data-default"] == browser_bundle.shown(p.default)
        row = next(r for r in markup.split("<tr>") if f'data-param="{p.name}"' in r)
        row = html.unescape(re.sub("<[^>]+>", " ", row))
        assert p.meaning in row and (not p.unit or f" {p.unit} " in row), (p.name, row)
        if p.is_key:
            assert tag == "select"
            options = [(a["value"], page.texts[j]) for j, (t, a) in enumerate(page.tags[i + 1:], i + 1)
                       if t == "option"][:len(catalog.keys(p.check))]
            assert [v for v, _ in options] == list(catalog.keys(p.check))
            assert all(catalog.entry(p.check, v).name in text for v, text in options)
            assert ["selected" in a for t, a in page.tags if t == "option" and a["value"] == p.default] == [True]
        else:
            assert tag == "input" and attrs["value"] == browser_bundle.shown(p.default)


def test_the_results_sit_beside_the_pages_own_values():
    slug = _a_closed_chapter_with_a_catalog_key()
    ch = PAGES[slug]
    page = _Tags(rederive_panel.panel(slug, ch))
    cells = page.find(**{"class": "rederive-page"})
    assert [page.tags[i + 1][1]["data-result"] for i in cells] == [r.name for r in chains.results(slug)]
    for i, r in zip(cells, chains.results(slug)):
        want = ch.glue.get(r.name) or rederive.text(r, ch.results[r.name])
        assert page.texts.get(i, "") == want and want, r.name
        assert "*" not in want


def test_a_result_prints_its_unit_as_the_page_does():
    r = Result("gpu_hours", "GPU*hour", "GPU-hours")
    assert rederive.text(r, {"value": 1250.0, "unit": "GPU*h"}) == "1,250 GPU·h"
    assert rederive.text(Result("n", "GPU", "GPUs"), {"value": 8.0, "unit": "GPU"}) == "8 GPUs"
    assert rederive.text(Result("f", "", "Share", percent=True), {"value": 0.25, "unit": ""}) == "25%"


def _doc(rst: str):
    doc = new_document("demo", get_default_settings(Parser))
    Parser().parse(rst, doc)
    return doc


def test_a_chapter_that_needs_numpy_points_to_its_own_sweep():
    doc = _doc("Demo\n====\n\nText.\n\nWhat changes the answer\n-----------------------\n\nThe sweep.\n")
    anchor = rederive_panel.sweep_anchor(doc)
    assert anchor == "what-changes-the-answer"
    assert rederive_panel.sweep_anchor(_doc("Demo\n====\n\nText.\n")) is None
    slug = next(s for s in chains.slugs() if s not in CLOSED and s in PAGES)
    page = _Tags(rederive_panel.panel(slug, PAGES[slug], anchor))
    (i,) = page.find(**{"class": "rederive-sweep"})
    assert page.tags[i][1]["href"] == f"#{anchor}" and page.texts[i] == rederive_panel.SWEEP
    assert not [a for _, a in page.tags if "data-param" in a]
    assert "rederive-sweep" not in rederive_panel.panel(slug, PAGES[slug], None)


def test_the_panel_goes_right_under_the_answer_first_box():
    doc = _doc("Demo\n====\n\n.. admonition:: Answer\n   :class: answer-first\n\n   Two.\n\nBody.\n")
    assert rederive_panel.insert(doc, '<details data-rederive="demo"></details>')
    section = next(iter(doc.findall(lambda n: n.tagname == "section")))
    assert [n.tagname for n in section.children][:3] == ["title", "admonition", "raw"]


def test_the_zip_is_the_same_bytes_every_build():
    entries = {"b.py": b"2\n", "a/x.txt": b"1\n"}
    one, two = browser_bundle._zip(list(entries.items())), browser_bundle._zip(list(reversed(entries.items())))
    assert one == two
    assert zipfile.ZipFile(io.BytesIO(one)).namelist() == ["a/x.txt", "b.py"]
