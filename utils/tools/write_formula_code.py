"""Rebuild utils/formula_code.json: every chain formula the chapters use (their defaults and their claims),
printed by sympy now with the stored file unread, one formula a line so a diff reads.

    python -m utils.tools.write_formula_code            # rewrite the file
    python -m utils.tools.write_formula_code --check    # only count what would change
"""
from __future__ import annotations

import argparse
import json
import sys

from utils import chains, formula_code


def rebuild() -> dict:
    """Every key the chapters' chains use (defaults and claims), printed by sympy now (the file unread)."""
    formula_code.MISSES.clear()
    formula_code._PRINTED.clear()
    formula_code._USE_FILE = False
    try:
        for slug in chains.slugs():
            chains.derive(slug)
            chains.claims(slug)
    finally:
        formula_code._USE_FILE = True
    return {k: formula_code._PRINTED[k] for k in sorted(set(formula_code.MISSES))}


def render(table: dict) -> str:
    lines = [f"{json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(table.items())]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m utils.tools.write_formula_code", description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="say whether the file is current; write nothing")
    args = ap.parse_args(argv)
    text = render(rebuild())
    if args.check:
        same = formula_code.FILE.read_text() == text
        print(f"{formula_code.FILE.name} is {'current' if same else 'stale: run python -m utils.tools.write_formula_code'}")
        return 0 if same else 1
    formula_code.FILE.write_text(text)
    print(f"wrote {text.count(chr(10)) - 1} formulas to {formula_code.FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
