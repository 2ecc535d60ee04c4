"""`--notebook` and `--html` on every chapter, in the environment `make book` makes (the test and pdf extras'
modules unimportable, in the child and in its kernel): each chapter either works or exits 2 with one line that
names what to install and the command.

Executing 78 notebooks takes many minutes, so the sweep rests on the decision rederive makes before any kernel
starts (utils.rederive.missing_module, from the notebook's cells and the book's modules they reach): every
chapter it refuses is run through the command and must refuse in one line, in well under a second; every other
chapter must need nothing the book's environment lacks, and two of them are executed for real, one with --html
and a reader's own config.json."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import nbformat
import pytest
from book_files import ROOT

from utils import chains
from utils.rederive import notebook

# What `pip install -e .` leaves out: the modules of the test and pdf extras (pyproject.toml).
BOOK_LACKS = ("torch", "triton", "nbval", "pytest", "xdist", "playwright", "pypdf")
# Chapters that need torch only through a function their page calls, or a module it runs with `python -m`:
# the cases a top-level reading of the imports misses.
NEEDS_TORCH_DEEPER = ("loss-plateau", "ring-allreduce", "training-goodput-hangs", "dpo-memory-flops")
INSTALL = "install it with pip install -e '.[test]'"

SWEEP = r"""
import contextlib, io, json, sys
from utils import chains
from utils.rederive import main, missing_module, notebook
out = {}
for slug in chains.slugs():
    missing, runs = missing_module(notebook(slug)), {}
    if missing:
        for flag in (["--notebook"], ["--html", f"{sys.argv[1]}/{slug}.html"]):
            err, std = io.StringIO(), io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std):
                rc = main([slug, *flag])
            runs[flag[0]] = [rc, err.getvalue(), std.getvalue()]
    out[slug] = {"missing": missing, "runs": runs}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def book_env(tmp_path_factory):
    """The environment of `make book`: an interpreter (and the kernels it starts) that cannot import BOOK_LACKS."""
    site = tmp_path_factory.mktemp("book-env")
    (site / "sitecustomize.py").write_text(f"import sys\nfor m in {BOOK_LACKS!r}: sys.modules[m] = None\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}


def run(env, *args, timeout=120):
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_every_chapter_works_or_names_what_to_install(book_env, tmp_path):
    r = run(book_env, "-c", SWEEP, str(tmp_path))
    assert r.returncode == 0 and r.stderr == "", r.stderr[-3000:]
    sweep = json.loads(r.stdout)
    assert sorted(sweep) == sorted(chains.slugs())
    refused = {slug for slug, s in sweep.items() if s["missing"]}
    assert {sweep[s]["missing"] for s in refused} <= {"torch", "triton"}, "the book's environment lacks something else"
    assert set(NEEDS_TORCH_DEEPER) <= refused and "fleet-size" not in refused
    for slug in refused:
        for flag, (rc, err, out) in sweep[slug]["runs"].items():
            line = f"error: executing the {slug} page needs {sweep[slug]['missing']}, which is not installed here; {INSTALL}"
            assert (rc, err.splitlines(), out) == (2, [line], ""), (slug, flag, rc, err)
    assert not list(tmp_path.iterdir()), "a refused --html wrote a page"


def _section(text: str, start: str, end: str) -> str:
    i = text.index(start) + len(start)
    return text[i:].split(end)[0]


def exercises(nb) -> tuple[int, int]:
    """(exercises, answers) of a chapter's markdown: a paragraph that opens in bold, an admonition."""
    md = _section("\n".join(c.source for c in nb.cells if c.cell_type == "markdown"), "## Exercises", "\n## ")
    return len(re.findall(r"(?:^|\n\n)\*\*", md)), len(re.findall(r"^:::\{admonition\}", md, re.M))


def page_exercises(page: str) -> tuple[int, int]:
    """(exercises, answers) of a re-derived page; an empty answer is no answer."""
    html = _section(page, "<h2>Exercises</h2>", "<h2>")
    folded = re.findall(r"<details><summary>Answer</summary>(.*?)</details>", html, re.S)
    shown = re.sub(r"<details>.*?</details>", "", html, flags=re.S)
    return len(re.findall(r"<p><strong>", shown)), sum("<p>" in a for a in folded)


RAW_ROLE = re.compile(r"\{(?:glue|term|ref|numref|cite|eval)[^}]*\}`")


def test_a_chapter_on_the_gpu_harness_executes_without_torch(book_env):
    """bank-conflicts reads the GPU harness's registry and the measured records: torch only where guarded."""
    r = run(book_env, "-m", "utils.rederive", "bank-conflicts", "--notebook", "--json")
    assert r.returncode == 0 and r.stderr == "", r.stderr[-3000:]
    assert json.loads(r.stdout)["chapter"] == "bank-conflicts"


def test_the_html_page_is_the_readers_own_and_whole(book_env, tmp_path):
    """A reader's config.json in a folder named `mine`: the page names the model after its config (family and
    counted size), keeps every exercise with its answer, and leaves no MyST role raw."""
    cfg = json.loads((ROOT / "tests" / "data" / "configs" / "llama-3.1-8b.json").read_text())
    cfg.pop("_name_or_path", None)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "config.json").write_text(json.dumps(cfg))
    page = tmp_path / "page.html"
    r = run(book_env, "-m", "utils.rederive", "fleet-size", "--set", f"model={tmp_path / 'mine' / 'config.json'}",
            "--html", str(page))
    assert r.returncode == 0 and r.stderr == "", r.stderr[-3000:]
    text = page.read_text()
    assert "For llama 8.03B," in text and "For mine" not in text
    assert not RAW_ROLE.search(text)
    assert page_exercises(text) == exercises(nbformat.read(notebook("fleet-size"), as_version=4))


def test_every_chapter_page_keeps_its_exercises_and_answers():
    """The re-derived page renders the executed notebook; rendered here from each committed one (the same
    cells, no kernel): every exercise and every answer survive, each answer folded and not empty."""
    from utils.tools.page_html import render
    for slug in chains.slugs():
        nb = nbformat.read(notebook(slug), as_version=4)
        want = exercises(nb)
        assert want[0] >= 2 and want[0] == want[1], (slug, want)
        page = render(nb, slug, "note")
        assert page_exercises(page) == want, slug
        assert not RAW_ROLE.search(page), (slug, RAW_ROLE.search(page).group(0))
