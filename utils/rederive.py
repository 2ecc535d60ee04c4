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
    """`--set` text as the type of the parameter's default: a number, a bool or a string."""
    if isinstance(param.default, str):
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


def parse_sets(slug: str, sets: list[str]) -> dict[str, object]:
    from utils import chains
    spec = {p.name: p for p in chains.parameters(slug)}
    chosen = {}
    for item in sets:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise BadInput(f"--set takes name=value, got {item!r}")
        chosen[name] = _parse(spec[name], text.strip()) if name in spec else text.strip()
    return chosen


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


def _imports(tree: ast.AST) -> list[str]:
    """The modules a cell or module imports when it runs: not those inside a function (run only if called)
    nor those guarded by `except ImportError` (optional)."""
    out = []
    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                for h in node.handlers):
            return
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module != "__future__":
            out.append(node.module)
            out.extend(f"{node.module}.{a.name}" for a in node.names)   # a submodule, if there is one
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(tree)
    return out


def missing_module(path: Path) -> str | None:
    """The first module the notebook at `path` imports (directly, or through the book's own modules at
    their top level) that this environment cannot import: found before any kernel starts."""
    import importlib.util

    import nbformat
    seen: set[str] = set()
    def first_missing(names):
        for name in names:
            if name in seen:
                continue
            seen.add(name)
            top = name.split(".")[0]
            if top == "utils":
                file = ROOT.joinpath(*name.split("."))
                file = file / "__init__.py" if file.is_dir() else file.with_suffix(".py")
                if file.is_file() and (hit := first_missing(_imports(ast.parse(file.read_text())))):
                    return hit
            elif importlib.util.find_spec(top) is None:
                return top
        return None
    cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    names = []
    for source in cells:
        code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
        with contextlib.suppress(SyntaxError):
            names += _imports(ast.parse(code))
    return first_missing(names)


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
        v = derived[r.name]
        out[r.name] = ({"value": float(v.magnitude), "unit": "" if v.unitless else f"{v.units:~C}"}
                       if hasattr(v, "units") else {"value": float(v), "unit": ""})
    return out


def _refuse_non_finite(slug: str, records: dict) -> None:
    """A result that comes out NaN or infinite answers nothing: the inputs are refused, the number never printed."""
    import math
    for name, rec in records.items():
        if not math.isfinite(rec["value"]):
            raise BadInput(f"{slug}: {name} comes out {rec['value']} for these inputs; "
                           "choose inputs for which every result is a finite number")


def _table(slug: str, records: dict) -> str:
    from utils import chains
    from utils.units import fmt, pct
    rows = []
    for r in chains.results(slug):
        rec = records[r.name]
        value = pct(rec["value"]) if r.percent else fmt(rec["value"], rec["unit"], digits=r.digits)
        rows.append((r.label, value, r.name))
    w0 = max(len(a) for a, _, _ in rows)
    w1 = max(len(b) for _, b, _ in rows)
    return "\n".join(f"{a:<{w0}}  {b:>{w1}}  ({c})" for a, b, c in rows)


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
    from utils.catalog import CatalogFileError, CatalogKeyError
    from utils.params import ParameterError
    try:
        if args.list:
            print(_listing(args.chapter))
            return 0
        if not args.chapter:
            raise BadInput("name a chapter, or use --list")
        chains.module(args.chapter)                       # an unknown chapter: one line, with a hint
        chosen = parse_sets(args.chapter, args.set)
        checked = chains.check(args.chapter, **chosen)    # bad input fails here, before any kernel
        if args.html:
            target = Path(args.html).resolve()
            if not target.parent.is_dir():
                raise BadInput(f"--html: no such folder {str(target.parent)!r}")
            if target.is_relative_to(ROOT) and not target.is_relative_to(ROOT / "_build"):
                raise BadInput("--html: write the page outside the repository (or under _build/)")
        if args.notebook or args.html:
            from utils.results import read_outputs
            nb = execute(args.chapter, chosen)
            published = read_outputs(nb)[0]      # the notebook's record comes back sorted: use the page's order
            order = [r.name for r in chains.results(args.chapter)] + sorted(set(published) - set(
                r.name for r in chains.results(args.chapter)))
            records = {k: {"value": published[k]["value"], "unit": published[k]["unit"]} for k in order if k in published}
            if args.html:
                from utils.tools.page_html import render
                note = (f"Re-derived with python -m utils.rederive {args.chapter} "
                        + " ".join(f"--set {s}" for s in args.set)).strip()
                Path(args.html).write_text(render(nb, args.chapter, note))
        else:
            try:
                computed = chains.module(args.chapter).compute(checked)
            except (ZeroDivisionError, OverflowError) as e:   # inputs the checks let through, a chain cannot take
                raise BadInput(f"{args.chapter}: these inputs cannot be computed ({e})") from None
            records = _records(args.chapter, chains.extract(args.chapter, computed))
        _refuse_non_finite(args.chapter, records)
    except (BadInput, ParameterError, CatalogKeyError, CatalogFileError) as e:
        # A catalog value the chain needs that a reader's own file lacks is bad input too.
        print(f"error: {e}", file=sys.stderr)
        return BAD_INPUT
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return FAILED
    except BrokenPipeError:                       # the reader piped the table into head
        return 0
    if args.json:
        payload = {"chapter": args.chapter, "parameters": {**chains.defaults(args.chapter), **chosen},
                   "results": records}
        print(json.dumps(payload, indent=2))
    else:
        print(_table(args.chapter, records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
