"""A chapter's parameters: their spec (name, default, unit, meaning, check, source) and the checks.

Every chain module in utils/chains/ lists its parameters as `Param`s. The chapter's `parameters` cell
holds the same names with the defaults as plain literals (a test holds them together), the re-derive
command parses `--set name=value` against the spec, and `Param.check` turns a raw value into what the
chain uses: a float, an int, or a catalog Entry for a key (a model also takes a config.json path).

A ParameterError's message is one line that names the parameter, the rule and the value; the re-derive
command prints exactly that line and exits 2.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import sys
from dataclasses import dataclass

from utils import catalog
from utils.catalog.specfile import LOOSE_NAMES, MissingField, loose_model, reader_model_of


class ParameterError(ValueError):
    pass


# The sizes a number may have: a chain multiplies and divides a few inputs, and each product or quotient of
# numbers in this range stays a float (no overflow to inf, no underflow to 0 that is then divided by).
SMALLEST, LARGEST = 1e-30, 1e30


def _number(name: str, v) -> float:
    """The value as a float, or one line: every chain computes in floats, so a number must be one a float
    holds (an integer of 400 digits is not, and would overflow deep in a chain)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ParameterError(f"{name} must be a number, got {v!r}")
    try:
        f = float(v)
    except OverflowError:
        raise ParameterError(f"{name} must be at most {sys.float_info.max:.3g} (what a float holds), "
                             f"got an integer of {int(int(v).bit_length() * math.log10(2)) + 1} digits") from None
    if not math.isfinite(f):
        raise ParameterError(f"{name} must be finite, got {v!r}")
    if f and not SMALLEST <= abs(f) <= LARGEST:
        raise ParameterError(f"{name} must be 0 or between {SMALLEST:g} and {LARGEST:g} in size, got {v!r}")
    return f


def positive(**values) -> None:
    """Each value > 0 (counts, sizes, prices, durations, anything that is divided by)."""
    for name, v in values.items():
        if _number(name, v) <= 0:
            raise ParameterError(f"{name} must be > 0, got {v!r}")


def non_negative(**values) -> None:
    for name, v in values.items():
        if _number(name, v) < 0:
            raise ParameterError(f"{name} must be >= 0, got {v!r}")


def fraction(**values) -> None:
    """Each value in (0, 1]: a utilisation, an MFU, a hit rate that is divided by."""
    for name, v in values.items():
        if not 0 < _number(name, v) <= 1:
            raise ParameterError(f"{name} must be a fraction in (0, 1], got {v!r}")


def share(**values) -> None:
    """Each value in [0, 1): a share that may be zero but never all (a hit rate, a loss, a fraction
    of tokens that is subtracted from one and divided by)."""
    for name, v in values.items():
        if not 0 <= _number(name, v) < 1:
            raise ParameterError(f"{name} must be a fraction in [0, 1), got {v!r}")


def at_least(minimum: float, **values) -> None:
    for name, v in values.items():
        if _number(name, v) < minimum:
            raise ParameterError(f"{name} must be >= {minimum}, got {v!r}")


def whole(**values) -> None:
    """Each value a whole number >= 1 (GPUs per node, layers, samples)."""
    for name, v in values.items():
        if _number(name, v) < 1 or float(v) != int(v):
            raise ParameterError(f"{name} must be a whole number >= 1, got {v!r}")


def key(kind: str, **values) -> catalog.Entry:
    """A catalog key of `kind`; returns the entry (only one value may be passed). A model or an
    accelerator may also be the path of a file (a Hugging Face config.json, a spec file)."""
    (name, v), = values.items()
    if not isinstance(v, str):
        raise ParameterError(f"{name} must be a {kind} key (a string), got {v!r}")
    if kind == "model" and (reader := reader_model_of(v)) is not None:
        return reader                     # a reader's model, handed on by its key (one chapter to another)
    try:
        return catalog.resolve(kind, v)
    except (catalog.CatalogKeyError, catalog.CatalogFileError) as e:
        raise ParameterError(f"{name}: {e}") from None


# The checks a Param may name. Catalog kinds ("model", "accelerator", ...) are checked by `key`.
CHECKS = {
    "positive": positive, "non_negative": non_negative, "fraction": fraction, "share": share,
    "whole": whole, "text": None, "bool": None,
}


# --- a table: a list of rows, each a {column: value} record ----------------------------------------------

MAX_ROWS = 1000      # a table's rows are looped over (DRF's loop, a usage history): bounded, so no input runs long


@dataclass(frozen=True)
class Column:
    """One column of a table parameter: `check` is "text" or one of the number CHECKS. The name "*" stands for
    any other column (a resource a reader names), each checked the same way."""
    name: str
    check: str = "non_negative"
    meaning: str = ""


def _table_value(name: str, value):
    """A table given as rows, as JSON text, or as the path of a .json file: the rows (a list)."""
    if isinstance(value, str):
        text = value.strip()
        if not text.startswith(("[", "{")):
            if not text.endswith(".json") or not os.path.isfile(text):
                raise ParameterError(f"{name} must be a table: JSON rows ([{{...}}, ...]) or a .json file, got {value!r}")
            try:
                with open(text, encoding="utf-8") as fh:
                    text = fh.read()
            except (OSError, UnicodeDecodeError) as e:
                raise ParameterError(f"{name}: cannot read {value!r} as text ({type(e).__name__})") from None
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as e:
            raise ParameterError(f"{name}: not JSON ({str(e).splitlines()[0][:80]})") from None
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise ParameterError(f"{name} must be a table (a list of rows), got {type(value).__name__}")
    return value


def table(name: str, value, columns: tuple, min_rows: int = 1) -> tuple:
    """The rows checked against the columns: each row a {column: value} with every named column present, no
    unknown column (unless a "*" column admits it), texts non-empty strings, numbers by their checks. Returns a
    tuple of dicts (numbers as floats, a "whole" column as ints)."""
    rows = _table_value(name, value)
    if not min_rows <= len(rows) <= MAX_ROWS:
        raise ParameterError(f"{name} must have {min_rows} to {MAX_ROWS} rows, got {len(rows)}")
    named = {c.name: c for c in columns if c.name != "*"}
    other = next((c for c in columns if c.name == "*"), None)
    out = []
    for i, row in enumerate(rows):
        where = f"{name}[{i}]"
        if not isinstance(row, dict):
            raise ParameterError(f"{where} must be a row {{column: value}}, got {row!r}"[:200])
        missing = [c for c in named if c not in row]
        if missing:
            raise ParameterError(f"{where} lacks column {missing[0]!r} (columns: {', '.join(named)})")
        checked = {}
        for col, v in row.items():
            c = named.get(col, other)
            if c is None or not isinstance(col, str) or not col:
                raise ParameterError(f"{where} has unknown column {col!r} (columns: {', '.join(named)})")
            if c.check == "text":
                if not isinstance(v, str) or not v.strip():
                    raise ParameterError(f"{where}.{col} must be a non-empty string, got {v!r}"[:200])
                checked[col] = v.strip()
                continue
            CHECKS[c.check](**{f"{where}.{col}": v})
            checked[col] = int(v) if c.check == "whole" else float(v)
        out.append(checked)
    if other is not None:
        shape = [sorted(set(r) - set(named)) for r in out]
        if any(s != shape[0] for s in shape):
            raise ParameterError(f"{name}: every row must name the same columns, got {shape[0]} and "
                                 f"{next(s for s in shape if s != shape[0])}")
    return tuple(out)


@dataclass(frozen=True)
class Param:
    """One input of a chain.

    default: a plain literal (float for anything a reader may set to 1e9, int for counts, str for
    catalog keys), exactly what the chapter's parameters cell holds. unit: the unit the number is in
    ("" for counts and fractions; catalog keys have none). check: one of CHECKS, a catalog kind, or
    "choice" with `choices`. source: where the default comes from (a catalog entry, a document and the
    date it was read, or "this book's assumption")."""
    name: str
    default: object
    meaning: str
    unit: str = ""
    check: str = "positive"
    source: str = ""
    choices: tuple = ()
    columns: tuple = ()       # check="table": its Columns

    def __post_init__(self):
        if self.check == "table" and not self.columns:
            raise ValueError(f"parameter {self.name}: a table needs its columns")
        if self.check not in CHECKS and self.check not in ("choice", "table") and self.check not in catalog.kinds():
            raise ValueError(f"parameter {self.name}: unknown check {self.check!r}")
        if self.check == "choice" and self.default not in self.choices:
            raise ValueError(f"parameter {self.name}: default {self.default!r} is not a choice")

    @property
    def is_key(self) -> bool:
        return self.check in catalog.kinds()

    def coerce(self, value):
        """A value of the default's type: a number stays a number (int defaults take whole floats),
        a bool stays a bool, a string stays a string."""
        d = self.default
        if isinstance(d, bool):
            if not isinstance(value, bool):
                raise ParameterError(f"{self.name} must be True or False, got {value!r}")
            return value
        if isinstance(d, str):
            if not isinstance(value, str):
                raise ParameterError(f"{self.name} must be a string, got {value!r}")
            return value
        _number(self.name, value)
        if isinstance(d, int) and not isinstance(value, int):
            if float(value) != int(value):
                raise ParameterError(f"{self.name} must be a whole number, got {value!r}")
            return int(value)
        return float(value) if isinstance(d, float) else value

    def check_value(self, value):
        """The checked value the chain uses: a number, a bool, a str, a catalog Entry for a key, or a table's rows
        (a tuple of dicts; the table may be given as rows, JSON text or a .json file's path)."""
        if self.check == "table":
            return table(self.name, value, self.columns, min_rows=1 if self.default else 0)
        value = self.coerce(value)
        if self.is_key:
            return key(self.check, **{self.name: value})
        if self.check == "choice":
            if value not in self.choices:
                raise ParameterError(f"{self.name} must be one of {', '.join(map(str, self.choices))}, "
                                     f"got {value!r}")
            return value
        rule = CHECKS[self.check]
        if rule is not None:
            rule(**{self.name: value})
        return value


# --- a chapter's interface -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Result:
    """A headline result: glued under `name`, recorded in `unit`, printed by re-derive with `label`."""
    name: str
    unit: str
    label: str
    of: str = ""              # the key of compute()'s output; defaults to name
    percent: bool = False     # glue as a percentage (for fractions)
    digits: int = 3

    @property
    def key(self) -> str:
        return self.of or self.name


class Inputs(dict):
    """Checked parameters, readable as attributes: p.gpu is a catalog Entry, p.mfu a float."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def replace(self, **changes) -> "Inputs":
        return Inputs({**self, **changes})


class Spec:
    """A chapter's interface, held by its chain module as `SPEC` (the module's last line):

        SPEC = Spec("fleet-size", PARAMETERS, RESULTS, compute, validate=validate, refused=REFUSED)

    - parameters: Params, in the page's order; results: Results, in the page's order;
    - compute(p): the chain as a pure function of the checked inputs;
    - validate(p) (optional): checks across parameters (a conflict, a layout that cannot exist);
    - refused (optional): {name: why} for inputs a reader may reach for that would mix architectures;
    - closed_form: True when the results need no array and no random draw, so compute(p) runs on the standard
      library and pint alone (no numpy): the chapter re-derives in the reader's browser, and
      tests/chains/test_closed_form.py derives it with numpy made unimportable.
    A chain module checks its own claim's inputs with `SPEC.check(...)` and another chapter's with
    `that_module.SPEC.check(...)`, so no chain module needs the registry (utils.chains), which finds them."""

    def __init__(self, slug: str, parameters, results, compute, *, validate=None, refused=None,
                 closed_form: bool = False):
        self.slug = slug
        self.closed_form = closed_form
        self.parameters = tuple(parameters)
        self.results = tuple(results)
        self.compute = compute
        self.validate = validate
        self.refused = dict(refused or {})
        # A model's own field set on its own becomes the model (_loose_model), so refusing it could never fire.
        names = {p.name for p in self.parameters}
        if sum(p.check == "model" for p in self.parameters) == 1 and (
                dead := sorted(n for n in self.refused if n in LOOSE_NAMES and n not in names)):
            raise ValueError(f"{slug}: refused= names {dead}, which a reader's model of loose fields takes; drop them")

    def defaults(self) -> dict[str, object]:
        return {p.name: p.default for p in self.parameters}

    def check(self, **values) -> Inputs:
        """The parameters, defaults filled in and each value checked; bad input raises ParameterError with one
        line that names the parameter (and, for a conflict, why)."""
        spec = {p.name: p for p in self.parameters}
        values = self._loose_model(spec, values)
        for name in values:
            if name in self.refused:
                raise ParameterError(f"{self.slug}: {name} cannot be set: {self.refused[name]}")
            if name not in spec:
                hint = catalog.nearest(name, list(spec))
                did = f"did you mean {hint!r}? " if hint else ""
                raise ParameterError(f"{self.slug} has no parameter {name!r}; {did}parameters: {', '.join(spec)}")
        out = Inputs({name: p.check_value(values.get(name, p.default)) for name, p in spec.items()})
        if self.validate is not None:
            try:
                self.validate(out)
            except MissingField:          # a reader's model lacks what the check reads: checked as it is derived
                pass
        return out

    def _loose_model(self, spec: dict, values: dict) -> dict:
        """A model's fields set one by one (n_params=175e9, n_layers=96) are the model, nothing taken from the
        default: they become model= itself, a model of those fields alone (utils.catalog.specfile)."""
        loose = {n: v for n, v in values.items() if n in LOOSE_NAMES and n not in spec}
        models = [p.name for p in self.parameters if p.check == "model"]
        if not loose or len(models) != 1:
            return values
        if models[0] in values:
            raise ParameterError(f"{self.slug}: set {models[0]}= or the model's fields ({', '.join(loose)}), not "
                                 "both, so no result mixes two models")
        try:
            model = loose_model(loose)
        except catalog.CatalogFileError as e:
            raise ParameterError(f"{self.slug}: {e}") from None
        return {**{n: v for n, v in values.items() if n not in loose}, models[0]: model.key}

    def inputs(self, namespace: dict) -> Inputs:
        """In a chapter: the parameters cell's values (read from the notebook's namespace), checked."""
        missing = [p.name for p in self.parameters if p.name not in namespace]
        if missing:
            raise ParameterError(f"{self.slug}: the parameters cell lacks {', '.join(missing)} (see utils/chains/)")
        return self.check(**{p.name: namespace[p.name] for p in self.parameters})

    def source(self, p: Inputs, name: str) -> str:
        """Where input `name` of the checked inputs `p` comes from: its parameter's source while it holds the
        default, "parameters cell" once a reader has changed it (so a chain never types the default twice)."""
        param = next(q for q in self.parameters if q.name == name)
        value = p[name]
        same = (getattr(value, "key", None) == param.default) if param.is_key else value == param.check_value(param.default)
        return param.source if same else "parameters cell"

    @staticmethod
    def left_out(computed) -> dict[str, str]:
        """{result name: the one line why} for the results a chapter's compute() has no value for at these inputs
        (a detection time when nothing detects): its chain's data["left_out"]. They are left out of the results
        and said, as a reader's model that lacks a field leaves out what needs it (utils.models.derive_with_gaps)."""
        data = getattr(computed, "data", None)
        return data.get("left_out", {}) if isinstance(data, dict) else {}

    def extract(self, computed) -> dict:
        """The headline results from compute()'s output, each converted to its Result unit; those it left out
        (left_out) are absent."""
        out, gaps = {}, self.left_out(computed)
        for r in self.results:
            if r.name in gaps:
                continue
            v = computed[r.key]
            out[r.name] = v.to(r.unit) if hasattr(v, "units") else v
        return out

    def derive_with_gaps(self, p: Inputs) -> tuple[dict, dict]:
        """(results, {left-out result: why}) for checked inputs: a reader's model that lacks a field a result
        needs leaves that result out, with one line naming the field (utils.models.derive_with_gaps)."""
        from utils.models import derive_with_gaps
        return derive_with_gaps(self, p)

    def derive(self, **values) -> dict:
        """{result name: pint Quantity}, in the page's order; a result a reader's model cannot answer is left out."""
        return self.derive_with_gaps(self.check(**values))[0]
