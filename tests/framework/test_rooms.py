"""The map in utils/__init__.py, held: each room imports only the rooms its paragraph allows (lazy imports
inside functions included), no import cycle anywhere in utils/, no chain module imports the registry, the GPU
side imports with pint, sympy and IPython blocked, and each building block names the chapters that use it."""
from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UTILS = ROOT / "utils"
PARTS = ("training", "serving", "fleet")
ROOMS = ("catalog", "chains", *PARTS, "components", "gpu", "tools")
ALLOWED = {
    "framework": {"framework", "catalog"},
    "catalog": {"catalog", "framework"},   # of the framework, only units and models (CATALOG_MAY_USE)
    "chains": {"framework", "catalog", "chains", *PARTS, "components", "gpu"},
    "training": {"framework", "catalog", "components", "training"},
    "serving": {"framework", "catalog", "components", "training", "serving"},
    "fleet": {"framework", "catalog", "components", "training", "serving", "fleet"},
    "components": {"components"},
    "gpu": {"gpu"},
    "tools": {"framework", "catalog", "chains", *PARTS, "components", "gpu", "tools"},
}
# the named exceptions the map states
EXTRA = {
    "utils.measured": {"gpu"},
    "utils.measure": {"gpu"},
    "utils.results": {"chains"},
    "utils.rederive": {"chains", "tools"},
}
CATALOG_MAY_USE = {"utils.units", "utils.models"}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(UTILS.rglob("*.py"))}


def room(mod: str) -> str:
    bits = mod.split(".")
    if len(bits) == 1:
        return "root"
    return bits[1] if bits[1] in ROOMS else "framework"


def imports(path: Path | str) -> set[str]:
    """Every utils module a file (or a piece of code) imports, at the top or inside a function:
    `from utils.a import b` is utils.a.b where that is a module, else utils.a."""
    out = set()
    for n in ast.walk(ast.parse(path.read_text() if isinstance(path, Path) else path)):
        if isinstance(n, ast.Import):
            out |= {a.name for a in n.names if a.name.startswith("utils")}
        elif isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("utils") and n.level == 0:
            for a in n.names:
                sub = f"{n.module}.{a.name}"
                out.add(sub if sub in MODULES else n.module)
    return {m for m in out if m in MODULES}


@functools.cache
def graph() -> dict[str, set[str]]:
    """Each utils module's utils imports (parsed when a test first asks, not as the file loads: both workers load it)."""
    return {m: imports(p) - {m} for m, p in MODULES.items()}


def test_the_top_level_has_at_most_25_entries():
    entries = [p.name for p in UTILS.iterdir() if p.name != "__pycache__"]
    assert len(entries) <= 25, sorted(entries)


def test_every_room_is_a_package_with_a_docstring():
    for r in ROOMS:
        init = UTILS / r / "__init__.py"
        assert init.is_file() and ast.get_docstring(ast.parse(init.read_text())), r
    doc = ast.get_docstring(ast.parse((UTILS / "__init__.py").read_text()))
    for r in ROOMS:
        assert f"{r}/" in doc, f"utils/__init__.py's map does not name {r}/"


@pytest.mark.parametrize("mod", sorted(m for m in MODULES if m != "utils"))
def test_a_module_imports_only_the_rooms_its_room_may(mod):
    own = room(mod)
    allowed = ALLOWED[own] | EXTRA.get(mod, set())
    bad = sorted(d for d in graph()[mod] if room(d) not in allowed and d != "utils")
    if own == "catalog":
        bad += sorted(d for d in graph()[mod] if room(d) == "framework" and d not in CATALOG_MAY_USE)
    assert not bad, f"{mod} ({own}) imports {bad}"


def test_no_import_cycle():
    """Tarjan's strongly connected components over every utils module's imports, lazy ones included."""
    index, low, on, stack, cycles, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph()[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph():
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_no_chain_module_imports_the_registry():
    for mod in MODULES:
        if mod.startswith("utils.chains."):
            tree = ast.parse(MODULES[mod].read_text())
            for n in ast.walk(tree):
                if isinstance(n, ast.Import):
                    assert not any(a.name == "utils.chains" for a in n.names), mod
                elif isinstance(n, ast.ImportFrom) and n.module == "utils":
                    assert "chains" not in {a.name for a in n.names}, mod
                elif isinstance(n, ast.ImportFrom) and n.module == "utils.chains":
                    names = {a.name for a in n.names}
                    assert all(f"utils.chains.{a}" in MODULES for a in names), f"{mod} takes {names} from the registry"
            assert hasattr(__import__(mod, fromlist=["SPEC"]), "SPEC"), f"{mod} has no SPEC"


def test_the_gpu_side_imports_with_pint_sympy_and_ipython_blocked():
    gpu = sorted(m for m in MODULES if m.startswith("utils.gpu")) + ["utils.measure"]
    code = ("import importlib, sys\n"
            "for name in ('pint', 'sympy', 'IPython', 'matplotlib'): sys.modules[name] = None\n"
            f"for m in {gpu!r}: importlib.import_module(m)\n"
            "print('ok')")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


# --- each building block names the chapters that use it ---------------------------------------------------

BLOCKS = sorted(m for m in MODULES if room(m) in (*PARTS, "components", "gpu") and m.count(".") == 2
                and MODULES[m].name != "__init__.py")
CHAPTERS = {p.stem: p for p in (ROOT / "chapters").glob("*/*.ipynb")}
LINE = re.compile(r"^Chapters: (.*?)\.?\s*(?:\n\s*\n|\Z)", re.M | re.S)   # to the end of its paragraph


def notebook_imports(nb: Path) -> set[str]:
    cells = json.loads(nb.read_text())["cells"]
    return set().union(*(imports("".join(c["source"])) for c in cells if c["cell_type"] == "code"))


@functools.cache
def uses() -> dict[str, set[str]]:
    return {slug: graph().get(f"utils.chains.{slug.replace('-', '_')}", set()) | notebook_imports(nb)
            for slug, nb in CHAPTERS.items()}


def users(mod: str) -> set[str]:
    """The chapters whose chain module or notebook imports `mod`."""
    return {slug for slug, used in uses().items() if mod in used}


@pytest.mark.parametrize("mod", BLOCKS)
def test_a_building_block_names_the_chapters_that_use_it(mod):
    doc = ast.get_docstring(ast.parse(MODULES[mod].read_text())) or ""
    m = LINE.search(doc)
    assert m, f"{mod}'s docstring has no line 'Chapters: a, b.' (or 'Chapters: none, ...')"
    named = set() if m.group(1).startswith("none") else {s.strip() for s in " ".join(m.group(1).split()).split(",")}
    assert named == users(mod), f"{mod} names {sorted(named)}; used by {sorted(users(mod))}"
