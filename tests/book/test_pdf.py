"""The PDF's bookmarks and page numbers (utils/tools/pdf.py), on a tiny PDF made here: `make pdf` takes
minutes, so no test prints the book. `python -m utils.tools.pdf --check _build/book.pdf` runs the same
check on the real one."""
from __future__ import annotations

import pytest
from pypdf import PdfReader, PdfWriter

from utils.tools import pdf

TOC = [("", "Start here"), ("Part 1 · Rooflines", "The decode roofline"), ("Part 1 · Rooflines", "The memory wall"),
       ("Part 2 · Kernels", "Coalescing")]


def _chromium_like(path, n_pages=6):
    """What Chromium's outline gives (tagged=True): the headings nested by level, a section title ("The
    claim") in several chapters, wrapped lines run together, the start of some headings repeated."""
    w = PdfWriter()
    for _ in range(n_pages):
        w.add_blank_page(width=595, height=842)
    root = w.add_outline_item(title="Start here#", page_number=0)
    a = w.add_outline_item(title="1.1. The decodeThe decoderoofline#", page_number=1, parent=root)
    w.add_outline_item(title="The claim#", page_number=1, parent=a)
    w.add_outline_item(title="The check#", page_number=2, parent=a)
    b = w.add_outline_item(title="The memory wallThe memory wall", page_number=3, parent=root)
    w.add_outline_item(title="The claim", page_number=3, parent=b)
    w.add_outline_item(title="2.1. Coalescing", page_number=5, parent=root)
    with open(path, "wb") as f:
        w.write(f)
    return path


def test_the_book_pdf_has_the_toc_as_bookmarks_and_numbered_pages(tmp_path):
    raw = _chromium_like(tmp_path / "raw.pdf")
    out = tmp_path / "book.pdf"
    pdf.finish(raw, out, TOC)
    assert pdf.check(out, TOC) == []
    top = pdf.headings(PdfReader(out))
    assert [(m.title, m.page) for m in top] == [("Start here", 0), ("Part 1 · Rooflines", 1), ("Part 2 · Kernels", 5)]
    assert [(c.title, c.page) for c in top[1].children] == [("The decode roofline", 1), ("The memory wall", 3)]
    texts = [p.extract_text().split() for p in PdfReader(out).pages]
    assert texts == [[str(i)] for i in range(1, 7)]


def test_numbers_are_stamped_over_existing_content_in_default_coordinates(tmp_path):
    """A page whose content leaves a transform in force (Chromium's do) still gets its number at the foot."""
    from pypdf.generic import DecodedStreamObject, NameObject
    w = PdfWriter()
    page = w.add_blank_page(width=595, height=842)
    s = DecodedStreamObject()
    s.set_data(b"q 2 0 0 2 100 100 cm")                  # unbalanced: the page's content ends scaled
    page[NameObject("/Contents")] = w._add_object(s)
    pdf.number_pages(w)
    seen = []
    w.pages[0].extract_text(visitor_text=lambda text, cm, tm, font, size: text.strip() and seen.append((text, cm, tm)))
    assert [t for t, _, _ in seen] == ["1"]
    _, cm, tm = seen[0]
    assert cm[:4] == [1, 0, 0, 1] and tm[5] == pytest.approx(pdf.NUMBER_FROM_BOTTOM)


def test_the_check_finds_a_pdf_without_bookmarks_or_numbers(tmp_path):
    raw = _chromium_like(tmp_path / "raw.pdf")
    problems = pdf.check(raw, TOC)
    assert any("bookmarks are not the toc" in p for p in problems)
    assert any("6 of 6 pages do not end with their number" in p for p in problems)


def test_a_toc_page_missing_from_the_pdf_is_named(tmp_path):
    raw = _chromium_like(tmp_path / "raw.pdf")
    with pytest.raises(ValueError, match="Fused softmax"):
        pdf.finish(raw, tmp_path / "book.pdf", TOC + [("Part 2 · Kernels", "Fused softmax")])


def test_a_heading_is_a_page_title_however_chromium_spells_it():
    title = "Training compute: the 6ND rule"
    for heading in ("3.1. Training compute: the 6ND rule#", "Training compute: the 6NDrule",
                    "Training compute: theTraining compute: the6ND rule", title + title, "Training compute: the 6ND rule\u00b6"):
        assert pdf._is(heading, title), heading
    for heading in ("Training compute", "Training compute: the 6ND rule, revisited", "The 6ND rule"):
        assert not pdf._is(heading, title), heading
    assert pdf._is("Attention\u2019s traffic", "Attention's traffic")
