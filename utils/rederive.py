"""Re-derive a chapter with other inputs: python -m utils.rederive <slug> [--set name=value ...] [--json]

Executes the chapter's notebook with papermill in a temporary folder (nothing is written into the
repository) and prints the results the chapter publishes. `--list` lists every chapter and its
parameters with their defaults.

Bad input - an unknown chapter or parameter, a value of the wrong type, an unknown catalog key, a value
the chapter's own checks reject - prints one line on stderr and exits 2.
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
_CHAPTER_ERRORS = ("ParameterError", "CatalogKeyError", "DimensionalityError")


class BadInput(Exception):
    pass


def chapters() -> dict[str, Path]:
    return {p.stem: p for p in sorted(CHAPTERS.glob("*/*.ipynb"))}


def _parameters_cell(path: Path) -> str:
    nb = json.loads(path.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            return "".join(cell["source"])
    raise BadInput(f"{path.stem} has no cell tagged 'parameters'")


def defaults(path: Path) -> dict[str, object]:
    """The parameters cell's assignments, evaluated as literals (a parameters cell holds only those)."""
    out = {}
    for node in ast.parse(_parameters_cell(path)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def _coerce(name: str, text: str, default):
    """Parse `text` as the type of the parameter's default: a number, a bool or a string."""
    if isinstance(default, str):
        return text
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = text
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        raise BadInput(f"{name} must be True or False, got {text!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput(f"{name} must be a number, got {text!r}")
    return float(value) if isinstance(default, float) else value


def parse_sets(path: Path, sets: list[str]) -> dict[str, object]:
    known = defaults(path)
    chosen = {}
    for item in sets:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise BadInput(f"--set takes name=value, got {item!r}")
        if name not in known:
            raise BadInput(f"{path.stem} has no parameter {name!r}; parameters: {', '.join(known)}")
        chosen[name] = _coerce(name, text.strip(), known[name])
    return chosen


@contextlib.contextmanager
def _quiet_stderr():
    """Send file descriptor 2 to /dev/null while the kernel runs: the kernel inherits it, and its
    start-up chatter must not turn a one-line error into several."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def execute(path: Path, parameters: dict) -> tuple[dict, list]:
    """Run the chapter with papermill in a temp folder; return its published results and claims."""
    import nbformat
    import papermill
    from utils.results import read_outputs

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
            raise RuntimeError(f"{path.stem} failed: {e.ename}: {e.evalue}") from None
        return read_outputs(nbformat.read(out, as_version=4))


def _table(results: dict) -> str:
    from utils.units import fmt
    rows = [(name, fmt(r["value"], r["unit"]), r.get("label", "")) for name, r in results.items()]
    w0 = max((len(r[0]) for r in rows), default=0)
    w1 = max((len(r[1]) for r in rows), default=0)
    return "\n".join(f"{a:<{w0}}  {b:>{w1}}  {c}" for a, b, c in rows)


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
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return e.code or 0
    table = chapters()
    try:
        if args.list:
            for slug, path in table.items():
                params = ", ".join(f"{k}={v!r}" for k, v in defaults(path).items())
                print(f"{slug} ({path.parent.name}): {params}")
            return 0
        if not args.chapter:
            raise BadInput("name a chapter, or use --list")
        if args.chapter not in table:
            raise BadInput(f"unknown chapter {args.chapter!r}; chapters: {', '.join(table)}")
        path = table[args.chapter]
        chosen = parse_sets(path, args.set)
        results, _ = execute(path, chosen)
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return BAD_INPUT
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return FAILED
    if args.json:
        payload = {"chapter": args.chapter, "parameters": {**defaults(path), **chosen},
                   "results": {k: {"value": v["value"], "unit": v["unit"]} for k, v in results.items()}}
        print(json.dumps(payload, indent=2))
    else:
        print(_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
