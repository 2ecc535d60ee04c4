"""parallelism-placement: the claim under its reading, the byte counts against utils.training.collectives, the
closed form, the Megatron split counted, bad inputs and properties."""
import pytest

from utils import chains
from utils.chains import parallelism_placement as pl
from utils.params import ParameterError
from utils.verdicts import READING


def test_claim_holds_under_its_reading():
    (c,) = pl.claims()
    assert c.verdict == READING and c.reading
    ck = pl.checks()
    assert all(ck["tests"].values()), ck["tests"]
    assert ck["V"]["TP"] > ck["V"]["DP"] > ck["V"]["PP"]          # by bytes the pipeline is last
    assert ck["K"]["TP"] > ck["K"]["PP"] > ck["K"]["DP"]          # by synchronisations it is in between


def test_bytes_agree_with_collectives():
    ch = pl.compute(chains.check("parallelism-placement"))
    for ax, v in pl.axis_bytes(ch).items():
        assert v.to("GB").m == pytest.approx(ch[f"V_{ax}"].to("GB").m, rel=1e-12)


def test_closed_form_tracks_the_count():
    ch = pl.compute(chains.check("parallelism-placement"))
    cf = pl.tp_share_closed(8, ch["h"].m, ch["R"].to("FLOP/s").m, 0.4, ch["B_f"].to("B/s").m)
    assert ch["f_TP_f"].m == pytest.approx(cf, rel=0.05)


def test_published_defaults():
    d = chains.derive("parallelism-placement")
    assert d["tp_share_on_fabric"].m > 0.5 > 0.1 > d["tp_share_on_nvlink"].m
    assert d["pp_share_on_fabric"].m < 0.01


@pytest.mark.parametrize("bad, name", [(dict(pp=5), "pp"), (dict(tp=3), "tp"), (dict(model="deepseek-v3"), "model"),
                                       (dict(global_batch_tokens=1000.0), "global_batch_tokens"), (dict(mfu=0.0), "mfu")])
def test_bad_inputs_refused(bad, name):
    with pytest.raises(ParameterError, match=name):
        chains.derive("parallelism-placement", **bad)


@pytest.mark.parametrize("name", ["n_params", "d_model", "n_layers"])
def test_loose_architecture_refused(name):
    with pytest.raises(ParameterError, match=f"{name} cannot be set.*model"):
        chains.derive("parallelism-placement", **{name: 1})


def test_wider_models_hide_tp_better_and_bigger_batches_shrink_dp():
    base = chains.derive("parallelism-placement")
    narrow = chains.derive("parallelism-placement", model="llama-3-70b", pp=4, dp=512)
    assert narrow["tp_share_on_nvlink"].m > base["tp_share_on_nvlink"].m
    big = chains.derive("parallelism-placement", global_batch_tokens=4 * 16777216.0)
    assert big["dp_share_on_fabric"].m == pytest.approx(base["dp_share_on_fabric"].m / 4, rel=0.05)
    assert big["tp_share_on_nvlink"].m == pytest.approx(base["tp_share_on_nvlink"].m, rel=1e-9)


def test_megatron_split_needs_four_all_reduces():
    pytest.importorskip("torch")
    from utils.training.tp_sim import simulate
    for _t, f, b, ey, eg in simulate(ts=(2, 4)):
        assert (f, b) == (2, 2) and f + b == pl.TP_ALLREDUCES and ey < 1e-12 and eg < 1e-12
