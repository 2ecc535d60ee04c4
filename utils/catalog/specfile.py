"""A reader's own accelerator, from a spec file in the catalog's schema: `gpu=path/to/my-gpu.toml`.

The file holds `[sources.<id>]` tables (title, url, read) and exactly one `[accelerator.<key>]` table,
each value with its unit, kind and source, as in utils/catalog/accelerators.toml (book/add-your-own.md
shows one). It is read offline and checked like the catalog itself, and each value like a parameter: a
number where the catalog holds a number, finite and > 0, in a unit of the catalog's dimension for that
field (a bandwidth in B/s, a capacity in bytes). Every fault is a CatalogFileError of one line naming the
file, the field and what was expected; a chain that needs a value the file lacks stops with one line too.
"""
from __future__ import annotations

import math
import tomllib
from pathlib import Path

from utils.catalog.entries import ENTRY_META, CatalogFileError, Entry, load_kind, parse
from utils.units import Q_

# What every chain that takes a GPU reads; others (sm_count, l2_cache, tdp, ...) are asked for by name.
REQUIRED = ("bf16_dense", "hbm_capacity", "hbm_bandwidth")


def _text(path: Path) -> str:
    """The file's text; a file that is not text (a binary, a checkpoint given by mistake) is refused."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise CatalogFileError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        if b"\0" in raw:
            raise UnicodeDecodeError("utf-8", raw, raw.index(b"\0"), raw.index(b"\0") + 1, "a NUL byte")
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise CatalogFileError(f"{path.name} is not a text file (expected {_WHAT[path.suffix == '.json']})") from None


_WHAT = {False: "a TOML spec file", True: "a config.json"}


def positive_number(v) -> bool:
    """A real number (not a bool) that is finite and > 0 once a float: what every catalog quantity is."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(float(v)) and v > 0
    except OverflowError:                       # an integer past what a float holds
        return False


def _check_value(where: str, raw, expected) -> None:
    """One value of the reader's accelerator against the catalog's value of the same name (`expected`,
    None for a field the catalog does not have)."""
    value, unit = (raw.get("value"), raw.get("unit", "")) if isinstance(raw, dict) else (raw, "")
    if isinstance(expected, str):
        if not isinstance(value, str):
            raise CatalogFileError(f"{where} must be text, got {value!r}")
        return
    if not positive_number(value):
        raise CatalogFileError(f"{where} must be a finite number > 0, got {value!r}")
    want = "no unit (a count)" if expected is not None and expected.unitless else \
        f"a unit like {expected.units:~C}" if expected is not None else "a unit"
    try:
        got = Q_(1, unit) if isinstance(unit, str) else None
    except Exception:                           # pint's parse errors are of several kinds
        got = None
    if got is None:
        raise CatalogFileError(f"{where} has unit {unit!r}, which is not a unit; expected {want}")
    if expected is not None and got.dimensionality != expected.dimensionality:
        shown = repr(unit) if unit else "no unit"
        raise CatalogFileError(f"{where} has {shown} ({got.dimensionality}); expected {want}")


def _check(data: dict, path: Path) -> None:
    """The accelerator tables' shape and every value, before the catalog's parser builds the Entry."""
    tables = data.get("accelerator", {})
    if not isinstance(tables, dict):
        raise CatalogFileError(f"{path.name}: accelerator must be a table of [accelerator.<key>] tables, "
                               f"got {tables!r}")
    catalog = {}
    for known in load_kind("accelerator").values():
        for name, v in known.values.items():
            catalog.setdefault(name, v.q)
    for key, body in tables.items():
        if not isinstance(body, dict):
            raise CatalogFileError(f"{path.name}: accelerator.{key} must be a table, got {body!r}")
        if not isinstance(body.get("name", key), str):
            raise CatalogFileError(f"{path.name}: accelerator.{key}.name must be text, got {body['name']!r}")
        for name, raw in body.items():
            if name in ENTRY_META:
                continue
            where = f"{path.name}: accelerator.{key}.{name}"
            alternatives = raw.get("alternatives", []) if isinstance(raw, dict) else []
            if not isinstance(alternatives, list) or not all(isinstance(a, dict) for a in alternatives):
                raise CatalogFileError(f"{where}: alternatives must be a list of tables")
            for one in [raw, *alternatives]:
                _check_value(where, one, catalog.get(name))


def accelerator_entry(path: Path) -> Entry:
    try:
        data = tomllib.loads(_text(path))
    except tomllib.TOMLDecodeError as e:
        raise CatalogFileError(f"{path.name} is not valid TOML: {e}") from None
    _check(data, path)
    try:
        entries = parse(data, "accelerator", path.name)
    except (ValueError, TypeError, AttributeError) as e:    # a malformed [sources] table, a bad kind
        raise CatalogFileError(str(e).splitlines()[0]) from None
    if len(entries) != 1:
        raise CatalogFileError(f"{path.name} must hold exactly one [accelerator.<key>] table, "
                               f"found {len(entries)}")
    (entry,) = entries.values()
    missing = [f for f in REQUIRED if f not in entry]
    if missing:
        raise CatalogFileError(f"{path.name}: accelerator {entry.key!r} lacks {', '.join(missing)}")
    return entry
