"""The answer first: a Sphinx extension that opens every chapter page with a summary box under its title.

The box holds the chapter's opening paragraph (AUTHORING.md: the question and the answer, with the page's
own glued numbers in it), the headline result (the first Result the chapter publishes: its label and the
text the page glues for it) and each claim's verdict with its one-line reason (the texts the page glues as
claim-<name>-verdict and claim-<name>-reason). Everything comes from the notebook's committed outputs
(utils.tools.book_index, the same reader as "All the numbers" and "Claims and verdicts"), so the box cannot
disagree with the page below it; nothing is executed and no notebook is edited.

The opening paragraph is moved into the box, not copied: it already reads as the question and its answer
(a chain module's docstring opens with the slug and a noun phrase, not a question), and a copy would print
the same sentences twice, one screen apart. Registered in _config.yml under sphinx: extra_extensions.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from docutils import nodes

BOX_CLASS = "answer-first"            # the site test finds the box, its verdicts and reasons by these classes
VERDICT_CLASS = "answer-first-verdict"
REASON_CLASS = "answer-first-reason"
RESULT_CLASS = "answer-first-result"
TITLE = "The answer first"


@functools.lru_cache(maxsize=1)
def _chapters() -> dict:
    from utils.tools import book_index
    return {ch.docname: ch for ch in book_index.chapters()}


def summary(ch) -> dict:
    """What the box shows for one chapter (a book_index.Chapter): the headline result's label and glued
    text, and each claim's glued verdict and reason, in the page's order."""
    headline = None
    if ch.results:
        name, record = next(iter(ch.results.items()))     # book_index keeps the order they were published
        headline = {"name": name, "label": record["label"], "text": ch.glue.get(name, "")}
    claims = [{"name": c["name"], "verdict": ch.glue.get(f"claim-{c['name']}-verdict", c["verdict"]),
               "reason": ch.glue.get(f"claim-{c['name']}-reason", c["reason"])} for c in ch.claims]
    return {"headline": headline, "claims": claims}


def _verdict_paragraph(claim: dict, n: int | None) -> nodes.paragraph:
    lead = "Verdict on the claim: " if n is None else f"Verdict on claim {n}: "
    return nodes.paragraph("", "", nodes.strong("", lead),
                           nodes.strong("", claim["verdict"], classes=[VERDICT_CLASS]),
                           nodes.strong("", ". "),
                           nodes.inline("", claim["reason"], classes=[REASON_CLASS]),
                           nodes.Text("" if claim["reason"].rstrip().endswith((".", "!", "?")) else "."))


def box(opening: nodes.Node | None, ch) -> nodes.admonition:
    """The admonition: the opening paragraph, the headline result, the verdicts."""
    s = summary(ch)
    body = nodes.admonition(classes=["tip", BOX_CLASS])
    body += nodes.title("", TITLE)
    if opening is not None:
        body += opening
    if s["headline"]:
        h = s["headline"]
        body += nodes.paragraph("", "", nodes.strong("", "Headline result: "),
                                nodes.inline("", h["label"], classes=[RESULT_CLASS]), nodes.Text(" = "),
                                nodes.strong("", h["text"], classes=[RESULT_CLASS]), nodes.Text("."))
    claims = s["claims"]
    if len(claims) == 1:
        body += _verdict_paragraph(claims[0], None)
    elif claims:
        # Numbered as the page quotes them under "The claim".
        items = nodes.bullet_list()
        for i, c in enumerate(claims, 1):
            items += nodes.list_item("", _verdict_paragraph(c, i))
        body += items
    return body


def insert(doctree: nodes.document, ch) -> bool:
    """Put the box right after the page's title, the opening paragraph moved into it."""
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not section.children or not isinstance(section[0], nodes.title):
        return False
    opening = section[1] if len(section) > 1 and isinstance(section[1], nodes.paragraph) else None
    if opening is not None:
        section.remove(opening)
    section.insert(1, box(opening, ch))
    return True


def _on_doctree_read(app, doctree) -> None:
    # A page is re-read when its notebook changes: the notebook is the page's source.
    ch = _chapters().get(app.env.docname)
    if ch is not None:
        insert(doctree, ch)


def setup(app):
    app.connect("doctree-read", _on_doctree_read)
    # Sphinx keeps pages read with an older env_version of an extension only while it is unchanged: a hash of
    # this file makes an edit here re-read every page, so no incremental build keeps an old box.
    version = int(hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12], 16)
    return {"version": "1", "env_version": version, "parallel_read_safe": True, "parallel_write_safe": True}
