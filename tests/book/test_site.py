"""The website, checked in a real browser: what a reader on an air-gapped cluster gets from `make book`.

`make test` builds the site strictly, beside pytest (the tests here wait for that build); this file never
builds it. It serves _build/html on 127.0.0.1 (set BOOK_HTML to check another build) and opens every page of _toc.yml in
headless Chromium (Debian's package, driven by playwright-python; no browser download), with every
request that leaves 127.0.0.1 blocked and counted as a failure. For each page: it loads with no failed
request and no script error; its math is typeset by the MathJax the site serves itself; every image
loads and a chapter shows at least as many figures as its notebook has; every internal link and its
#fragment resolve; each glued number is on the page, each headline result visibly; a notebook page
offers its .ipynb for download. The search page finds each chapter by a word of its title, also from
file:// with no server; "All the numbers" and "Claims and verdicts" list every result and claim of every
chapter. Static checks (no browser) fail on any script, stylesheet, image or font referenced from
another host. With SITE_SCREENSHOTS=1, screenshots of the intro and of each chapter go to _build/screenshots/.

Without Chromium (or playwright) this file is skipped with one line, except under CI (the CI environment
variable set), where its tests fail instead: .ci/run installs Chromium.
"""
from __future__ import annotations

import pytest
from site_browser import (
    CODE_SHARE,
    PAGES,
    READER_FACTS,
    Path,
    check_page,
    skip_without_browser,
)

skip_without_browser()

# The chapters here, the other pages, search and the generated lists in test_site_pages.py: two modules, so
# pytest-xdist runs them on both cores, each with its own browser.
CHAPTER_PAGES = [d for d in PAGES if d.startswith("chapters/")]


@pytest.mark.parametrize("doc", CHAPTER_PAGES)
def test_page_in_the_browser(doc, site, server, visit):
    check_page(doc, server, visit)


def test_median_page_shows_under_a_quarter_visible_code(site, server, visit):
    """Visible code is the code that teaches; plumbing is removed or hidden. Runs after the page visits
    above (same module, file order), which record each chapter's share; visits any they did not."""
    for doc in (d for d in PAGES if d.startswith("chapters/") and d not in CODE_SHARE):
        reader = visit(f"{server}/{doc}.html").page.evaluate(READER_FACTS)
        CODE_SHARE[doc] = reader["code"] / max(1.0, reader["height"])
    shares = sorted(CODE_SHARE.values())
    median = shares[len(shares) // 2]
    report = ", ".join(f"{Path(d).name} {s:.0%}" for d, s in sorted(CODE_SHARE.items(), key=lambda kv: -kv[1])[:5])
    print(f"visible code: median {median:.0%} of a chapter page; highest: {report}")
    assert median < 0.25, f"median visible code {median:.0%} of a page (highest: {report})"
