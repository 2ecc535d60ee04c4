"""The site tests' browser, server and page checks, shared by test_site.py and test_site_pages.py: two
modules, so pytest-xdist (--dist loadscope) runs them on both cores, each with its own browser."""
from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from book_files import ROOT, markdown_cells, read, toc_files  # noqa: F401 - the tests use them too

from utils.results import read_outputs
from utils.tools import book_index
from utils.units import SCIENTIFIC, prefix_serves

SITE = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html")).resolve()
SHOTS = SITE.parent / "screenshots"
SCREENSHOTS = os.environ.get("SITE_SCREENSHOTS") == "1"     # off by default: a fifth of these tests' time
LOOPBACK = ("127.0.0.1", "localhost")
# Playwright adds --headless and a fresh profile directory; the rest keep Chromium off this closed network.
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

PAGES = [p.relative_to(ROOT).with_suffix("").as_posix() for p in toc_files()
         if p.suffix in (".md", ".ipynb")]
CHAPTERS = book_index.chapters()
ROOT_DOC = PAGES[0]


def _html(doc: str) -> Path:
    return SITE / f"{doc}.html"


def _source(doc: str) -> Path:
    return next(p for p in (ROOT / f"{doc}.ipynb", ROOT / f"{doc}.md") if p.exists())


# ---- the built site and a server for it ---------------------------------------------------------

# `make test` builds the site while pytest runs (both cores busy from the start) and names, in BOOK_BUILD_STATUS, the
# file the build writes its exit status to when it ends: a test that needs the site waits for it.
BUILD_STATUS = os.environ.get("BOOK_BUILD_STATUS")
BUILD_WAIT_S = 900


def wait_for_the_build() -> None:
    """Return once the site `make test` is building has been built; fail the test if the build failed."""
    if not BUILD_STATUS:
        return
    status, deadline = Path(BUILD_STATUS), time.monotonic() + BUILD_WAIT_S
    while not status.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the book build has not ended after {BUILD_WAIT_S} s (no {status})", pytrace=False)
        time.sleep(0.5)
    code = status.read_text().strip()
    if code != "0":
        pytest.fail(f"the strict book build failed (exit {code}): see {status.with_suffix('.log')}", pytrace=False)


@pytest.fixture(scope="module")
def site() -> Path:
    wait_for_the_build()
    if not (SITE / "index.html").exists():
        pytest.fail(f"the book is not built: {SITE / 'index.html'} is missing. `make test` builds it "
                    f"beside pytest; on its own, run `make book` first.", pytrace=False)
    return SITE


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(site):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _chromium() -> str | None:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    return path if path and Path(path).exists() else None


def _browser_problem() -> str | None:
    if _chromium() is None:
        return "Chromium is not installed (apt-get install chromium chromium-driver)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    return None


def skip_without_browser() -> None:
    """Called at the top of each site test module: outside CI, a machine without Chromium skips the module with
    one line; under CI every test fails instead (the `browser` fixture says why)."""
    if _browser_problem() and not os.environ.get("CI"):
        pytest.skip(f"browser test skipped: {_browser_problem()}", allow_module_level=True)


@pytest.fixture(scope="module")
def browser(site):
    if problem := _browser_problem():
        pytest.fail(f"browser test cannot run under CI: {problem}", pytrace=False)
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        # Every request that is not to loopback goes to a proxy on a closed local port, and fails: the
        # pages see no network at all, as on an air-gapped cluster (and each such request is counted).
        chromium = pw.chromium.launch(executable_path=_chromium(), args=CHROMIUM_FLAGS,
                                      proxy={"server": "http://127.0.0.1:9", "bypass": ",".join(LOOPBACK)})
        yield chromium
        chromium.close()


# ---- a page, visited ------------------------------------------------------------------------------

MATH_READY = """async () => {
    const math = document.querySelectorAll('.math').length;
    if (!window.MathJax || !MathJax.startup) return {math, typeset: 0, errors: 0, mathjax: false};
    await MathJax.startup.promise;
    const typeset = [...document.querySelectorAll('.math')].filter(e => e.querySelector('mjx-container')).length;
    return {math, typeset, errors: document.querySelectorAll('mjx-merror').length, mathjax: true};
}"""

# Text nodes outside code that still hold TeX delimiters: math the browser shows raw.
RAW_TEX = """() => {
    const raw = /\\\\\\(|\\\\\\[|\\$\\$|\\\\begin\\{|\\$[^$\\s][^$]*\\\\[a-zA-Z]+[^$]*\\$|\\$[A-Za-z]\\$/;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const out = [];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
        if (n.parentElement.closest('pre, code, script, style, mjx-container, textarea')) continue;
        if (raw.test(n.textContent)) out.push(n.textContent.trim().slice(0, 80));
    }
    return out;
}"""

DOM_FACTS = """() => {
    const article = document.querySelector('article') || document.querySelector('main') || document.body;
    const visible = e => e.getClientRects().length > 0;
    return {
        refs: [...document.querySelectorAll('a[href]')].map(a => a.href),
        resources: [...document.querySelectorAll('img[src], script[src], link[href], iframe[src], source[src]')]
            .map(e => e.src || e.href),
        images: [...document.images].map(i => ({src: i.src, ok: i.complete && i.naturalWidth > 0})),
        figures: [...article.querySelectorAll('img')].filter(i => i.complete && i.naturalWidth > 0).length,
        pasted: [...article.querySelectorAll('.pasted-text')].map(e => ({text: e.textContent, visible: visible(e)})),
        download: [...document.querySelectorAll('a.btn-download-source-button')].map(a => a.href),
        title: document.title,
    };
}"""


# What a reader sees at 1400 px: tables and inline math that fit the column, no table cell hiding its
# content, the chain tables' values (checked for scientific form where a prefix serves), no answer visible in the
# Exercises section, at most one "not yet measured" note, and how much of the page is visible code.
READER_FACTS = """() => {
    const article = document.querySelector('article.bd-article') || document.querySelector('article') || document.body;
    const col = article.getBoundingClientRect();
    const shown = e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
    const over = e => { const r = e.getBoundingClientRect(); return Math.max(0, Math.round(r.right - col.right)); };
    const tables = [...article.querySelectorAll('table')].filter(shown)
        .map(t => ({text: t.innerText.slice(0, 60), over: Math.max(over(t), t.scrollWidth - t.clientWidth)}))
        .filter(t => t.over > 2);
    const wide = [...article.querySelectorAll('p mjx-container:not([display="true"])')].filter(shown)
        .filter(m => m.getBoundingClientRect().width > 0.9 * col.width).map(m => m.textContent.slice(0, 60));
    const displayInP = [...article.querySelectorAll('p mjx-container[display="true"]')].length;
    // The Exercises section: every cell output in it that a reader sees without opening an answer.
    const ex = [...article.querySelectorAll('section')].find(sec => {
        const h = sec.querySelector(':scope > h2'); return h && /^Exercises/.test(h.textContent.trim()); });
    const answers = ex ? [...ex.querySelectorAll('.cell_output')].filter(shown)
        .filter(o => !o.closest('details:not([open])')).map(o => o.innerText.trim()).filter(t => t) : [];
    const notes = [...article.querySelectorAll('.admonition')].filter(a => /Not yet measured/.test(a.innerText)).length;
    const code = [...article.querySelectorAll('.cell_input')].filter(shown)
        .reduce((h, e) => h + e.getBoundingClientRect().height, 0);
    // Table cells that hide their content: wider inside than the cell (or than a scrolling piece in it).
    const hiding = [...article.querySelectorAll('td, th')].filter(shown).map(c => ({text: c.innerText.slice(0, 60),
        hid: Math.max(c.scrollWidth - c.clientWidth, ...[...c.querySelectorAll('mjx-container, div, pre')]
            .map(e => e.scrollWidth - e.clientWidth))})).filter(c => c.hid > 100);
    // The value column of every chain table (utils.chain.Chain), where the formatter writes each number.
    const values = [...article.querySelectorAll('table:has(.chain-table) td:nth-child(3)')].map(c => c.innerText);
    return {tables, wide, displayInP, answers, notes, code, hiding, values,
            height: article.getBoundingClientRect().height};
}"""
CODE_SHARE: dict[str, float] = {}


def _offsite(url: str) -> bool:
    """A request that would leave the machine: anything but file://, data:, blob:, about: and loopback."""
    parts = urlsplit(url)
    return parts.scheme not in ("data", "blob", "about", "file") and parts.hostname not in LOOPBACK


class Tab:
    """One browser context and one page for the whole module, navigated from page to page: a fresh page per
    visit costs Chromium a new renderer and a cold compile of MathJax and the theme's scripts, twice the visit
    itself. Between visits the page goes to about:blank first, which ends whatever the previous page had in
    flight, and only then are the visit's lists started, so nothing of the previous page is counted against the
    next. Each visit records requests that would leave the machine (the browser's dead proxy fails them), failed
    requests and script errors."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport={"width": 1400, "height": 900})
        self.offsite, self.failed, self.errors = [], [], []
        self.page = page = self.context.new_page()
        page.on("request", lambda r: _offsite(r.url) and self.offsite.append(r.url))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.status} {r.url}"))
        page.on("requestfailed", lambda r: not _offsite(r.url) and self.failed.append(f"{r.failure} {r.url}"))

    def visit(self, url: str) -> "Tab":
        self.page.goto("about:blank")
        self.offsite, self.failed, self.errors = [], [], []
        self.response = self.page.goto(url, wait_until="load")
        return self


@pytest.fixture(scope="module")
def tab(browser):
    t = Tab(browser)
    yield t
    t.context.close()


@pytest.fixture
def visit(tab):
    return tab.visit


# ---- what a page should show --------------------------------------------------------------------

GLUE_TEXT = re.compile(r"\{glue:text\}`([^`:]+)`")   # {glue:text}`key` without a format spec


# Sphinx's smartquotes turn ' " -- ... into typographic forms in rendered prose; compare without them.
_TYPOGRAPHY = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "--",
                             "\u2014": "---", "\u2026": "...", "\xa0": " "})


def norm(text) -> str:
    return " ".join(str(text).translate(_TYPOGRAPHY).split())


def _glued_in_prose(doc: str) -> list[str]:
    """Every use of {glue:text}`key` in the page's prose, in order (a key used twice is listed twice)."""
    return [k.strip() for src in markdown_cells(_source(doc)) for k in GLUE_TEXT.findall(src)]


def _expected_figures(doc: str) -> int:
    path = _source(doc)
    if path.suffix != ".ipynb":
        return 0
    shown = [c for c in read(path).cells if c.cell_type == "code"
             and not {"remove-output", "remove-cell"} & set(c.metadata.get("tags", []))]
    return sum(1 for c in shown for o in c.get("outputs", [])
               if any(k.startswith("image/") for k in o.get("data", {})))


@functools.lru_cache(maxsize=None)
def _ids(path: Path) -> frozenset[str]:
    return frozenset(re.findall(r'\bid="([^"]+)"', path.read_text(errors="replace")))


def _unresolved(urls: list[str], base: str) -> list[str]:
    """Local URLs (under `base`) whose file, or #fragment in it, does not exist in the built site."""
    bad = []
    for url in sorted(set(urls)):
        if not url.startswith(base + "/"):
            continue
        parts = urlsplit(url)
        rel = unquote(parts.path).lstrip("/")
        target = (SITE / rel) if rel else SITE / "index.html"
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            bad.append(f"{url} (no file {target.relative_to(SITE) if target.is_relative_to(SITE) else target})")
        elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _ids(target):
            bad.append(f"{url} (no #{parts.fragment} in {target.relative_to(SITE)})")
    return bad


DECLARED = re.compile(r"Identifier '(\w+)' has already been declared")


def _real_errors(errors: list[str], html: Path) -> list[str]:
    """Script errors, less one known harmless kind: Sphinx 7.4 writes an inline script that an extension
    adds after the builder starts (sphinx-thebe's `const THEBE_JS_URL = ...`) twice into every page, and
    the second copy's `const` fails to redeclare. Only a redeclaration whose inline script is duplicated
    in the page's own HTML is ignored."""
    scripts = re.findall(r"<script>(.*?)</script>", html.read_text(errors="replace"), re.S)
    twice = {name for body in {b for b in scripts if scripts.count(b) > 1}
             for name in re.findall(r"\b(?:const|let)\s+(\w+)", body)}
    return [e for e in errors if not ((m := DECLARED.search(e)) and m.group(1) in twice)]


# The answer-first box under a chapter's title (utils/tools/answer_first.py): its verdicts and reasons, where
# each sits on the page (the page is at the top: scrollY is 0), and whether the reader can see it.
ANSWER_FIRST = """() => {
    const box = document.querySelector('article .answer-first');
    if (!box) return null;
    const rect = e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; };
    const shown = e => e.getClientRects().length > 0 && getComputedStyle(e).visibility !== 'hidden';
    return {verdicts: [...box.querySelectorAll('.answer-first-verdict')].map(e => ({text: e.textContent, ...rect(e),
                                                                                 shown: shown(e)})),
            reasons: [...box.querySelectorAll('.answer-first-reason')].map(e => e.textContent),
            result: [...box.querySelectorAll('strong.answer-first-result')].map(e => e.textContent),
            scrollY: window.scrollY, height: window.innerHeight};
}"""


def _answer_first_problems(doc: str, box: dict | None) -> list[str]:
    """A chapter opens with its answer: the box's verdicts and reasons are the page's claims, in order, its
    headline result is the first one the chapter publishes, and the first verdict is on the first screen."""
    chapter = next((c for c in CHAPTERS if c.docname == doc), None)
    if chapter is None:
        return []
    if box is None:
        return ["no answer-first box under the title (utils/tools/answer_first.py, registered in _config.yml)"]
    problems = []
    want = [(norm(c["verdict"]), norm(c["reason"])) for c in chapter.claims]
    got = list(zip([norm(v["text"]) for v in box["verdicts"]], [norm(r) for r in box["reasons"]]))
    if got != want or len(box["verdicts"]) != len(box["reasons"]):
        problems.append(f"the answer-first box's verdicts {got} are not the page's claims {want}")
    if chapter.results:
        first = next(iter(chapter.results))
        if [norm(t) for t in box["result"]] != [norm(chapter.glue.get(first, ""))]:
            problems.append(f"the answer-first box's headline {box['result']} is not {first}'s glued text")
    if box["verdicts"]:
        v0 = box["verdicts"][0]
        if not v0["shown"] or box["scrollY"] != 0 or v0["top"] < 0 or v0["bottom"] > box["height"]:
            problems.append(f"the first verdict is not on the first screen: its top at {v0['top']:.0f} px, "
                            f"bottom at {v0['bottom']:.0f} px, the viewport {box['height']} px high")
    return problems


def check_page(doc, server, visit):
    """Everything one page of the toc must show in the browser (see test_site.py's docstring)."""
    v = visit(f"{server}/{doc}.html")
    assert v.response is not None and v.response.ok, f"{doc}.html did not load: {v.response and v.response.status}"
    math = v.page.evaluate(MATH_READY)
    facts = v.page.evaluate(DOM_FACTS)
    problems = []

    if v.offsite:
        problems.append(f"requests to the network (the site must work offline): {sorted(set(v.offsite))}")
    if v.failed:
        problems.append(f"failed requests: {v.failed}")
    errors = _real_errors(v.errors, _html(doc))
    if errors:
        problems.append(f"script errors: {errors}")

    if math["math"] and not math["mathjax"]:
        problems.append(f"{math['math']} math elements but MathJax did not load")
    elif math["typeset"] < math["math"]:
        problems.append(f"math not typeset: {math['math'] - math['typeset']} of {math['math']} elements")
    if math["errors"]:
        problems.append(f"{math['errors']} MathJax errors (mjx-merror) in the page")
    raw = v.page.evaluate(RAW_TEX)
    if raw:
        problems.append(f"raw TeX shown as text: {raw[:5]}")

    broken = [i["src"] for i in facts["images"] if not i["ok"]]
    if broken:
        problems.append(f"images that did not load: {broken}")
    want = _expected_figures(doc)
    if facts["figures"] < want:
        problems.append(f"{facts['figures']} figures shown, the notebook has {want}")

    bad = _unresolved(facts["refs"] + facts["resources"], server)
    if bad:
        problems.append(f"links that do not resolve: {bad}")

    if _source(doc).suffix == ".ipynb":
        glue = book_index.glue_texts(read(_source(doc)))
        results, _ = read_outputs(read(_source(doc)))
        # Each use renders one pasted span: the page must hold every glued text as often as the prose uses it.
        uses = [k for k in _glued_in_prose(doc) if k in glue]
        shown = Counter(norm(p["text"]) for p in facts["pasted"])
        short = Counter(norm(glue[k]) for k in uses) - shown
        if short:
            keys = sorted({k for k in uses if norm(glue[k]) in short})
            problems.append(f"glued numbers missing from the page: {[(k, glue[k]) for k in keys]} (MyST-NB "
                            f"shows str(ast.literal_eval(record)): a bare 4,320 becomes (4, 320); glue a quoted str)")
        visible = {norm(p["text"]) for p in facts["pasted"] if p["visible"]}
        hidden = sorted({k for k in uses if k in results and norm(glue[k]) in shown and norm(glue[k]) not in visible})
        if hidden:
            problems.append(f"headline results glued in prose but not visible: {hidden}")

        downloads = [u for u in facts["download"] if u.endswith(".ipynb")]
        if not downloads:
            problems.append("no .ipynb download link")
        for url in downloads:
            r = v.context.request.get(url)
            if not r.ok or "cells" not in json.loads(r.body()):
                problems.append(f"the .ipynb download does not resolve to a notebook: {url} ({r.status})")

    if doc.startswith("chapters/"):
        problems += _answer_first_problems(doc, v.page.evaluate(ANSWER_FIRST))
        reader = v.page.evaluate(READER_FACTS)
        CODE_SHARE[doc] = reader["code"] / max(1.0, reader["height"])
        if reader["tables"]:
            problems.append(f"tables wider than the text column (px past its edge): {reader['tables'][:3]}")
        if reader["hiding"]:
            problems.append(f"table cells that hide over 100 px of their content: {reader['hiding'][:3]}")
        sci = [t for text in [p["text"] for p in facts["pasted"]] + reader["values"]
               for t in (m.group(0) for m in SCIENTIFIC.finditer(norm(text))) if prefix_serves(t)]
        if sci:
            problems.append(f"numbers in scientific form where a prefix serves (format them with utils.units.fmt): "
                            f"{sci[:5]}")
        if reader["wide"]:
            problems.append(f"inline math wider than 90% of the column: {reader['wide'][:3]}")
        if reader["displayInP"]:
            problems.append(f"{reader['displayInP']} display equations inside a paragraph ($$ mid-paragraph)")
        if reader["answers"]:
            problems.append(f"visible outputs in the Exercises section give answers away: {reader['answers'][:2]}")
        if reader["notes"] > 1:
            problems.append(f"{reader['notes']} 'not yet measured' notes (one per page at most)")

    if SCREENSHOTS and (doc == ROOT_DOC or doc.startswith("chapters/")):
        SHOTS.mkdir(parents=True, exist_ok=True)
        v.page.screenshot(path=str(SHOTS / f"{Path(doc).name}.png"))

    assert not problems, f"{doc}.html:\n  " + "\n  ".join(problems)
