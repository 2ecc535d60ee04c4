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


def _listing() -> str:
    from utils import catalog, chains
    lines = []
    for slug in chains.slugs():
        lines.append(f"{slug} ({notebook(slug).parent.name})")
        for p in chains.parameters(slug):
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
            print(_listing())
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
            records = _records(args.chapter, chains.extract(args.chapter,
                                                            chains.module(args.chapter).compute(checked)))
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
