"""utils/formula_code.json: every stored entry is what sympy prints today, every chapter's defaults find their
formulas there (so re-derivation imports no sympy; tests/chains/test_contract.py holds the claims' formulas to the
same), and computing a chain imports none."""
import json
import subprocess
import sys

import pytest

from utils import formula_code
from utils.chain import Chain
from utils.units import q

STORED = formula_code._stored()


def test_the_file_is_there_and_one_formula_a_line():
    text = formula_code.FILE.read_text()
    assert len(STORED) > 500 and text.count("\n") == len(STORED) + 2


@pytest.mark.parametrize("chunk", range(8))
def test_every_stored_entry_is_what_sympy_prints_now(chunk):
    keys = sorted(STORED)[chunk::8]
    stale = [k for k in keys if formula_code.fresh(k) != STORED[k]]
    assert not stale, f"{len(stale)} stale entries (python -m utils.tools.write_formula_code): {stale[:2]}"


def test_a_formula_not_stored_is_printed_by_sympy_and_gives_the_same_answer():
    ch = Chain()
    ch.given("a", q(3.0, "s"), "a")
    ch.given("b", q(4.0, "s"), "b")
    formula_code.MISSES.clear()
    c = ch.step("c", "sqrt(a**2 + b**2) + 0*a", "s", "hypotenuse")     # no chapter writes this one
    assert c.m == 5.0 and len(formula_code.MISSES) == 1
    assert json.loads(formula_code.MISSES[0])[0] == "step"
    t = ch.solve("t", "c = t*b/a", "s", "solved")
    assert t.m == pytest.approx(3.75)


def test_computing_a_chain_imports_no_sympy_and_showing_one_does():
    code = ("import sys; from utils import chains; chains.derive('fleet-size', gpu='b200', mfu=0.35); "
            "assert 'sympy' not in sys.modules, 'computing imported sympy'; "
            "from utils.chains import fleet_size; ch = fleet_size.compute(chains.check('fleet-size')); "
            "md = ch._repr_markdown_(); assert 'sympy' in sys.modules and r'\\Rightarrow' in md")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-500:]


def test_no_chapter_s_re_derivation_imports_sympy():
    """Every chapter's fast path (its defaults) runs without sympy: the speed the benchmark quotes."""
    code = ("import sys\nfrom utils import chains\nfor slug in chains.slugs():\n    chains.derive(slug)\n"
            "    if 'sympy' in sys.modules:\n        sys.exit(f'{slug} imported sympy')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stderr or r.stdout)[-500:]


def test_a_solve_leaves_the_real_sympy_units_module_importable():
    code = ("import sys; from utils import formula_code as f; f.solution('C = R*T', 'T', ('C', 'R')); "
            "assert 'sympy.physics.units' not in sys.modules; "
            "import sympy.physics.units as u; assert hasattr(u, 'meter')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-500:]
