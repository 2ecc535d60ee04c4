"""The catalog's entries and their loading: the schema (Source, Value, Entry), the TOML tables beside this
module, and look-up by key. utils/catalog/__init__.py says what the data is; the loaders of a reader's own
files (hf_config, specfile) build Entries with this module's parse, so they import this, never the package."""
from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from utils.units import Q_

HERE = Path(__file__).parent
KINDS = ("spec", "market", "assumption", "measured", "measured-by-others")
ENTRY_META = {"name", "source", "notes", "kind"}


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
                  for name, raw in body.items() if name not in ENTRY_META}
        entries[key] = Entry(kind, key, body.get("name", key), values, body.get("notes", ""))
    return entries


@lru_cache(maxsize=None)
def load_kind(kind: str) -> dict[str, Entry]:
    path = HERE / f"{kind}s.toml"
    return parse(tomllib.loads(path.read_text()), kind, path.name)


def kinds() -> list[str]:
    return sorted(p.stem[:-1] for p in HERE.glob("*s.toml"))


def keys(kind: str) -> list[str]:
    return sorted(load_kind(kind))


def nearest(key: str, valid: list[str]) -> str | None:
    """The valid key a reader most likely meant: the one it starts, else the closest spelling."""
    starts = [k for k in valid if k.startswith(key)]
    if len(starts) >= 1:
        return sorted(starts, key=len)[0]
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    return close[0] if close else None


def entry(kind: str, key) -> Entry:
    """The catalog entry of `kind` under `key`; an Entry passes through, so a caller need not ask which it holds."""
    if isinstance(key, Entry):
        return key
    table = load_kind(kind)
    if key not in table:
        hint = nearest(key, sorted(table))
        did = f"did you mean {hint!r}? " if hint else ""
        raise CatalogKeyError(f"unknown {kind} {key!r}; {did}valid: {', '.join(sorted(table))}")
    return table[key]


def looks_like_path(value: str) -> bool:
    return "/" in value or value.endswith((".json", ".toml"))


