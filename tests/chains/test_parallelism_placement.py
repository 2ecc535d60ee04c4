"""parallelism-placement: the claim wrong by its own byte counts, the links at their measured shares, the byte
counts against utils.training.collectives, the closed form, the Megatron split counted, bad inputs and properties."""
import pytest

from utils import chains
from utils.chains import parallelism_placement as pl
from utils.params import ParameterError
from utils.training.collectives import LINK_FRACTIONS
from utils.verdicts import WRONG


def test_claim_is_wrong_by_its_own_justification():
    (c,) = pl.claims()
    assert c.verdict == WRONG and c.nearest_true
    ck = pl.checks()
    assert not ck["tests"]["pp_between_by_bytes"]
    assert all(v for k, v in ck["tests"].items() if k != "pp_between_by_bytes"), ck["tests"]
    assert ck["V"]["TP"] > ck["V"]["DP"] > ck["V"]["PP"]          # by bytes the pipeline is last
    assert ck["K"]["TP"] > ck["K"]["PP"] > ck["K"]["DP"]          # by synchronisations it is in between


def test_links_run_at_their_measured_share():
    d = pl.SPEC.defaults()
    assert (d["nvlink_fraction"], d["fabric_fraction"]) == LINK_FRACTIONS
    ch = pl.compute(chains.check("parallelism-placement"))
    roof = pl.compute(chains.check("parallelism-placement", nvlink_fraction=1.0, fabric_fraction=1.0))
    assert ch["B_nv"].to("GB/s").m == pytest.approx(LINK_FRACTIONS[0] * 450)
    assert ch["B_f"].to("GB/s").m == pytest.approx(LINK_FRACTIONS[1] * 50)
    for ax in ("TP", "PP"):   # bytes over a slower link: the share grows by the inverse of the fraction
        assert ch[f"f_{ax}_nv"].m == pytest.approx(roof[f"f_{ax}_nv"].m / LINK_FRACTIONS[0])
        assert ch[f"f_{ax}_f"].m == pytest.approx(roof[f"f_{ax}_f"].m / LINK_FRACTIONS[1])
    rows = {r.name: r for r in ch.rows}
    assert rows["t"].source == pl.SPEC.source(chains.check("parallelism-placement"), "tp") != "parameters cell"


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
    assert d["tp_share_on_fabric"].m > 0.5 > d["tp_share_on_nvlink"].m
    assert d["pp_share_on_fabric"].m < 0.01


@pytest.mark.parametrize("bad, name", [(dict(pp=5), "pp"), (dict(tp=3), "tp"), (dict(model="deepseek-v3"), "model"),
                                       (dict(global_batch_tokens=1000.0), "global_batch_tokens"), (dict(mfu=0.0), "mfu"),
                                       (dict(fabric_fraction=0.0), "fabric_fraction")])
def test_bad_inputs_refused(bad, name):
    with pytest.raises(ParameterError, match=name):
        chains.derive("parallelism-placement", **bad)


@pytest.mark.parametrize("name", ["n_params", "d_model", "n_layers"])
def test_loose_architecture_refused(name):
    with pytest.raises(ParameterError, match="not both"):
        chains.derive("parallelism-placement", model="llama-3-8b", **{name: 1})


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


def test_a_layout_whose_state_does_not_fit_is_refused_with_the_shortfall():
    from utils import catalog
    m, h100 = catalog.model("llama-3-405b"), catalog.accelerator("h100-sxm")
    assert pl.state_per_gpu(m, 8, 16, 128) < h100.q("hbm_capacity").to("B").m     # the run's own layout fits
    with pytest.raises(ParameterError, match=r"pp=1: .* more than .* fewest pipeline stages that fit: pp=3"):
        chains.derive("parallelism-placement", pp=1, dp=2048)
    assert pl.state_per_gpu(m, 8, 3, 2048) <= h100.q("hbm_capacity").to("B").m      # and the suggestion does
