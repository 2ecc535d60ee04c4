"""One protocol for every chain module (utils/chains/__init__.py and chapters/AUTHORING.md): one signature for
each page function, the chain a Chain with what the page draws in its declared field `data`, one cache (the
framework's `memoised`, which this test can clear), catalog look-ups that take an Entry as well as a key."""
import inspect
import re

import pytest

from utils import chains
from utils.chain import _MEMOISED, Chain
from utils.params import Spec

SLUGS = chains.slugs()
SIGNATURES = {"compute": ["p"], "what_changes": ["p", "ch"], "exercises": ["p", "ch"], "claims": [], "checks": []}


def _args(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


@pytest.mark.parametrize("slug", SLUGS)
def test_page_functions_have_one_signature(slug):
    m = chains.module(slug)
    assert isinstance(m.SPEC, Spec) and m.SPEC.slug == slug and m.SPEC.compute is m.compute
    for name, args in SIGNATURES.items():
        if hasattr(m, name):
            fn = getattr(m, name)
            assert _args(fn) == args, f"{slug}.{name}{inspect.signature(fn)}: wants ({', '.join(args)})"


@pytest.mark.parametrize("slug", SLUGS)
def test_compute_returns_a_chain(slug):
    m = chains.module(slug)
    assert type(m.compute(m.SPEC.check())) is Chain


@pytest.mark.parametrize("slug", SLUGS)
def test_checks_are_memoised_by_the_framework(slug):
    m = chains.module(slug)
    if hasattr(m, "checks"):
        assert any(m.checks is f for f in _MEMOISED), f"{slug}.checks is not @memoised"


HOME_MADE_CACHE = re.compile(r"lru_cache|functools\.cache\b|@cache\b|^_CACHE\b|^_cache\b", re.M)
KEY_OR_ENTRY = re.compile(r"catalog\.\w+\((\w+)\) if isinstance\(\1, str\) else \1")


@pytest.mark.parametrize("slug", SLUGS)
def test_no_home_made_cache_and_no_key_or_entry_branch(slug):
    src = inspect.getsource(chains.module(slug))
    assert not HOME_MADE_CACHE.search(src), f"{slug} keeps a cache of its own: use utils.chain.memoised"
    assert not KEY_OR_ENTRY.search(src), f"{slug} branches on key or Entry: catalog look-ups take both"


def test_a_chain_has_no_room_for_bolted_on_attributes():
    ch = Chain("t")
    with pytest.raises(AttributeError):
        ch.runs = [1, 2]
    ch.data["runs"] = [1, 2]
    assert ch.data == {"runs": [1, 2]}
