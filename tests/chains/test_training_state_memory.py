"""training-state-memory: the claim, the readings of sixteen bytes, the model as one parameter, properties."""
import pytest

from utils import catalog, chains
from utils.chains import training_state_memory as tsm
from utils.params import ParameterError
from utils.verdicts import HOLDS


def test_claim_holds_at_its_own_inputs():
    (c,) = tsm.claims()
    assert c.verdict == HOLDS
    ch = tsm.claim_plan()
    assert ch["S"].to("TB").m == pytest.approx(1.6, rel=1e-12)
    assert ch["M_node"].to("GB").m == pytest.approx(640, rel=1e-12)
    assert ch["x_0"].m == 2.5 and ch["K_0"].m == 3 and ch["K_min"].m == 3 and ch["K"].m == 4


def test_every_reading_spans_nodes_and_zero_ratio():
    ck = tsm.checks()
    assert ck["b_star"] == pytest.approx(6.4)
    assert min(tsm.READING_BYTES.values()) > ck["b_star"]
    assert tsm.READING_BYTES[tsm.CLAIM_READING] == 16
    assert ck["zero_ratio"] == pytest.approx(1.5, rel=1e-12)


def test_published_defaults():
    d = chains.derive("training-state-memory")
    n = tsm.architecture(catalog.model("llama-3-70b"))["n_params"]
    assert d["state_bytes"].to("TB").m == pytest.approx(16 * n / 1e12)
    assert d["replica_nodes"].to("node").m == 4
    assert 0 < d["pipeline_bubble"].m < 1


def test_llama_405b_needs_sixteen_nodes_like_its_paper():
    p = chains.check("training-state-memory")
    ex = tsm.exercises(p, tsm.compute(p))
    assert ex["ex1-kpow"] == "16 nodes" and ex["ex1-llama-pp"] == "16 stages"


@pytest.mark.parametrize("name", ["n_params", "d_model", "n_layers"])
def test_loose_architecture_refused(name):
    with pytest.raises(ParameterError, match="not both"):
        chains.derive("training-state-memory", model="llama-3-8b", **{name: 1e9})


@pytest.mark.parametrize("bad", [dict(fleet_nodes=2), dict(micro_batch_tokens=10 ** 8), dict(mfu=1.5),
                                 dict(gpu="h1000"), dict(hbm_usable=0.0)])
def test_bad_inputs_refused_by_name(bad):
    with pytest.raises(ParameterError, match=list(bad)[0] if list(bad)[0] != "gpu" else "gpu|h1000"):
        chains.derive("training-state-memory", **bad)


def test_more_bytes_more_nodes_and_bigger_gpus_fewer():
    base = chains.derive("training-state-memory")
    more = chains.derive("training-state-memory", bytes_per_param=20.0)
    assert more["min_nodes"].m >= base["min_nodes"].m
    b200 = chains.derive("training-state-memory", gpu="b200")
    assert b200["min_nodes"].m < base["min_nodes"].m


def test_figure_sweep_agrees_with_the_chain():
    p = chains.check("training-state-memory")
    ch = tsm.compute(p)
    oF, rho, oP = tsm.overheads([float(p.fleet_nodes)], float(p.tokens_per_step), ch)
    assert rho[0] == pytest.approx(ch["rho"].m, rel=1e-9) and oP[0] == pytest.approx(ch["o_P"].m, rel=1e-9)


def test_torch_counts_the_bytes():
    pytest.importorskip("torch")
    from utils.training.optimizer_state import counted_bytes_per_param
    assert counted_bytes_per_param("zero")[0] == 16 and counted_bytes_per_param("amp")[0] == 16
    assert counted_bytes_per_param("megatron")[0] == 20


# --- ZeRO stages ------------------------------------------------------------------------------------
def test_zero_paper_figure_1_reproduced():
    """Rajbhandari et al., SC20 (arXiv:1910.02054), Figure 1: Psi = 7.5B, N_d = 64, K = 12 gives 120, 31.4,
    16.6 and 1.9 GB per device; each stage within half a unit of the figure's last printed digit."""
    rows = tsm.zero_paper_check()
    assert [r["holds"] for r in rows] == [True] * 4
    derived = [r["per_gpu"].to("GB").m for r in rows]
    assert derived == pytest.approx([120.0, 31.40625, 16.640625, 1.875], rel=1e-12)
    for r, printed, tol in zip(rows, (120, 31.4, 16.6, 1.9), (0.5, 0.05, 0.05, 0.05)):
        assert abs(r["per_gpu"].to("GB").m - printed) <= tol


def test_zero_stage_in_the_chain_and_its_traffic():
    d = chains.derive("training-state-memory", zero_stage=1, dp_degree=8)
    n = tsm.architecture(catalog.model("llama-3-70b"))["n_params"]
    assert d["zero_state_per_gpu"].to("GB").m == pytest.approx((4 + 12 / 8) * n / 1e9)
    assert d["zero_traffic_per_gpu"].to("GB").m == pytest.approx(2 * 2 * n / 1e9)
    d3 = chains.derive("training-state-memory", zero_stage=3, dp_degree=8)
    assert d3["zero_traffic_per_gpu"] / d["zero_traffic_per_gpu"] == pytest.approx(1.5)   # ZeRO sec. 7
    # the chapter's existing results do not depend on the stage
    assert d3["state_bytes"] == d["state_bytes"] and d3["replica_nodes"] == d["replica_nodes"]


def test_zero_bytes_fall_with_each_stage_and_with_nd():
    n = 70e9
    per = [r["per_gpu"].m for r in tsm.zero_table(n, 64)]
    assert per == sorted(per, reverse=True)
    curves = tsm.zero_curves(n)["curves"]
    for s in (1, 2, 3):
        assert (curves[s][1:] <= curves[s][:-1]).all()                 # more GPUs, less state each
    assert curves[0].min() == curves[0].max()                          # replicated: no change


@pytest.mark.parametrize("name,value", [("zero_stage", 4), ("zero_stage", -1), ("dp_degree", 0)])
def test_bad_zero_inputs_refused(name, value):
    with pytest.raises(ParameterError, match=name):
        chains.derive("training-state-memory", **{name: value})


def test_the_fabric_runs_at_the_measured_share_of_its_rate():
    from utils.training.collectives import LINK_FRACTIONS
    params = {p.name: p.default for p in tsm.PARAMETERS}
    assert (params["nvlink_fraction"], params["fabric_fraction"]) == LINK_FRACTIONS   # the catalog's measurements
    base, roof = chains.derive("training-state-memory"), chains.derive("training-state-memory", fabric_fraction=1.0)
    ratio = base["fsdp_fabric_to_compute"].m / roof["fsdp_fabric_to_compute"].m
    assert ratio == pytest.approx(1 / LINK_FRACTIONS[1]) and ratio > 1


def test_inputs_show_their_parameters_sources_until_a_reader_changes_them():
    spec = {p.name: p.source for p in tsm.PARAMETERS}
    rows = {r.name: r.source for r in tsm.compute(chains.check("training-state-memory")).rows}
    assert rows["T_mb"] == spec["micro_batch_tokens"] and rows["u"] == spec["mfu"] and rows["N_d"] == spec["dp_degree"]
    rows = {r.name: r.source for r in tsm.compute(chains.check("training-state-memory", mfu=0.3, dp_degree=32)).rows}
    assert rows["u"] == rows["N_d"] == "parameters cell"


def _arch(n_params):
    return dict(tsm.architecture(catalog.model("llama-3-70b")), n_params=n_params, n_active=n_params)


def test_a_plan_that_does_not_fit_gives_its_shortfall_the_largest_that_fits_and_no_fabric_time():
    """Too small a fleet, or too large a micro-batch: refused (so no fabric time, bubble or traffic for it),
    naming the shortfall and the largest model or micro-batch that does fit; and that one fits."""
    args = dict(tsm.CLAIM_LAYOUT, bytes_per_param=16.0, gpu="h100-sxm", gpus_per_node=8)
    with pytest.raises(ParameterError, match=r"does not fit: one replica spans 4 nodes .* 2 more than the fleet; "
                                             r"the largest model a 2-node replica holds"):
        chains.derive("training-state-memory", fleet_nodes=2)
    ch = tsm.compute(chains.check("training-state-memory"))
    n_max = tsm.largest_model(ch, 2)
    assert tsm.plan(_arch(0.999 * n_max), **{**args, "fleet_nodes": 2})["K"].m == 2
    with pytest.raises(ParameterError, match="fleet_nodes=2 does not fit"):
        tsm.plan(_arch(1.001 * n_max), **{**args, "fleet_nodes": 2})
    t_max = tsm.largest_micro_batch(ch)
    with pytest.raises(ParameterError, match=rf"more than the usable .* is {t_max:,} tokens per node"):
        chains.derive("training-state-memory", micro_batch_tokens=10 ** 8)
    big = {**args, "micro_batch_tokens": t_max}      # the state of a tiny model beside the largest micro-batch
    assert tsm.plan(_arch(1e3), **big)["A"] < ch["f"] * ch["M_gpu"]
    with pytest.raises(ParameterError, match="does not fit"):
        tsm.plan(_arch(1e3), **{**big, "micro_batch_tokens": t_max + 1})
