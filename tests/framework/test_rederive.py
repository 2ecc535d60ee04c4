"""The re-derive command, end to end: results for other inputs, and one clean line for bad input."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from book_files import ROOT


def rederive(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "utils.rederive", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def tree_state():
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                            capture_output=True, text=True).stdout
    files = []
    for top, dirs, names in os.walk(ROOT):        # pruned as it walks: .venv alone is tens of thousands of files
        dirs[:] = [d for d in dirs if d not in (".venv", ".git", "_build", "__pycache__")]
        files += [Path(top) / n for n in names]
    return status, sorted((str(p), p.stat().st_mtime_ns) for p in files)


def test_list_names_chapters_defaults_units_and_keys():
    r = rederive("--list")
    assert r.returncode == 0, r.stderr
    assert "six-nd (training)" in r.stdout and "n_tokens = 15000000000000.0 token" in r.stdout
    assert "valid: bloom-176b, chinchilla-70b, deepseek-v2" in r.stdout   # the model keys, sorted


def test_six_nd_for_llama_405b():
    before = tree_state()
    r = rederive("six-nd", "--set", "model=llama-3-405b", "--set", "n_tokens=15.6e12", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["chapter"] == "six-nd"
    assert out["parameters"]["model"] == "llama-3-405b"
    assert out["results"]["train_flops"]["unit"] == "FLOP"
    from utils import catalog
    from utils.models import param_count
    n = param_count(catalog.model("llama-3-405b"))["active"].m
    assert out["results"]["train_flops"]["value"] == pytest.approx(6 * n * 15.6e12, rel=1e-12)
    assert tree_state() == before, "re-deriving wrote into the repository"


def test_the_page_gives_the_fast_paths_results_and_one_standalone_page(tmp_path):
    """One execution of the page serves both: `--html` with `--json` prints the page's own results (identical to the
    fast path's, in the page's order) and writes the page; nothing is written into the repository.
    (tests/book/test_rederive_sweep.py runs --notebook and --html over the other chapters.)"""
    before = tree_state()
    args = ["--set", "gpu=b200", "--set", "mfu=0.35", "--set", "run_days=60", "--json"]
    out = tmp_path / "fleet-size.html"
    fast, page = rederive("fleet-size", *args), rederive("fleet-size", *args, "--html", str(out))
    assert fast.returncode == 0 and page.returncode == 0, (fast.stderr, page.stderr)
    assert fast.stdout == page.stdout, "the same results, in the page's order"
    text = out.read_text()
    assert "B200" in text and "{glue" not in text and "<details>" in text and "MathJax" in text
    assert tree_state() == before, "re-deriving wrote into the repository"


@pytest.mark.parametrize("args, message", [
    (["no-such-chapter"], "unknown chapter 'no-such-chapter'"),
    (["six-nd", "--set", "n_tokns=1e9"], "has no parameter 'n_tokns'; did you mean 'n_tokens'"),
    (["six-nd", "--set", "n_tokens=seventy"], "n_tokens must be a number"),
    (["six-nd", "--set", "n_tokens"], "--set takes name=value"),
    (["six-nd", "--set", "n_tokens=-1e12"], "n_tokens must be > 0"),
    (["six-nd", "--set", "context_tokens=0"], "context_tokens must be a whole number"),
    (["six-nd", "--set", "n_params=405e9", "--set", "model=llama-3-8b"], "not both"),
    (["six-nd", "--set", "n_layers=0"], "n_layers must be a whole number >= 1"),
    (["six-nd", "--set", "model=llama3"], "did you mean 'llama-3-8b'"),
    (["six-nd", "--set", "model=/no/such/config.json"], "no such file"),
    (["six-nd", "--html", "/no/such/dir/x.html"], "no such folder"),
    (["six-nd", "--bogus"], "unrecognized arguments"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    before = tree_state()
    r = rederive(*args)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert tree_state() == before


@pytest.mark.parametrize("slug, sets, result, check", [
    ("fleet-size", ["gpu=b200", "mfu=0.35", "run_days=60"], "gpus_planned", lambda v: v == 2048),
    ("bill-of-materials-10k", ["n_gpus=20000"], "nodes", lambda v: v == 2560),
    ("buy-vs-rent", ["rent_usd_per_gpu_hour=1.50"], "breakeven_utilization", lambda v: v > 1),
])
def test_flagship_chapters_rederive_with_other_inputs(slug, sets, result, check):
    r = rederive(slug, *[a for s in sets for a in ("--set", s)], "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert check(out["results"][result]["value"]), out["results"][result]


@pytest.mark.parametrize("slug, sets, message", [
    ("fleet-size", ["gpu=h1000"], "valid: a100-sxm-80gb"),
    ("fleet-size", ["mfu=1.2"], "mfu must be a fraction"),
    ("bill-of-materials-10k", ["n_gpus=0"], "n_gpus"),
    ("buy-vs-rent", ["usd_per_kwh=-0.1"], "usd_per_kwh"),
])
def test_impossible_inputs_to_flagship_chapters_exit_2(slug, sets, message):
    r = rederive(slug, *[a for s in sets for a in ("--set", s)])
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in r.stderr, r.stderr


def test_list_of_one_chapter_shows_its_parameters_only():
    from utils import chains
    r = rederive("--list", "six-nd")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "six-nd (training)"
    assert len(r.stdout.splitlines()) == 1 + len(chains.parameters("six-nd"))
    r = rederive("--list", "six-n")
    assert r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
    assert "did you mean 'six-nd'" in r.stderr


@pytest.mark.parametrize("sets, message", [
    (["n_tokens=1" + "0" * 400], "n_tokens must be at most 1.8e+308 (what a float holds), got an integer of 401 digits"),
    (["n_tokens=1e308", "model=llama-3-405b"], "n_tokens must be 0 or between 1e-30 and 1e+30 in size"),
])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_numbers_no_float_holds_are_refused_in_one_line(sets, message, json_flag):
    r = rederive("six-nd", *[a for s in sets for a in ("--set", s)], *json_flag)
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr


def test_a_page_that_needs_torch_says_what_to_install(tmp_path):
    """In the environment `make book` makes (no torch): one line naming torch and the install command, found
    from the notebook's imports before any kernel starts."""
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['torch'] = None\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    slug = "attention-traffic"
    assert "import torch" in (ROOT / "chapters" / "kernels" / f"{slug}.ipynb").read_text()
    before = tree_state()
    for flag in (["--notebook"], ["--html", str(tmp_path / "page.html")]):
        r = subprocess.run([sys.executable, "-m", "utils.rederive", slug, *flag], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stderr)
        assert r.stderr.strip().splitlines() == [
            f"error: executing the {slug} page needs torch, which is not installed here; "
            "install it with pip install -e '.[test]'"]
    assert not (tmp_path / "page.html").exists() and tree_state() == before


def _section(text: str, start: str, end: str) -> str:
    i = text.index(start) + len(start)
    return text[i:].split(end)[0]


@pytest.mark.parametrize("slug", ["six-nd", "fleet-size"])
def test_the_page_keeps_every_exercise_with_its_answer_folded(slug):
    """The re-derived page renders the executed notebook; rendered here from the committed one (the same cells),
    so no kernel runs: every exercise (a paragraph that opens in bold) and every answer survive, each answer
    folded and not empty, and no MyST role is left raw."""
    import nbformat

    from utils.rederive import notebook
    from utils.tools.page_html import render
    nb = nbformat.read(notebook(slug), as_version=4)
    md = _section("\n".join(c.source for c in nb.cells if c.cell_type == "markdown"), "## Exercises", "\n## ")
    exercises = len(re.findall(r"(?:^|\n\n)\*\*", md))
    answers = len(re.findall(r"^:::\{admonition\}", md, re.M))
    assert exercises >= 2 and answers == exercises
    page = render(nb, slug, "note")
    html = _section(page, "<h2>Exercises</h2>", "<h2>")
    folded = re.findall(r"<details><summary>Answer</summary>(.*?)</details>", html, re.S)
    assert len(folded) == answers and all("<p>" in a for a in folded), "an answer lost or empty"
    assert len(re.findall(r"<p><strong>", re.sub(r"<details>.*?</details>", "", html, flags=re.S))) == exercises
    assert not re.search(r"\{(?:glue|term|ref|numref|cite)[^}]*\}`", page), "a MyST role left raw"


def test_the_page_s_run_names_the_results_it_left_out(monkeypatch):
    """--notebook at an incident no alert rule pages: the page publishes no detection time, and the payload says why,
    in the chain module's own line, as the fast path does (the executed page itself is stubbed: its records are
    the fast path's own, less the results it leaves out)."""
    import utils.rederive as R
    from utils import chains
    sets = {"incident_bad_share": "0.0005", "baseline_bad_share": "0"}
    fast = R.payload("slo-error-budgets", sets)
    assert fast["left_out"], "this incident should leave the alert's results out"
    published = {k: dict(v, label=k) for k, v in fast["results"].items()}
    monkeypatch.setattr(R, "execute", lambda slug, chosen: None)
    monkeypatch.setattr("utils.results.read_outputs", lambda nb: (published, {}))
    page = R._executed("slo-error-budgets", sets, [], None)
    assert page["results"] == fast["results"] and page["left_out"] == fast["left_out"]
    assert set(page["left_out"]) == {r.name for r in chains.results("slo-error-budgets")} - set(page["results"])
