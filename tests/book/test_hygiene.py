"""The book's promises, checked on every page: the toc matches the files, every glued key exists,
no number is typed into prose, and every chapter has the anatomy DESIGN.md fixes."""
import ast
import re

import pytest
from book_files import (
    ROOT,
    chapter_notebooks,
    glue_keys_defined,
    glue_keys_used,
    markdown_cells,
    output_texts,
    read,
    rounding_residues,
    toc_files,
    typed_numbers,
)

from utils.results import RESULTS_MIME

CHAPTERS = chapter_notebooks()
PAGES = toc_files() + [c for c in CHAPTERS if c not in toc_files()]  # a chapter not yet in the toc too
NOTEBOOKS = [p for p in PAGES if p.suffix == ".ipynb"]
SECTIONS = ["## The claim", "## Parameters", "## The chain", "## The check", "## What changes the answer",
            "## Exercises", "## Results"]


def test_every_toc_entry_exists():
    missing = [str(p.relative_to(ROOT)) for p in toc_files() if p.suffix not in (".md", ".ipynb")]
    assert not missing, f"in _toc.yml but no file: {missing}"


def test_every_chapter_and_page_is_in_the_toc():
    pages = set(toc_files())
    on_disk = set(CHAPTERS) | set((ROOT / "book").glob("*.md")) | set((ROOT / "book").glob("*.ipynb"))
    orphans = sorted(str(p.relative_to(ROOT)) for p in on_disk - pages)
    assert not orphans, f"files not in _toc.yml: {orphans}"


@pytest.mark.parametrize("page", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_glue_key_is_glued_on_its_page(page):
    missing = glue_keys_used(page) - glue_keys_defined(page)
    assert not missing, f"{page.name} uses glue keys it never glues: {sorted(missing)}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_no_hand_typed_numbers_in_prose(page):
    typed = [n for src in markdown_cells(page) for n in typed_numbers(src)]
    assert not typed, f"{page.name}: numbers typed into prose (glue them from code): {typed}"


def test_the_number_detector_catches_numbers_and_spares_names():
    assert typed_numbers("a 70B model on 15T tokens is 6.3e24 FLOP, or 2,000 GPUs at 40%") == \
        ["70B", "15T", "6.3e24", "2,000", "40"]
    assert typed_numbers("H100, Llama-3-70B, fp8, the 6ND rule, $2(N-1)/N$, {glue:text}`x`, `sm_90`") == []


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_anatomy(chapter):
    nb = read(chapter)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert text.lstrip().startswith(f"({chapter.stem})="), "a chapter starts with its label"
    missing = [s for s in SECTIONS if s not in text]
    assert not missing, f"{chapter.name} lacks sections {missing}"
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs), "at least one figure"
    results = [o["data"][RESULTS_MIME] for o in outputs if RESULTS_MIME in o.get("data", {})]
    assert results and results[0], "the chapter publishes its results (page.emit() as the last cell)"
    assert any(c.cell_type == "code" and ("page.claim(" in c.source or "page.claims()" in c.source)
               for c in nb.cells), "the claim is held in code"
    assert ":class: dropdown" in text, "exercises have hidden worked answers"
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, "committed outputs contain an error"


def test_the_method_page_lists_every_measurement():
    """book/measurement-method.md has a table row for each registered measurement, and none for a
    measurement that no longer exists."""
    import re

    import utils.gpu.measurements  # noqa: F401  (registers them)
    from utils.gpu.measurements.common import REGISTRY
    page = (ROOT / "book" / "measurement-method.md").read_text()
    table = page.split("| measurement | what it measures |", 1)[1].split("\n\n", 1)[0]
    rows = set(re.findall(r"^\| `([a-z0-9-]+)` \|", table, re.M))
    assert rows == set(REGISTRY), (f"missing rows: {sorted(set(REGISTRY) - rows)}; "
                                   f"rows for no measurement: {sorted(rows - set(REGISTRY))}")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_a_chapter_title_is_plain_text(chapter):
    """The generated pages copy each chapter's title into their own tables, where a glue role cannot
    resolve: a title must not glue a number."""
    title = next(line for src in markdown_cells(chapter) for line in src.splitlines() if line.startswith("# "))
    assert "{glue" not in title, f"{chapter.name}: the title glues a value: {title}"


@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.stem)
def test_no_rounding_residue_in_outputs(page):
    # A printed 3.2e-16 differs between machines; print utils.units.bound(err) ("below 1e-12") instead.
    found = [r for text in output_texts(page) for r in rounding_residues(text)]
    assert not found, f"{page.stem} prints rounding residues {found[:5]}; print a bound instead"


def test_the_residue_detector_catches_noise_and_spares_units_and_code():
    assert rounding_residues("| 2 | 3.4e-16 | 5.0e-16 |") == ["3.4e-16", "5.0e-16"]
    assert rounding_residues("error 4.9e-17") == ["4.9e-17"]
    assert rounding_residues("1.65e-18 USD/FLOP and `1.401e-45` and 2.0e-3 and below 1e-12") == []


def _paragraphs(markdown: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", markdown) if p.strip()]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_display_math_stands_on_its_own(page):
    """`$$...$$` inside a paragraph turns the rest of it into run-together math: display math is a
    paragraph of its own."""
    bad = []
    for src in markdown_cells(page):
        for para in _paragraphs(re.sub(r"```.*?```", "", src, flags=re.S)):
            if "$$" in para and not (para.startswith("$$") and para.endswith("$$")):
                bad.append(para[:80])
    assert not bad, f"{page.stem}: display math inside a paragraph: {bad[:3]}"


def _exercise_cells(nb) -> list:
    cells, inside = [], False
    for c in nb.cells:
        if c.cell_type == "markdown":
            heads = re.findall(r"^## (.+)$", c.source, re.M)
            if heads:
                inside = heads[-1].strip().startswith("Exercises")
        elif inside:
            cells.append(c)
    return cells


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_output_gives_an_answer_away(chapter):
    """The cell that computes the exercises' answers shows nothing: its only outputs are glue records
    (hidden), or it is removed from the page."""
    shown = []
    for c in _exercise_cells(read(chapter)):
        tags = set(c.metadata.get("tags", []))
        if tags & {"remove-cell", "remove-output"}:
            continue
        shown += [o for o in c.get("outputs", []) if not o.get("metadata", {}).get("scrapbook")]
    assert not shown, f"{chapter.stem}: an output in the Exercises section is visible: {str(shown[0])[:120]}"


def _notebook_definitions() -> dict[str, set[str]]:
    defs: dict[str, set[str]] = {}
    for path in CHAPTERS:
        for c in read(path).cells:
            if c.cell_type != "code":
                continue
            try:
                tree = ast.parse(c.source)
            except SyntaxError:
                continue
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    defs.setdefault(node.name, set()).add(path.stem)
    return defs


def test_no_name_is_defined_in_two_notebooks():
    """A function or class two chapters need lives in utils/, with a test, and both call it."""
    twins = {k: sorted(v) for k, v in _notebook_definitions().items() if len(v) > 1}
    assert not twins, f"defined in two or more notebooks (move into utils/): {twins}"


def _nonblank(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


def test_notebooks_hold_at_most_a_third_of_the_code():
    """utils/ is the book's code and the notebooks its narrative: notebook code cells hold at most 35%
    of the book's non-test Python."""
    nb_lines = sum(_nonblank(c.source) for p in CHAPTERS for c in read(p).cells if c.cell_type == "code")
    py_lines = sum(_nonblank(p.read_text()) for p in (ROOT / "utils").rglob("*.py"))
    share = nb_lines / (nb_lines + py_lines)
    print(f"notebook code: {nb_lines} of {nb_lines + py_lines} non-blank lines ({share:.0%})")
    assert share <= 0.35, f"notebook cells hold {share:.0%} of the book's Python ({nb_lines} lines)"


def test_the_readme_lists_every_chapter_of_the_toc():
    from utils.tools.book_index import readme_chapter_list
    assert readme_chapter_list() in (ROOT / "README.md").read_text(), \
        "README's chapter list is stale: paste `python -m utils.tools.book_index --readme` into it"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_links_the_chapters_it_builds_on(chapter):
    slugs = {p.stem for p in CHAPTERS}
    text = "\n".join(markdown_cells(chapter))
    linked = set(re.findall(r"\{ref\}`(?:[^`<]*<)?([\w-]+)>?`", text)) & slugs - {chapter.stem}
    assert "Builds on" in text and linked, f"{chapter.stem}: no 'Builds on' line linking another chapter"
    assert f"({chapter.stem}-check)=" in text, f"{chapter.stem}: the check section has no label for the claims page"
