"""The re-derive panel's runtime: the folder a chapter page loads, from the site's own _static, when a reader
opens its panel (utils/tools/rederive_panel.py, book/_static/rederive.js). Nothing comes from a CDN.

    python -m utils.tools.browser_bundle [OUT]        # OUT: _build/html/_static/rederive by default

It holds
- the Pyodide core (the interpreter and standard library, no numpy) from node_modules/pyodide, which `npm ci`
  installs at the version package-lock.json pins: pyodide.mjs, pyodide.asm.mjs, pyodide.asm.wasm,
  python_stdlib.zip, pyodide-lock.json;
- book.<hash>.zip: the contents of the pure-Python wheels book/browser-requirements.txt pins (pint and its
  dependencies, fetched with pip, hashes checked; not their test suites) and the book's own Python the
  closed-form chapters run: the framework, the catalog with its TOML files, formula_code.json, the closed-form
  chain modules and the building blocks they import, found by following their imports (the GPU side's
  harness only where book/measurements holds a record a chain reads through utils.measured; never tools/),
  with the data files those modules read; every other chain module as a one-line stub (so the registry lists
  the same chapters); and the bytecode of what every first use loads (pint, the framework), compiled at build
  time by Pyodide's own interpreter under node (the page would otherwise compile it on first use);
- specs.json: each closed-form chapter's parameters and results (what the panel and the tests read);
- manifest.json: the Pyodide version, the zip's name and the closed-form chapters.

The closed-form chapters are those whose SPEC says closed_form=True when this runs. Where npm was not run (no
node_modules/pyodide) or the wheels cannot be had, it says so in one line and writes a manifest without a
runtime: the pages keep their static numbers and each panel shows the command line.
"""
from __future__ import annotations

import ast
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UTILS = ROOT / "utils"
PYODIDE = ROOT / "node_modules" / "pyodide"
REQUIREMENTS = ROOT / "book" / "browser-requirements.txt"
WHEELS = ROOT / "_build" / "wheels"                  # pip's downloads, kept between builds
OUT = ROOT / "_build" / "html" / "_static" / "rederive"
CORE = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
# The framework and the catalog: what utils.rederive.payload needs for any chapter.
FRAMEWORK = ("__init__.py", "units.py", "params.py", "chain.py", "formula_code.py", "verdicts.py", "results.py",
             "rederive.py", "models.py", "roofline.py", "display.py", "chains/__init__.py", "catalog/__init__.py")
MEASUREMENTS = ROOT / "book" / "measurements"
# The files a module reads, shipped wherever the module is: {module: globs under the repository root}.
DATA = {"utils/catalog/entries.py": ("utils/catalog/*.toml",), "utils/formula_code.py": ("utils/formula_code.json",),
        "utils/measured.py": ("book/measurements/*.json",), "utils/gpu/schema.py": ("utils/gpu/schema.json",),
        "utils/gpu/occupancy.py": ("utils/gpu/cuda/*",),
        "utils/gpu/measurements/transpose.py": ("utils/gpu/cuda/transpose.cu",),
        "utils/chains/vector_add_and_copies.py": ("utils/gpu/cuda/vector_copy_add.cu",)}
STAMP = (1980, 1, 1, 0, 0, 0)                        # one timestamp for every zip entry: the same zip every build


def closed_form() -> list[str]:
    """The chapters whose results need no array and no random draw: those whose SPEC says so."""
    from utils import chains
    return [s for s in chains.slugs() if getattr(chains.spec(s), "closed_form", False)]


def shown(value) -> str:
    """A default as a panel's input shows it: text the command line parses back to the same value, the shorter
    of Python's repr and, for a large or a small number, scientific notation (15600000000000.0 shows as 1.56e13)."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(value)
    best = repr(value)
    if value == 0 or 1e-4 <= abs(value) < 1e6:
        return best
    for digits in range(17):
        mantissa, _, exp = f"{value:.{digits}e}".partition("e")
        text = f"{mantissa}e{int(exp)}"
        if float(text) == value:
            return text if len(text) < len(best) else best
    return best


def _choices(p) -> list[list[str]]:
    """A parameter's valid values as [value, what a reader reads]: catalog keys with their entries' full names."""
    from utils import catalog
    if p.is_key:
        return [[k, catalog.entry(p.check, k).name] for k in catalog.keys(p.check)]
    if p.check == "choice":
        return [[str(c), str(c)] for c in p.choices]
    if p.check == "bool":
        return [["True", "True"], ["False", "False"]]
    return []


def spec_record(slug: str) -> dict:
    """One chapter's parameters (name, unit, meaning, default as the command line takes it, check, choices)
    and results (name, label, unit), in the page's order."""
    from utils import chains
    params = [{"name": p.name, "unit": p.unit, "meaning": p.meaning, "default": shown(p.default),
               "check": p.check, "choices": _choices(p)} for p in chains.parameters(slug)]
    results = [{"name": r.name, "label": r.label, "unit": r.unit, "percent": r.percent}
               for r in chains.results(slug)]
    return {"parameters": params, "results": results}


# ---- the book's own Python -----------------------------------------------------------------------------

def _module_file(name: str) -> Path | None:
    if name != "utils" and not name.startswith("utils."):
        return None
    path = ROOT.joinpath(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imported(path: Path) -> set[Path]:
    """The book's modules a file imports, anywhere in it (a lazy import inside compute counts: a reader's
    input may reach it), and the packages above each; the chain registry's modules are followed only for
    the closed-form chapters (book_files)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)      # a submodule, if there is one
    files = set()
    text = path.read_text()
    if path.name == "__init__.py" and "pkgutil.iter_modules" in text and path.parent != UTILS / "chains":
        files |= set(path.parent.glob("*.py"))    # a package that imports every module of its folder
    for name in names:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            if (f := _module_file(".".join(parts[:i]))) is not None:
                files.add(f)
    return files


def walled() -> list[Path]:
    """What the runtime never holds: the book's machinery (tools/), and the GPU side's measurement harness
    unless book/measurements holds a record, the one thing a chain in the page reads through it
    (utils.measured imports the harness only to read a record; the GPU rules a chain imports still ship)."""
    walls = [UTILS / "tools"]
    if not any(MEASUREMENTS.glob("*.json")):
        walls.append(UTILS / "gpu" / "harness.py")
    return walls


def book_files(slugs: list[str]) -> list[Path]:
    """The framework, and every module the closed-form chains and the framework import, followed to the end,
    with the files those modules read (DATA); never a walled room (walled())."""
    from utils import chains
    roots = {UTILS / f for f in FRAMEWORK} | set((UTILS / "catalog").glob("*.py"))
    roots |= {Path(chains.module(s).__file__) for s in slugs}
    walls = walled()
    seen: set[Path] = set()
    todo = [f for f in roots if f.is_file()]
    while todo:
        f = todo.pop()
        if f not in seen and not any(f.is_relative_to(w) for w in walls):
            seen.add(f)
            todo += sorted(_imported(f) - seen)
    for module, globs in DATA.items():
        if ROOT / module in seen:
            seen |= {f for g in globs for f in ROOT.glob(g) if f.is_file()}
    return sorted(seen)


def listed_only(files: list[Path]) -> list[Path]:
    """The chain modules the runtime lists but never runs (no closed-form chain imports them): each ships as
    a stub, so the page's registry names every chapter, as the command line's does, and the bytes go to the
    chapters it runs."""
    return sorted(set((UTILS / "chains").glob("*.py")) - set(files))


STUB = b'"""Computes with numpy: re-derived on the command line (python -m utils.rederive), not in the page."""\n'


# ---- the wheels ------------------------------------------------------------------------------------------

def _pinned() -> list[tuple[str, str, str]]:
    """(name, version, sha256) for each wheel book/browser-requirements.txt pins."""
    out = []
    for line in REQUIREMENTS.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            spec, _, digest = line.partition(" --hash=sha256:")
            name, _, version = spec.partition("==")
            out.append((name.strip(), version.strip(), digest.strip()))
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wheels() -> list[Path] | str:
    """The pinned wheels, from _build/wheels or fetched there with pip (hashes checked); or why not."""
    def have():
        found = {_sha256(w): w for w in WHEELS.glob("*.whl")} if WHEELS.is_dir() else {}
        return [found.get(digest) for _, _, digest in _pinned()]
    got = have()
    if None in got:
        WHEELS.mkdir(parents=True, exist_ok=True)
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                            "--require-hashes", "-r", str(REQUIREMENTS), "-d", str(WHEELS)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["pip failed"])[-1]
            return f"pip could not fetch the wheels in {REQUIREMENTS.relative_to(ROOT)} ({last})"
        got = have()
    missing = [n for (n, _, _), w in zip(_pinned(), got) if w is None]
    return f"no wheel with the pinned hash for {', '.join(missing)}" if missing else got


def _zip(entries: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for name, data in sorted(entries):
            info = zipfile.ZipInfo(name, STAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, data, compresslevel=9)
    return buf.getvalue()


def _wanted(name: str) -> bool:
    """A wheel's file the runtime uses: its code and data, and of its metadata only METADATA (which
    importlib.metadata.version reads); not its test suite, licences or SBOMs."""
    top, _, rest = name.partition("/")
    if top.endswith(".dist-info"):
        return rest == "METADATA"
    return not name.endswith("/") and not {"tests", "testsuite"} & set(name.split("/")[:-1])


def _entries(slugs: list[str], wheel_files: list[Path]) -> dict[str, bytes]:
    entries = {}
    for w in wheel_files:
        with zipfile.ZipFile(w) as z:
            entries |= {name: z.read(name) for name in z.namelist() if _wanted(name)}
    files = book_files(slugs)
    for f in files:
        entries[f.relative_to(ROOT).as_posix()] = f.read_bytes()
    for f in listed_only(files):
        entries[f.relative_to(ROOT).as_posix()] = STUB
    return entries


# Run by node with Pyodide's own interpreter (so the bytecode is the version the page runs): the zip's Python
# compiled where the page unpacks it (/book, so tracebacks name the page's paths), as unchecked-hash .pyc
# files (the unpacked files' times never match a source's, and nothing changes a source in the page),
# handed back as a zip of the __pycache__ files alone.
_COMPILE = """
const [indexURL, src, dst] = process.argv.slice(1);
const {loadPyodide} = await import(indexURL + "pyodide.mjs");
const fs = await import("node:fs");
const py = await loadPyodide({indexURL});
py.FS.writeFile("/in.zip", new Uint8Array(fs.readFileSync(src)));
py.runPython(`
import compileall, os, py_compile, zipfile
zipfile.ZipFile("/in.zip").extractall("/book")
if not compileall.compile_dir("/book", quiet=2, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH):
    raise SystemExit("compileall failed")
with zipfile.ZipFile("/out.zip", "w") as out:
    for d, _, files in os.walk("/book"):
        for f in files:
            if f.endswith(".pyc"):
                out.write(os.path.join(d, f), os.path.relpath(os.path.join(d, f), "/book"))
`);
fs.writeFileSync(dst, py.FS.readFile("/out.zip"));
"""


def bytecode(entries: dict[str, bytes]) -> dict[str, bytes] | str:
    """{path: .pyc} for the entries' Python, compiled by the runtime's own interpreter under node; or why not
    (then the page compiles the sources itself, seconds slower)."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed"
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.zip", Path(tmp) / "out.zip"
        src.write_bytes(_zip(list(entries.items())))
        r = subprocess.run([node, "--input-type=module", "-e", _COMPILE, f"{PYODIDE.as_posix()}/", str(src),
                            str(dst)], capture_output=True, text=True)
        if r.returncode != 0 or not dst.is_file():
            return (r.stderr.strip().splitlines() or ["node failed"])[-1]
        with zipfile.ZipFile(dst) as z:
            return {name: z.read(name) for name in z.namelist()}


def at_start(name: str) -> bool:
    """A file every first use loads, compiled at build time: the wheels' and the framework's Python (utils/*.py,
    the catalog, the chain registry). A chapter's own chain module and building blocks ship as source, compiled
    in the page when that chapter first derives (a tenth of a second), so a reader downloads no bytecode for the
    chapters they never open."""
    parts = name.split("/")
    return name.endswith(".py") and (parts[0] != "utils" or len(parts) == 2 or parts[1] == "catalog"
                                     or name == "utils/chains/__init__.py")


def python_zip(slugs: list[str], wheel_files: list[Path]) -> tuple[bytes, str | None]:
    """One zip the page unpacks into a folder on sys.path: the wheels' contents and the book's own Python,
    with the bytecode of what every first use loads (at_start); and None, or why that bytecode is missing."""
    entries = _entries(slugs, wheel_files)
    compiled = bytecode({name: data for name, data in entries.items() if at_start(name)})
    if isinstance(compiled, str):
        return _zip(list(entries.items())), compiled
    return _zip(list((entries | compiled).items())), None


# ---- the folder -------------------------------------------------------------------------------------------

def build(out: Path = OUT) -> str | None:
    """Write the runtime folder; return None, or the one line that says why the pages keep their static
    numbers (the manifest then has no runtime)."""
    slugs = closed_form()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    from utils import chains
    manifest: dict = {"chapters": chains.slugs(), "closed_form": slugs, "runtime": None}
    (out / "specs.json").write_text(json.dumps({s: spec_record(s) for s in slugs}, indent=1))
    why = None
    if not all((PYODIDE / f).is_file() for f in CORE):
        why = ("npm ci has not installed node_modules/pyodide (npm is needed)" if shutil.which("npm")
               else "npm is not installed, so the Pyodide runtime cannot be had")
    else:
        got = wheels()
        if isinstance(got, str):
            why = got
    if why is None:
        for f in CORE:
            shutil.copyfile(PYODIDE / f, out / f)
        data, slow = python_zip(slugs, got)
        if slow:
            print(f"browser bundle: no bytecode ({slow}); the page compiles the book's Python itself")
        name = f"book.{hashlib.sha256(data).hexdigest()[:12]}.zip"
        (out / name).write_bytes(data)
        version = json.loads((PYODIDE / "package.json").read_text())["version"]
        manifest["runtime"] = {"pyodide": version, "python_zip": name}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return why


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0]).resolve() if argv else OUT
    why = build(out)
    if why:
        print(f"browser bundle: {why}; the pages keep their static numbers and each panel shows the command line")
    else:
        size = sum(f.stat().st_size for f in out.iterdir())
        print(f"browser bundle: {len(closed_form())} closed-form chapters, {size / 1e6:.1f} MB in "
              f"{out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
