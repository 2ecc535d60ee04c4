"""Every chain module keeps the contract utils/chains/__init__.py states, without executing a notebook:
its spec is well formed and matches the chapter's parameters cell, its defaults derive, its results come
out in their units, its claims carry one of the four verdicts with a reason that types no number."""
import ast
import inspect
import json

import pytest
from book_files import ROOT, typed_numbers

from utils import chains, formula_code
from utils.chain import clear_memoised
from utils.params import ParameterError
from utils.verdicts import VERDICTS

SLUGS = chains.slugs()


def parameters_cell(slug: str) -> dict:
    path = next((ROOT / "chapters").glob(f"*/{slug}.ipynb"))
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            tree = ast.parse("".join(cell["source"]))
            return {n.targets[0].id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)}
    raise AssertionError(f"{slug} has no parameters cell")


def test_every_chapter_has_a_chain_module():
    notebooks = sorted(p.stem for p in (ROOT / "chapters").glob("*/*.ipynb"))
    missing = [s for s in notebooks if s not in SLUGS]
    # While chapters move into utils/chains/, list what is left; a chain module without a chapter fails.
    assert all(s in notebooks for s in SLUGS), [s for s in SLUGS if s not in notebooks]
    print(f"chapters without a chain module yet: {missing}")


@pytest.mark.parametrize("slug", SLUGS)
def test_parameters_cell_equals_the_module_defaults(slug):
    cell = parameters_cell(slug)
    assert cell == chains.defaults(slug), f"{slug}: the parameters cell and the module's defaults differ"
    for name, value in cell.items():
        assert type(value) is type(chains.defaults(slug)[name]), name


@pytest.mark.parametrize("slug", SLUGS)
def test_every_parameter_is_described_and_sourced(slug):
    for p in chains.parameters(slug):
        assert p.meaning and p.source, f"{slug}.{p.name} needs a meaning and a source"


@pytest.mark.parametrize("slug", SLUGS)
def test_defaults_derive_every_result_in_its_unit(slug):
    derived = chains.derive(slug)
    assert list(derived) == [r.name for r in chains.results(slug)]
    for r in chains.results(slug):
        v = derived[r.name]
        assert hasattr(v, "units"), f"{slug}.{r.name} is not a quantity"
        assert v.to(r.unit).units == v.units, f"{slug}.{r.name} is not in {r.unit}"


@pytest.mark.parametrize("slug", SLUGS)
def test_claims_have_one_of_four_verdicts(slug):
    formula_code.MISSES.clear()
    for c in chains.claims(slug):
        assert c.verdict in VERDICTS
        assert c.reason and c.quote and c.source
        assert not c.problems(), (c.name, c.problems())
    # the claims' formulas are stored too (a chapter's derivation is held by test_formula_code's no-sympy run)
    assert not formula_code.MISSES, (f"{slug}: {len(formula_code.MISSES)} formulas not in formula_code.json "
                                     f"(python -m utils.tools.write_formula_code): {formula_code.MISSES[:2]}")


def _string_constants(node) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


@pytest.mark.parametrize("slug", SLUGS)
def test_no_reason_types_a_number(slug):
    """A reason (and a nearest true statement) is built from formatted numbers: its literal text has none."""
    tree = ast.parse(inspect.getsource(chains.module(slug)))
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        name = getattr(call.func, "id", getattr(call.func, "attr", ""))
        if name != "Claim":
            continue
        texts = [kw.value for kw in call.keywords if kw.arg in ("reason", "nearest_true", "reading")]
        texts += call.args[6:7]                    # reason given positionally
        for node in texts:
            for s in _string_constants(node):
                assert not typed_numbers(s), f"{slug}: a claim's reason types {typed_numbers(s)} in {s!r}"


@pytest.mark.parametrize("slug", SLUGS)
def test_an_unknown_parameter_is_refused_with_its_name(slug):
    with pytest.raises(ParameterError, match="no parameter 'no_such_input'"):
        chains.derive(slug, no_such_input=1.0)


@pytest.mark.parametrize("slug", SLUGS)
def test_chain_modules_import_neither_torch_nor_plotting(slug):
    src = inspect.getsource(chains.module(slug))
    for banned in ("import torch", "matplotlib", "utils.measure ", "from utils.measure import"):
        assert banned not in src, f"{slug} imports {banned}"


@pytest.mark.parametrize("slug", SLUGS)
def test_a_chain_that_draws_random_numbers_says_it_simulates(slug, monkeypatch):
    """The benchmark holds a closed-form chain to one second and a simulation to three; which one a chain is
    is declared (`SIMULATION = "what it simulates"`) and checked here against what its defaults do."""
    import random

    import numpy as np
    module = chains.module(slug)  # imported first: importing a library may seed a Random of its own
    clear_memoised()              # from cold caches: a draw another test already cached still counts
    drew = []
    default_rng, random_init = np.random.default_rng, random.Random.__init__
    monkeypatch.setattr(np.random, "default_rng", lambda *a, **k: drew.append(1) or default_rng(*a, **k))
    monkeypatch.setattr(random.Random, "__init__", lambda self, *a, **k: drew.append(1) or random_init(self, *a, **k))
    chains.derive(slug)
    declared = getattr(module, "SIMULATION", "")
    assert bool(drew) == bool(declared), (f"{slug}: derive draws random numbers but declares no SIMULATION" if drew
                                          else f"{slug}: declares SIMULATION but its derive draws nothing")
