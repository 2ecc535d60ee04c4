"""fleet-10k-rps: the claims with their verdicts, the chain's arithmetic against its float twin, bad
inputs refused, and properties (a better hit rate, fewer nodes; a compute-bound replica's rate does not
depend on the TPOT objective)."""
import pytest

from utils import chains
from utils.chain import as_float
from utils.chains import fleet_10k_rps as fr
from utils.params import ParameterError
from utils.verdicts import UNCHECKABLE


@pytest.fixture(scope="module")
def ck():
    return fr.checks()


def test_claims_and_verdicts(ck):
    got = {c.name: c.verdict for c in fr.claims()}
    assert got == {"hundreds-of-nodes": UNCHECKABLE, "router-knows": UNCHECKABLE, "slo-pair-batch": UNCHECKABLE}
    # the figures are the book's own, and they undercut "has to know": the hash gets most of the index's saving
    assert all(s["index"] < s["affinity"] < s["random"] for s in ck["prefilled"])
    assert "book's" in next(c for c in fr.claims() if c.name == "router-knows").derived
    ch = ck["chain"]
    assert 100 <= as_float(ch["n_a"], "node") < as_float(ch["n_r"], "node") < 1000


def test_no_outcome_of_the_books_own_inputs_refutes_the_slo_pair(monkeypatch):
    """The pair and the model are the book's, not the source's: whichever cap binds, the claim is not refuted."""
    real = fr.checks()
    ch = real["chain"]

    class KvCaps(dict):        # the chain with the KV budget below the batch: memory, not the pair, would cap it
        def __getitem__(self, k):
            return ch["B_a"] * 0.5 if k == "U" else ch[k]

    monkeypatch.setattr(fr, "checks", lambda: {**real, "chain": KvCaps()})
    pair = next(c for c in fr.claims() if c.name == "slo-pair-batch")
    assert pair.verdict == UNCHECKABLE and "KV budget" in pair.reason and not pair.nearest_true


def test_float_twin_matches_the_chain(ck):
    ch = ck["chain"]
    for s, h in (("a", "h_a"), ("r", "h_r")):
        row = fr.replica(ch, as_float(ch[h]))
        assert row["B"] == as_float(ch[f"B_{s}"], "sequence")
        assert row["nodes"] == as_float(ch[f"n_{s}"], "node")
        assert row["t"] == pytest.approx(as_float(ch[f"t_{s}"], "s"), rel=1e-12)


def test_step_meets_tpot_and_ttft(ck):
    ch = ck["chain"]
    assert as_float(ch["t_a"], "s") <= fr.CLAIM["slo_tpot_s"]
    assert as_float(ch["T1_a"], "s") <= fr.CLAIM["slo_ttft_s"]


def test_more_hits_fewer_nodes(ck):
    nodes = fr.hit_curve(ck["chain"])["nodes"]
    assert all(a >= b for a, b in zip(nodes, nodes[1:])) and nodes[0] > nodes[-1]


def test_compute_bound_rate_ignores_the_tpot_objective(ck):
    ch = ck["chain"]
    h = as_float(ch["h_a"])
    assert fr.replica(ch, h, L=0.2)["X"] == pytest.approx(fr.replica(ch, h)["X"], rel=1e-9)


@pytest.mark.parametrize("bad, match", [(dict(slo_tpot_s=0.5), "slo_tpot_s"), (dict(sim_replicas=1), "sim_replicas"),
                                        (dict(sim_replicas=fr.MAX_SIM_REPLICAS + 1), "sim_replicas"),
                                        (dict(gpus_per_replica=3), "gpus_per_replica"),
                                        (dict(n_params=7e10, model="llama-3-8b"), "n_params"),
                                        (dict(load_epsilon=0.0), "load_epsilon"), (dict(model="llama-9"), "model")])
def test_bad_inputs_refused(bad, match):
    with pytest.raises(ParameterError, match=match):
        chains.check("fleet-10k-rps", **bad)


def test_step_is_the_batching_modules_step(ck):
    """The chain's step equals utils.serving.batching.step_time with the chunk's bytes and FLOPs, on an engine whose
    bandwidth and FLOP rate are the achieved shares of the peaks."""
    from utils.serving import batching
    ch = ck["chain"]
    g = as_float(ch["g"], "GPU")
    e = batching.Engine(wbytes=as_float(ch["N_r"] * ch["b_w"], "byte"), kvs=as_float(ch["kv_u"], "byte/sequence"),
                        W=g * as_float(ch["eta_W"] * ch["W"], "byte/s/GPU"),
                        P=g * as_float(ch["eta_P"] * ch["P"], "FLOP/s/GPU"),
                        f=as_float(ch["f"], "FLOP/sequence"), kNa=as_float(ch["k"] * ch["N_a"], "FLOP/token"),
                        att=as_float(ch["I_kv"] * ch["kappa"], "FLOP/token"), akv=as_float(ch["rho"] * ch["kappa"], "byte/token"))
    B, c = as_float(ch["B_a"], "sequence"), as_float(ch["c_a"], "token")
    x = as_float(ch["x_a"], "token/sequence")
    t = batching.step_time(e, B, chunk_bytes=e.akv * c, chunk_flops=c * (e.kNa + e.att * x))
    assert t == pytest.approx(as_float(ch["t_a"], "s"), rel=1e-9)


def test_the_step_runs_at_the_shared_achieved_fractions():
    """No rate at 100% of a peak: the defaults are the catalog's measured shares (utils.roofline), a reader may
    change them, and at the datasheet roofs the fleet can only shrink."""
    from utils import roofline
    d = chains.spec("fleet-10k-rps").defaults()
    assert (d["compute_fraction"], d["bandwidth_fraction"]) == roofline.FRACTIONS
    base = chains.derive("fleet-10k-rps")
    roof = chains.derive("fleet-10k-rps", compute_fraction=1.0, bandwidth_fraction=1.0)
    assert roof["nodes_affinity"].m <= base["nodes_affinity"].m
    assert roof["step_time_affinity"].m <= base["step_time_affinity"].m


def test_inputs_cite_their_parameters_at_the_defaults(ck):
    """A parameter's row shows the parameter's own source while it holds its default, "parameters cell" once changed."""
    own = {p.name: p.source for p in fr.PARAMETERS}
    at_default = {r.name: r.source for r in ck["chain"].rows}
    assert (at_default["lamda"], at_default["L"], at_default["H"]) == (
        own["request_rate"], own["slo_tpot_s"], own["headroom"])
    changed = {r.name: r.source for r in fr.fleet_chain(fr.SPEC.check(headroom=0.3), ck["chain"].data["sim"], 500.0,
                                                           100.0).rows}
    assert changed["H"] == "parameters cell" and changed["lamda"] == own["request_rate"]


def test_the_routers_order_holds_on_every_seed(ck):
    assert len(ck["prefilled"]) == fr.SEEDS >= 5
    assert all(s["index"] < s["affinity"] < s["random"] for s in ck["prefilled"])
    assert ck["prefilled"][0]["affinity"] == pytest.approx(1 - as_float(ck["chain"]["h_a"]), abs=1e-12)
