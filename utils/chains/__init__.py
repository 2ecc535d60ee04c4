"""The book's Python interface: every chapter's chain, by slug.

    from utils import chains
    chains.derive("fleet-size", gpu="b200", mfu=0.35)   # {name: pint Quantity}, in the page's order
    chains.parameters("fleet-size")                       # the spec: utils.params.Param, in order
    chains.claims("six-nd")                               # the claims, judged on their own inputs

One module per chapter, `utils/chains/<slug with underscores>.py`, holds:
- PARAMETERS: a tuple of utils.params.Param (name, default, meaning, unit, check, source);
- RESULTS: a tuple of Result (name, unit, label; `of` names the key of compute's output it reads);
- compute(p): the chain as a pure function of the checked inputs `p` (attributes by parameter name;
  catalog keys arrive as catalog Entries), returning anything indexable by the results' `of` keys,
  usually a utils.chain.Chain;
- claims(): the claims from the source documents, judged on the claims' own inputs (utils.verdicts);
- REFUSED (optional): {name: why} for inputs a reader may reach for that would mix architectures,
  e.g. six-nd's n_params, which must come from a model so its layers and width come with it.

No I/O, no plotting, no torch and no simulation the results do not need, so a re-derivation is a
fraction of a second.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from types import ModuleType

from utils.catalog import nearest
from utils.params import Param, ParameterError


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


def slugs() -> list[str]:
    """Every chapter that has a chain module, by slug."""
    return sorted(m.name.replace("_", "-") for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def module(slug: str) -> ModuleType:
    if not isinstance(slug, str) or slug not in slugs():
        hint = nearest(str(slug), slugs())
        did = f"did you mean {hint!r}? " if hint else ""
        raise ParameterError(f"unknown chapter {slug!r}; {did}chapters: {', '.join(slugs())}")
    return importlib.import_module(f"{__name__}.{slug.replace('-', '_')}")


def parameters(slug: str) -> tuple[Param, ...]:
    return tuple(module(slug).PARAMETERS)


def defaults(slug: str) -> dict[str, object]:
    return {p.name: p.default for p in parameters(slug)}


def results(slug: str) -> tuple[Result, ...]:
    return tuple(module(slug).RESULTS)


def check(slug: str, **values) -> Inputs:
    """The chapter's parameters, defaults filled in and each value checked; bad input raises
    ParameterError with one line that names the parameter (and, for a conflict, why)."""
    mod = module(slug)
    spec = {p.name: p for p in mod.PARAMETERS}
    refused = getattr(mod, "REFUSED", {})
    for name in values:
        if name in refused:
            raise ParameterError(f"{slug}: {name} cannot be set: {refused[name]}")
        if name not in spec:
            hint = nearest(name, list(spec))
            did = f"did you mean {hint!r}? " if hint else ""
            raise ParameterError(f"{slug} has no parameter {name!r}; {did}parameters: {', '.join(spec)}")
    out = Inputs({name: p.check_value(values.get(name, p.default)) for name, p in spec.items()})
    validate = getattr(mod, "validate", None)
    if validate is not None:   # checks across parameters (a conflict, a layout that cannot exist)
        validate(out)
    return out


def inputs(slug: str, namespace: dict) -> Inputs:
    """In a chapter: the parameters cell's values (read from the notebook's namespace), checked."""
    missing = [p.name for p in parameters(slug) if p.name not in namespace]
    if missing:
        raise ParameterError(f"{slug}: the parameters cell lacks {', '.join(missing)} (see utils/chains/)")
    return check(slug, **{p.name: namespace[p.name] for p in parameters(slug)})


def extract(slug: str, computed) -> dict:
    """The headline results from compute()'s output, each converted to its Result unit."""
    out = {}
    for r in results(slug):
        v = computed[r.key]
        out[r.name] = v.to(r.unit) if hasattr(v, "units") else v
    return out


def derive(slug: str, **values) -> dict:
    """Re-derive a chapter: {result name: pint Quantity}, in the page's order."""
    return extract(slug, module(slug).compute(check(slug, **values)))


def claims(slug: str) -> list:
    return list(module(slug).claims())
