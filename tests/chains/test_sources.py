"""A chain's input rows cite where each number comes from: at the chapter's defaults no row says "parameters cell"
(the default's own source shows: a catalog entry, a paper, the claim, this book's assumption), and once a reader
changes a parameter, the rows it feeds say so (each chapter's own test names those rows)."""
import pytest

from utils import chains


@pytest.mark.parametrize("slug", chains.slugs())
def test_at_the_defaults_every_row_cites_a_source_not_the_parameters_cell(slug):
    m = chains.module(slug)
    ch = m.compute(m.SPEC.check())
    typed = [r.name for r in ch.rows if "parameters cell" in (r.source or "")]
    assert not typed, f"{slug}: rows {typed} cite the parameters cell at the defaults (use SPEC.source(p, name))"
    unsourced = [r.name for r in ch.rows if not r.text and r.kind != "definition" and not (r.source or "").strip()]
    assert not unsourced, f"{slug}: input rows {unsourced} have no source"
