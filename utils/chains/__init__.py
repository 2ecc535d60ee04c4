"""The book's Python interface: every chapter's chain, by slug.

    from utils import chains
    chains.derive("fleet-size", gpu="b200", mfu=0.35)   # {name: pint Quantity}, in the page's order
    chains.parameters("fleet-size")                       # the spec: utils.params.Param, in order
    chains.claims("six-nd")                               # the claims, judged on their own inputs

One module per chapter, `utils/chains/<slug with underscores>.py`, holds:
- PARAMETERS: a tuple of utils.params.Param (name, default, meaning, unit, check, source);
- RESULTS: a tuple of utils.params.Result (name, unit, label; `of` names the key of compute's output it reads);
- compute(p): the chain as a pure function of the checked inputs `p` (attributes by parameter name;
  catalog keys arrive as catalog Entries), returning a utils.chain.Chain;
- claims(): the claims from the source documents, judged on the claims' own inputs (utils.verdicts);
- validate(p) (optional): checks across parameters; REFUSED (optional): {name: why} for inputs a reader may
  reach for that would mix architectures, e.g. six-nd's n_params, which must come from a model;
- SPEC = utils.params.Spec(slug, PARAMETERS, RESULTS, compute, validate=..., refused=...), its last line.

This module finds the chain modules and asks their SPEC; no chain module imports it back (one that needs
another chapter's chain imports that module and asks its SPEC). No I/O, no plotting, no torch and no
simulation the results do not need, so a re-derivation is a fraction of a second.
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from utils.catalog import nearest
from utils.params import Inputs, Param, ParameterError, Result, Spec  # noqa: F401 - Inputs, Result: the public names


def slugs() -> list[str]:
    """Every chapter that has a chain module, by slug."""
    return sorted(m.name.replace("_", "-") for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def module(slug: str) -> ModuleType:
    if not isinstance(slug, str) or slug not in slugs():
        hint = nearest(str(slug), slugs())
        did = f"did you mean {hint!r}? " if hint else ""
        raise ParameterError(f"unknown chapter {slug!r}; {did}chapters: {', '.join(slugs())}")
    return importlib.import_module(f"{__name__}.{slug.replace('-', '_')}")


def spec(slug: str) -> Spec:
    return module(slug).SPEC


def parameters(slug: str) -> tuple[Param, ...]:
    return spec(slug).parameters


def defaults(slug: str) -> dict[str, object]:
    return spec(slug).defaults()


def results(slug: str) -> tuple[Result, ...]:
    return spec(slug).results


def check(slug: str, **values) -> Inputs:
    """The chapter's parameters, defaults filled in and each value checked; bad input raises
    ParameterError with one line that names the parameter (and, for a conflict, why)."""
    return spec(slug).check(**values)


def inputs(slug: str, namespace: dict) -> Inputs:
    """In a chapter: the parameters cell's values (read from the notebook's namespace), checked."""
    return spec(slug).inputs(namespace)


def extract(slug: str, computed) -> dict:
    """The headline results from compute()'s output, each converted to its Result unit."""
    return spec(slug).extract(computed)


def derive(slug: str, **values) -> dict:
    """Re-derive a chapter: {result name: pint Quantity}, in the page's order."""
    return spec(slug).derive(**values)


def claims(slug: str) -> list:
    return list(module(slug).claims())
