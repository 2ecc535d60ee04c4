import os
import sys
import zlib
from pathlib import Path

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")
# The tests' shared helpers (book_files, redis_fixture) live here; test files sit one folder down, one folder
# a room of utils/, and are imported by path (pyproject: --import-mode=importlib), so this folder goes on the path.
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent / "book"))   # the site tests' shared browser (site_browser)


@pytest.fixture(autouse=True)
def _seeded_random(request):
    """Random inputs, but the same ones on every run: a failure in CI can be replayed here.
    The seed comes from the test's file name and name (with its parameters), not its folder, so each test
    (and each parameter case) draws its own data and a test file keeps its seeds when it moves."""
    seed = zlib.crc32(f"{request.node.path.name}::{request.node.name}".encode())
    try:
        import torch
    except ImportError:                                 # the hygiene and site tests run without torch
        torch = None
    if torch is not None:
        torch.manual_seed(seed)
    import numpy as np
    np.random.seed(seed)
    yield


def pytest_collection_finish(session):
    """Everything collection imported (sympy, pint, numpy, torch, the chain library) lives to the end of the
    run: freeze it out of the collector's reach, so the automatic collections a long run triggers walk only
    what the tests themselves create, not the whole heap each time."""
    import gc
    gc.collect()
    gc.freeze()


def pytest_sessionfinish(session):
    import gc
    gc.unfreeze()     # so the interpreter's exit frees them as usual (native extensions count leaks otherwise)
