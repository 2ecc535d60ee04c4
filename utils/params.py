"""A chapter's parameters: their spec (name, default, unit, meaning, check, source) and the checks.

Every chain module in utils/chains/ lists its parameters as `Param`s. The chapter's `parameters` cell
holds the same names with the defaults as plain literals (a test holds them together), the re-derive
command parses `--set name=value` against the spec, and `Param.check` turns a raw value into what the
chain uses: a float, an int, or a catalog Entry for a key (a model also takes a config.json path).

A ParameterError's message is one line that names the parameter, the rule and the value; the re-derive
command prints exactly that line and exits 2.
"""
from __future__ import annotations

import math
import numbers
import sys
from dataclasses import dataclass

from utils import catalog


class ParameterError(ValueError):
    pass


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
    try:
        return catalog.resolve(kind, v)
    except (catalog.CatalogKeyError, catalog.CatalogFileError) as e:
        raise ParameterError(f"{name}: {e}") from None


# The checks a Param may name. Catalog kinds ("model", "accelerator", ...) are checked by `key`.
CHECKS = {
    "positive": positive, "non_negative": non_negative, "fraction": fraction, "share": share,
    "whole": whole, "text": None, "bool": None,
}


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

    def __post_init__(self):
        if self.check not in CHECKS and self.check != "choice" and self.check not in catalog.kinds():
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
        """The checked value the chain uses: a number, a bool, a str, or a catalog Entry for a key."""
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

    def defaults(self) -> dict[str, object]:
        return {p.name: p.default for p in self.parameters}

    def check(self, **values) -> Inputs:
        """The parameters, defaults filled in and each value checked; bad input raises ParameterError with one
        line that names the parameter (and, for a conflict, why)."""
        spec = {p.name: p for p in self.parameters}
        for name in values:
            if name in self.refused:
                raise ParameterError(f"{self.slug}: {name} cannot be set: {self.refused[name]}")
            if name not in spec:
                hint = catalog.nearest(name, list(spec))
                did = f"did you mean {hint!r}? " if hint else ""
                raise ParameterError(f"{self.slug} has no parameter {name!r}; {did}parameters: {', '.join(spec)}")
        out = Inputs({name: p.check_value(values.get(name, p.default)) for name, p in spec.items()})
        if self.validate is not None:
            self.validate(out)
        return out

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

    def extract(self, computed) -> dict:
        """The headline results from compute()'s output, each converted to its Result unit."""
        out = {}
        for r in self.results:
            v = computed[r.key]
            out[r.name] = v.to(r.unit) if hasattr(v, "units") else v
        return out

    def derive(self, **values) -> dict:
        """{result name: pint Quantity}, in the page's order."""
        return self.extract(self.compute(self.check(**values)))
