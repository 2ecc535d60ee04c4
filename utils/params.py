"""Checks on a chapter's parameters, run in the chapter itself right after its parameters cell.

A ParameterError's message is one line that names the parameter, the rule and the value; the re-derive
command prints exactly that line and exits 2. Catalog keys are checked the same way (CatalogKeyError
lists the valid keys).
"""
from __future__ import annotations

import math
import numbers

from utils import catalog


class ParameterError(ValueError):
    pass


def _number(name: str, v) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ParameterError(f"{name} must be a number, got {v!r}")
    if not math.isfinite(v):
        raise ParameterError(f"{name} must be finite, got {v!r}")
    return float(v)


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
    """A catalog key of `kind`; returns the entry (only one value may be passed)."""
    (name, v), = values.items()
    if not isinstance(v, str):
        raise ParameterError(f"{name} must be a {kind} key (a string), got {v!r}")
    try:
        return catalog.entry(kind, v)
    except catalog.CatalogKeyError as e:
        raise ParameterError(f"{name}: {e}") from None
