"""Show a measurement in a chapter: the prediction, the newest record, the residual and its provenance.

    from utils.measured import compare, latest, ceilings
    compare("copy-bandwidth", predicted=Q_(4.8, "TB/s"), label="Device-to-device copy bandwidth")

`compare` returns an object that a notebook renders as a small table (markdown or HTML, plain text
elsewhere): predicted, measured (the median of the newest record), the residual (measured / predicted
- 1), the datasheet figure where the catalog has one, and one line of provenance (GPU, driver, CUDA,
torch and triton versions, the record's date and commit). With no record it says plainly "not yet
measured" beside the prediction; it never shows a number that was not measured. Its text depends only
on the records and the arguments (never on the time now), so committed notebook outputs stay stable.
`live=True` re-measures now (quick sizes) where a CUDA GPU is present, and says that none is otherwise.

Records are the JSON files `python3 -m utils.measure` writes under book/measurements/ (see
utils/gpu/schema.json). `latest` returns the newest valid record of a measurement (full-size runs
only, unless asked for quick ones); records from the tests' fake timer are never read.
"""
from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path

from utils.units import Q_, fmt, pct

ROOT = Path(__file__).resolve().parents[1]
RECORDS = ROOT / "book" / "measurements"
LIVE_MODE = "quick"          # sizes of a live re-measurement (the tests set "tiny")


def _harness():
    """The GPU side's harness (record schema, GPU slugs, the registry), imported where a record is read or a
    measurement named: a chain that reads records with none present, as a page's browser runtime does, never
    loads the GPU side."""
    from utils.gpu import harness
    return harness


# (measurement, metric) -> the catalog value that is its datasheet figure. Metrics not here have none.
_DATASHEET = {
    ("copy-bandwidth", "bandwidth"): "hbm_bandwidth",
    ("copy-bandwidth", "bandwidth_torch"): "hbm_bandwidth",
    ("copy-bandwidth", "bandwidth_triton"): "hbm_bandwidth",
    ("matmul-rate", "bf16_rate"): "bf16_dense",
    ("matmul-rate", "fp8_rate"): "fp8_dense",
    ("gemm-batch-sweep", "bandwidth_m1"): "hbm_bandwidth",
    ("gemm-batch-sweep", "flop_rate_mmax"): "bf16_dense",
    ("gemm-batch-sweep", "knee_m"): "ridge",
    ("host-device-copy", "h2d_pinned"): "host_link",
    ("host-device-copy", "d2h_pinned"): "host_link",
}
_HOST_LINK_FIELDS = ("host_bandwidth_unidirectional", "pcie_bandwidth_unidirectional")


# --------------------------------------------------------------------------------------------------
# Reading records


def records(name: str | None = None, gpu: str | None = None, *, directory: Path | str | None = None,
            include_quick: bool = True) -> list[dict]:
    """Every valid record (of `name`, on `gpu`), oldest first. Each is the file's JSON plus '_file', its
    file name. A file that is not a valid record raises ValueError: records are never edited by hand."""
    folder = Path(directory) if directory is not None else RECORDS
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            rec = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{path.name} is not JSON: {e}") from None
        errs = _harness().errors(rec)
        if errs:
            raise ValueError(f"{path.name} is not a valid measurement record: {'; '.join(errs)}")
        if rec["method"]["timer"] == "fake":
            continue
        if name is not None and rec["name"] != name:
            continue
        if not include_quick and rec["mode"] != "full":
            continue
        if gpu is not None and not gpu_matches(rec, gpu):
            continue
        out.append({**rec, "_file": path.name})
    return sorted(out, key=lambda r: (r["provenance"]["date"], r["_file"]))


def latest(name: str, gpu: str | None = None, *, directory: Path | str | None = None,
           include_quick: bool = True) -> dict | None:
    """The newest full-size record of measurement `name` (on `gpu`: a name such as 'NVIDIA H200', its
    slug, a part of it such as 'h200', or a catalog key); where only a --quick run exists, its newest
    record (the provenance line then says "quick sizes"); None when there is none."""
    found = records(name, gpu, directory=directory, include_quick=include_quick)
    full = [r for r in found if r["mode"] == "full"]
    pick = full or found
    return pick[-1] if pick else None


def gpu_matches(record: dict, gpu: str) -> bool:
    p = record["provenance"]
    want = _harness().slug(gpu)
    return want in p["gpu_slug"] or gpu.lower() == p["gpu"].lower() or catalog_key(p["gpu"]) == gpu


def metric_of(record: dict, key: str | None = None):
    """A record's metric (its headline by default) as a pint quantity."""
    key = key or record["headline"]
    if key not in record["metrics"]:
        raise KeyError(f"{record['name']} has no metric {key!r}; it has: {', '.join(record['metrics'])}")
    m = record["metrics"][key]
    return Q_(m["value"], m["unit"])


@dataclass(frozen=True)
class Ceilings:
    """The two ceilings measured in one run: device-to-device copy bandwidth and bf16 matmul rate."""
    copy_bandwidth: object
    bf16_matmul_rate: object
    gpu: str
    record: str

    @property
    def ridge(self):
        """FLOP per byte at which the measured matmul rate and copy bandwidth meet."""
        return (self.bf16_matmul_rate / self.copy_bandwidth).to("FLOP/B")


def ceilings(gpu: str | None = None, *, directory: Path | str | None = None) -> Ceilings | None:
    """The measured ceilings from the newest full-size run (on `gpu`), or None if nothing is recorded.
    They come from one record's `ceilings`, so both were measured in the same run."""
    rec = latest("copy-bandwidth", gpu, directory=directory)
    if rec is None or rec.get("ceilings") is None:
        found = [r for r in records(None, gpu, directory=directory, include_quick=False) if r.get("ceilings")]
        rec = found[-1] if found else None
    if rec is None:
        return None
    c = rec["ceilings"]
    return Ceilings(Q_(c["copy_bandwidth"]["value"], c["copy_bandwidth"]["unit"]),
                    Q_(c["bf16_matmul_rate"]["value"], c["bf16_matmul_rate"]["unit"]),
                    rec["provenance"]["gpu"], rec["_file"])


# --------------------------------------------------------------------------------------------------
# The catalog's datasheet figure for a record


def catalog_key(gpu_name: str) -> str | None:
    """The accelerator catalog key for a GPU as torch names it ('NVIDIA H200' -> 'h200'), or None.
    A PCIe or NVL part maps only to a catalog entry of that form (their ceilings differ from SXM's)."""
    try:
        from utils import catalog
        keys = catalog.keys("accelerator")
    except Exception:  # noqa: BLE001 - no catalog, no datasheet figure
        return None
    tokens = set(_harness().slug(gpu_name).split("-"))
    form = "pcie" if "pcie" in tokens else "nvl" if "nvl" in tokens else None
    family = [k for k in keys if k.split("-")[0] in tokens]
    if form:
        family = [k for k in family if form in k.split("-")]
    else:
        family = [k for k in family if "pcie" not in k.split("-") and "nvl" not in k.split("-")]
    if not family:
        return None
    # A memory size in the name (A100-SXM4-40GB) picks the entry of that size.
    sized = [k for k in family if any(t.endswith("gb") and t in tokens for t in k.split("-"))]
    family = sized or family
    sxm = [k for k in family if any(t.startswith("sxm") for t in k.split("-"))]
    return sorted(sxm or family, key=len)[0]


def datasheet(name: str, key: str, gpu_name: str):
    """(quantity, label) of the catalog's datasheet figure for metric `key` of measurement `name` on
    the GPU `gpu_name`, or None where the catalog has no such figure."""
    field_name = _DATASHEET.get((name, key))
    ckey = catalog_key(gpu_name)
    if field_name is None or ckey is None:
        return None
    from utils import catalog
    entry = catalog.accelerator(ckey)
    if field_name == "ridge":
        if "bf16_dense" not in entry or "hbm_bandwidth" not in entry:
            return None
        ridge = (entry.q("bf16_dense") / entry.q("hbm_bandwidth")).to("FLOP/B")
        # y = x W in bf16 does 2*M*K*N FLOP on about 2*K*N bytes: M FLOP per byte, so the ridge in
        # FLOP per byte is the batch at which the sweep turns from flat to linear.
        return Q_(ridge.magnitude, ""), f"{ckey} datasheet ridge (bf16_dense / hbm_bandwidth, FLOP per byte)"
    if field_name == "host_link":
        field_name = next((f for f in _HOST_LINK_FIELDS if f in entry), None)
        if field_name is None:
            return None
    if field_name not in entry:
        return None
    return entry.q(field_name), f"{ckey} {field_name}"


# --------------------------------------------------------------------------------------------------
# Showing one


_CANONICAL = ("B/s", "FLOP/s", "s", "B", "FLOP")


def show(q) -> str:
    """A quantity the book's way: engineering prefixes on the record's own units (4.30 TB/s, 5.10 µs),
    plain digits for pure numbers."""
    if q.unitless:
        return fmt(q, style="plain")
    unit = next((u for u in _CANONICAL if q.is_compatible_with(u)), None)
    return fmt(q.to(unit), style="eng") if unit else fmt(q)


def provenance_line(record: dict) -> str:
    p = record["provenance"]
    commit = p["git_commit"][:10] if p["git_commit"] != "unknown" else "unknown commit"
    dirty = " with uncommitted changes" if p["git_dirty"] else ""
    mode = "" if record["mode"] == "full" else f"; {record['mode']} sizes"
    state = p.get("gpu_state_start") or {}
    clocks = (f", SM clock {state['sm_clock_mhz']:.0f} MHz, {state['temperature_c']:.0f} C at the start"
              if state.get("sm_clock_mhz") is not None and state.get("temperature_c") is not None else "")
    return (f"Measured on {p['gpu']} (driver {p['driver']}, CUDA {p['cuda']}, torch {p['torch']}, "
            f"triton {p['triton']}{clocks}) on {p['date'][:10]}, commit {commit}{dirty}{mode}; record "
            f"{record.get('_file', _harness().record_filename(record))}")


def _how(record: dict, key: str) -> str:
    m = record["metrics"][key]
    runs = [len(r["samples_s"]) for r in record["results"]
            if r["variant"] == m["variant"] and r["size"] == m["size"]]
    size = ", ".join(f"{k}={v}" for k, v in m["size"].items())
    if runs:
        return f"median of {runs[0]} runs; {m['variant']}, {size}"
    return f"from the medians of the sweep; {size}"


@dataclass(frozen=True)
class Comparison:
    """Prediction beside measurement. `measured` and `residual` are None when nothing is recorded."""
    name: str
    metric: str | None
    label: str
    predicted: object | None
    measured: object | None
    record: dict | None = field(default=None, repr=False)
    datasheet: tuple | None = None
    live: str | None = None

    @property
    def residual(self) -> float | None:
        if self.predicted is None or self.measured is None:
            return None
        return float((self.measured / self.predicted).to("").magnitude) - 1

    def rows(self) -> list[tuple[str, str]]:
        rows = []
        if self.predicted is not None:
            rows.append(("predicted", show(self.predicted)))
        if self.measured is None:
            rows.append(("measured", "not yet measured"))
        else:
            rows.append(("measured", f"{show(self.measured)} ({_how(self.record, self.metric)})"))
        if self.residual is not None:
            rows.append(("residual", f"{pct(self.residual)} (measured / predicted - 1)"))
        if self.datasheet is not None and self.measured is not None:
            q, label = self.datasheet
            ratio = float((self.measured / q).to("").magnitude)
            rows.append(("datasheet", f"{show(q)} ({label}); measured is {pct(ratio)} of it"))
        if self.live is not None:
            rows.append(("live", self.live))
        return rows

    def footer(self) -> str:
        if self.record is None:
            return (f"No record of {self.name} under book/measurements/ yet: `make measure` on a machine "
                    "with a CUDA GPU writes one.")
        return provenance_line(self.record)

    def __str__(self) -> str:
        width = max(len(k) for k, _ in self.rows())
        body = "\n".join(f"  {k:<{width}}  {v}" for k, v in self.rows())
        return f"{self.label}\n{body}\n  {self.footer()}"

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        body = "\n".join(f"| {k} | {v} |" for k, v in self.rows())
        return f"**{self.label}**\n\n| | |\n|:--|:--|\n{body}\n\n{self.footer()}\n"

    def _repr_html_(self) -> str:
        e = html.escape
        body = "".join(f"<tr><th style='text-align:left'>{e(k)}</th><td style='text-align:left'>{e(v)}</td></tr>"
                       for k, v in self.rows())
        return (f"<div class='measurement'><p><strong>{e(self.label)}</strong></p><table>{body}</table>"
                f"<p><small>{e(self.footer())}</small></p></div>")


def compare(name: str, predicted=None, *, metric: str | None = None, label: str | None = None,
            gpu: str | None = None, live: bool = False, directory: Path | str | None = None) -> Comparison:
    """Prediction beside the newest record of measurement `name` (its headline metric unless `metric`).

    predicted: a pint quantity in units compatible with the metric (a plain number for a pure number
    such as the sweep's knee), or None to show the catalog's datasheet figure as the prediction.
    live: re-measure now where a CUDA GPU is present (quick sizes; shown beside the record, never
    written); without one, say so.
    """
    if name not in _harness().REGISTRY:
        raise KeyError(f"unknown measurement {name!r}; valid: {', '.join(_harness().REGISTRY)}")
    rec = latest(name, gpu, directory=directory)
    key = metric or (rec["headline"] if rec else _harness().REGISTRY[name].headline)
    measured = metric_of(rec, key) if rec else None
    sheet = datasheet(name, key, rec["provenance"]["gpu"]) if rec else (
        datasheet(name, key, gpu) if gpu else None)
    if predicted is not None and not hasattr(predicted, "units"):
        predicted = Q_(float(predicted), measured.units if measured is not None else "")
    if predicted is None and sheet is not None:
        predicted = sheet[0]
        sheet = None
    if predicted is not None and measured is not None:
        measured = measured.to(predicted.units)            # raises if the units do not fit
    live_text = _live(name, key) if live else None
    return Comparison(name, key, label or f"{name}: {key}", predicted, measured, rec, sheet, live_text)


def _gpu_available() -> tuple[bool, str]:
    try:
        import torch
    except ImportError:
        return False, "torch is not installed here"
    if not torch.cuda.is_available():
        return False, "torch.cuda.is_available() is False"
    return True, ""


def _live(name: str, key: str) -> str:
    ok, why = _gpu_available()
    if not ok:
        return f"not re-measured: no GPU is present here ({why})"
    rec = _harness().live(name, mode=LIVE_MODE)
    q = metric_of(rec, key)
    return f"{show(q)} now on {rec['provenance']['gpu']} ({LIVE_MODE} sizes; {_how(rec, key)})"


# --------------------------------------------------------------------------------------------------
# The listing page


@dataclass(frozen=True)
class Listing:
    """Every record as a table: measurement, GPU, versions, date, headline median, datasheet ratio."""
    rows: tuple
    empty: str = ("No measurement has been recorded yet; every page that shows one says \"not yet "
                  "measured\" until `make measure` runs on a machine with a CUDA GPU.")

    HEADER = ("measurement", "GPU", "driver / CUDA / torch / triton", "date", "median", "datasheet",
              "measured / datasheet")

    def __str__(self) -> str:
        if not self.rows:
            return self.empty
        table = [self.HEADER, *self.rows]
        widths = [max(len(r[i]) for r in table) for i in range(len(self.HEADER))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in table)

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        if not self.rows:
            return self.empty
        lines = ["| " + " | ".join(self.HEADER) + " |", "|" + "---|" * len(self.HEADER)]
        lines += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |" for r in self.rows]
        return "\n".join(lines)


def listing(*, directory: Path | str | None = None) -> Listing:
    rows = []
    for rec in sorted(records(directory=directory), key=lambda r: (r["name"], r["provenance"]["date"])):
        p, key = rec["provenance"], rec["headline"]
        q = metric_of(rec, key)
        sheet = datasheet(rec["name"], key, p["gpu"])
        ratio = pct(float((q / sheet[0]).to("").magnitude)) if sheet else "-"
        name = rec["name"] + ("" if rec["mode"] == "full" else f" ({rec['mode']})")
        rows.append((name, p["gpu"], f"{p['driver']} / {p['cuda']} / {p['torch']} / {p['triton']}",
                     p["date"][:10], f"{key} {show(q)}", show(sheet[0]) if sheet else "-", ratio))
    return Listing(tuple(rows))


@dataclass(frozen=True)
class Report:
    """A chapter's measurement section in one output: a table for each comparison that has a record,
    and one short note, once, for all that do not (what will be measured, and how)."""
    comparisons: tuple
    what: str = ""

    @property
    def pending(self) -> list:
        return [c for c in self.comparisons if c.record is None]

    def _note(self) -> str:
        names = ", ".join(f"`{n}`" for n in dict.fromkeys(c.name for c in self.pending))
        what = f" {self.what}" if self.what else ""
        return (":::{note} Not yet measured\n"
                f"No GPU record of {names} is on file yet.{what} `make measure` on a machine with a CUDA GPU "
                "runs it and writes the record; this section then shows prediction, measurement and residual.\n:::\n")

    def _repr_markdown_(self) -> str:
        parts = [c._repr_markdown_() for c in self.comparisons if c.record is not None]
        if self.pending:
            parts.append(self._note())
        return "\n".join(parts)

    def __repr__(self) -> str:
        return "\n".join([str(c) for c in self.comparisons if c.record is not None]
                         + ([self._note()] if self.pending else []))


def report(*comparisons: Comparison, what: str = "") -> Report:
    """One measurement section: `report(compare("copy-bandwidth", ...), compare("matmul-rate", ...),
    what="the add kernel against the two host copies")`."""
    return Report(tuple(comparisons), what)


def copy_ceiling(gpu) -> tuple:
    """The memory roof a bandwidth-bound kernel is judged against: (bandwidth in TB/s, kind, source).
    The copy bandwidth the harness measured on `gpu` (a catalog key or accelerator Entry) where a record
    exists, kind "measured"; the datasheet's HBM bandwidth until then, kind "spec"."""
    from utils import catalog
    acc = gpu if hasattr(gpu, "key") else catalog.accelerator(gpu)
    ceil = ceilings(acc.key)
    if ceil is not None:
        return ceil.copy_bandwidth.to("TB/s"), "measured", f"copy-bandwidth ceiling, {ceil.record}"
    return (acc.q("hbm_bandwidth").to("TB/s"), "spec",
            f"{acc['hbm_bandwidth'].cite} (datasheet HBM, until measured)")
