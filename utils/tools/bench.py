"""Time re-derivation, chapter by chapter: python -m utils.tools.bench [--runs N] [SLUG ...]  (make bench)

For each chapter: the median wall time of `python -m utils.rederive SLUG --json` (the fast path: the
chain module, no notebook) and of the same with `--notebook` (papermill runs the page), over N runs
each, interleaved so a busy machine slows both alike, their ratio, and the fast path's target (one
second for a closed-form chain, three for a simulation). A benchmark, not a test: it prints and asserts
nothing. Each run is a fresh process, as a reader's command is.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The fast path's budget per call: a closed-form chain in under a second, one that runs a seeded
# simulation (its module declares SIMULATION; tests/chains/test_contract.py checks the declaration) in under three.
TARGET_S = {"closed form": 1.0, "simulation": 3.0}


def _time(args: list[str]) -> float:
    start = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "utils.rederive", *args], cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if r.returncode != 0:
        raise RuntimeError(f"rederive {' '.join(args)} failed: {r.stderr.strip()}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    from utils import chains
    parser = argparse.ArgumentParser(prog="python -m utils.tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("slugs", nargs="*", help="chapters (default: every chapter with a chain module)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fast-only", action="store_true", help="time the fast path only (no papermill runs)")
    args = parser.parse_args(argv)
    slugs = args.slugs or chains.slugs()
    print(f"{'chapter':<28} {'kind':<11} {'fast (s)':>9} {'target':>7} {'--notebook (s)':>15} {'ratio':>7}"
          f"   (median of {args.runs})")
    for slug in slugs:
        fast, page = [], []
        for _ in range(args.runs):
            fast.append(_time([slug, "--json"]))
            if not args.fast_only:
                page.append(_time([slug, "--json", "--notebook"]))
        f = statistics.median(fast)
        kind = "simulation" if getattr(chains.module(slug), "SIMULATION", "") else "closed form"
        target = TARGET_S[kind]
        mark = "" if f < target else "  over target"
        if page:
            p = statistics.median(page)
            print(f"{slug:<28} {kind:<11} {f:>9.2f} {f'< {target:g}':>7} {p:>15.2f} {p / f:>6.1f}x{mark}", flush=True)
        else:
            print(f"{slug:<28} {kind:<11} {f:>9.2f} {f'< {target:g}':>7} {'-':>15} {'-':>7}{mark}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
