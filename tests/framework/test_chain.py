import pytest
import sympy as sp

from utils.chain import Chain, as_float
from utils.units import DimensionalityError, q


def six_nd():
    ch = Chain("Training compute")
    ch.given("N", q(70e9, "parameter"), "parameters", kind="spec", source="claim")
    ch.given("D", q(15e12, "token"), "tokens")
    ch.given("k", q(6, "FLOP/parameter/token"), "FLOP per parameter per token")
    ch.step("C", "k*N*D", "FLOP", "training compute")
    return ch


def test_step_evaluates_with_units():
    ch = six_nd()
    assert ch["C"].to("FLOP").m == pytest.approx(6.3e24)
    assert str(ch["C"].units) == "FLOP"


def test_unit_slip_raises():
    ch = six_nd()
    ch.given("R", q(1e15, "FLOP/s"), "rate")
    with pytest.raises(DimensionalityError):
        ch.step("bad", "C + R")
    with pytest.raises(DimensionalityError):
        ch.step("bad2", "C / R", "FLOP")


def test_solve_shows_closed_form_and_evaluates():
    ch = six_nd()
    ch.given("R", q(989.4e12, "FLOP/s/GPU"), "peak")
    ch.given("u", 0.4, "MFU")
    ch.given("T", q(90, "day"), "run")
    n = ch.solve("N_gpu", "C = N_gpu*R*u*T", "GPU", "GPUs")
    C, R, u, T = sp.symbols("C R u T")
    assert sp.simplify(ch.closed_form("N_gpu") - C / (R * u * T)) == 0
    expected = 6.3e24 / (989.4e12 * 0.4 * 90 * 86400)
    assert n.m == pytest.approx(expected)
    assert r"\Rightarrow" in ch.latex("N_gpu")


def test_markdown_table_has_formula_substitution_and_result():
    md = six_nd()._repr_markdown_()
    assert "$C = k N D$" in md
    assert r"\text{70B parameters}" in md
    assert "**6.30 YFLOP**" in md
    assert "spec · claim" in md


def test_long_formulas_are_cut_into_pieces_the_cell_wraps_between():
    """A formula too wide for the "how" cell is set as several inline maths, each within the width a cell
    shows, which read as the formula side by side: a sum at its terms, a product at its factors, max() at
    its arguments, a fraction with a wide half as (a)/(b)."""
    from utils.display import LINE_CHARS, math_pieces, seen_width
    ch = six_nd()
    for name in "abcdefgh":
        ch.given(name, q(1.5e9, "B"), f"size {name}")
    ch.step("M", "Max(a + b + c + d, e + f + g + h) * (a + b + c + d + e)", "B^2")
    ch.step("F", "(a*b*c*d*e*f*g*h) / (a*b*c*d*e*f*g*h + a*b*c*d*e*f*g*h)", "")
    md = ch._repr_markdown_()
    cells = [line.split(" | ")[-1] for line in md.splitlines() if line.startswith(("| $M$", "| $F$"))]
    pieces = [p for cell in cells for p in cell.split("$")[1::2]]
    assert len(pieces) > 12 and max(map(seen_width, pieces)) <= LINE_CHARS
    assert r"\max(" in md and r"\times (" in md and "/ " in md
    a, b, c = sp.symbols("a b c")
    assert math_pieces(a + b) == ["a + b"]                      # a short formula stays one piece


def test_undefined_and_duplicate_symbols_are_errors():
    ch = six_nd()
    with pytest.raises(ValueError):
        ch.step("X", "C*Z")
    with pytest.raises(ValueError):
        ch.given("N", 1, "again")


def test_as_float():
    assert as_float(q(1, "TB/s"), "GB/s") == pytest.approx(1000)
    assert as_float(2) == 2.0


def test_a_catalog_value_brings_its_kind_and_source():
    from utils import catalog
    ch = Chain()
    peak = ch.given("R", catalog.accelerator("h100-sxm")["bf16_dense"], "dense bf16 peak")
    assert peak.to("TFLOP/s").m == pytest.approx(989.4)
    row = ch.rows[0]
    assert row.kind == "spec" and "datasheet" in row.source.lower() and "read 2026" in row.source


def test_value_adds_a_named_result_without_a_row():
    ch = six_nd()
    rows = len(ch.rows)
    ch.value("C_yotta", ch["C"].to("YFLOP"))
    assert ch["C_yotta"].m == pytest.approx(6.3) and len(ch.rows) == rows
    with pytest.raises(ValueError, match="already defined"):
        ch.value("C", 1.0)


@pytest.mark.parametrize("formula", ["ceiling(a/b)*b", "Max(a, b) - Min(a, b)", "floor(a/b) + log(a/b)",
                                     "a**2/(b + a)", "(a + b)**(1/2)"])
def test_numeric_evaluation_is_lambdify_s_to_the_last_bit(formula):
    from utils import formula_code
    a, b = q(7.3e9, "byte"), q(1.1e9, "byte")
    expr = sp.sympify(formula, locals={"a": sp.Symbol("a"), "b": sp.Symbol("b")}, evaluate=False)
    ours = formula_code.evaluate(formula_code.code_for_step(formula, {"a", "b"}), {"a": a, "b": b})
    theirs = sp.lambdify([sp.Symbol("a"), sp.Symbol("b")], expr, modules="numpy")(a, b)
    assert str(ours.units) == str(theirs.units) and ours.m == theirs.m
