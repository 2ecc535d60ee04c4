"""The site's other pages in the browser (front matter, catalog and generated pages), search, the site from
disk, the generated lists of every number and claim, and the static checks of the built HTML. The chapters are in
test_site.py, whose docstring says what each page must show."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest
from site_browser import (
    CHAPTERS,
    DOM_FACTS,
    MATH_READY,
    PAGES,
    SITE,
    _expected_figures,
    _html,
    _real_errors,
    book_index,
    check_page,
    norm,
    skip_without_browser,
)

skip_without_browser()

OTHER_PAGES = [d for d in PAGES if not d.startswith("chapters/")]


@pytest.mark.parametrize("doc", OTHER_PAGES)
def test_page_in_the_browser(doc, site, server, visit):
    check_page(doc, server, visit)


# ---- search ---------------------------------------------------------------------------------------

STOP = {"the", "and", "for", "with", "from", "into", "what", "when", "how", "does", "that", "this", "your"}


def _title_word(title: str) -> str:
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z]+", title) if w.lower() not in STOP and len(w) > 3]
    assert words, f"no searchable word in the title {title!r}"
    return max(words, key=len)


# Done when the chapter is among the results (best matches come first) or the search has finished.
SEARCH_DONE = """(path) => {
    const found = [...document.querySelectorAll('#search-results a')].some(a => new URL(a.href).pathname.endsWith(path));
    const s = document.querySelector('#search-results .search-summary');
    return found || (s && s.textContent.trim().length > 0);
}"""


def _search(v, docname: str) -> list[str]:
    v.page.wait_for_function(SEARCH_DONE, arg=f"/{docname}.html", timeout=15000)
    return v.page.evaluate("() => [...document.querySelectorAll('#search-results a')].map(a => a.href)")


# Sphinx's own search, run in the search page for one query: its parse and its ranking (searchtools.js), the
# code the search box runs before it renders the list; the docnames it finds, best first.
SEARCH_ENGINE = """(word) => Search._performSearch(...Search._parseQuery(word)).reverse().map(r => r[0])"""


def test_search_finds_each_chapter_by_a_word_of_its_title(site, server, visit):
    """The search box, typed into once (the page as a reader gets it, results rendered), then the same engine in
    the same page for every chapter: one page load, not one a chapter (which cost the suite over a minute)."""
    first = CHAPTERS[0]
    v = visit(f"{server}/search.html?q={_title_word(first.title)}")
    hits = _search(v, first.docname)
    assert any(urlsplit(h).path == f"/{first.docname}.html" for h in hits), \
        f"searching {_title_word(first.title)!r} does not find {first.docname}: {hits[:10]}"
    missed = {}
    for chapter in CHAPTERS:
        word = _title_word(chapter.title)
        found = v.page.evaluate(SEARCH_ENGINE, word)
        if chapter.docname not in found:
            missed[chapter.docname] = (word, found[:5])
    assert not v.offsite, f"search went to the network: {v.offsite}"
    errors = _real_errors(v.errors, SITE / "search.html")
    assert not errors, f"script errors on the search page: {errors}"
    assert not missed, f"a word of the title does not find the chapter: {missed}"


def test_the_site_works_from_disk(site, visit):
    """No server, no network: a chapter opened as a file shows typeset math and figures, and search works."""
    if not CHAPTERS:
        pytest.skip("no chapters yet")
    chapter = CHAPTERS[0]
    v = visit(_html(chapter.docname).as_uri())
    math = v.page.evaluate(MATH_READY)
    assert math["mathjax"] and math["typeset"] == math["math"] > 0, f"math from disk: {math}"
    facts = v.page.evaluate(DOM_FACTS)
    assert all(i["ok"] for i in facts["images"]), f"images from disk: {facts['images']}"
    assert facts["figures"] >= _expected_figures(chapter.docname)
    assert not v.offsite, f"requests to the network from disk: {v.offsite}"

    word = _title_word(chapter.title)
    s = visit((SITE / "search.html").as_uri() + f"?q={word}")
    hits = _search(s, chapter.docname)
    assert any(h.split("?")[0].endswith(f"/{chapter.docname}.html") for h in hits), \
        f"search from disk for {word!r} does not find {chapter.docname}: {hits[:10]}"
    assert not s.offsite, f"requests to the network from disk: {s.offsite}"


# ---- the generated pages list everything -------------------------------------------------------

TABLE_ROWS = """() => [...document.querySelectorAll('article table tbody tr')].map(tr => ({
    cells: [...tr.querySelectorAll('td')].map(td => td.textContent.trim()),
    links: [...tr.querySelectorAll('a')].map(a => new URL(a.href).pathname),
    verdict: tr.querySelector('td:last-child strong')?.textContent.trim(),
}))"""


def test_all_the_numbers_lists_every_result(site, server, visit):
    rows = visit(f"{server}/book/numbers.html").page.evaluate(TABLE_ROWS)
    shown = {(norm(r["cells"][1]), r["links"][0] if r["links"] else None) for r in rows}
    expected = {(norm(f"{r['label']} ({r['name']})"), f"/{r['chapter']}.html") for r in book_index.chapter_results()}
    assert shown == expected, (f"'All the numbers' is stale (make notebooks regenerates it): "
                               f"missing {sorted(expected - shown)}, extra {sorted(shown - expected)}")


def test_claims_and_verdicts_lists_every_claim(site, server, visit):
    rows = visit(f"{server}/book/claims.html").page.evaluate(TABLE_ROWS)
    shown = sorted((r["links"][0] if r["links"] else None, norm(r["cells"][2]), norm(r["cells"][3]),
                    r["verdict"]) for r in rows)
    expected = sorted((f"/{c['chapter']}.html", norm(c["claimed"]), norm(c["derived"]), c["verdict"])
                      for c in book_index.chapter_claims())
    assert shown == expected, "'Claims and verdicts' is stale (make notebooks regenerates it)"


# ---- static: nothing in the built HTML comes from another host ------------------------------------

RESOURCE_ATTRS = {"script": ["src"], "img": ["src", "srcset"], "iframe": ["src"], "source": ["src", "srcset"],
                  "video": ["src", "poster"], "audio": ["src"], "embed": ["src"], "object": ["data"],
                  "link": ["href"]}
LINK_RESOURCES = {"stylesheet", "icon", "preload", "modulepreload", "prefetch", "manifest", "apple-touch-icon",
                  "shortcut"}
REMOTE = re.compile(r"^\s*(https?:)?//", re.I)
CSS_REMOTE = re.compile(r"""url\(\s*['"]?(https?:)?//|@import\s+['"](https?:)?//""", re.I)


class _Resources(HTMLParser):
    def __init__(self):
        super().__init__()
        self.remote, self._in_style = [], False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "link" and not LINK_RESOURCES & set((a.get("rel") or "").lower().split()):
            return
        for attr in RESOURCE_ATTRS.get(tag, []):
            for value in (a.get(attr) or "").split(","):
                if REMOTE.match(value):
                    self.remote.append(f"<{tag} {attr}={value.strip()}>")
        if CSS_REMOTE.search(a.get("style") or ""):
            self.remote.append(f"<{tag} style=...{a['style'][:60]}>")
        self._in_style = tag == "style"

    def handle_data(self, data):
        if self._in_style and CSS_REMOTE.search(data):
            self.remote.append("<style> with a remote url()")


def test_no_page_references_another_host(site):
    remote = {}
    for path in sorted(site.rglob("*.html")):
        parser = _Resources()
        parser.feed(path.read_text(errors="replace"))
        if parser.remote:
            remote[str(path.relative_to(site))] = sorted(set(parser.remote))
    for path in sorted((site / "_static").rglob("*.css")):
        if CSS_REMOTE.search(path.read_text(errors="replace")):
            remote[str(path.relative_to(site))] = ["a remote url() or @import"]
    assert not remote, f"the site loads from the network (it must work offline): {remote}"


def test_math_is_served_by_the_site(site):
    pages = [_html(d) for d in PAGES if _html(d).exists() and 'class="math' in _html(d).read_text(errors="replace")]
    assert pages, "no page of the book has math: the MathJax checks would prove nothing"
    for page in pages:
        scripts = re.findall(r'<script[^>]*src="([^"]*mathjax[^"]*)"', page.read_text(), re.I)
        assert scripts and not any(REMOTE.match(s) for s in scripts), f"{page.name}: MathJax from {scripts}"
        for s in scripts:
            assert (page.parent / s.split("?")[0]).resolve().exists(), f"{page.name}: {s} is not in the site"


def test_every_toc_page_is_built(site):
    missing = [d for d in PAGES if not _html(d).exists()]
    assert not missing, f"pages in _toc.yml with no HTML (is the build stale?): {missing}"
