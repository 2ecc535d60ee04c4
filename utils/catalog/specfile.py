"""A reader's own accelerator, from a spec file in the catalog's schema: `gpu=path/to/my-gpu.toml`.

The file holds `[sources.<id>]` tables (title, url, read) and exactly one `[accelerator.<key>]` table,
each value with its unit, kind and source, as in utils/catalog/accelerators.toml (book/add-your-own.md
shows one). It is read offline and checked like the catalog itself; a chain that needs a value the
file lacks stops with one line naming it.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

from utils.catalog.entries import CatalogFileError, Entry, parse

# What every chain that takes a GPU reads; others (sm_count, l2_cache, tdp, ...) are asked for by name.
REQUIRED = ("bf16_dense", "hbm_capacity", "hbm_bandwidth")


def accelerator_entry(path: Path) -> Entry:
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise CatalogFileError(f"{path.name} is not valid TOML: {e}") from None
    try:
        entries = parse(data, "accelerator", path.name)
    except ValueError as e:
        raise CatalogFileError(str(e)) from None
    if len(entries) != 1:
        raise CatalogFileError(f"{path.name} must hold exactly one [accelerator.<key>] table, "
                               f"found {len(entries)}")
    (entry,) = entries.values()
    missing = [f for f in REQUIRED if f not in entry]
    if missing:
        raise CatalogFileError(f"{path.name}: accelerator {entry.key!r} lacks {', '.join(missing)}")
    return entry
