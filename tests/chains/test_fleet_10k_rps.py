"""fleet-10k-rps: the claims with their verdicts, the chain's arithmetic against its float twin, bad
inputs refused, and properties (a better hit rate, fewer nodes; a compute-bound replica's rate does not
depend on the TPOT objective)."""
import pytest

from utils import chains
from utils.chain import as_float
from utils.chains import fleet_10k_rps as fr
from utils.params import ParameterError
from utils.verdicts import HOLDS, READING


@pytest.fixture(scope="module")
def ck():
    return fr.checks()


def test_claims_and_verdicts(ck):
    got = {c.name: c.verdict for c in fr.claims()}
    assert got == {"hundreds-of-nodes": READING, "router-knows": READING, "slo-pair-batch": HOLDS}
    ch = ck["chain"]
    assert 100 <= as_float(ch["n_a"], "node") < as_float(ch["n_r"], "node") < 1000


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
                                        (dict(gpus_per_replica=3), "gpus_per_replica"), (dict(n_params=7e10), "n_params"),
                                        (dict(load_epsilon=0.0), "load_epsilon"), (dict(model="llama-9"), "model")])
def test_bad_inputs_refused(bad, match):
    with pytest.raises(ParameterError, match=match):
        chains.check("fleet-10k-rps", **bad)


def test_step_is_the_batching_modules_step(ck):
    """The chain's step equals utils.serving.batching.step_time with the chunk's bytes and FLOPs, over the efficiency."""
    from utils.serving import batching
    ch = ck["chain"]
    g = as_float(ch["g"], "GPU")
    e = batching.Engine(wbytes=as_float(ch["N_r"] * ch["b_w"], "byte"), kvs=as_float(ch["kv_u"], "byte/sequence"),
                        W=g * as_float(ch["W"], "byte/s/GPU"), P=g * as_float(ch["P"], "FLOP/s/GPU"),
                        f=as_float(ch["f"], "FLOP/sequence"), kNa=as_float(ch["k"] * ch["N_a"], "FLOP/token"),
                        att=as_float(ch["I_kv"] * ch["kappa"], "FLOP/token"), akv=as_float(ch["rho"] * ch["kappa"], "byte/token"))
    B, c = as_float(ch["B_a"], "sequence"), as_float(ch["c_a"], "token")
    x = as_float(ch["x_a"], "token/sequence")
    t = batching.step_time(e, B, chunk_bytes=e.akv * c, chunk_flops=c * (e.kNa + e.att * x)) / as_float(ch["e"])
    assert t == pytest.approx(as_float(ch["t_a"], "s"), rel=1e-9)
