"""quota-fair-share: the claims, bad inputs, and the pooling properties."""
import pytest

from utils import chains
from utils.chains import quota_fair_share as m
from utils.params import ParameterError
from utils.verdicts import READING, UNCHECKABLE

SLUG = "quota-fair-share"


def test_the_claims_and_their_verdicts():
    by = {c.name: c for c in m.claims()}
    assert by["decay"].verdict == READING and "50%" in by["decay"].reason and "decays so" in by["decay"].reading
    assert by["static-half"].verdict == UNCHECKABLE


def test_static_quotas_idle_one_minus_the_busy_share_and_the_pool_less():
    r = chains.derive(SLUG)
    assert r["static_idle"].m == pytest.approx(0.5)
    assert r["pooled_idle"].m < r["static_idle"].m
    assert r["hoarder_factor"].m < r["fair_factor"].m
    assert r["week_old_weight"].m == pytest.approx(0.5)


def test_more_teams_pool_better():
    saved = [chains.derive(SLUG, n_teams=n)["gpus_saved"].m for n in (4, 16, 64)]
    assert saved == sorted(saved) and saved[-1] > saved[0]


def test_a_shorter_half_life_forgets_faster():
    assert chains.derive(SLUG, half_life_days=1.0)["week_old_weight"].m < 0.01


@pytest.mark.parametrize("kw, name", [(dict(n_teams=1), "n_teams"), (dict(busy_share=0.0), "busy_share"),
                                      (dict(busy_share=1.0), "busy_share"), (dict(half_life_days=-1.0), "half_life_days"),
                                      (dict(sim_hours=10), "sim_hours"), (dict(burst_hours=0.5), "burst_hours")])
def test_bad_inputs_are_refused(kw, name):
    with pytest.raises(ParameterError, match=name):
        chains.derive(SLUG, **kw)


def test_the_simulation_agrees_with_the_closed_forms_on_every_seed():
    assert m.SEEDS >= 3
    for seed in range(m.SEEDS):
        r = chains.derive(SLUG, seed=seed)
        assert r["sim_static_idle"].m == pytest.approx(r["static_idle"].m, abs=m.AGREE)
        assert r["sim_pooled_idle"].m == pytest.approx(r["pooled_idle"].m, abs=m.AGREE)
    sp = m.spread(m.SPEC.check())
    assert sp["off"][1] < m.AGREE and sp["turned"][1] < 2 * m.SPEC.check().overflow
