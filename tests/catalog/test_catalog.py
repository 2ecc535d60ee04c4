"""The catalog's data: provenance on every value, typed meaning, and the arithmetic the headlines imply."""
from __future__ import annotations

import datetime as dt
import re

import pytest

from utils import catalog
from utils.catalog.tables import format_value, markdown_table
from utils.units import Q_, DimensionalityError

TODAY = dt.date.today()          # a source read later than the day the test runs is a typo
KINDS = ("accelerator", "interconnect", "model", "run", "software")
PRECISIONS = ("tf32", "bf16", "fp8", "fp4")
REL = 1e-4  # vendors print sparse rates rounded from the exact product: 2 x 1,307.43 = 2,614.9


def all_values():
    """(kind, key, field, Value) for every value and every alternative of every entry."""
    for kind in KINDS:
        for key in catalog.keys(kind):
            for name, v in catalog.entry(kind, key).values.items():
                yield kind, key, name, v
                for a in v.alternatives:
                    yield kind, key, f"{name}[alt]", a


def test_expected_entries_exist():
    assert set(catalog.keys("accelerator")) == {"a100-sxm-80gb", "a100-sxm4-40gb", "h100-sxm", "h100-pcie", "h200", "b200",
                                                "gb200", "mi300x", "mi325x", "tpu-v4", "tpu-v5p",
                                                "tpu-v5e", "tpu-v6e", "h20", "b300", "h800", "l40s", "gb300",
                                                "mi355x", "gaudi3", "trainium2"}
    assert {"nvlink3", "nvlink4", "nvlink5", "pcie5-x16", "ib-ndr", "ib-xdr", "eth-400g", "eth-800g",
            "infinity-fabric"} <= set(catalog.keys("interconnect"))
    assert {"llama-3-8b", "llama-3-70b", "llama-3-405b", "deepseek-v3", "kimi-k2"} <= set(catalog.keys("model"))


@pytest.mark.parametrize("kind,key,name,v", list(all_values()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_value_has_a_dated_source_and_a_kind(kind, key, name, v):
    assert v.source.url.startswith(("https://", "http://")), f"{kind}.{key}.{name}: url {v.source.url!r}"
    assert v.source.title.strip(), f"{kind}.{key}.{name}: empty source title"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", v.source.read), f"{kind}.{key}.{name}: read {v.source.read!r}"
    assert dt.date.fromisoformat(v.source.read) <= TODAY, f"{kind}.{key}.{name}: read in the future"
    assert v.kind in catalog.KINDS


def test_assumptions_say_why():
    """An assumption without a note is a number nobody can check."""
    bare = [f"{k}.{key}.{n}" for k, key, n, v in all_values() if v.kind != "spec" and not v.note]
    assert not bare, bare


@pytest.mark.parametrize("key", catalog.keys("accelerator"))
def test_sparse_is_twice_dense(key):
    e = catalog.accelerator(key)
    pairs = [p for p in PRECISIONS if f"{p}_dense" in e and f"{p}_sparse" in e]
    # A chip whose vendor publishes no sparse rate (the TPUs) says so; every other has a pair to check.
    assert pairs or "no structured-sparsity rate" in e.notes, f"{key} has no dense/sparse pair to check"
    for p in pairs:
        dense, sparse = e.q(f"{p}_dense"), e.q(f"{p}_sparse")
        assert sparse.to("FLOP/s").magnitude == pytest.approx(2 * dense.to("FLOP/s").magnitude, rel=REL), p
    # A sparse figure never stands alone: the dense one the book computes with must be there too.
    for p in PRECISIONS:
        assert not (f"{p}_sparse" in e and f"{p}_dense" not in e), f"{key}: {p}_sparse without {p}_dense"


@pytest.mark.parametrize("kind,key", [(k, key) for k in ("accelerator", "interconnect") for key in catalog.keys(k)])
def test_bidirectional_is_twice_unidirectional(kind, key):
    e = catalog.entry(kind, key)
    stems = {n[: -len("_bidirectional")] for n in e.values if n.endswith("_bidirectional")}
    checked = 0
    for stem in stems:
        if f"{stem}_unidirectional" in e:
            bi, uni = e.q(f"{stem}_bidirectional"), e.q(f"{stem}_unidirectional")
            assert bi.to("GB/s").magnitude == pytest.approx(2 * uni.to("GB/s").magnitude, rel=REL), stem
            checked += 1
    assert checked or not stems, f"{key}: no bidirectional/unidirectional pair"


@pytest.mark.parametrize("key", catalog.keys("accelerator"))
def test_accelerator_units_and_links(key):
    e = catalog.accelerator(key)
    assert e.q("bf16_dense").check("[compute] / [time]")
    # nominal capacity is kept in the datasheet's own unit: GB for the GPUs, GiB where Google prints GiB
    assert e.q("hbm_capacity").units in (Q_(1, "GB").units, Q_(1, "GiB").units)
    assert e.q("hbm_bandwidth").check("[information] / [time]")
    if key.startswith("tpu-"):  # Google publishes no TDP and the chips have no NVLink-style switched link
        return
    if key == "trainium2":      # AWS prints its capacity in GiB and publishes no TDP
        assert e.q("hbm_capacity").units == Q_(1, "GiB").units and "no TDP" in e.notes
        return
    assert e.q("hbm_capacity").units == Q_(1, "GB").units, "a GPU's nominal capacity is kept in the datasheet's GB"
    assert e.q("tdp").check("[power]")
    link = e.q("scaleup_link")
    assert link in catalog.keys("interconnect"), f"{key}: scaleup_link {link!r} is not an interconnect"
    # The GPU's scale-up figure and the link's per-GPU figure must be the same number.
    assert e.q("scaleup_bandwidth_bidirectional").to("GB/s").magnitude == pytest.approx(
        catalog.interconnect(link).q("bandwidth_bidirectional").to("GB/s").magnitude)


def test_blackwell_and_cdna4_have_fp4_and_the_others_do_not():
    for key in catalog.keys("accelerator"):
        has = "fp4_dense" in catalog.accelerator(key)
        assert has == (key in ("b200", "gb200", "gb300", "mi355x")), key


def test_blackwell_figures_follow_the_columns_they_name():
    """B200 is the HGX B200 column (7.7 TB/s, 75 TFLOPS FP32), with the launch/DGX figures kept beside it;
    GB200's FP32 is the NVL72 column's 80, with Lockwood's 90 credited to his notes, not to the datasheet."""
    b200, gb200 = catalog.accelerator("b200"), catalog.accelerator("gb200")
    assert b200.q("hbm_bandwidth").to("TB/s").magnitude == pytest.approx(7.7)
    assert [a.q.to("TB/s").magnitude for a in b200["hbm_bandwidth"].alternatives] == [8]
    assert b200.q("fp32").to("TFLOP/s").magnitude == pytest.approx(75)
    assert [a.q.to("TFLOP/s").magnitude for a in b200["fp32"].alternatives] == [80]
    assert gb200.q("fp32").to("TFLOP/s").magnitude == pytest.approx(80)
    assert gb200["fp32"].source.id == "nvidia-blackwell-table"
    alt = gb200["fp32"].alternatives[0]
    assert alt.source.id == "klockwood-b200" and "Lockwood" in alt.note


def test_a100_40gb_and_80gb_differ_only_in_memory():
    a40, a80 = catalog.accelerator("a100-sxm4-40gb"), catalog.accelerator("a100-sxm-80gb")
    assert a40.q("hbm_bandwidth").to("GB/s").magnitude == 1555
    assert a80.q("hbm_bandwidth").to("GB/s").magnitude == 2039
    for field in ("bf16_dense", "fp32", "tdp", "scaleup_bandwidth_bidirectional"):
        assert a40.q(field) == a80.q(field), field


def test_pcie_lane_rate_is_a_transfer_rate_and_encoding_makes_the_data_rate():
    pcie = catalog.interconnect("pcie5-x16")
    assert pcie.q("lane_rate").to("GHz").magnitude == 32          # 32 GT/s, not 32 Gbit/s
    data = pcie.q("lane_data_rate")
    assert data.to("Gbit/s").magnitude == pytest.approx(32 * 128 / 130, rel=1e-5)
    assert (pcie.q("lanes").magnitude * data).to("GB/s").magnitude == pytest.approx(
        pcie.q("bandwidth_unidirectional").to("GB/s").magnitude, rel=1e-3)


def test_gb_and_gib_are_different_units():
    assert Q_(80, "GB") != Q_(80, "GiB")
    assert Q_(80, "GiB").to("GB").magnitude == pytest.approx(85.899, rel=1e-4)
    usable = catalog.accelerator("b200").q("hbm_capacity_usable")
    assert usable.units == Q_(1, "GiB").units
    # nvidia-smi's 183,359 MiB, read as GB, would be a 7% error.
    assert usable.to("GB").magnitude == pytest.approx(183359 * 2**20 / 1e9, rel=1e-4)
    assert catalog.accelerator("b200")["hbm_capacity_usable"].kind == "measured"


def test_quantities_refuse_to_mix_dimensions():
    e = catalog.accelerator("h100-sxm")
    with pytest.raises(DimensionalityError):
        e.q("hbm_capacity") + e.q("hbm_bandwidth")
    with pytest.raises(DimensionalityError):
        e.q("bf16_dense") + Q_(1, "FLOP")


def test_gb200_is_one_gpu_of_the_rack():
    gb = catalog.accelerator("gb200")
    assert "per" in gb.name.lower() and "72" in gb.name
    nv5 = catalog.interconnect("nvlink5")
    assert nv5.q("nvl72_domain_gpus").to("GPU").magnitude == 72
    per_gpu = nv5.q("nvl72_aggregate_bandwidth") / nv5.q("nvl72_domain_gpus")
    scaleup = gb.q("scaleup_bandwidth_bidirectional").to("GB/s").magnitude
    assert per_gpu.to("GB/s/GPU").magnitude == pytest.approx(scaleup, rel=0.01)


def test_switch_radices():
    assert catalog.interconnect("ib-ndr").q("switch_ports").magnitude == 64
    assert catalog.interconnect("ib-xdr").q("switch_ports").magnitude == 144
    assert catalog.interconnect("eth-800g").q("switch_ports").magnitude == 64
    ndr = catalog.interconnect("ib-ndr")
    assert (ndr.q("switch_ports") * ndr.q("bandwidth_bidirectional")).to("Tbit/s").magnitude == pytest.approx(
        ndr.q("switch_bandwidth_bidirectional").to("Tbit/s").magnitude)


def test_disagreements_are_kept():
    """The places where sources disagree keep the other figure as an alternative."""
    assert catalog.accelerator("b200")["tdp"].alternatives[0].q.to("W").magnitude == 1200
    assert {a.q.to("GB").magnitude for a in catalog.accelerator("b200")["hbm_capacity"].alternatives} == {192}
    assert catalog.accelerator("mi300x")["hbm_bandwidth"].alternatives[0].q.to("TB/s").magnitude == 5.325
    assert catalog.model("deepseek-v3")["params_total"].alternatives[0].q.magnitude == 685e9


@pytest.mark.parametrize("kind", KINDS)
def test_markdown_table_mentions_every_key_and_source(kind):
    text = markdown_table(kind)
    for key in catalog.keys(kind):
        assert f"`{key}`" in text, key
    for src in catalog.sources(kind).values():
        assert src.url in text and src.title in text, src.id
    assert "read 2026-11-29" in text
    lines = text.splitlines()
    header = lines[0]
    assert all(line.count("|") == header.count("|") for line in lines[2:2 + len(catalog.keys(kind))])
    assert text == markdown_table(kind), "the table must be deterministic"


def test_markdown_table_shows_alternatives_and_kinds():
    text = markdown_table("accelerator", ["hbm_bandwidth", "hbm_capacity_usable"], notes=False)
    assert "7.7 TB/s" in text and "(alt." in text
    assert "(measured)" in text
    assert "| `h100-sxm` | NVIDIA H100 SXM5 80GB |" in text and "| `h100-sxm` | 3.35 TB/s [" in text
    # Every reference used in the table is listed under it, and every listed one is used.
    used = set(re.findall(r" \[(\d+)\]", text.split("Sources:")[0]))
    listed = set(re.findall(r"^- \[(\d+)\] ", text.split("Sources:")[1], flags=re.M))
    assert used == listed and listed
    with pytest.raises(catalog.CatalogKeyError):
        markdown_table("nonsense")


def test_format_value():
    assert format_value(Q_(989.4e12, "FLOP/s")) == "989.4 TFLOP/s"
    assert format_value(Q_(80, "GB")) == "80 GB"
    assert format_value(Q_(128256, "")) == "128,256"
    assert format_value(False) == "no"


def test_run_entries_are_sourced_published_figures():
    """A run's figures are what its paper or model card printed: each with a source, and a note naming where."""
    assert {"llama-3-405b-pretraining", "llama-3-70b-pretraining"} <= set(catalog.keys("run"))
    for key in catalog.keys("run"):
        e = catalog.run(key)
        for name, v in e.values.items():
            assert v.source.id in catalog.sources("run") and v.source.url.startswith("https://"), f"{key}.{name}"
            assert v.note.strip(), f"{key}.{name}: a run figure needs the section it is printed in"
            # A run figure is what the source printed (spec, or measured-by-others where its authors measured it);
            # where the book reads it otherwise (a misprint), the value is an assumption that keeps the printed
            # figure as a spec alternative.
            assert v.kind in ("spec", "measured-by-others") or (
                v.kind == "assumption" and any(a.kind == "spec" for a in v.alternatives)), \
                f"{key}.{name}: an assumed run figure must keep the printed one as a spec alternative"
        # what a run measured is never a spec: its MFUs, rates and hours
        assert all(v.kind == "measured-by-others" for n, v in e.values.items()
                   if "mfu" in n or n in ("gpu_hours", "effective_training_time", "tokens_per_second")), key
        assert e.q("model") in catalog.keys("model"), key
        assert e.q("accelerator") in catalog.keys("accelerator"), key


def test_llama3_405b_run_is_consistent():
    run = catalog.run("llama-3-405b-pretraining")
    n = catalog.model(run.q("model")).q("params_total").to("parameter").magnitude
    d = run.q("tokens").to("token").magnitude
    assert (n, d) == (405e9, 15.6e12)
    # The paper's 3.8e25 FLOPs is 6ND on its own parameters and tokens, to within 1%.
    assert 6 * n * d == pytest.approx(run.q("train_flops").to("FLOP").magnitude, rel=0.01)
    assert run.q("interruptions_planned") + run.q("interruptions_unexpected") == run.q("interruptions")
    peak = catalog.accelerator(run.q("accelerator")).q("bf16_dense")
    for i in (1, 2, 3):
        row = {f: run.q(f"table4_row{i}_{f}").magnitude for f in ("gpus", "tp", "cp", "pp", "dp")}
        assert row["tp"] * row["cp"] * row["pp"] * row["dp"] == row["gpus"], i
        # Each row's global batch is data-parallel groups x sequences per group x sequence length: the 16M tokens.
        seq_len = run.q(f"table4_row{i}_seq_len").to("token").magnitude
        tokens = row["dp"] * run.q(f"table4_row{i}_batch_per_dp").magnitude * seq_len
        assert tokens == pytest.approx(run.q("batch_tokens").to("token").magnitude, rel=0.05), i
        # Table 4's MFU is its per-GPU rate over the dense bf16 peak, printed to a percentage point.
        mfu = (run.q(f"table4_row{i}_tflops_per_gpu") / peak).to("").magnitude
        assert mfu == pytest.approx(run.q(f"table4_row{i}_mfu").magnitude, abs=0.006), i


def test_transposed_table_lists_every_field_of_every_entry():
    from utils.catalog.tables import markdown_table
    text = markdown_table("run", transpose=True)
    for key in catalog.keys("run"):
        e = catalog.entry("run", key)
        assert f"`{key}`" in text
        for field in e.values:
            assert f"| {field} |" in text
