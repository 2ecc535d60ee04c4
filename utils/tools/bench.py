"""Time re-derivation, chapter by chapter: python -m utils.tools.bench [--runs N] [SLUG ...]  (make bench)

For each chapter: the median wall time of `python -m utils.rederive SLUG --json` (the fast path: the
chain module, no notebook) and of the same with `--notebook` (papermill runs the page), over N runs
each, interleaved so a busy machine slows both alike, their ratio, and the fast path's target (one
second for a closed-form chain, three for a simulation). A benchmark, not a test: it prints and asserts
nothing. Each run is a fresh process, as a reader's command is.

`--edges` re-derives every chapter at the edges of each numeric parameter's valid range instead (read from the
parameter's check: a whole number at 1 and a million, ten million for tokens; a fraction at 0.01 and 1; a share at 0
and 0.99; a positive or non-negative value a thousandth of its default, or 0, and a thousand times it), one parameter
at a time, in this process (a reader's command, minus its imports), and lists each case that is not one of: exit 0
with every result finite and in the range its Result allows (utils.rederive.result_range: the right sign) and nothing
on stderr, or exit 2 with one line; and each that takes over a second.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import signal
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


EDGE_S = 1.0                 # a re-derivation at an edge answers within this, as at the defaults
EDGE_TIMEOUT_S = 10.0        # a case still running after this is a hang


def edges(param) -> list:
    """The ends of a numeric parameter's valid range, from its check (and its unit, for a token count)."""
    d, check = param.default, param.check
    if isinstance(d, bool) or not isinstance(d, (int, float)):
        return []
    if check == "whole":
        top = 10_000_000 if "token" in param.unit else 1_000_000
        out = [1, top]
    elif check == "fraction":
        out = [0.01, 1.0]
    elif check == "share":
        out = [0.0, 0.99]
    elif check == "non_negative":
        out = [0, d * 1000 if d else 1_000_000]
    elif check == "positive":
        out = [d / 1000, d * 1000]
    else:
        return []
    return [type(d)(v) if isinstance(d, int) and float(v) == int(v) else float(v) for v in out]


class _Hang(BaseException):
    """Raised by the alarm: a BaseException, so no chapter's `except Exception` swallows it."""


def _alarm(signum, frame):
    raise _Hang


def _edge_case(slug: str, name: str, value, ranges: dict) -> str | None:
    """What is wrong with re-deriving `slug` at name=value, or None. In process (a subprocess a case would cost
    the sweep most of its time in imports), through the command's own `main`, stopped by an alarm if it hangs."""
    from utils.rederive import main as rederive
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, EDGE_TIMEOUT_S)
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = rederive([slug, "--json", "--set", f"{name}={value!r}"])
    except _Hang:
        return f"hangs (over {EDGE_TIMEOUT_S:g} s)"
    except BaseException as e:  # noqa: B036 - a traceback or a SystemExit is the finding
        return f"raised {type(e).__name__}: {str(e)[:160]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    took = time.perf_counter() - start
    slow = f"; took {took:.1f} s" if took > EDGE_S else ""
    if rc == 2:
        lines = err.getvalue().strip().splitlines()
        return None if len(lines) == 1 and not slow else f"exit 2 with {len(lines)} lines{slow}"
    if rc != 0:
        last = (err.getvalue().strip().splitlines() or ["(no output)"])[-1]
        return f"exit {rc}: {last[:160]}{slow}"
    results = json.loads(out.getvalue())["results"]
    bad = [k for k, rec in results.items() if not math.isfinite(rec["value"])
           or not ranges[k][0] <= rec["value"] <= ranges[k][1]]
    if bad:
        return "not finite or out of its range (a wrong sign): " + \
            ", ".join(f"{k}={results[k]['value']:.3g}" for k in bad[:4]) + slow
    if err.getvalue().strip():
        return f"exit 0 but stderr {err.getvalue().strip().splitlines()[:2]}{slow}"
    return slow[2:] or None


def edge_sweep(slugs: list[str]) -> int:
    """Each chapter at each numeric parameter's edges; prints the cases that fail and returns their count."""
    from utils import chains
    from utils.rederive import result_range
    failures = 0
    for slug in slugs:
        ranges = {r.name: result_range(r) for r in chains.results(slug)}
        cases = [(p.name, v) for p in chains.parameters(slug) for v in edges(p)]
        bad = [(n, v, why) for n, v in cases if (why := _edge_case(slug, n, v, ranges))]
        failures += len(bad)
        print(f"{slug:<28} {len(cases):>3} cases, {len(bad)} failing", flush=True)
        for n, v, why in bad:
            print(f"    {n}={v!r}: {why}", flush=True)
    print(f"{failures} failing cases")
    return failures


def main(argv: list[str] | None = None) -> int:
    from utils import chains
    parser = argparse.ArgumentParser(prog="python -m utils.tools.bench", description=__doc__.splitlines()[0])
    parser.add_argument("slugs", nargs="*", help="chapters (default: every chapter with a chain module)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fast-only", action="store_true", help="time the fast path only (no papermill runs)")
    parser.add_argument("--edges", action="store_true", help="re-derive at each parameter's edges; list what fails")
    args = parser.parse_args(argv)
    slugs = args.slugs or chains.slugs()
    if args.edges:
        edge_sweep(slugs)
        return 0
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
