"""The book's one catalog: hardware, interconnects, models and prices, each value with its provenance.

Data lives in the TOML files beside this module, one per kind (accelerators.toml -> kind "accelerator").
Each file has a `[sources.<id>]` table per document (title, url, read = the ISO date it was read) and a
`[<kind>.<key>]` table per entry. An entry names a default `source` for its values; each value is either
a bare literal (a config number, inheriting the entry's source) or a table:

    bf16_dense = { value = 989.4e12, unit = "FLOP/s", source = "h100-datasheet",
                   kind = "spec", note = "the 1,979 TFLOP/s headline is with 2:4 sparsity",
                   alternatives = [{ value = ..., unit = ..., source = ..., note = ... }] }

`kind` is spec (a vendor or paper figure), market (a price read off a vendor's or a market's list), assumption
(a judgement the book makes), measured, or measured-by-others (a figure someone else measured and published, such
as a rate beside the datasheet peak it is read against).
Where sources disagree the primary value is the one the book uses and `alternatives` keeps the rest;
`note` says why. The schema is checked on load, so a value without a source or a date cannot exist.
"""
from __future__ import annotations

from pathlib import Path

from utils.catalog.entries import (  # noqa: F401 - the catalog's public names
    HERE,
    KINDS,
    CatalogFileError,
    CatalogKeyError,
    Entry,
    Source,
    Value,
    entry,
    keys,
    kinds,
    load_kind,
    looks_like_path,
    nearest,
    parse,
)


def resolve(kind: str, value: str) -> Entry:
    """A catalog key, or for a model or an accelerator the path of a file that describes one (a Hugging
    Face config.json; a spec file in the catalog's schema), read offline into an Entry. An Entry passes through."""
    if isinstance(value, Entry) or not looks_like_path(value):
        return entry(kind, value)
    path = Path(value).expanduser()
    if not path.is_file():
        raise CatalogFileError(f"no such file {value!r} (a {kind} is a catalog key or a file)")
    loader = _FILE_LOADERS.get(kind)
    if loader is None:
        raise CatalogFileError(f"a {kind} is a catalog key, not a file: {value!r}")
    return loader(path)


def _model_from_file(path: Path) -> Entry:
    from utils.catalog.hf_config import model_entry  # imported late: only a file path needs it (and utils.models)
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
    return {v.source.id: v.source for e in load_kind(kind).values() for v in e.values.values()}
