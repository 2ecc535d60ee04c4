"""The whole book as one PDF, offline: python -m utils.tools.pdf [OUT.pdf]  (what `make pdf` runs)

Jupyter Book's singlehtml builder writes every page of the toc into one HTML file (`make pdf` builds it
into _build/singlehtml); this opens that file in headless Chromium (Debian's, driven by playwright, the
same browser the site test uses; no browser download), waits for MathJax to typeset every formula, and
prints it with the book's print stylesheet (book/_static/book.css: navigation and code inputs dropped,
chain tables and math wrapped so nothing is cut).
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SINGLE = ROOT / "_build" / "singlehtml" / "book" / "intro.html"   # the root page, holding every page
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TYPESET = """async () => { if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; }
                          return document.querySelectorAll('mjx-merror').length; }"""


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else ROOT / "_build" / "book.pdf").resolve()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not SINGLE.exists():
        print(f"error: {SINGLE} is missing: build it first (make pdf does)", file=sys.stderr)
        return 2
    if chromium is None:
        print("error: Chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    # The single page sits under book/ but its links are relative to the build's root: open a copy there.
    page_file = SINGLE.parent.parent / "whole-book.html"
    shutil.copyfile(SINGLE, page_file)
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=FLAGS)
        page = browser.new_page()
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:", "blob:"))
                   else r.abort())
        page.goto(page_file.as_uri(), wait_until="load")
        errors = page.evaluate(TYPESET)
        page.emulate_media(media="print")
        page.pdf(path=str(out), format="A4", print_background=True,
                 margin={"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"})
        browser.close()
    if errors:
        print(f"warning: {errors} formulas failed to typeset", file=sys.stderr)
    print(f"wrote {out} ({out.stat().st_size // 1024:,} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
