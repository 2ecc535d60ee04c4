// The re-derive panel: a chapter's own chain code (utils/, pint) run in the reader's browser by Pyodide, loaded
// from this site's _static/rederive/ (utils/tools/browser_bundle.py) the first time a panel is opened or
// window.bookRederive is called, and never before. Nothing is fetched from anywhere but this site.
//
//   window.bookRederive(slug, {name: value, ...}) -> Promise of {chapter, parameters, results: {name: {value, unit}}}
//   (exactly what `python -m utils.rederive SLUG --set name=value ... --json` prints; it rejects with the
//   command's one-line "error: ..." message).
(() => {
  "use strict";
  const BASE = new URL("rederive/", document.currentScript.src);
  const SERVE = "python3 -m http.server -d _build/html";
  let runtime = null;

  function fromDisk() {
    return location.protocol === "file:";
  }

  async function manifest() {
    const r = await fetch(new URL("manifest.json", BASE));
    if (!r.ok) throw new Error("this build of the site has no re-derive runtime (make book builds it, with npm)");
    return r.json();
  }

  // Each step of the runtime's first load, as a performance measure ("rederive: <step>") a benchmark reads.
  function step(name, since) {
    performance.measure(`rederive: ${name}`, {start: since, end: performance.now()});
    return performance.now();
  }

  // The runtime: Pyodide, and one zip of pint and the book's Python with its bytecode, unpacked onto sys.path;
  // the unit registry is built as soon as Python is up, before the first derivation asks for it.
  function load() {
    if (runtime) return runtime;
    runtime = (async () => {
      if (fromDisk()) throw new Error(`the page was opened from disk, where the browser blocks the runtime: serve the site with ${SERVE}`);
      let t = performance.now();
      const script = import(new URL("pyodide.mjs", BASE).href);        // at once, beside the manifest
      script.catch(() => {});
      const m = await manifest();
      if (!m.runtime) throw new Error("this build of the site has no re-derive runtime (make book builds it, with npm)");
      const zip = fetch(new URL(m.runtime.python_zip, BASE)).then((r) => {
        if (!r.ok) throw new Error(`the runtime's ${m.runtime.python_zip} did not load (${r.status})`);
        return r.arrayBuffer();
      });
      const py = await (await script).loadPyodide({indexURL: BASE.href});
      t = step("start Python", t);
      py.unpackArchive(await zip, "zip", {extractDir: "/book"});
      py.runPython("import sys; sys.path.insert(0, '/book')");
      t = step("unpack the book's Python", t);
      py.runPython("import utils.units");
      t = step("build the unit registry", t);
      const answer = py.pyimport("utils.rederive").answer;
      const json = py.pyimport("json");
      step("import the framework", t);
      return {
        closed: new Set(m.closed_form),
        chapters: new Set(m.chapters),
        call(slug, values) {
          let out;
          try {
            out = answer(slug, py.toPy(values));
          } catch (e) {      // not bad input (answer returns that) but a chain that fails here: its last line
            const last = String(e.message).split("\n").filter((l) => /^\w+(Error|Exception)\b/.test(l)).pop();
            return {error: `error: ${slug} failed in the page: ${last || e.message}`};
          }
          try {
            return JSON.parse(json.dumps(out));
          } finally {
            out.destroy();
          }
        },
      };
    })();
    runtime.catch(() => { runtime = null; });
    return runtime;
  }

  // {payload, texts} or {error}: the same Python as the command line's --json (utils.rederive.answer).
  async function derive(slug, params) {
    const rt = await load();
    const values = {};
    for (const [k, v] of Object.entries(params || {})) values[k] = String(v);
    if (rt.chapters.has(slug) && !rt.closed.has(slug)) {
      return {error: `error: ${slug} computes with numpy, which the page does not have; run python -m utils.rederive ${slug} on your machine`};
    }
    return rt.call(slug, values);
  }

  window.bookRederive = async (slug, params) => {
    const out = await derive(slug, params);
    if (out.error) throw new Error(out.error);
    return out.payload;
  };

  // ---- the panel ------------------------------------------------------------------------------------

  function cli(panel, values) {
    const sets = Object.entries(values).map(([k, v]) => ` --set ${k}=${/^[\w.+-]+$/.test(v) ? v : `'${v}'`}`);
    return `python -m utils.rederive ${panel.dataset.rederive}${sets.join("")}`;
  }

  // The inputs a reader changed from their defaults, as the command line would take them.
  function changed(panel) {
    const out = {};
    for (const el of panel.querySelectorAll("[data-param]")) {
      if (el.value.trim() !== el.dataset.default) out[el.dataset.param] = el.value.trim();
    }
    return out;
  }

  function show(panel, state, message) {
    panel.dataset.state = state;
    panel.querySelector(".rederive-status").textContent = message || "";
  }

  async function run(panel) {
    const values = changed(panel);
    const error = panel.querySelector(".rederive-error");
    panel.querySelector(".rederive-command").textContent = cli(panel, values);
    const t0 = performance.now();
    let out;
    try {
      out = await derive(panel.dataset.rederive, values);
    } catch (e) {
      show(panel, "unavailable", String(e.message || e));
      return;
    }
    if (JSON.stringify(changed(panel)) !== JSON.stringify(values)) return;   // a newer run is on its way
    const cells = panel.querySelectorAll("[data-result]");
    if (out.error) {
      error.textContent = out.error;
      error.hidden = false;
      cells.forEach((c) => { c.textContent = "—"; delete c.dataset.value; });
      show(panel, "error");
    } else {
      error.hidden = true;
      error.textContent = "";
      const texts = Object.fromEntries(out.texts.map(([, text, name]) => [name, text]));
      const gaps = out.payload.left_out || {};     // results a reader's own model leaves out, with why
      cells.forEach((c) => {
        const name = c.dataset.result, rec = out.payload.results[name];
        c.textContent = rec ? texts[name] ?? "" : "—";
        c.title = rec ? "" : `left out: ${gaps[name] || "not derived for these inputs"}`;
        if (rec) c.dataset.value = String(rec.value);
        else delete c.dataset.value;
      });
      show(panel, "ready", `Re-derived in your browser in ${Math.round(performance.now() - t0)} ms.`);
    }
    panel.dataset.runs = String(Number(panel.dataset.runs || 0) + 1);
  }

  function open(panel) {
    if (panel.dataset.state) return;
    if (panel.classList.contains("rederive-static")) return;
    if (fromDisk()) {
      panel.querySelector(".rederive-disk").hidden = false;
      show(panel, "disk", "");
      return;
    }
    show(panel, "loading", "Loading the runtime (Python and pint, a few MB, once)…");
    let timer = null;
    const later = () => { clearTimeout(timer); timer = setTimeout(() => run(panel), 150); };
    panel.querySelectorAll("[data-param]").forEach((el) => {
      el.addEventListener("input", later);
      el.addEventListener("change", later);
    });
    panel.querySelector("form").addEventListener("submit", (e) => { e.preventDefault(); clearTimeout(timer); run(panel); });
    run(panel);
  }

  function bind() {
    for (const panel of document.querySelectorAll("details[data-rederive]")) {
      panel.addEventListener("toggle", () => panel.open && open(panel));
      if (panel.open) open(panel);
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", bind);
  else bind();
})();
