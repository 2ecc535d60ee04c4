"""A claim holds by its rounding only when the book's value, rounded to the claim's own significant figures, is
the claimed number (utils.verdicts.rounds_to); sig_fig_tolerance's symmetric band is wider than that rule."""
import pytest

from utils.units import q
from utils.verdicts import rounds_to, sig_fig_tolerance, within


@pytest.mark.parametrize("derived, claimed, figures, holds", [
    (5.85e6, 1e7, 1, False),      # 6 million to one figure, not 10 million
    (9.6e6, 1e7, 1, True),
    (1.49e7, 1e7, 1, True),
    (1.5e7, 1e7, 1, False),       # rounds to 2e7
    (6.29e24, 6.3e24, 2, True),
    (6.36e24, 6.3e24, 2, False),
    (-0.96, -1.0, 1, True),
    (0.0, 0.0, 2, True),
])
def test_rounds_to(derived, claimed, figures, holds):
    assert rounds_to(derived, claimed, figures) is holds


def test_rounds_to_compares_quantities_in_the_claims_unit():
    assert rounds_to(q(1500, "GB"), q(1.5, "TB"), 2)
    assert not rounds_to(q(1400, "GB"), q(1.5, "TB"), 2)


def test_the_tolerance_band_admits_what_the_rounding_rule_refuses():
    """Why rounds_to exists: at one figure the tolerance band is +-50%, so 5.85 million passed for 10 million."""
    assert within(5.85e6, 1e7, sig_fig_tolerance(1e7, 1)) and not rounds_to(5.85e6, 1e7, 1)


def test_a_reading_must_quote_the_words_it_reads_from_the_claims_quote():
    from utils.verdicts import READING, Claim, quoted_spans
    base = dict(name="x", quote="Decode is bandwidth-bound for a 70B model on one H100.", source="spec",
                claimed="bandwidth-bound", derived="bandwidth-bound", verdict=READING, reason="r")
    assert Claim(**base, reading="'bandwidth-bound' read as below the ridge at batch 1").problems() == []
    assert Claim(**base, reading="\u201cfor a 70B model\u201d read as Llama-3-70B").problems() == []
    assert Claim(**base, reading='"Decode is bandwidth-bound." at batch 1').problems() == []
    unquoted = Claim(**base, reading="decode read as batch 1, the source's own case").problems()
    not_its_words = Claim(**base, reading="'memory-bound' read as below the ridge").problems()
    assert len(unquoted) == 1 and len(not_its_words) == 1 and "quotation marks" in unquoted[0]
    assert quoted_spans("the source's words 'a b' and \"c\"") == ["a b", "c"]
