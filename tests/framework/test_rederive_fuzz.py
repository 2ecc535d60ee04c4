"""The re-derive command under a hostile reader: every chapter, every parameter, bad, absurd and extreme values.

Each case is one `--set name=value --json` through the command's own `main`, in process (a subprocess a case
would cost the suite minutes), and ends one of two ways: exit 0 with every result a finite number in the range its
Result allows (utils.rederive.result_range), or exit 2 with one line on stderr and nothing on stdout. A case is
bounded in time (an interval timer) and in memory (an address-space limit for the test's duration), so a hang or
an allocation that grows with an input fails the case instead of the suite. The values for each parameter are
a seeded sample of the set its kind admits, so every run tries the same cases.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import random
import resource
import signal
import time
import warnings

import pytest

from utils import catalog, chains
from utils.rederive import BAD_INPUT, main, result_range
from utils.tools.bench import TARGET_S

SEED = 7
CASE_SECONDS = TARGET_S["simulation"]   # CPU seconds (not wall time: a loaded machine does not fail a case), the
                             # fast path's budget for a chapter that simulates: past it a case has hung, or computes
                             # something that grows with the input
EXTRA_MEMORY = 2 << 30       # bytes a case may map beyond what the process held when the test started
BIG_INTEGER = "1" + "0" * 400

# Refused before any chain runs (not a number, not finite, not a float): every one of these, for every number.
NOT_NUMBERS = ("seventy", "", "nan", "inf", "-inf", BIG_INTEGER, "-" + BIG_INTEGER, "True", "[1, 2]", "None")
# Numbers at and past the edges: admitted or refused by the checks, never a traceback, NaN, inf or a wrong sign.
EXTREMES = ("0", "-1", "-1e-300", "1e-300", "0.5", "0.999999", "1", "1.5", "2", "3.7", "1e6", "1e9", "1e12",
            "1e18", "9007199254740993", "1e308", "-1e308", "2.2250738585072014e-308")
BAD_PER_PARAMETER = 1        # a seeded sample of NOT_NUMBERS (or NOT_KEYS) for each parameter: all run, over the book
EXTREMES_PER_PARAMETER = 1   # a seeded sample of EXTREMES for each number, and the default times or over a million
NOT_KEYS = ("", "no-such-key", "nan", "1e308", "../", "/dev/null")
NOT_TABLES = ("", "[]", "{}", "not json", "[[1]]", "[" * 100_000, '[{"": 1}]')
IN_A_TABLE = ("NaN", "Infinity", "-1", "0", "1e-300", "1e308", BIG_INTEGER, "1e18", '"x"', "null")


class Overtime(BaseException):
    """Raised by the interval timer: a BaseException, so no chapter's `except Exception` swallows it."""


def _overtime(signum, frame):
    if frame is None or frame.f_code is not problem.__code__:    # never while `problem` stops the timer
        raise Overtime


def values_for(slug: str, param, binary: str) -> list[str]:
    """The `--set` texts to try for one parameter: its kind's bad values, and a seeded sample of extremes."""
    rng = random.Random(f"{SEED}:{slug}:{param.name}")
    if param.check == "table":
        def rows(number: str, n: int = 1) -> str:
            row = ", ".join(json.dumps(c.name if c.name != "*" else "gpu") + ": " + ('"a"' if c.check == "text" else number)
                            for c in param.columns)
            return "[" + ", ".join([f"{{{row}}}"] * n) + "]"
        return [*NOT_TABLES, binary, rows("1", 100_000), *map(rows, rng.sample(IN_A_TABLE, EXTREMES_PER_PARAMETER))]
    if param.is_key:
        valid = [k for k in catalog.keys(param.check) if k != param.default]
        return [*rng.sample(NOT_KEYS, BAD_PER_PARAMETER), binary, *rng.sample(valid, min(1, len(valid)))]
    if param.check == "choice":
        return ["", "no-such-choice", *map(str, param.choices)]
    if isinstance(param.default, bool):
        return ["", "maybe", "1", str(not param.default)]
    if isinstance(param.default, str):
        return ["", "x" * 10_000, "\u00fc\u2028", binary]
    d = float(param.default)
    return [*rng.sample(NOT_NUMBERS, BAD_PER_PARAMETER), *rng.sample(EXTREMES, EXTREMES_PER_PARAMETER),
            repr(d * 1e6 if rng.random() < 0.5 else d / 1e6)]


def cases(binary: str, *slugs: str) -> list[tuple[str, str, str]]:
    """(slug, parameter, `--set` text) for the chapters named, or for every chapter."""
    return [(slug, p.name, text) for slug in slugs or chains.slugs() for p in chains.parameters(slug)
            for text in values_for(slug, p, binary)]


def problem(slug: str, name: str, text: str) -> str | None:
    """What is wrong with re-deriving `slug` with `name=text`, or None when it exits as a bad input or a good one."""
    signal.setitimer(signal.ITIMER_PROF, CASE_SECONDS, 0.25)     # repeats, in case a chapter swallows the first
    try:
        return _problem(slug, name, text)
    except Overtime:
        return f"still running after {CASE_SECONDS} s"
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


def _problem(slug: str, name: str, text: str) -> str | None:
    out, err = io.StringIO(), io.StringIO()
    start = time.process_time()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            rc = main([slug, "--set", f"{name}={text}", "--json"])
    except Overtime:
        raise
    except BaseException as e:  # noqa: B036 - a traceback, a MemoryError, a SystemExit: each is the finding
        return f"raised {type(e).__name__}: {str(e)[:200]}"
    seconds = time.process_time() - start
    if seconds > CASE_SECONDS:
        return f"took {seconds:.1f} s"
    stderr = err.getvalue().strip().splitlines() + [f"{x.category.__name__}: {x.message}" for x in w]
    if rc == BAD_INPUT:
        if out.getvalue() or len(stderr) != 1 or not stderr[0].startswith("error: "):
            return f"exit 2 but stdout {out.getvalue()[:80]!r}, stderr {stderr[:3]}"
        return None
    if rc != 0:
        return f"exit {rc}: {stderr[:3]}"
    answer = json.loads(out.getvalue())
    results, left_out = answer["results"], answer.get("left_out", {})
    for r in chains.results(slug):
        if r.name in left_out:      # no value at these inputs, and the line that says why (utils.params.left_out)
            continue
        if r.name not in results:
            return f"{r.name} missing, and not said to be left out"
        v, (lo, hi) = results[r.name]["value"], result_range(r)
        if not (math.isfinite(v) and lo <= v <= hi):
            return f"{r.name} = {v} ({r.label!r}), outside [{lo}, {hi}]"
    if stderr:
        return f"exit 0 but stderr {stderr[:3]}"
    return None


@contextlib.contextmanager
def bounded_memory(extra: int):
    """An address-space limit for the block: what the process maps now, plus `extra`."""
    with open("/proc/self/statm") as f:
        mapped = int(f.read().split()[0]) * resource.getpagesize()
    before = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (mapped + extra, before[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, before)


@pytest.fixture(scope="module")
def binary_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("fuzz") / "model.json"
    path.write_bytes(bytes(range(256)) * 16)
    return str(path)


@pytest.mark.parametrize("slug", chains.slugs())
def test_every_case_exits_with_finite_results_of_the_right_sign_or_one_line(slug, binary_file):
    chains.module(slug)                               # its import is not a case's time
    todo = [(name, text) for _, name, text in cases(binary_file, slug)]
    previous = signal.signal(signal.SIGPROF, _overtime)
    failures = []
    try:
        with bounded_memory(EXTRA_MEMORY):
            for name, text in todo:
                if (found := problem(slug, name, text)) is not None:
                    shown = text if len(text) < 40 else f"{text[:12]}...({len(text)} chars)"
                    failures.append(f"{name}={shown}: {found}")
    finally:
        signal.signal(signal.SIGPROF, previous)
    assert todo and not failures, f"{len(failures)} of {len(todo)} cases:\n" + "\n".join(failures)
