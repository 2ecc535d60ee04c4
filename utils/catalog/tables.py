"""Markdown tables of the catalog, for the book's catalog pages.

One row per entry, a few fields per table (a table of every field would run far past the text
column); every value carries a numbered reference [n] to its source
(title, url, date read, listed under the table), alternatives are shown beside the value they disagree
with, and values that are not vendor specs are marked (assumption) or (measured). References are plain
"[n]" rather than Markdown footnotes because MyST-NB renders notebook Markdown output as CommonMark,
which has no footnotes. The output is deterministic: rows in key order, fields in a fixed order,
references numbered by first use, so a regenerated page only changes when the catalog does.
"""
from __future__ import annotations

import pint

from utils import catalog
from utils.units import Q_, fmt

# The order a reader expects; fields not listed follow in alphabetical order.
FIELD_ORDER = {
    "accelerator": [
        "fp32", "tf32_dense", "tf32_sparse", "bf16_dense", "bf16_sparse", "fp8_dense", "fp8_sparse",
        "fp4_dense", "fp4_sparse", "hbm_capacity", "hbm_capacity_usable", "hbm_bandwidth", "scaleup_link",
        "scaleup_bandwidth_bidirectional", "scaleup_bandwidth_unidirectional", "tdp", "l2_cache", "sm_count",
    ],
    "interconnect": [
        "bandwidth_unidirectional", "bandwidth_bidirectional", "links_per_gpu", "link_bandwidth_unidirectional",
        "link_bandwidth_bidirectional", "lanes", "lane_rate", "switch_name", "switch_ports",
        "switch_bandwidth_bidirectional", "nvl72_domain_gpus", "nvl72_aggregate_bandwidth", "max_domain_gpus",
    ],
    "model": [
        "n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab_size", "tied_embeddings",
        "max_context", "n_routed_experts", "n_shared_experts", "n_experts_per_token", "moe_d_ff",
        "n_dense_layers", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
        "weights_dtype", "params_total", "params_active",
    ],
}

_FLOPS = Q_(1, "FLOP/s").dimensionality
COLUMNS = 4   # fields per table: with the key column, a table that fits the text column


def _esc(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _trim(text: str) -> str:
    """Drop the padding zeros fmt keeps for significant digits: '80.00 GB' -> '80 GB', '6.710e11' -> '6.71e11'."""
    number, _, rest = text.partition(" ")
    mantissa, e, exponent = number.partition("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return (mantissa + e + exponent + (" " + rest if rest else "")).strip()


def format_value(q) -> str:
    """A catalog quantity as table text: compute rates in TFLOP/s, whole counts with separators."""
    if isinstance(q, bool):
        return "yes" if q else "no"
    if isinstance(q, str):
        return q
    if not isinstance(q, pint.Quantity):
        return _trim(fmt(q, digits=4))
    if q.dimensionality == _FLOPS:
        return _trim(fmt(q, "TFLOP/s", digits=5))
    if q.unitless and float(q.magnitude).is_integer():
        return f"{int(q.magnitude):,}"
    return _trim(fmt(q, digits=4))


def fields_of(kind: str) -> list[str]:
    """Every field any entry of the kind has, in the table's order."""
    present = {name for key in catalog.keys(kind) for name in catalog.entry(kind, key).values}
    ordered = [f for f in FIELD_ORDER.get(kind, []) if f in present]
    return ordered + sorted(present - set(ordered))


def markdown_table(kind: str, fields: list[str] | None = None, notes: bool = True,
                   transpose: bool = False) -> str:
    """The kind's entries as a Markdown table with numbered source references (and, with notes, each note);
    `transpose` gives one table per entry with a row per field."""
    if kind not in catalog.kinds():
        raise catalog.CatalogKeyError(f"unknown catalog kind {kind!r}; valid: {', '.join(catalog.kinds())}")
    keys = catalog.keys(kind)
    fields = fields_of(kind) if fields is None else list(fields)
    numbers: dict[str, int] = {}
    footnotes: list[str] = []

    def ref(value) -> str:
        src = value.source
        if src.id not in numbers:
            numbers[src.id] = len(numbers) + 1
            footnotes.append(f"- [{numbers[src.id]}] {_esc(src.title)}, <{src.url}>, read {src.read}.")
        mark = "" if value.kind == "spec" else f" ({value.kind})"
        return f"{_esc(format_value(value.q))}{mark} [{numbers[src.id]}]"

    if transpose:  # one table per entry, a row per field: for kinds with few entries and many fields
        blocks = []
        for key in keys:
            e = catalog.entry(kind, key)
            rows = [f"| {f} | {ref(e[f])}"
                    + (" (alt. " + "; ".join(ref(a) for a in e[f].alternatives) + ")" if e[f].alternatives else "")
                    + f" | {_esc(e[f].note) if notes else ''} |" for f in fields if f in e]
            blocks.append(f"**`{key}`: {_esc(e.name)}**\n\n| field | value [source] | note |\n|---|---|---|\n"
                          + "\n".join(rows))
        return "\n\n".join(blocks) + "\n\nSources:\n\n" + "\n".join(footnotes) + "\n"

    # A table of every entry's name, then the fields a few at a time, so no table is wider than the
    # text column however many fields the kind has.
    lines = ["| key | name |", "|---|---|"] + [f"| `{key}` | {_esc(catalog.entry(kind, key).name)} |" for key in keys]
    note_lines: list[str] = []
    for key in keys:
        e = catalog.entry(kind, key)
        if notes and e.notes:
            note_lines.append(f"- `{key}`: " + _esc(e.notes))
    for start in range(0, len(fields), COLUMNS):
        chunk = fields[start:start + COLUMNS]
        lines += ["", "| key | " + " | ".join(chunk) + " |", "|" + "---|" * (len(chunk) + 1)]
        for key in keys:
            e = catalog.entry(kind, key)
            cells = []
            for f in chunk:
                if f not in e:
                    cells.append("")
                    continue
                v = e[f]
                cell = ref(v)
                if v.alternatives:
                    cell += " (alt. " + "; ".join(ref(a) for a in v.alternatives) + ")"
                cells.append(cell)
                if notes:
                    texts = [v.note] + [f"alt. {format_value(a.q)}: {a.note}" for a in v.alternatives if a.note]
                    texts = [t for t in texts if t]
                    if texts:
                        note_lines.append(f"- `{key}.{f}`: " + _esc("; ".join(texts)))
            lines.append(f"| `{key}` | " + " | ".join(cells) + " |")
    out = "\n".join(lines)
    if note_lines:
        out += "\n\nNotes:\n\n" + "\n".join(note_lines)
    return out + "\n\nSources:\n\n" + "\n".join(footnotes) + "\n"
