"""Re-derive a chapter with other inputs: python -m utils.rederive <slug> [--set name=value ...] [--json]

The fast path checks the values against the chapter's parameter spec (utils/chains/<slug>.py) and calls
its chain directly: a fraction of a second, no notebook, no torch. `--notebook` executes the whole page
with papermill instead and prints the results it publishes (the same numbers, by the same functions);
`--html FILE` writes that re-derived page as one standalone HTML file. `--list` shows every chapter's
parameters with defaults, units, meanings and, for catalog keys, the valid keys.

Bad input - an unknown chapter or parameter, a value of the wrong type, an unknown catalog key (the
nearest is suggested), a value the spec's checks reject, a config file that lacks a field - prints one
line on stderr and exits 2, and nothing is written into the repository.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import functools
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
BAD_INPUT, FAILED = 2, 1
_CHAPTER_ERRORS = ("ParameterError", "CatalogKeyError", "CatalogFileError", "DimensionalityError")


class BadInput(Exception):
    pass


def notebook(slug: str) -> Path:
    hits = sorted(CHAPTERS.glob(f"*/{slug}.ipynb"))
    if not hits:
        raise BadInput(f"chapter {slug!r} has no notebook under chapters/")
    return hits[0]


def _parse(param, text: str):
    """`--set` text as the type of the parameter's default: a number, a bool or a string; a table's text (JSON
    rows or a .json file's path) goes to its check as it is."""
    if isinstance(param.default, str) or param.check == "table":
        return text
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = text
    if isinstance(param.default, bool):
        if isinstance(value, bool):
            return value
        raise BadInput(f"{param.name} must be True or False, got {text!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput(f"{param.name} must be a number, got {text!r}")
    return value


def split_sets(sets: list[str]) -> dict[str, str]:
    """`--set name=value` items as {name: value text}, the last of a name winning."""
    texts = {}
    for item in sets:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise BadInput(f"--set takes name=value, got {item!r}")
        texts[name] = text.strip()
    return texts


def parse_values(slug: str, texts: dict[str, str]) -> dict[str, object]:
    """{name: value text} (a reader's `--set`s, or a page panel's inputs) as the types of the defaults."""
    from utils import chains
    spec = {p.name: p for p in chains.parameters(slug)}
    return {name: _parse(spec[name], text.strip()) if name in spec else text.strip()
            for name, text in texts.items()}


def parse_sets(slug: str, sets: list[str]) -> dict[str, object]:
    return parse_values(slug, split_sets(sets))


def _install_hint(module: str) -> str:
    """The command that installs `module`: the pyproject extra that lists it, else the book's own install."""
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    def names(reqs):
        return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].strip().lower().replace("-", "_") for r in reqs}
    for extra, reqs in project.get("optional-dependencies", {}).items():
        if module.lower() in names(reqs):
            return f"pip install -e '.[{extra}]'"
    return "pip install -e ." if module.lower() in names(project.get("dependencies", [])) else f"pip install {module}"


def _missing(slug: str, module: str) -> BadInput:
    return BadInput(f"executing the {slug} page needs {module}, which is not installed here; "
                    f"install it with {_install_hint(module)}")


_GUARDS = ("ImportError", "ModuleNotFoundError")


def _guarded(node: ast.AST) -> bool:
    return isinstance(node, ast.Try) and any(isinstance(h.type, ast.Name) and h.type.id in _GUARDS
                                             for h in node.handlers)


def _is_main(node: ast.AST) -> bool:
    """`if __name__ == "__main__":`, the block that runs only under `python -m`."""
    t = node.test if isinstance(node, ast.If) else None
    return isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__" and \
        any(isinstance(c, ast.Constant) and c.value == "__main__" for c in t.comparators)


def _walk(nodes, into_defs: bool):
    """The nodes of a body that run with it: not an optional import (`except ImportError`), not the
    `__main__` block, and (unless into_defs) not the bodies of the functions it defines, only their decorators."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if _guarded(node) or _is_main(node):
            continue
        yield node
        if not into_defs and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            stack.extend(getattr(node, "decorator_list", []))
            continue
        stack.extend(ast.iter_child_nodes(node))


class _Code:
    """What a piece of code needs when it runs: the modules it imports, and the book's functions, classes and
    `python -m` modules it names (each resolved to (module, name), followed only if reached)."""

    def __init__(self, nodes, into_defs: bool, scope: dict[str, str], module: str = ""):
        nodes = list(_walk(nodes, into_defs))
        self.bound = dict(scope)
        self.imports: list[str] = []
        for n in nodes:
            if isinstance(n, ast.Import):
                self.imports += [a.name for a in n.names]
                self.bound.update({a.asname or a.name.split(".")[0]: a.asname and a.name or a.name.split(".")[0]
                                   for a in n.names})
            elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0 and n.module != "__future__":
                self.imports.append(n.module)
                self.bound.update({a.asname or a.name: f"{n.module}.{a.name}" for a in n.names})
        runs = [f"{b.value}.__main__" for n in nodes      # [sys.executable, "-m", "utils.x", ...]: its __main__ runs
                for a, b in zip(getattr(n, "elts", ()), getattr(n, "elts", ())[1:])
                if isinstance(a, ast.Constant) and a.value == "-m" and isinstance(b, ast.Constant)
                and str(b.value).startswith("utils.")]
        if not into_defs:                 # import-time code: what it calls runs, a function it only stores does not
            nodes = [n.func for n in nodes if isinstance(n, ast.Call)] + [
                d for n in nodes for d in (*getattr(n, "decorator_list", ()), *getattr(n, "bases", ()))]
        self.names = [q for n in nodes if isinstance(n, (ast.Name, ast.Attribute)) and (q := self._qualify(n, module))]
        self.names += runs

    def _qualify(self, node, module: str) -> str | None:
        if isinstance(node, ast.Name):
            hit = self.bound.get(node.id)
            return hit if hit else (f"{module}.{node.id}" if module else None)
        base = self._qualify(node.value, module) if isinstance(node.value, (ast.Name, ast.Attribute)) else None
        return f"{base}.{node.attr}" if base else None


@functools.lru_cache(maxsize=None)
def _module(name: str):
    """(the module's own import-time code, its top-level functions and classes, its __main__ block), or None
    for a name that is not one of the book's modules."""
    file = ROOT.joinpath(*name.split("."))
    file = file / "__init__.py" if file.is_dir() else file.with_suffix(".py")
    if not name.startswith("utils") or not file.is_file():
        return None
    tree = ast.parse(file.read_text())
    top = _Code(tree.body, False, {}, name)
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    main = [line for n in tree.body if _is_main(n) for line in n.body]
    return top, defs, main


@functools.lru_cache(maxsize=None)
def _body(mod: str, name: str) -> _Code:
    """What running the module's function or class `name` (or its `__main__` block) needs."""
    top, defs, main = _module(mod)
    return _Code(main if name == "__main__" else [defs[name]], True, top.bound, mod)


def missing_module(path: Path) -> str | None:
    """The first module that the notebook at `path` needs and this environment cannot import, found before any
    kernel starts: what its cells import, and what the book's modules they reach import, at their top level or
    inside the functions and classes that the cells (or those functions, in turn) name, or in a module the code
    runs with `python -m`; the chapter's chain module counts whole (the registry calls it by name). An import
    under `except ImportError` is optional and does not count."""
    import importlib.util

    import nbformat
    cells = []
    for c in nbformat.read(path, as_version=4).cells:
        if c.cell_type == "code":
            code = "\n".join(line for line in c.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            with contextlib.suppress(SyntaxError):
                cells += ast.parse(code).body
    chain = f"utils.chains.{path.stem.replace('-', '_')}"
    codes, seen, loaded, checked = [_Code(cells, True, {})], set(), set(), set()
    names = [f"{chain}.{d}" for d in (_module(chain) or (None, {}))[1]]
    while codes or names:
        if codes:
            code = codes.pop(0)
            for name in code.imports:
                top = name.split(".")[0]
                if top != "utils" and top not in checked:
                    checked.add(top)
                    if importlib.util.find_spec(top) is None:
                        return top
            names += [n for n in (*code.imports, *code.names) if n.split(".")[0] == "utils"]
            continue
        name = names.pop(0)
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")                  # the longest prefix that is a module; the rest, a name in it
        i = next((i for i in range(len(parts), 0, -1) if _module(".".join(parts[:i]))), 0)
        if not i:
            continue
        mod, rest = ".".join(parts[:i]), parts[i:]
        top, defs, main = _module(mod)
        if mod not in loaded:
            loaded.add(mod)
            codes.append(top)
        if rest and (rest[0] == "__main__" or rest[0] in defs):
            codes.append(_body(mod, rest[0]))
        elif rest and rest[0] in top.bound:      # a name the module imported from another
            names.append(".".join([top.bound[rest[0]], *rest[1:]]))
    return None


@contextlib.contextmanager
def _quiet_stderr():
    """Send file descriptor 2 to /dev/null while the kernel runs: its start-up chatter must not turn a
    one-line error into several."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def execute(slug: str, parameters: dict):
    """Run the chapter with papermill in a temp folder; return the executed notebook node."""
    import nbformat
    import papermill

    path = notebook(slug)
    if module := missing_module(path):
        raise _missing(slug, module)
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"  # the kernel must not write into the repository
    with tempfile.TemporaryDirectory() as tmp, _quiet_stderr():
        out = Path(tmp) / path.name
        try:
            papermill.execute_notebook(str(path), str(out), parameters=parameters, cwd=tmp,
                                       progress_bar=False, log_output=False, kernel_name="python3")
        except papermill.PapermillExecutionError as e:
            if e.ename in _CHAPTER_ERRORS:
                raise BadInput(str(e.evalue).strip().splitlines()[0]) from None
            # A module missing deeper down (a helper the chapter runs in a subprocess): the same one line.
            if hit := re.search(r"No module named '([\w.]+)'", f"{e.ename}: {e.evalue}"):
                raise _missing(slug, hit.group(1).split(".")[0]) from None
            raise RuntimeError(f"{slug} failed: {e.ename}: {e.evalue}") from None
        return nbformat.read(out, as_version=4)


def _records(slug: str, derived: dict) -> dict:
    from utils import chains
    out = {}
    for r in chains.results(slug):
        if r.name not in derived:                         # left out: the reader's model lacks a field it needs
            continue
        v = derived[r.name]
        out[r.name] = ({"value": float(v.magnitude), "unit": "" if v.unitless else f"{v.units:~C}"}
                       if hasattr(v, "units") else {"value": float(v), "unit": ""})
    return out


# A result's meaning bounds it: each is a count, a time, a rate, bytes, a cost or a ratio of them (>= 0) unless
# its label says it is a difference; a percentage whose label names a part of a whole is at most one.
_SIGNED_WORDS = ("minus", "gap", "margin")
_PART_WORDS = ("share", "fraction", "hit rate", "accuracy", "occupancy", "p(", "attainment", "goodput")


def result_range(result) -> tuple[float, float]:
    """The values a Result can mean: (-inf, inf) for a difference, [0, 1] for a part of a whole, else [0, inf)."""
    label = result.label.lower()
    if any(w in label for w in _SIGNED_WORDS):
        return -float("inf"), float("inf")
    if result.percent and any(w in label for w in _PART_WORDS) and not any(w in label for w in (" over ", "/")):
        return 0.0, 1.0
    return 0.0, float("inf")


def _refuse_non_finite(slug: str, records: dict) -> None:
    """A result that comes out NaN, infinite or outside what it means (a negative time, a share above one) answers
    nothing: the inputs are refused, the number never printed."""
    import math

    from utils import chains
    meant = {r.name: r for r in chains.results(slug)}
    for name, rec in records.items():
        v = rec["value"]
        if not math.isfinite(v):
            raise BadInput(f"{slug}: {name} comes out {v} for these inputs; "
                           "choose inputs for which every result is a finite number")
        lo, hi = result_range(meant[name]) if name in meant else (-math.inf, math.inf)
        if not lo <= v <= hi:
            bound = "between 0 and 1" if hi == 1 else "at least 0"
            raise BadInput(f"{slug}: {name} comes out {v:.4g} for these inputs, where {meant[name].label!r} "
                           f"is {bound}; these inputs are outside what the chain models")


def text(result, record: dict) -> str:
    """A result's {value, unit} record as the page prints it: its digits, a share as a percentage, the unit in
    the page's notation (GPU·h, where the record keeps the --json's GPU*h)."""
    from utils.units import Q_, fmt, pct
    if result.percent:
        return pct(record["value"])
    return fmt(Q_(record["value"], record["unit"]) if record["unit"] else record["value"], digits=result.digits)


def texts(slug: str, records: dict) -> list[tuple[str, str, str]]:
    """(label, value as the page prints it, name) for each of the chapter's results."""
    from utils import chains
    return [(r.label, text(r, records[r.name]), r.name) for r in chains.results(slug) if r.name in records]


def _table(slug: str, records: dict) -> str:
    rows = texts(slug, records)
    if not rows:
        return ""
    w0 = max(len(a) for a, _, _ in rows)
    w1 = max(len(b) for _, b, _ in rows)
    return "\n".join(f"{a:<{w0}}  {b:>{w1}}  ({c})" for a, b, c in rows)


def payload(slug: str, values: dict[str, str]) -> dict:
    """The fast path's `--json` payload, {chapter, parameters, results: {name: {value, unit}}}, from a chapter
    and {name: value text}: what `--set name=value ... --json` prints, and what a chapter page's panel shows
    (utils/tools/browser_bundle.py runs this same function in the reader's browser). Bad input raises one of
    input_errors(), whose message is the command's one line."""
    from utils import chains
    chains.module(slug)                                   # an unknown chapter: one line, with a hint
    chosen = parse_values(slug, values)
    checked = chains.check(slug, **chosen)
    try:   # a reader's model of loose fields leaves out the results that need a field it lacks, and says why
        derived, left_out = chains.spec(slug).derive_with_gaps(checked)
    except (ZeroDivisionError, OverflowError) as e:       # inputs the checks let through, a chain cannot take
        raise BadInput(f"{slug}: these inputs cannot be computed ({e})") from None
    records = _records(slug, derived)
    _refuse_non_finite(slug, records)
    shown = {k: v.key for k, v in checked.items() if getattr(v, "is_reader_model", False)}
    out = {"chapter": slug, "parameters": {**chains.defaults(slug), **chosen, **shown}, "results": records}
    return {**out, "left_out": left_out} if left_out else out


def input_errors() -> tuple[type[Exception], ...]:
    """The errors that mean bad input: printed as `error: <message>`, exit 2. A catalog value the chain
    needs that a reader's own file lacks is bad input too."""
    from utils.catalog import CatalogFileError, CatalogKeyError
    from utils.params import ParameterError
    return (BadInput, ParameterError, CatalogKeyError, CatalogFileError)


def answer(slug: str, values: dict[str, str]) -> dict:
    """What a chapter page's panel gets (book/_static/rederive.js calls this in the reader's browser):
    {"payload": payload(...), "texts": texts(...)}, or {"error": the command's one line}."""
    try:
        result = payload(slug, values)
    except (*input_errors(), RuntimeError) as e:
        return {"error": f"error: {e}"}
    return {"payload": result, "texts": texts(slug, result["results"])}


def _executed(slug: str, values: dict[str, str], sets: list[str], html: str | None) -> dict:
    """The `--notebook` (and `--html FILE`) payload: the whole page executed, its published results read back."""
    from utils import chains
    from utils.catalog.specfile import LOOSE_NAMES
    from utils.results import read_outputs
    chosen = parse_values(slug, values)
    chains.check(slug, **chosen)                          # bad input fails here, before any kernel
    if loose := sorted(set(chosen) & set(LOOSE_NAMES) - {p.name for p in chains.parameters(slug)}):
        raise BadInput(f"--notebook and --html take model= (a catalog key or a file), not a model's own fields "
                       f"({', '.join(loose)}): drop them, or derive without --notebook")
    if html:
        target = Path(html).resolve()
        if not target.parent.is_dir():
            raise BadInput(f"--html: no such folder {str(target.parent)!r}")
        if target.is_relative_to(ROOT) and not target.is_relative_to(ROOT / "_build"):
            raise BadInput("--html: write the page outside the repository (or under _build/)")
    nb = execute(slug, chosen)
    published = read_outputs(nb)[0]      # the notebook's record comes back sorted: use the page's order
    order = [r.name for r in chains.results(slug)] + sorted(set(published) - set(
        r.name for r in chains.results(slug)))
    records = {k: {"value": published[k]["value"], "unit": published[k]["unit"]} for k in order if k in published}
    if html:
        from utils.tools.page_html import render
        note = (f"Re-derived with python -m utils.rederive {slug} " + " ".join(f"--set {s}" for s in sets)).strip()
        Path(html).write_text(render(nb, slug, note))
    _refuse_non_finite(slug, records)
    out = {"chapter": slug, "parameters": {**chains.defaults(slug), **chosen}, "results": records}
    if missing := [r.name for r in chains.results(slug) if r.name not in records]:
        # A result the page published no value for at these inputs (no alert fires, so no detection time): say
        # why, as the fast path does, from the chain module's own left-out lines.
        gaps = chains.spec(slug).derive_with_gaps(chains.check(slug, **chosen))[1]
        out["left_out"] = {k: gaps.get(k, f"{k}: the page published no value at these inputs") for k in missing}
    return out


def _listing(slug: str | None = None) -> str:
    """Every chapter's parameters, or one chapter's (`--list SLUG`)."""
    from utils import catalog, chains
    if slug is not None:
        chains.module(slug)                               # an unknown chapter: one line, with a hint
    lines = []
    for one in [slug] if slug is not None else chains.slugs():
        lines.append(f"{one} ({notebook(one).parent.name})")
        for p in chains.parameters(one):
            unit = f" {p.unit}" if p.unit else ""
            keys = f" [valid: {', '.join(catalog.keys(p.check))}, or a file]" if p.check in ("model", "accelerator") \
                else f" [valid: {', '.join(catalog.keys(p.check))}]" if p.is_key \
                else f" [one of: {', '.join(map(str, p.choices))}]" if p.check == "choice" else ""
            lines.append(f"  {p.name} = {p.default!r}{unit}: {p.meaning}{keys}")
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(BAD_INPUT)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m utils.rederive", description=__doc__.splitlines()[0])
    parser.add_argument("chapter", nargs="?", help="chapter slug, e.g. six-nd")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--list", action="store_true", help="list chapters and their parameters")
    parser.add_argument("--notebook", action="store_true", help="execute the whole page (papermill)")
    parser.add_argument("--html", metavar="FILE", help="write the re-derived page as standalone HTML")
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return e.code or 0
    from utils import chains
    try:
        if args.list:
            print(_listing(args.chapter))
            return 0
        if not args.chapter:
            raise BadInput("name a chapter, or use --list")
        chains.module(args.chapter)                       # an unknown chapter: one line, with a hint
        values = split_sets(args.set)
        result = (_executed(args.chapter, values, args.set, args.html) if args.notebook or args.html
                  else payload(args.chapter, values))
    except input_errors() as e:
        print(f"error: {e}", file=sys.stderr)
        return BAD_INPUT
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return FAILED
    except BrokenPipeError:                       # the reader piped the table into head
        return 0
    text = json.dumps(result, indent=2) if args.json else "\n".join(filter(None, [
        _table(args.chapter, result["results"]), *(f"left out: {why}" for why in result.get("left_out", {}).values())]))
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:                       # the reader piped the output into head: not an error
        sys.stdout = None                         # nothing left to flush at exit (Python's own advice)
    return 0


if __name__ == "__main__":
    sys.exit(main())
