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

from utils.catalog.entries import ENTRY_META, CatalogFileError, CatalogKeyError, Entry, Source, Value, load_kind, parse
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


# --- a reader's own model: a spec file, or loose numbers (--set n_params=175e9) -------------------------------

class MissingField(CatalogKeyError):
    """A chain asked a reader's model for a field the reader did not give. The re-derive path leaves out the
    results that need it and names the field; anywhere else it is one line, like an unknown key."""

    def __init__(self, field: str):
        super().__init__(f"the reader's model has no {field}: set it, or model= (a catalog key or a file)")
        self.field = field


# The names a reader sets (the ones the chapters use) -> the catalog's field names, and what each must be.
# n_params and n_active are the reader's own figures (a paper's count), held where the catalog keeps the published
# ones; d_attn (query heads x head dim) and kv_bytes_per_token are what utils.models derives when it can.
READER_NAMES = {"n_params": "params_total", "n_active": "params_active", "n_experts": "n_routed_experts",
                "dtype": "weights_dtype"}
_COUNTS = ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab_size", "n_routed_experts",
           "n_experts_per_token", "moe_d_ff", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
           "d_attn")
_MAY_BE_ZERO = ("n_shared_experts", "n_dense_layers", "q_lora_rank")
_UNITS = {"params_total": "parameter", "params_active": "parameter", "max_context": "token",
          "kv_bytes_per_token": "byte/token"}
_TEXT = ("weights_dtype",)
_FLAGS = ("tied_embeddings",)
MODEL_FIELDS = (*_COUNTS, *_MAY_BE_ZERO, *_UNITS, *_TEXT, *_FLAGS)
LOOSE_NAMES = tuple(sorted({*MODEL_FIELDS, *READER_NAMES} - set(READER_NAMES.values())))
_LARGEST = 2 ** 53                      # the largest whole number a float holds exactly
READER_SOURCE = Source("reader", "the reader's own figures", "", "as given")
_REGISTRY: dict[str, "ReaderModel"] = {}


def reader_name(field: str) -> str:
    """The name a reader sets for a catalog field (params_total -> n_params)."""
    return next((k for k, v in READER_NAMES.items() if v == field), field)


class ReaderModel(Entry):
    """A model of the fields the reader gave, and nothing else: no default model fills a gap. A chain that asks
    for a field it lacks gets MissingField, or, while utils.models probes which results need what, the probe's
    value (recorded in `asked`) - a value no printed result is allowed to depend on."""

    is_reader_model = True

    def __init__(self, key: str, name: str, values: dict, notes: str = "", probe: dict | None = None):
        super().__init__("model", key, name, values, notes)
        object.__setattr__(self, "probe", probe)
        object.__setattr__(self, "asked", set())
        object.__setattr__(self, "_strict", [0])
        _REGISTRY[key] = self             # a chain hands p.model.key to another chapter's check

    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other

    def probed(self, probe: dict, tag: str) -> "ReaderModel":
        """The same given fields, the gaps answered from `probe` (a key of its own, so no cache mixes two)."""
        return ReaderModel(f"{self.key} [{tag}]", self.name, self.values, self.notes, probe)

    def given(self) -> dict:
        return {reader_name(k): v.q for k, v in self.values.items()}

    def missing(self, field: str) -> Value:
        """A field the reader did not give: the probe's value (recorded), or MissingField."""
        if self.probe is None or self._strict[0] or field not in self.probe:
            raise MissingField(reader_name(field))
        self.asked.add(field)
        return Value(field, self.probe[field], READER_SOURCE, "assumption", "a probe, never printed")

    def strict(self):
        """Within: a missing field raises MissingField even while probing (utils.models derives d_attn from the
        heads only when the reader gave the heads)."""
        import contextlib

        @contextlib.contextmanager
        def ctx():
            self._strict[0] += 1
            try:
                yield
            finally:
                self._strict[0] -= 1
        return ctx()

    def __getitem__(self, field_name: str) -> Value:
        return self.values[field_name] if field_name in self.values else self.missing(field_name)


def reader_model_of(key: str) -> "ReaderModel | None":
    return _REGISTRY.get(key)


def _field_value(where: str, field: str, v):
    """One field of a reader's model, checked like a parameter: a count a whole number (>= 1, or >= 0 where zero
    means none), a figure a finite number > 0, a dtype text, a flag true or false."""
    if field in _TEXT:
        if not isinstance(v, str) or not v.strip():
            raise CatalogFileError(f"{where} must be a dtype name (bfloat16, fp8, ...), got {v!r}")
        return v.strip()
    if field in _FLAGS:
        if not isinstance(v, bool):
            raise CatalogFileError(f"{where} must be true or false, got {v!r}")
        return v
    if field in _UNITS:
        if not positive_number(v) or float(v) > _LARGEST:
            raise CatalogFileError(f"{where} must be a finite number > 0 and at most 2**53, got {v!r}")
        return Q_(float(v), _UNITS[field])
    low = 0 if field in _MAY_BE_ZERO else 1
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not positive_number(v + 1) \
            or float(v) != int(v) or not low <= v <= _LARGEST:
        raise CatalogFileError(f"{where} must be a whole number >= {low} (at most 2**53), got {v!r}")
    return Q_(int(v), "")


def _consistent(values: dict, origin: str) -> None:
    """Fields that contradict each other are refused (each alone would pass)."""
    n = {k: (v.q.m if hasattr(v.q, "m") else v.q) for k, v in values.items()}
    def bad(why):
        raise CatalogFileError(f"{origin}: {why}")
    if "n_kv_heads" in n and "n_heads" in n and (n["n_kv_heads"] > n["n_heads"] or n["n_heads"] % n["n_kv_heads"]):
        bad(f"n_kv_heads {n['n_kv_heads']} must divide n_heads {n['n_heads']}")
    if "params_active" in n and "params_total" in n and n["params_active"] > n["params_total"]:
        bad(f"n_active {n['params_active']:.4g} is more than n_params {n['params_total']:.4g}")
    if "n_experts_per_token" in n and "n_routed_experts" in n and n["n_experts_per_token"] > n["n_routed_experts"]:
        bad(f"n_experts_per_token {n['n_experts_per_token']} is more than n_experts {n['n_routed_experts']}")
    if "n_dense_layers" in n and "n_layers" in n and n["n_dense_layers"] >= n["n_layers"]:
        bad(f"n_dense_layers {n['n_dense_layers']} leaves no MoE layer of n_layers {n['n_layers']}")


def _describe(values: dict) -> str:
    def one(k, q):
        m = q.m if hasattr(q, "m") else q
        return f"{reader_name(k)}={m:.4g}" if isinstance(m, (int, float)) and not isinstance(m, bool) else \
            f"{reader_name(k)}={m}"
    return ", ".join(one(k, v.q) for k, v in sorted(values.items()))


def loose_model(fields: dict) -> ReaderModel:
    """The model of a reader's loose numbers ({"n_params": 175e9, "n_layers": "96"}: a value may be the text
    of a --set), each checked; the model is those fields and nothing more."""
    import ast
    values = {}
    for name, raw in fields.items():
        field = READER_NAMES.get(name, name)
        if field not in MODEL_FIELDS:
            raise CatalogFileError(f"{name} is not a model field; model fields: {', '.join(LOOSE_NAMES)}")
        v = raw
        if isinstance(raw, str) and field not in _TEXT:
            try:
                v = ast.literal_eval(raw.strip())
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                v = raw
        values[field] = Value(field, _field_value(name, field, v), READER_SOURCE, "spec", "given by the reader")
    _consistent(values, "the model's fields")
    text = _describe(values)
    return ReaderModel(f"model({text})", f"the reader's model ({text})", values, notes="loose fields")


def model_entry(path: Path) -> ReaderModel:
    """A reader's model from a spec file in the catalog's schema: [sources.<id>] tables and one [model.<key>]
    table, its values the catalog's fields (or the names a reader sets: n_params, n_active, d_attn,
    kv_bytes_per_token), each with its source. Like loose fields, it is the whole model: a result that needs a
    field the file lacks is left out and the field named."""
    try:
        data = tomllib.loads(_text(path))
    except tomllib.TOMLDecodeError as e:
        raise CatalogFileError(f"{path.name} is not valid TOML: {e}") from None
    tables = data.get("model", {})
    if not isinstance(tables, dict) or len(tables) != 1 or not all(isinstance(b, dict) for b in tables.values()):
        raise CatalogFileError(f"{path.name} must hold exactly one [model.<key>] table")
    (key, body), = tables.items()
    renamed = {READER_NAMES.get(k, k): v for k, v in body.items()}
    for name, raw in renamed.items():
        if name in ENTRY_META:
            continue
        if name not in MODEL_FIELDS:
            raise CatalogFileError(f"{path.name}: model.{key}.{reader_name(name)} is not a model field; "
                                   f"model fields: {', '.join(LOOSE_NAMES)}")
        value = raw.get("value") if isinstance(raw, dict) else raw
        unit = raw.get("unit", "") if isinstance(raw, dict) else ""
        where = f"{path.name}: model.{key}.{reader_name(name)}"
        if name in _UNITS and isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                got = Q_(value, unit) if isinstance(unit, str) else None
                value = float(got.to(_UNITS[name]).m) if got is not None else None
            except Exception:                   # pint's parse and dimension errors are of several kinds
                raise CatalogFileError(f"{where} has unit {unit!r}; expected a unit like {_UNITS[name]}") from None
        elif unit:
            raise CatalogFileError(f"{where} has unit {unit!r}; expected no unit")
        _field_value(where, name, value)
    try:
        entry = parse({**data, "model": {key: {k: v for k, v in renamed.items()}}}, "model", path.name)[key]
    except (ValueError, TypeError, AttributeError) as e:    # a malformed [sources] table, a bad kind
        raise CatalogFileError(str(e).splitlines()[0]) from None
    values = {k: Value(k, _field_value(k, k, v.q.to(_UNITS[k]).m if k in _UNITS else
                                       (v.q.m if hasattr(v.q, "m") else v.q)), v.source, v.kind, v.note)
              for k, v in entry.values.items()}
    _consistent(values, path.name)
    return ReaderModel(f"{path} ({_describe(values)})", entry.name, values, notes=entry.notes)
