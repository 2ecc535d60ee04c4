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


def test_the_hoarding_week_as_tables_is_the_scheduler_that_ran_it():
    """The default history (the hoarding week written as rows) gives the decayed usage and the factors the
    scheduler's own run of that week gives, at any half-life."""
    for days in (1.0, 7.0, 30.0):
        hist = m.history(m.SPEC.check(half_life_days=days))
        ran = m.hoarding(days * 24)
        for team in ("hoarder", "fair", "others"):
            assert hist["used"][team] == pytest.approx(ran["usage"][team], rel=1e-12)
            assert hist["factor"][team] == pytest.approx(ran["factors"][team], rel=1e-12)
        assert hist["order"][0] == ran["first"] == "fair"
    teams, usage = m.example_history()
    tables = m.history(m.SPEC.check(teams=list(teams), usage=list(usage)))
    assert tables["factor"] == m.history(m.SPEC.check())["factor"]


# Two accounts of equal RawShares; sreport -t hours gives 1,000 GPU-hours to A over the last week and to B over the
# week before. At a seven-day half-life A's usage decays to 500/ln 2 and B's to 250/ln 2: U = 2/3 and 1/3, S = 1/2.
SLURM_TEAMS = [{"team": "A", "quota_gpus": 64}, {"team": "B", "quota_gpus": 64}]
SLURM_USAGE = [{"team": "A", "gpu_hours": 1000, "start_days_ago": 7, "end_days_ago": 0},
               {"team": "B", "gpu_hours": 1000, "start_days_ago": 14, "end_days_ago": 7}]


def test_a_usage_history_from_the_command_line_gives_slurms_factors_and_order(tmp_path):
    import json
    import math

    from utils import rederive
    file = tmp_path / "usage.json"
    file.write_text(json.dumps(SLURM_USAGE))
    hist = m.history(m.SPEC.check(teams=json.dumps(SLURM_TEAMS), usage=str(file)))
    assert hist["used"]["A"] == pytest.approx(500 / math.log(2)) and hist["used"]["B"] == pytest.approx(250 / math.log(2))
    assert hist["factor"]["A"] == pytest.approx(2 ** (-4 / 3)) and hist["factor"]["B"] == pytest.approx(2 ** (-2 / 3))
    assert hist["order"] == ["B", "A"]
    out = rederive.payload(SLUG, {"teams": json.dumps(SLURM_TEAMS), "usage": str(file)})["results"]
    assert out["hoarder_factor"]["value"] == pytest.approx(2 ** (-4 / 3))
    assert out["fair_factor"]["value"] == pytest.approx(2 ** (-2 / 3))


@pytest.mark.parametrize("teams, usage, match", [
    (SLURM_TEAMS, [], "teams and usage go together"),
    (SLURM_TEAMS[:1], SLURM_USAGE[:1], "at least two teams"),
    (SLURM_TEAMS + SLURM_TEAMS[:1], SLURM_USAGE, "names a team twice"),
    (SLURM_TEAMS, [{**SLURM_USAGE[0], "team": "C"}], r"usage\[0\] names team 'C'"),
    (SLURM_TEAMS, [{**SLURM_USAGE[0], "start_days_ago": 0, "end_days_ago": 7}], r"usage\[0\]: start_days_ago"),
    (SLURM_TEAMS, [{**SLURM_USAGE[0], "gpu_hours": -1}], r"usage\[0\].gpu_hours must be >= 0"),
    ([{"team": "A", "quota_gpus": 0}, SLURM_TEAMS[1]], SLURM_USAGE, r"teams\[0\].quota_gpus must be > 0"),
    (SLURM_TEAMS, [{"team": "A", "gpu_hours": 1}], r"usage\[0\] lacks column 'start_days_ago'"),
])
def test_bad_histories_are_refused_in_one_line(teams, usage, match):
    with pytest.raises(ParameterError, match=match) as e:
        m.SPEC.check(teams=teams, usage=usage)
    assert "\n" not in str(e.value)


def test_a_bad_history_on_the_command_line_is_one_line_and_exit_2(capsys):
    from utils import rederive
    assert rederive.main([SLUG, "--set", 'teams=[{"team": "A", "quota_gpus": -1}]', "--set", "usage=[]"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: teams[0].quota_gpus must be > 0") and err.count("\n") == 1
