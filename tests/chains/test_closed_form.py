"""Closed-form chapters compute without numpy: every chapter whose SPEC says closed_form=True derives, in a
process where neither numpy nor sympy can be imported (as in the reader's browser, where Python has the standard
library and pint only), to exactly the results the ordinary derivation gives."""
import json
import subprocess
import sys

import pytest

from utils import chains

CLOSED = [s for s in chains.slugs() if chains.spec(s).closed_form]
FLAGSHIPS = ("six-nd", "fleet-size", "moe-1t-on-72-gpus", "bill-of-materials-10k", "buy-vs-rent")

_DERIVE = """
import json, sys
sys.modules["numpy"] = None               # `import numpy` raises ImportError from here on, and `import sympy`:
sys.modules["sympy"] = None               # the page's Python has neither (a formula must be in formula_code.json)
from utils import chains
out = {}
for slug in sys.argv[1:]:
    try:
        out[slug] = {k: [repr(float(getattr(v, "m", v))), str(getattr(v, "u", ""))]
                     for k, v in chains.derive(slug).items()}
    except Exception as e:                 # reported per chapter, so one failure names its chapter
        out[slug] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def without_numpy() -> dict:
    if not CLOSED:
        return {}
    run = subprocess.run([sys.executable, "-c", _DERIVE, *CLOSED], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


@pytest.mark.parametrize("slug", CLOSED)
def test_a_closed_form_chapter_derives_without_numpy_to_the_same_results(slug, without_numpy):
    got = without_numpy[slug]
    assert isinstance(got, dict), f"{slug} needs numpy: {got}"
    expected = {k: [repr(float(getattr(v, "m", v))), str(getattr(v, "u", ""))]
                for k, v in chains.derive(slug).items()}
    assert got == expected


def test_the_flagships_and_most_of_the_book_re_derive_in_the_browser():
    assert set(FLAGSHIPS) <= set(CLOSED), sorted(set(FLAGSHIPS) - set(CLOSED))
    assert len(CLOSED) >= 48, f"{len(CLOSED)} closed-form chapters"
