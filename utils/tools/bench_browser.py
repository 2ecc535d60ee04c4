"""A benchmark, not a test: the re-derive panel's runtime in headless Chromium, on the built site.

    python -m utils.tools.bench_browser [--runs 3] [--calls 20] [--chapter SLUG]      (make bench-browser)

Serves _build/html (BOOK_HTML to choose another build) on 127.0.0.1 with every other request blocked, and for
each run opens a closed-form chapter's page in a fresh browser context (an empty cache) and measures
- first use: from calling window.bookRederive to its first result (loading Pyodide, pint and the book's
  Python, importing the chapter's chain, deriving), with its steps (the performance measures rederive.js
  records), and again after a reload with the browser's cache warm;
- one re-derivation: bookRederive with an input changed, once the runtime is up (median of --calls);
- the bytes a reader downloads for it: as served (raw) and as gzip would send them (level 6).
It prints the medians over the runs, and the load average (the machine's other work moves every figure).
Targets on the book's two-core machine: first use under 8 s, each re-derivation under 100 ms, under 10 MB
compressed.
"""
from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import json
import os
import shutil
import statistics
import sys
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html")).resolve()
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]

FIRST_USE = """async ([slug]) => {
    const t0 = performance.now();
    await window.bookRederive(slug, {});
    const total = performance.now() - t0;
    const steps = performance.getEntriesByType('measure').filter(e => e.name.startsWith('rederive: '));
    return [total, Object.fromEntries(steps.map(e => [e.name.slice(10), e.duration]))]; }"""

CALLS = """async ([slug, values, n]) => {
    const times = [];
    for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await window.bookRederive(slug, i % 2 ? {} : values);
        times.push(performance.now() - t0);
    }
    return times; }"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _changed(slug: str) -> dict:
    """One numeric input scaled by 1.5, or nothing (then every call re-derives the defaults)."""
    from utils import chains
    from utils.tools.browser_bundle import shown
    for p in chains.parameters(slug):
        if isinstance(p.default, float) and not p.is_key and p.check not in ("choice", "bool"):
            text = shown(p.default * 1.5)
            try:
                chains.check(slug, **{p.name: p.default * 1.5})
                return {p.name: text}
            except ValueError:
                continue
    return {}


def _downloaded(urls: list[str], base: str) -> tuple[int, int]:
    """(raw, gzip) bytes of the site's files behind `urls`, each counted once."""
    raw = gz = 0
    for url in sorted(set(urls)):
        if not url.startswith(base):
            continue
        path = SITE / unquote(urlsplit(url).path).lstrip("/")
        if path.is_file():
            data = path.read_bytes()
            raw += len(data)
            gz += len(gzip.compress(data, compresslevel=6, mtime=0))
    return raw, gz


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m utils.tools.bench_browser", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--chapter", help="a closed-form chapter (default: six-nd)")
    args = parser.parse_args(argv)
    manifest_path = SITE / "_static" / "rederive" / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else None
    if not manifest or not manifest["runtime"]:
        print(f"error: {SITE} has no re-derive runtime: run make book (with npm) first", file=sys.stderr)
        return 2
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("error: Chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    from utils.tools import book_index
    pages = {ch.slug: ch.docname for ch in book_index.chapters()}
    slug = args.chapter or ("six-nd" if "six-nd" in manifest["closed_form"]
                            else next(s for s in manifest["closed_form"] if s in pages))
    values = _changed(slug)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(SITE)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    first, reload, calls, sizes = [], [], [], []
    steps: dict[str, list[float]] = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=FLAGS,
                                         proxy={"server": "http://127.0.0.1:9", "bypass": "127.0.0.1,localhost"})
            for run in range(args.runs):
                context = browser.new_context()
                page = context.new_page()
                page.goto(f"{base}/{pages[slug]}.html", wait_until="load")
                page_urls = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")
                total, took = page.evaluate(FIRST_USE, [slug])
                first.append(total / 1000)
                for name, ms in took.items():
                    steps.setdefault(name, []).append(ms / 1000)
                steps.setdefault("the first derivation, and the rest", []).append((total - sum(took.values())) / 1000)
                calls += page.evaluate(CALLS, [slug, values, args.calls])
                urls = page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")
                sizes.append(_downloaded([u for u in urls if u not in page_urls], base))
                page.reload(wait_until="load")
                reload.append(page.evaluate(FIRST_USE, [slug])[0] / 1000)
                context.close()
                print(f"run {run + 1}: first use {first[-1]:.2f} s, reloaded {reload[-1]:.2f} s, "
                      f"re-derivation median {statistics.median(calls[-args.calls:]):.1f} ms", flush=True)
            browser.close()
    finally:
        httpd.shutdown()
    raw, gz = sizes[-1]
    change = ", ".join(f"{k}={v}" for k, v in values.items()) or "the defaults"
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n{slug} in headless Chromium ({args.runs} runs, {args.calls} re-derivations each, {change}; "
          f"load average {load}):")
    print(f"  first use (runtime start to first result)  median {statistics.median(first):.2f} s "
          f"(min {min(first):.2f}, max {max(first):.2f}); target < 8 s")
    for name, took in steps.items():
        print(f"    {name:<41}median {statistics.median(took):.2f} s")
    print(f"  first use after a reload (cache warm)      median {statistics.median(reload):.2f} s")
    print(f"  one re-derivation                          median {statistics.median(calls):.1f} ms "
          f"(p90 {sorted(calls)[int(0.9 * (len(calls) - 1))]:.1f} ms); target < 100 ms")
    print(f"  downloaded for it                          {raw / 1e6:.1f} MB raw, {gz / 1e6:.1f} MB gzip-compressed; "
          "target < 10 MB compressed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
