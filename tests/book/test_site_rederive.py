"""Re-derive in the page, checked in a real browser: every closed-form chapter's own chain run by Pyodide from
the site's _static/rederive/ (utils/tools/browser_bundle.py), with every request off 127.0.0.1 blocked.

One browser and one load of the runtime for the module (the load is most of its time): a chapter page's panel
(utils/tools/rederive_panel.py) opened and driven by typing into its inputs, as a reader does; then
window.bookRederive for every closed-form chapter with a non-default input chosen from its spec; each result
equal, to the last digit, to utils.rederive.payload (the function the command line's --json prints), and one
chapter to a real `python -m utils.rederive ... --json`; a bad value gets the command's one-line error; opened
from disk (file://) the panel says how to serve the site; a chapter the page cannot run links to its own
"What changes the answer". Skipped with one line where the site was built
without the runtime (no npm), except under CI, where that fails.
"""
from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys

import pytest
from site_browser import CHAPTERS, ROOT, SITE, _real_errors, skip_without_browser, wait_for_the_build

from utils import chains, rederive
from utils.tools.browser_bundle import shown

skip_without_browser()

RUNTIME = SITE / "_static" / "rederive"
SERVE = "python3 -m http.server -d _build/html"
LOAD_MS = 180_000            # the runtime's first load on two busy cores: generous, it is not a timing test


PAGE_OF = {ch.slug: ch.docname for ch in CHAPTERS}


@functools.cache
def manifest() -> dict | None:
    """The runtime's manifest, once the site is built (make test builds it while the tests run)."""
    wait_for_the_build()
    path = RUNTIME / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else None


@pytest.fixture(autouse=True, scope="module")
def _runtime_built():
    m = manifest()
    if (m is None or m["runtime"] is None) and not os.environ.get("CI"):
        pytest.skip("re-derive test skipped: the site was built without the runtime (make book, with npm)")


def closed() -> list[str]:
    """The closed-form chapters the runtime holds (its manifest)."""
    m = manifest()
    return list(m["closed_form"]) if m else []


def _numeric(p) -> bool:
    return isinstance(p.default, (int, float)) and not isinstance(p.default, bool) and not p.is_key \
        and p.check not in ("choice", "bool")


@functools.lru_cache(maxsize=None)
def non_default(slug: str) -> tuple[str, str] | None:
    """(name, value text) for one input away from its default that the chapter takes: a number scaled (the
    first numeric input for which it derives), else another catalog key or choice."""
    def derives(name, text):
        try:
            rederive.payload(slug, {name: text})
            return True
        except rederive.input_errors():
            return False
    params = chains.parameters(slug)
    for p in filter(_numeric, params):
        for f in (1.5, 0.5, 2, 0.9, 1.1):
            v = p.default * f if isinstance(p.default, float) else round(p.default * f)
            if v != p.default and derives(p.name, shown(v)):
                return p.name, shown(v)
    from utils.tools.browser_bundle import spec_record
    for p in spec_record(slug)["parameters"]:
        for value, _ in p["choices"]:
            if value != p["default"] and derives(p["name"], value):
                return p["name"], value
    return None


def _same(js: dict, py: dict) -> bool:
    """Equal to the last digit: JSON numbers from the browser (8192.0 arrives as 8192) against Python's."""
    return js == json.loads(json.dumps(py))


@pytest.fixture(scope="module")
def panel_page(browser, server):
    """A closed-form chapter's page with its panel opened and the runtime loaded."""
    if manifest() is None or manifest()["runtime"] is None:
        pytest.fail("the site was built without the re-derive runtime (make book, with npm)", pytrace=False)
    slug = next((s for s in closed() if s in PAGE_OF and non_default(s)), None)
    assert slug, f"no closed-form chapter with a page and an input to change: {closed()}"
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors, offsite = [], []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: r.url.split("/")[2].split(":")[0] not in ("127.0.0.1", "localhost")
            and r.url.startswith("http") and offsite.append(r.url))
    page.goto(f"{server}/{PAGE_OF[slug]}.html", wait_until="domcontentloaded")     # the panel binds then
    panel = page.locator(f'details[data-rederive="{slug}"]')
    assert panel.count() == 1 and not panel.evaluate("d => d.open"), "the panel is not there, closed"
    assert not [u for u in _requests(page) if "/_static/rederive/" in u], "the runtime loaded before the panel opened"
    panel.locator("summary").click()
    page.wait_for_function(f"""() => {{ const d = document.querySelector('details[data-rederive="{slug}"]');
        return d.dataset.runs >= 1 || d.dataset.state === 'unavailable'; }}""", timeout=LOAD_MS)
    assert panel.get_attribute("data-state") != "unavailable", panel.locator(".rederive-status").inner_text()
    yield slug, page, panel
    errors = _real_errors(errors, SITE / f"{PAGE_OF[slug]}.html")
    assert not errors, f"script errors: {errors}"
    assert not offsite, f"requests off the site: {offsite}"
    context.close()


def _requests(page) -> list[str]:
    return page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")


def _retype(page, panel, name: str, text: str) -> None:
    runs = int(panel.get_attribute("data-runs"))
    field = panel.locator(f'[data-param="{name}"]')
    if field.evaluate("e => e.tagName") == "SELECT":
        field.select_option(text)
    else:
        field.fill("")
        field.press_sequentially(text)                  # key by key, as a reader types
    page.wait_for_function(f"""() => document.querySelector('details[data-rederive]').dataset.runs > {runs}
        && JSON.stringify(document.querySelector('details[data-rederive] [data-param="{name}"]').value)
           === {json.dumps(json.dumps(text))}""", timeout=30_000)
    # Typing key by key starts a run per pause: wait for the one of the whole text.
    page.wait_for_timeout(300)


def _shown(panel) -> dict:
    return panel.evaluate("""d => Object.fromEntries([...d.querySelectorAll('[data-result]')].map(c => [
        c.dataset.result, {text: c.textContent, value: c.dataset.value === undefined ? null : Number(c.dataset.value)}]))""")


def test_the_panel_re_derives_what_a_reader_types(panel_page):
    slug, page, panel = panel_page
    at_defaults = rederive.answer(slug, {})
    got = _shown(panel)
    assert {n: g["value"] for n, g in got.items()} == {n: r["value"] for n, r in at_defaults["payload"]["results"].items()}
    name, text = non_default(slug)
    _retype(page, panel, name, text)
    want = rederive.answer(slug, {name: text})
    got = _shown(panel)
    assert {n: g["value"] for n, g in got.items()} == {n: r["value"] for n, r in want["payload"]["results"].items()}, \
        f"{slug} with {name}={text}: the panel differs from the command line"
    assert {n: g["text"] for n, g in got.items()} == {n: t for _, t, n in want["texts"]}
    shown = panel.locator(".rederive-results").inner_text()
    assert "*" not in shown, f"a unit printed as the command line's --json, not as the page: {shown}"
    line = panel.locator(".rederive-command").inner_text()
    assert line == f"python -m utils.rederive {slug} --set {name}={text}"
    # The command itself, in a subprocess, prints the same payload.
    r = subprocess.run([sys.executable, "-m", "utils.rederive", slug, "--set", f"{name}={text}", "--json"],
                       capture_output=True, text=True, cwd=ROOT, check=True)
    assert json.loads(r.stdout) == want["payload"]


def test_a_bad_value_gets_the_commands_one_line(panel_page):
    slug, page, panel = panel_page
    name = next(p.name for p in chains.parameters(slug) if _numeric(p))
    _retype(page, panel, name, "-3")
    r = subprocess.run([sys.executable, "-m", "utils.rederive", slug, "--set", f"{name}=-3"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    error = panel.locator(".rederive-error")
    assert error.is_visible() and error.inner_text() == r.stderr.strip()
    assert panel.get_attribute("data-state") == "error"


def test_a_chapter_the_page_cannot_run_points_to_its_own_sweep():
    for slug in [s for s in PAGE_OF if s not in closed() and s in chains.slugs()]:
        page = (SITE / f"{PAGE_OF[slug]}.html").read_text()
        links = re.findall(r'class="rederive-sweep" href="#([^"]+)"', page)
        assert len(links) == 1 and f'id="{links[0]}"' in page, f"{slug}: no link to its What changes the answer"


def test_the_runtime_holds_every_closed_form_chapter():
    assert closed() == [s for s in chains.slugs() if getattr(chains.spec(s), "closed_form", False)], \
        "the site's runtime is older than the chain modules: rebuild it (make book)"


def test_every_closed_form_chapter_re_derives_in_the_page(panel_page):
    _, page, _ = panel_page
    asked = {s: dict([change]) if (change := non_default(s)) else {} for s in closed()}
    got = page.evaluate("""async asked => {
        const out = {};
        for (const [slug, values] of Object.entries(asked)) {
            try { out[slug] = await window.bookRederive(slug, values); } catch (e) { out[slug] = {error: String(e.message)}; }
        }
        return out; }""", asked)
    wrong = {s: (asked[s], got[s]) for s in closed() if not _same(got[s], rederive.payload(s, asked[s]))}
    assert not wrong, f"re-derived in the page, different from the command line: {wrong}"
    unchanged = [s for s in closed() if not asked[s]]
    assert not unchanged, f"closed-form chapters with no input to change: {unchanged}"


def test_bookrederive_rejects_a_bad_value_with_the_commands_line(panel_page):
    slug, page, _ = panel_page
    name = next(p.name for p in chains.parameters(slug) if _numeric(p))
    message = page.evaluate("""async ([slug, name]) => {
        try { await window.bookRederive(slug, {[name]: 'lots'}); return null; } catch (e) { return e.message; } }""",
                            [slug, name])
    want = rederive.answer(slug, {name: "lots"})["error"]
    assert message == want and want.startswith("error: ")


def test_opened_from_disk_the_panel_says_how_to_serve_the_site(browser):
    slug = next(s for s in closed() if s in PAGE_OF)
    page = browser.new_page()
    try:
        page.goto((SITE / f"{PAGE_OF[slug]}.html").as_uri(), wait_until="domcontentloaded")
        panel = page.locator(f'details[data-rederive="{slug}"]')
        panel.locator("summary").click()
        disk = panel.locator(".rederive-disk")
        disk.wait_for(state="visible", timeout=10_000)
        assert SERVE in disk.inner_text()
        assert panel.locator(".rederive-cli").is_visible()
        assert f"python -m utils.rederive {slug}" in panel.locator(".rederive-cli").inner_text()
        assert panel.get_attribute("data-state") == "disk"
        assert not [u for u in _requests(page) if "/_static/rederive/" in u]
    finally:
        page.close()
