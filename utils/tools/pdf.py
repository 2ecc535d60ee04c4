"""The whole book as one PDF, offline, with bookmarks and page numbers (what `make pdf` runs):

    python -m utils.tools.pdf [OUT.pdf]          # print _build/singlehtml into OUT (default _build/book.pdf)
    python -m utils.tools.pdf --check BOOK.pdf   # its outline (parts, then chapters) and its page numbers

Jupyter Book's singlehtml builder writes every page of the toc into one HTML file (`make pdf` builds it
into _build/singlehtml); this opens that file in headless Chromium (Debian's, driven by playwright, the
same browser the site test uses; no browser download), waits for MathJax to typeset every formula, and
prints it with the book's print stylesheet (book/_static/book.css: navigation and code inputs dropped,
chain tables and math wrapped so nothing is cut). Chromium's outline follows the headings (it writes one
only into a tagged PDF, which also serves screen readers); pypdf then rebuilds it as the reader's table of
contents (each part of _toc.yml with its pages under it) and stamps each page's number at its foot.
"""
from __future__ import annotations

import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SINGLE = ROOT / "_build" / "singlehtml" / "book" / "intro.html"   # the root page, holding every page
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TYPESET = """async () => { if (window.MathJax && MathJax.startup) { await MathJax.startup.promise; }
                          return document.querySelectorAll('mjx-merror').length; }"""
NUMBER_FONT, NUMBER_SIZE, NUMBER_FROM_BOTTOM = "/BookPageNumber", 9, 22.0   # Helvetica 9 pt, 22 pt up (in the margin)
LOAD_TIMEOUT_MS = 600_000
HELVETICA_DIGIT = 0.556                                                    # a digit's width, in ems


# ---- the outline -----------------------------------------------------------------------------------

@dataclass
class Mark:
    title: str
    page: int                       # 0-based page index
    children: list["Mark"] = field(default_factory=list)


def _key(title: str) -> str:
    """A heading as the book's sources spell it, whatever Chromium's outline made of it: without a section
    number ("3.1. "), a header link's "#", typographic quotes, or any space (Chromium joins a heading's
    wrapped lines with none)."""
    title = title.translate(str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}))
    title = re.sub(r"^\s*\d+(\.\d+)*\.?\s+", "", title)
    return re.sub(r"[\s#\u00b6]", "", title).casefold()


def _is(heading: str, title: str) -> bool:
    """Whether a heading of Chromium's outline is the page titled `title`. Chromium repeats the start of some
    headings (a wrapped one's first line, or all of it) before the whole: the heading is a prefix of the
    title, then the title."""
    h, t = _key(heading), _key(title)
    return h.endswith(t) and t.startswith(h[:len(h) - len(t)])


def page_titles(root: Path = ROOT) -> list[tuple[str, str]]:
    """(part caption, page title) for every page of the toc in order, the root page first (caption "")."""
    import nbformat

    from utils.tools import book_index
    out = []
    for part, docname in book_index.toc_entries(root):
        path = next(p for p in (root / f"{docname}.ipynb", root / f"{docname}.md") if p.exists())
        text = ("\n\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
                if path.suffix == ".ipynb" else path.read_text())
        title = next(line[2:].strip() for line in text.splitlines() if line.startswith("# "))
        out.append((part, title))
    return out


def headings(reader) -> list[Mark]:
    """The PDF's outline as a tree of Marks (Chromium's: one entry a heading, nested by level)."""
    def walk(items) -> list[Mark]:
        marks = []
        for item in items:
            if isinstance(item, list):          # pypdf gives an entry's children as the list after it
                if marks:
                    marks[-1].children = walk(item)
                continue
            marks.append(Mark(str(item.title), reader.get_destination_page_number(item)))
        return marks
    return walk(reader.outline)


def book_outline(found: list[Mark], pages: list[tuple[str, str]]) -> list[Mark]:
    """The reader's outline: the root page, then each part with its pages, titled as the toc's sources
    title them (Chromium's own titles run wrapped lines together, and some come out twice).

    `found` is the PDF's own heading tree; each toc page is the first heading at any depth, after the
    previous page's, whose title is the page's title. Raises ValueError naming any page it cannot find."""
    flat: list[Mark] = []

    def flatten(marks):
        for m in marks:
            flat.append(m)
            flatten(m.children)
    flatten(found)
    out: list[Mark] = []
    missing, at, current = [], 0, None
    for part, title in pages:
        hit = next((i for i in range(at, len(flat)) if _is(flat[i].title, title)), None)
        if hit is None:
            missing.append(title)
            continue
        at = hit + 1
        page = Mark(title, flat[hit].page)
        if not part:
            out.append(page)
        elif current is not None and current.title == part:
            current.children.append(page)
        else:
            current = Mark(part, page.page, [page])
            out.append(current)
    if missing:
        raise ValueError(f"{len(missing)} pages of the toc have no heading in the PDF: {missing[:5]}")
    return out


def add_outline(writer, marks: list[Mark], parent=None) -> None:
    """Replace nothing, add `marks` (and their children) as the writer's bookmarks."""
    for m in marks:
        item = writer.add_outline_item(title=m.title, page_number=m.page, parent=parent)
        add_outline(writer, m.children, parent=item)


# ---- page numbers ----------------------------------------------------------------------------------

def number_pages(writer) -> None:
    """Stamp each page's number (1, 2, ...) centred at its foot, in Helvetica (a PDF base font: nothing
    embedded). The page's own content is wrapped in q ... Q so the stamp is drawn in the page's default
    coordinates, whatever the content left in force."""
    from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject
    font = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"), NameObject("/Encoding"): NameObject("/WinAnsiEncoding")}))

    def stream(data: str):
        s = DecodedStreamObject()
        s.set_data(data.encode("ascii"))
        return writer._add_object(s)

    push = stream("q\n")
    for number, page in enumerate(writer.pages, 1):
        box = page.mediabox
        text = str(number)
        x = float(box.left) + (float(box.width) - len(text) * HELVETICA_DIGIT * NUMBER_SIZE) / 2
        y = float(box.bottom) + NUMBER_FROM_BOTTOM
        resources = page.get("/Resources")
        resources = DictionaryObject() if resources is None else resources.get_object()
        fonts = resources.get("/Font")
        fonts = DictionaryObject() if fonts is None else DictionaryObject(fonts.get_object())
        fonts[NameObject(NUMBER_FONT)] = font
        resources[NameObject("/Font")] = fonts
        page[NameObject("/Resources")] = resources
        contents = page.get("/Contents")
        contents = contents.get_object() if contents is not None else ArrayObject()
        old = list(contents) if isinstance(contents, ArrayObject) else [page.raw_get("/Contents")]
        stamp = stream(f"Q\nq BT {NUMBER_FONT} {NUMBER_SIZE} Tf {x:.2f} {y:.2f} Td ({text}) Tj ET Q\n")
        page[NameObject("/Contents")] = ArrayObject([push, *old, stamp])


def finish(chromium_pdf: Path, out: Path, pages: list[tuple[str, str]]) -> None:
    """Chromium's PDF -> the book's: the toc's outline and page numbers."""
    from pypdf import PdfReader, PdfWriter
    reader = PdfReader(chromium_pdf)
    marks = book_outline(headings(reader), pages)
    writer = PdfWriter(clone_from=reader)
    writer._root_object.pop("/Outlines", None)          # Chromium's heading outline, replaced below
    add_outline(writer, marks)
    number_pages(writer)
    writer.page_mode = "/UseOutlines"                   # a viewer opens with the bookmarks shown
    with open(out, "wb") as f:
        writer.write(f)


# ---- the check ------------------------------------------------------------------------------------

def check(path: Path, pages: list[tuple[str, str]]) -> list[str]:
    """What a reader of the PDF relies on: the bookmarks are the toc (its root page, each part with its pages
    in order, each at a page no earlier than the one before) and every page's last text is its number."""
    from pypdf import PdfReader
    reader = PdfReader(path)
    problems = []
    top = headings(reader)
    parts = {part for part, _ in pages if part}
    want = [(part, _key(title)) for part, title in pages]
    got = []
    for m in top:
        got += [(m.title, _key(c.title)) for c in m.children] if m.title in parts else [("", _key(m.title))]
    if got != want:
        first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        problems.append(f"the bookmarks are not the toc ({len(got)} pages bookmarked, {len(want)} in the toc): "
                        f"first difference at page {first} of the toc")
    starts = [c.page for m in top for c in (m.children if m.title in parts else [m])]
    if starts != sorted(starts):
        problems.append("the bookmarks' pages go backwards")
    unnumbered = [i for i, page in enumerate(reader.pages, 1)
                  if (page.extract_text() or "").split()[-1:] != [str(i)]]
    if unnumbered:
        problems.append(f"{len(unnumbered)} of {len(reader.pages)} pages do not end with their number: "
                        f"{unnumbered[:10]}")
    return problems


# ---- the command ----------------------------------------------------------------------------------

def print_book(out: Path, single: Path = SINGLE) -> int:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not single.exists():
        print(f"error: {single} is missing: build it first (make pdf does)", file=sys.stderr)
        return 2
    if chromium is None:
        print("error: Chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    # The single page sits under book/ but its links are relative to the build's root: open a copy there.
    page_file = single.parent.parent / "whole-book.html"
    shutil.copyfile(single, page_file)
    raw = out.with_suffix(".chromium.pdf")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=FLAGS)
        page = browser.new_page()
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:", "blob:"))
                   else r.abort())
        # The whole book is one large page: on a busy machine it takes longer than playwright's 30 s to load.
        page.goto(page_file.as_uri(), wait_until="load", timeout=LOAD_TIMEOUT_MS)
        errors = page.evaluate(TYPESET)
        page.emulate_media(media="print")
        page.pdf(path=str(raw), format="A4", print_background=True, outline=True, tagged=True,
                 margin={"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"})
        browser.close()
    if errors:
        print(f"warning: {errors} formulas failed to typeset", file=sys.stderr)
    finish(raw, out, page_titles())
    raw.unlink()
    print(f"wrote {out} ({out.stat().st_size // 1024:,} KiB)")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--check"]:
        path = Path(argv[1] if len(argv) > 1 else ROOT / "_build" / "book.pdf")
        if not path.exists():
            print(f"error: {path} is missing: run make pdf first", file=sys.stderr)
            return 2
        problems = check(path, page_titles())
        for p in problems:
            print(f"error: {p}", file=sys.stderr)
        if not problems:
            from pypdf import PdfReader
            reader = PdfReader(path)
            top = headings(reader)
            print(f"{path}: {len(reader.pages)} pages, each numbered; bookmarks: {len(top)} at the top, "
                  f"{sum(len(m.children) for m in top)} under them")
        return 1 if problems else 0
    return print_book(Path(argv[0] if argv else ROOT / "_build" / "book.pdf").resolve())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
