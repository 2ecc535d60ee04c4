"""The book's index: every chapter in `_toc.yml` order, with the results and claims it publishes.

The "All the numbers" and "Claims and verdicts" pages are generated from here, and the site test uses
the same functions to check those pages and each chapter's glued numbers, so the three cannot disagree.
Everything is read from the chapters' committed outputs (utils.results.read_outputs); nothing is run.

    chapters()        [Chapter(docname, title, part, path, results, claims, glue)] in toc order
    chapter_results() one row per published result: chapter fields + name, value, unit, kind, label, text
    chapter_claims()  one row per claim: chapter fields + name, quote, source, claimed, derived, verdict, reason
    results_table(page) / claims_table(page)   the Markdown tables, with links relative to `page`
"""
from __future__ import annotations

import ast
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import yaml

from utils.results import read_outputs
from utils.units import fmt, ureg
from utils.verdicts import VERDICTS

ROOT = Path(__file__).resolve().parents[2]
GLUE_PREFIX = "application/papermill.record/"


@dataclass
class Chapter:
    docname: str                  # "chapters/training/six-nd": the toc entry, the page is <docname>.html
    title: str                    # the notebook's first "# " heading
    part: str                     # the toc part's caption
    path: Path                    # the notebook
    results: dict = field(default_factory=dict)   # name -> {value, unit, kind, label}
    claims: list = field(default_factory=list)    # [{name, quote, source, claimed, derived, verdict, reason}]
    glue: dict = field(default_factory=dict)      # glue key -> the text the prose shows

    @property
    def slug(self) -> str:
        return Path(self.docname).name


def toc_entries(root: Path = ROOT) -> list[tuple[str, str]]:
    """(part caption, docname) for every page of the toc, the root page first (caption "")."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    entries = [("", toc["root"])]
    for part in toc.get("parts", []):
        entries += [(part.get("caption", ""), c["file"]) for c in part.get("chapters", [])]
    return entries


def _title(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    raise ValueError("a chapter without a '# ' title")


def _glue_text(plain: str) -> str:
    """The text a chapter meant to glue, from the glue record's text/plain.

    MyST-NB's {glue:text} renders `str(ast.literal_eval(plain))`, so a record holding a quoted string
    ('4,320') shows 4,320, while a bare one that happens to be a Python literal does not survive
    (4,320 shows as "(4, 320)", 0.30 as "0.3"). The intended text is the string itself either way."""
    try:
        value = ast.literal_eval(plain)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return plain
    return value if isinstance(value, str) else plain


def glue_texts(nb) -> dict[str, str]:
    """Every glue key of an executed notebook and the text its prose shows."""
    texts = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            text = out.get("data", {}).get(GLUE_PREFIX + "text/plain")
            if name and text is not None:
                texts[name] = _glue_text(str(text))
    return texts


def chapters(root: Path = ROOT) -> list[Chapter]:
    """Every chapter notebook (chapters/<part>/<slug>.ipynb) the toc names, in toc order."""
    out = []
    for part, docname in toc_entries(root):
        path = root / f"{docname}.ipynb"
        if not docname.startswith("chapters/") or not path.exists():
            continue
        nb = nbformat.read(path, as_version=4)
        results, claims = read_outputs(nb)
        glue = glue_texts(nb)
        # The record's keys come back sorted (nbformat writes JSON sorted); the glue outputs keep the
        # order in which the chapter published its results, so restore that.
        order = {name: i for i, name in enumerate(glue)}
        results = dict(sorted(results.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
        out.append(Chapter(docname=docname, title=_title(nb), part=part, path=path,
                           results=results, claims=claims, glue=glue))
    return out


def _chapter_fields(ch: Chapter) -> dict:
    return {"chapter": ch.docname, "slug": ch.slug, "title": ch.title, "part": ch.part}


def chapter_results(root: Path = ROOT) -> list[dict]:
    """One row per published result, chapters in toc order, results in the order each chapter published them."""
    return [{**_chapter_fields(ch), "name": name, **record, "text": ch.glue.get(name)}
            for ch in chapters(root) for name, record in ch.results.items()]


def chapter_claims(root: Path = ROOT) -> list[dict]:
    """One row per claim, chapters in toc order."""
    return [{**_chapter_fields(ch), **claim} for ch in chapters(root) for claim in ch.claims]


# ---- the generated pages -------------------------------------------------------------------------

def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _unit(unit: str) -> str:
    """A record's unit as the chapters print it ("GPU*h" -> "GPU·h"); a pure number is "dimensionless"."""
    if not unit:
        return "dimensionless"
    try:
        return f"{ureg.Unit(unit):~P}"
    except Exception:  # a unit string this registry cannot parse is shown as written
        return unit


def _cell(text) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


def _link(row: dict, page: str, root: Path) -> str:
    """A Markdown link from `page` (a docname such as "book/numbers") to the row's chapter notebook,
    titled with the chapter's slug (short, and the name `python -m utils.rederive` takes)."""
    target = os.path.relpath(root / f"{row['chapter']}.ipynb", (root / page).parent)
    return f"[{row['slug']}]({Path(target).as_posix()} \"{_cell(row['title'])}\")"


def results_table(page: str = "book/numbers", root: Path = ROOT) -> str:
    rows = chapter_results(root)
    n_chapters = len({r["chapter"] for r in rows})
    kinds = Counter(r["kind"] for r in rows)
    lines = [f"{_count(len(rows), 'headline result')} from {_count(n_chapters, 'chapter')} "
             f"({kinds.get('derived', 0)} derived, {kinds.get('measured', 0)} measured).", "",
             "| Chapter | Result | Value | Unit | Kind |", "|---|---|--:|---|---|"]
    for r in rows:
        lines.append(f"| {_link(r, page, root)} | {_cell(r['label'])} (`{r['name']}`) | {fmt(r['value'])} "
                     f"| {_cell(_unit(r['unit']))} | {r['kind']} |")
    return "\n".join(lines) + "\n"


def _check_link(row: dict, page: str, root: Path) -> str:
    """A link to the chapter's check section when the chapter labels it `(<slug>-check)=`, else to the
    chapter itself."""
    path = root / f"{row['chapter']}.ipynb"
    label = f"{row['slug']}-check"
    if path.exists() and f"({label})=" in path.read_text():
        return f"{{ref}}`{row['slug']} <{label}>`"
    return _link(row, page, root)


def claims_table(page: str = "book/claims", root: Path = ROOT) -> str:
    """Every claim, grouped by verdict (the four of utils.verdicts, in order), each linked to the check
    section that judges it, with the count of each verdict first."""
    rows = chapter_claims(root)
    n_chapters = len({r["chapter"] for r in rows})
    verdicts = Counter(r["verdict"] for r in rows)
    tally = ", ".join(f"{verdicts.get(v, 0)} {v}" for v in VERDICTS)
    lines = [f"{_count(len(rows), 'claim')} from {_count(n_chapters, 'chapter')}: {tally}.", ""]
    for verdict in VERDICTS:
        group = [r for r in rows if r["verdict"] == verdict]
        if not group:
            continue
        lines += [f"**{verdict.capitalize()}** ({len(group)})", "",
                  "| Chapter | The source's claim | Claimed | The book's value | Verdict, and why |",
                  "|---|---|---|---|---|"]
        for r in group:
            why = _cell(r["reason"])
            if r.get("reading"):
                why += f" *Reading taken:* {_cell(r['reading'])}"
            if r.get("nearest_true"):
                why += f" *True statement:* {_cell(r['nearest_true'])}"
            lines.append(f"| {_check_link(r, page, root)} | {_cell(r['quote'])} ({_cell(r['source'])}) "
                         f"| {_cell(r['claimed'])} | {_cell(r['derived'])} | **{r['verdict']}**: {why} |")
        lines.append("")
    return "\n".join(lines) + "\n"


# ---- the README's chapter list ---------------------------------------------------------------------

README_BEGIN, README_END = "<!-- chapters: generated by python -m utils.tools.book_index --readme -->", "<!-- end chapters -->"


def readme_chapter_list(root: Path = ROOT) -> str:
    """The README's chapter list, from _toc.yml: one line per part, every chapter's slug."""
    lines, parts = [README_BEGIN], {}
    for part, docname in toc_entries(root):
        if docname.startswith("chapters/"):
            parts.setdefault(part, []).append(Path(docname).name)
    for part, slugs in parts.items():
        lines.append(f"- {part}: " + ", ".join(f"`{s}`" for s in slugs))
    lines.append(README_END)
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--readme"]:
        print(readme_chapter_list())
    else:
        print("usage: python -m utils.tools.book_index --readme", file=sys.stderr)
        sys.exit(2)
