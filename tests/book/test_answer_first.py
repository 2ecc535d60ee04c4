"""The answer-first box (utils/tools/answer_first.py) without a Sphinx build: what it takes from a chapter's
committed outputs and where it goes in the page. The site test checks the built pages in the browser."""
from __future__ import annotations

from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from utils.tools import answer_first, book_index

CHAPTER = book_index.Chapter(
    docname="chapters/x/demo", title="Demo", part="Part 1", path=None,
    results={"total": {"value": 2.0, "unit": "GPU", "kind": "derived", "label": "GPUs needed"},
             "other": {"value": 1.0, "unit": "", "kind": "derived", "label": "Second"}},
    claims=[{"name": "a", "verdict": "holds", "reason": "two is two"},
            {"name": "b", "verdict": "wrong as stated", "reason": "one is not two."}],
    glue={"total": "2 GPU", "other": "1", "claim-a-verdict": "holds", "claim-a-reason": "two is two",
          "claim-b-verdict": "wrong as stated", "claim-b-reason": "one is not two."})


def _page(rst: str) -> nodes.document:
    doc = new_document("demo", get_default_settings(Parser))
    Parser().parse(rst, doc)
    return doc


def test_the_box_shows_the_first_published_result_and_every_verdict_as_glued():
    s = answer_first.summary(CHAPTER)
    assert s["headline"] == {"name": "total", "label": "GPUs needed", "text": "2 GPU"}
    assert [(c["verdict"], c["reason"]) for c in s["claims"]] == [("holds", "two is two"),
                                                                  ("wrong as stated", "one is not two.")]


def test_the_opening_paragraph_moves_into_the_box_right_under_the_title():
    doc = _page("Demo\n====\n\nHow many GPUs? Two.\n\nThe claim\n---------\n\nText.\n")
    assert answer_first.insert(doc, CHAPTER)
    section = next(iter(doc.findall(nodes.section)))
    title, box, claim = section[0], section[1], section[2]
    assert isinstance(title, nodes.title) and box.tagname == "admonition"
    assert answer_first.BOX_CLASS in box["classes"]
    assert box[1].astext() == "How many GPUs? Two."                  # the question and answer, once
    assert "How many GPUs" not in claim.astext() and len(section) == 3
    verdicts = [n.astext() for n in box.findall(nodes.strong) if answer_first.VERDICT_CLASS in n["classes"]]
    reasons = [n.astext() for n in box.findall(nodes.inline) if answer_first.REASON_CLASS in n["classes"]]
    assert verdicts == ["holds", "wrong as stated"] and reasons == ["two is two", "one is not two."]
    assert "GPUs needed = 2 GPU." in box.astext()
    assert "two is two." in box.astext() and "one is not two.." not in box.astext()


def test_every_chapter_gets_a_headline_and_its_verdicts_from_its_outputs():
    for ch in book_index.chapters():
        s = answer_first.summary(ch)
        assert s["headline"] and s["headline"]["text"], ch.slug
        assert [c["verdict"] for c in s["claims"]] == [c["verdict"] for c in ch.claims], ch.slug
