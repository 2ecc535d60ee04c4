"""Accelerators and runs: TPU v4 and v5p, H100 PCIe, MI325X, and PaLM's pre-training run
with its model, each figure against the source and table it was read from."""
from __future__ import annotations

import pytest

from utils import catalog, chains
from utils.models import param_count
from utils.units import Q_

NEW = ("tpu-v4", "tpu-v5p", "h100-pcie", "mi325x")


def test_new_accelerators_are_in_the_catalog_with_dated_sources():
    assert set(NEW) <= set(catalog.keys("accelerator"))
    for key in NEW:
        e = catalog.accelerator(key)
        for name, v in e.values.items():
            for x in (v, *v.alternatives):
                assert x.source.url.startswith("https://") and x.source.read == "2026-12-01", f"{key}.{name}"
                assert x.kind in catalog.KINDS
                assert x.kind == "spec" or x.note, f"{key}.{name}: a non-spec value needs a note"


def test_tpu_v4_datasheet_figures():
    """Google Cloud, TPU v4 system architecture: 275 TFLOP/s bf16, 32 GiB HBM2 at 1,200 GB/s, 4,096 chips a pod."""
    e = catalog.accelerator("tpu-v4")
    assert e.q("bf16_dense").to("TFLOP/s").m == pytest.approx(275)
    assert e.q("hbm_capacity") == Q_(32, "GiB")                       # binary, as printed
    assert e.q("hbm_capacity").to("GB").m == pytest.approx(34.36, rel=1e-3)
    assert e.q("hbm_bandwidth").to("GB/s").m == 1200
    assert e["power_measured_max"].kind == "measured"
    assert "bf16_sparse" not in e and "tdp" not in e                 # Google publishes neither


def test_tpu_v5p_keeps_both_capacity_units():
    """TPU v5p: 459 TFLOP/s bf16, 2,765 GB/s; 95 GB on one revision of the page, 95 GiB on the newer one."""
    e = catalog.accelerator("tpu-v5p")
    assert e.q("bf16_dense").to("TFLOP/s").m == pytest.approx(459)
    assert e.q("hbm_bandwidth").to("GB/s").m == 2765
    assert e.q("hbm_capacity") == Q_(95, "GB")
    assert [a.q for a in e["hbm_capacity"].alternatives] == [Q_(95, "GiB")]
    assert e.q("scaleup_bandwidth_bidirectional") == 2 * e.q("scaleup_bandwidth_unidirectional")
    assert e.q("scaleup_bandwidth_unidirectional").to("Gbit/s").m == pytest.approx(4800)   # 'ICI BW 4800 Gbps'


def test_h100_pcie_is_the_sxm_die_cut_down():
    """NVIDIA's H100 table: PCIe BF16 1,513 TFLOPS with sparsity (dense half), 80 GB HBM2e at 2,000 GB/s,
    114 SMs, 350 W (product brief), against SXM5's 1,979 / 3,350 GB/s / 132 SMs / 700 W."""
    pcie, sxm = catalog.accelerator("h100-pcie"), catalog.accelerator("h100-sxm")
    assert pcie.q("bf16_dense").to("TFLOP/s").m == pytest.approx(756.5)
    assert pcie.q("bf16_sparse") == 2 * pcie.q("bf16_dense")
    assert pcie.q("hbm_bandwidth").to("GB/s").m == 2000 and pcie.q("tdp").to("W").m == 350
    assert [a.q.to("W").m for a in pcie["tdp"].alternatives] == [300]
    # the dense rate scales with the SMs enabled and the clock: 114/132 of SXM's rate, at a lower boost clock
    assert pcie.q("bf16_dense") / sxm.q("bf16_dense") < pcie.q("sm_count") / sxm.q("sm_count")
    assert pcie.q("scaleup_link") == "pcie5-x16"
    assert pcie.q("scaleup_bandwidth_bidirectional") == catalog.interconnect("pcie5-x16").q("bandwidth_bidirectional")


def test_mi325x_is_mi300x_with_more_hbm():
    mi325, mi300 = catalog.accelerator("mi325x"), catalog.accelerator("mi300x")
    assert mi325.q("bf16_dense") == mi300.q("bf16_dense")
    assert mi325.q("hbm_capacity") == Q_(256, "GB") and mi325.q("hbm_bandwidth").to("TB/s").m == 6.0
    assert [a.q for a in mi325["hbm_capacity"].alternatives] == [Q_(256, "GiB")]
    assert mi325["bf16_sparse"].kind == "assumption"


# --- PaLM: the run and the model ----------------------------------------------------------------------
def test_palm_model_counts_to_its_published_size():
    """PaLM Table 1: 540.35B parameters; counting the architecture (118 layers, 18,432 wide, 48 heads of 256,
    one K/V head, SwiGLU of 4 d_model, 256k tied vocabulary) gives 540.36B."""
    m = catalog.model("palm-540b")
    counted = param_count(m)["total"].to("parameter").m
    assert counted == pytest.approx(m.q("params_total").to("parameter").m, rel=1e-4)
    assert param_count(m)["active"] == param_count(m)["total"]          # dense, tied: every weight is used


def test_palm_run_figures_are_consistent():
    """PaLM: 6ND on 540B and 780B tokens is its compute table's 2527.2 ZFLOP; 238.3K tokens/s at 6N + 12LHQT
    per token on 6,144 chips of 275 TFLOP/s is its 46.2% MFU (Table 3, Appendix B)."""
    run = catalog.run("palm-540b-pretraining")
    assert run.q("model") == "palm-540b" and run.q("accelerator") == "tpu-v4"
    assert 6 * 540e9 * run.q("tokens").to("token").m == pytest.approx(run.q("train_flops").to("FLOP").m, rel=1e-6)
    m = catalog.model("palm-540b")
    n = param_count(m)["active"].to("parameter").m
    L, hq, T = m.q("n_layers").m, m.q("n_heads").m * m.q("head_dim").m, run.q("seq_len").to("token").m
    achieved = run.q("tokens_per_second").to("token/s").m * (6 * n + 12 * L * hq * T)
    peak = run.q("chips").to("GPU").m * catalog.accelerator("tpu-v4").q("bf16_dense").to("FLOP/s").m
    assert achieved / peak == pytest.approx(run.q("mfu").m, abs=0.0005)
    assert run.q("chips").m == 2 * run.q("chips_half").m == 6144


def test_rederive_fleet_size_on_tpu_v4_gives_palms_6144_chips():
    """fleet-size --set gpu=tpu-v4 with PaLM's size, tokens, MFU and basis, and the compute time its throughput
    implies (780B / 238.3K tokens/s = 37.9 days, not the 1,200 + 336 hours of wall clock): 6,144 chips within
    0.15% (the rounding of the printed 46.2% and 238.3K)."""
    run = catalog.run("palm-540b-pretraining")
    days = (run.q("tokens") / run.q("tokens_per_second")).to("day").m
    d = chains.derive("fleet-size", gpu="tpu-v4", model="palm-540b", n_tokens=780e9, mfu=0.462,
                      mfu_basis="6N+attention", seq_len=2048, run_days=days, headroom=0.0, gpus_per_node=4)
    assert d["gpus_exact"].to("GPU").m == pytest.approx(6144, rel=0.0015)


# --- Accelerators of current MLPerf submissions ---------------------------------------------
MLPERF_CURRENT = ("tpu-v5e", "tpu-v6e", "h20", "b300", "l40s", "gb300", "mi355x", "gaudi3", "trainium2")


@pytest.mark.parametrize("key", MLPERF_CURRENT)
def test_mlperf_accelerators_have_a_sourced_dense_rate_and_bandwidth(key):
    """The two numbers every roofline needs, each read from a dated source on the day it was read."""
    e = catalog.accelerator(key)
    for name in ("bf16_dense", "hbm_bandwidth"):
        v = e[name]
        assert v.source.url.startswith("https://") and v.source.read == "2026-12-06", f"{key}.{name}"
        assert v.kind == "spec" and v.note, f"{key}.{name}: a datasheet figure quoted in its note"
    # a sparse headline never stands in for the dense rate: where both exist, dense is the half
    if "bf16_sparse" in e:
        assert e.q("bf16_sparse") == 2 * e.q("bf16_dense")


def test_tpu_v5e_and_v6e_figures():
    """Google's tables: v5e 197 TFLOP/s, 16 GB at 819 GBps (800 GiBps in the newer table); v6e 918 TFLOP/s,
    32 GB at 1,638 GBps; 256 chips a pod, whose bf16 peak is the newer tables' 50.63 and 234.9 PFLOPs."""
    v5e, v6e = catalog.accelerator("tpu-v5e"), catalog.accelerator("tpu-v6e")
    assert v5e.q("hbm_bandwidth").to("GB/s").m == 819
    assert [a.q.to("GB/s").m for a in v5e["hbm_bandwidth"].alternatives] == pytest.approx([800 * 2**30 / 1e9])
    assert v6e.q("hbm_capacity") == Q_(32, "GB") and v6e.q("hbm_bandwidth").to("GB/s").m == 1638
    # the chip row prints 197 (rounded down), the pod row 50.63 PFLOPs: 197.8 a chip
    assert (v5e.q("pod_chips").m * v5e.q("bf16_dense")).to("PFLOP/s").m == pytest.approx(50.63, rel=0.005)
    assert (v6e.q("pod_chips").m * v6e.q("bf16_dense")).to("PFLOP/s").m == pytest.approx(234.9, rel=0.001)  # 235.0


def test_h20_trades_compute_for_memory():
    """H20 against H100 SXM: 15% of the dense rate, more memory and bandwidth, the same NVLink 4."""
    h20, h100 = catalog.accelerator("h20"), catalog.accelerator("h100-sxm")
    assert (h20.q("bf16_dense") / h100.q("bf16_dense")).to("").m == pytest.approx(0.15, abs=0.005)
    assert h20.q("hbm_capacity") > h100.q("hbm_capacity") and h20.q("hbm_bandwidth") > h100.q("hbm_bandwidth")
    assert h20.q("scaleup_link") == h100.q("scaleup_link") == "nvlink4"


def test_b300_is_b200_compute_with_more_memory_and_no_fp4_guess():
    b300, b200 = catalog.accelerator("b300"), catalog.accelerator("b200")
    for p in ("bf16_dense", "fp8_dense", "tf32_dense"):
        assert b300.q(p) == b200.q(p) or p == "tf32_dense", p
    assert b300.q("hbm_capacity") == Q_(288, "GB") and b300.q("hbm_bandwidth").to("TB/s").m == pytest.approx(8)
    assert "fp4_dense" not in b300 and "fp4" in b300.notes.lower()                # the sources disagree; said why


def test_h800_is_h100_with_nvlink_and_fp64_cut():
    """The same GH100 die: H100 SXM's tensor rates (marked assumption: the sources compare only the cuts),
    NVLink 400 GB/s a GPU against 900, and DeepSeek's 160 GB/s kept beside it on the link."""
    h800, h100 = catalog.accelerator("h800"), catalog.accelerator("h100-sxm")
    assert h800.q("bf16_dense") == h100.q("bf16_dense") and h800["bf16_dense"].kind == "assumption"
    assert h800.q("scaleup_bandwidth_bidirectional").to("GB/s").m == 400
    link = catalog.interconnect(h800.q("scaleup_link"))
    assert link.q("bandwidth").to("GB/s").m == 160 and link.q("bandwidth_bidirectional").to("GB/s").m == 400
    assert h800.q("fp64").to("TFLOP/s").m == 1


def test_l40s_sparse_headline_is_not_twice_its_dense_rate():
    """NVIDIA prints bf16 362.05 dense and 733 sparse: the stored sparse rate is twice the dense one, the printed
    733 kept as an alternative."""
    e = catalog.accelerator("l40s")
    assert e.q("bf16_sparse") == 2 * e.q("bf16_dense")
    assert [a.q.to("TFLOP/s").m for a in e["bf16_sparse"].alternatives] == [733]
    assert e.q("scaleup_link") == "pcie4-x16" and e.q("hbm_bandwidth").to("GB/s").m == 864


def test_gb300_rack_totals_are_72_gpus():
    """The GB300 NVL72 rack's 1,080 PFLOPS dense FP4 and 720 PFLOPS sparse FP8 are 72 of the per-GPU rates."""
    e = catalog.accelerator("gb300")
    assert (72 * e.q("fp4_dense")).to("PFLOP/s").m == pytest.approx(1080)
    assert (72 * e.q("fp8_sparse")).to("PFLOP/s").m == pytest.approx(720)
    assert "fp4_sparse" not in e                                   # 1,440 / 72 = 20, not twice 15


def test_mi355x_rates_are_its_cus_times_the_clock():
    """ISSCC: 8,192 FP8 FLOP a clock a CU, 32 CUs on each of 8 XCDs, 2.4 GHz: 5.03 PFLOPS ('five petaflops')."""
    e = catalog.accelerator("mi355x")
    assert e.q("fp8_dense").to("FLOP/s").m == pytest.approx(8192 * 256 * 2.4e9, rel=1e-4)
    assert e.q("fp4_sparse").to("PFLOP/s").m == pytest.approx(20.1, abs=0.05)  # Tom's Hardware's 20.1
    assert e.q("hbm_capacity") == Q_(288, "GB") and e.q("tdp").to("W").m == 1400


def test_gaudi3_and_trainium2_publish_no_sparse_pair():
    g, t = catalog.accelerator("gaudi3"), catalog.accelerator("trainium2")
    assert g.q("fp8_dense") == g.q("bf16_dense")                     # one matrix rate for both
    assert t.q("fp8_dense").to("TFLOP/s").m == 1299 and t.q("hbm_capacity") == Q_(96, "GiB")
    for e in (g, t):
        assert not any(n.endswith("_sparse") for n in e.values)
