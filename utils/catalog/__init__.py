"""The book's one catalog: hardware, interconnects, models and prices, each value with its provenance.

Data lives in the TOML files beside this module, one per kind (accelerators.toml -> kind "accelerator").
Each file has a `[sources.<id>]` table per document (title, url, read = the ISO date it was read) and a
`[<kind>.<key>]` table per entry. An entry names a default `source` for its values; each value is either
a bare literal (a config number, inheriting the entry's source) or a table:

    bf16_dense = { value = 989.4e12, unit = "FLOP/s", source = "h100-datasheet",
                   kind = "spec", note = "the 1,979 TFLOP/s headline is with 2:4 sparsity",
                   alternatives = [{ value = ..., unit = ..., source = ..., note = ... }] }

`kind` is spec (a vendor or paper figure), assumption (a judgement the book makes), measured, or
measured-by-others (a rate someone else measured and published, beside the datasheet peak it is read against).
Where sources disagree the primary value is the one the book uses and `alternatives` keeps the rest;
`note` says why. The schema is checked on load, so a value without a source or a date cannot exist.
"""
from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from utils.units import Q_

HERE = Path(__file__).parent
KINDS = ("spec", "assumption", "measured", "measured-by-others")
_ENTRY_META = {"name", "source", "notes", "kind"}


class CatalogKeyError(KeyError):
    """An unknown catalog key; its message lists the valid ones (the re-derive command prints it)."""

    def __str__(self) -> str:
        return self.args[0]


class CatalogFileError(ValueError):
    """A file given where a catalog key may be (a config.json, a spec file) that cannot be read as one:
    missing, not valid JSON or TOML, or lacking a field the chains need (the message names it)."""


@dataclass(frozen=True)
class Source:
    id: str
    title: str
    url: str
    read: str


@dataclass(frozen=True)
class Value:
    """One catalog value: the quantity, and where it came from."""
    name: str
    q: object               # a pint Quantity (dimensionless for plain counts), or a str/bool
    source: Source
    kind: str
    note: str = ""
    alternatives: tuple["Value", ...] = ()

    @property
    def cite(self) -> str:
        return f"{self.source.title}, read {self.source.read}"


@dataclass(frozen=True)
class Entry:
    kind: str
    key: str
    name: str
    values: dict[str, Value] = field(repr=False)
    notes: str = ""

    def __getitem__(self, field_name: str) -> Value:
        try:
            return self.values[field_name]
        except KeyError:
            raise CatalogKeyError(
                f"{self.kind} {self.key!r} has no value {field_name!r}; it has: "
                + ", ".join(sorted(self.values))) from None

    def __contains__(self, field_name: str) -> bool:
        return field_name in self.values

    @property
    def short_name(self) -> str:
        """The name without its parenthesis, for legends and tables: 'H100 SXM' for 'H100 SXM (80 GB)'."""
        return self.name.split(" (")[0]

    def q(self, field_name: str):
        """The quantity itself: accelerator('h100-sxm').q('bf16_dense') -> 989.4 TFLOP/s."""
        return self[field_name].q

    def get(self, field_name: str, default=None):
        return self.values[field_name].q if field_name in self.values else default


def _value(kind_key: str, name: str, raw, entry_source: str | None, entry_kind: str,
           sources: dict[str, Source]) -> Value:
    where = f"{kind_key}.{name}"
    if not isinstance(raw, dict):
        raw = {"value": raw}
    unknown = set(raw) - {"value", "unit", "source", "kind", "note", "alternatives"}
    if unknown:
        raise ValueError(f"{where}: unknown fields {sorted(unknown)}")
    if "value" not in raw:
        raise ValueError(f"{where}: no value")
    source_id = raw.get("source", entry_source)
    if source_id not in sources:
        raise ValueError(f"{where}: source {source_id!r} is not in [sources]")
    kind = raw.get("kind", entry_kind)
    if kind not in KINDS:
        raise ValueError(f"{where}: kind {kind!r} is not one of {KINDS}")
    v = raw["value"]
    quantity = v if isinstance(v, (str, bool)) else Q_(v, raw.get("unit", ""))
    alts = tuple(_value(kind_key, f"{name}[alt]", {**a, "alternatives": []}, source_id, kind, sources)
                 for a in raw.get("alternatives", []))
    return Value(name, quantity, sources[source_id], kind, raw.get("note", ""), alts)


def parse(data: dict, kind: str, origin: str) -> dict[str, Entry]:
    """The entries of `kind` in parsed TOML `data` (a catalog file, or a reader's spec file), each value
    checked: a source that exists with a title, url and read date, a kind of three."""
    sources = {}
    for sid, s in data.get("sources", {}).items():
        missing = {"title", "url", "read"} - set(s)
        if missing:
            raise ValueError(f"{origin}: source {sid!r} lacks {sorted(missing)}")
        sources[sid] = Source(sid, s["title"], s["url"], str(s["read"]))
    entries = {}
    for key, body in data.get(kind, {}).items():
        values = {name: _value(f"{kind}.{key}", name, raw, body.get("source"),
                               body.get("kind", "spec"), sources)
                  for name, raw in body.items() if name not in _ENTRY_META}
        entries[key] = Entry(kind, key, body.get("name", key), values, body.get("notes", ""))
    return entries


@lru_cache(maxsize=None)
def _load(kind: str) -> dict[str, Entry]:
    path = HERE / f"{kind}s.toml"
    return parse(tomllib.loads(path.read_text()), kind, path.name)


def kinds() -> list[str]:
    return sorted(p.stem[:-1] for p in HERE.glob("*s.toml"))


def keys(kind: str) -> list[str]:
    return sorted(_load(kind))


def nearest(key: str, valid: list[str]) -> str | None:
    """The valid key a reader most likely meant: the one it starts, else the closest spelling."""
    starts = [k for k in valid if k.startswith(key)]
    if len(starts) >= 1:
        return sorted(starts, key=len)[0]
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    return close[0] if close else None


def entry(kind: str, key: str) -> Entry:
    table = _load(kind)
    if key not in table:
        hint = nearest(key, sorted(table))
        did = f"did you mean {hint!r}? " if hint else ""
        raise CatalogKeyError(f"unknown {kind} {key!r}; {did}valid: {', '.join(sorted(table))}")
    return table[key]


def looks_like_path(value: str) -> bool:
    return "/" in value or value.endswith((".json", ".toml"))


def resolve(kind: str, value: str) -> Entry:
    """A catalog key, or for a model or an accelerator the path of a file that describes one (a Hugging
    Face config.json; a spec file in the catalog's schema), read offline into an Entry."""
    if not looks_like_path(value):
        return entry(kind, value)
    path = Path(value).expanduser()
    if not path.is_file():
        raise CatalogFileError(f"no such file {value!r} (a {kind} is a catalog key or a file)")
    loader = _FILE_LOADERS.get(kind)
    if loader is None:
        raise CatalogFileError(f"a {kind} is a catalog key, not a file: {value!r}")
    return loader(path)


def _model_from_file(path: Path) -> Entry:
    from utils.hf_config import model_entry  # imported late: only a file path needs it
    return model_entry(path)


def _accelerator_from_file(path: Path) -> Entry:
    from utils.catalog.specfile import accelerator_entry
    return accelerator_entry(path)


_FILE_LOADERS = {"model": _model_from_file, "accelerator": _accelerator_from_file}


def accelerator(key: str) -> Entry:
    return entry("accelerator", key)


def interconnect(key: str) -> Entry:
    return entry("interconnect", key)


def model(key: str) -> Entry:
    return entry("model", key)


def price(key: str) -> Entry:
    return entry("price", key)


def run(key: str) -> Entry:
    return entry("run", key)


def sources(kind: str) -> dict[str, Source]:
    """Every source cited by a kind's values, by id."""
    return {v.source.id: v.source for e in _load(kind).values() for v in e.values.values()}
