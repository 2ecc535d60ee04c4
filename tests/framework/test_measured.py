"""The chapter-facing helper: prediction beside the newest record, residual and provenance, or a plain
"not yet measured"; the ceilings; the listing page. Records here come from the harness itself, run with
a fake timer that reports itself as CUDA events on an NVIDIA H200 (so the reader does not skip them)."""
import io
import json
from pathlib import Path

import pytest

from utils import measured as D
from utils.gpu import harness as M
from utils.units import Q_, DimensionalityError

ROOT = Path(__file__).resolve().parents[2]


class H200Fake(M.FakeRuntime):
    timer = "cuda-events"

    def device_info(self):
        return {**super().device_info(), "gpu": "NVIDIA H200", "capability": "9.0"}


def harness_run(out: Path, argv=(), stamp: str | None = None, **fake) -> None:
    rc = M.main(["--out", str(out), *argv], runtime=H200Fake(**fake), mode="tiny", stdout=io.StringIO(),
                stderr=io.StringIO())
    assert rc == 0
    for path in out.glob("*.json"):        # stand in for a full-size run (and, if asked, another date)
        rec = json.loads(path.read_text())
        if rec["mode"] == "full":
            continue
        rec["mode"] = "full"
        if stamp:
            rec["provenance"]["date"] = f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[9:11]}:{stamp[11:13]}:{stamp[13:15]}Z"
            rec["provenance"]["run_id"] = stamp
        path.unlink()
        (out / M.record_filename(rec)).write_text(json.dumps(rec))


@pytest.fixture(scope="module")
def recs(tmp_path_factory):
    out = tmp_path_factory.mktemp("measurements")
    # the measurements these tests read, not the whole harness (that is tests/gpu/test_harness.py's job)
    harness_run(out, ["--only", "copy-bandwidth", "matmul-rate", "launch-overhead", "gemm-batch-sweep"],
                stamp="20260101T000000Z", bandwidth=3.0e12)
    harness_run(out, ["--only", "copy-bandwidth"], bandwidth=4.3e12, rate=7.9e14, launch_s=1e-9)
    return out


@pytest.fixture
def h100_catalog(monkeypatch):
    """Tie the fake H200 to the H100 entry the catalog has had from the start, so these tests do not
    depend on which accelerators the catalog holds today."""
    monkeypatch.setattr(D, "catalog_key", lambda gpu: "h100-sxm" if "H200" in gpu or gpu == "h100-sxm" else None)


def test_not_yet_measured_says_so_plainly(tmp_path):
    c = D.compare("copy-bandwidth", Q_(4.8, "TB/s"), label="Copy bandwidth", directory=tmp_path)
    assert c.measured is None and c.residual is None and c.record is None
    for text in (str(c), c._repr_markdown_(), c._repr_html_()):
        assert "not yet measured" in text and "4.80 TB/s" in text and "make measure" in text
    assert str(c) == str(D.compare("copy-bandwidth", Q_(4.8, "TB/s"), label="Copy bandwidth", directory=tmp_path))
    assert D.latest("copy-bandwidth", directory=tmp_path) is None
    assert D.ceilings(directory=tmp_path) is None


def test_compare_shows_prediction_measurement_residual_and_provenance(recs):
    rec = D.latest("copy-bandwidth", directory=recs)
    c = D.compare("copy-bandwidth", Q_(4.8, "TB/s"), label="Copy bandwidth", directory=recs)
    measured = rec["metrics"]["bandwidth"]["value"]
    assert c.measured.to("B/s").magnitude == pytest.approx(measured)
    assert c.residual == pytest.approx(measured / 4.8e12 - 1)
    text = str(c)
    for part in ("predicted", "4.80 TB/s", "measured", "residual", "(measured / predicted - 1)", "median of 3 runs",
                 "NVIDIA H200", "torch ", "triton ", rec["provenance"]["date"][:10], rec["_file"]):
        assert part in text, part
    md = c._repr_markdown_()
    assert md.startswith("**Copy bandwidth**") and "| residual |" in md and "not yet measured" not in md
    assert "<table>" in c._repr_html_()
    assert str(c) == str(D.compare("copy-bandwidth", Q_(4.8, "TB/s"), label="Copy bandwidth", directory=recs))


def test_the_newest_record_wins_and_gpu_filters(recs):
    old, new = D.records("copy-bandwidth", directory=recs)
    assert old["provenance"]["date"] < new["provenance"]["date"]
    assert D.latest("copy-bandwidth", directory=recs)["_file"] == new["_file"]
    assert D.latest("copy-bandwidth", "h200", directory=recs)["_file"] == new["_file"]
    assert D.latest("copy-bandwidth", "NVIDIA H200", directory=recs) is not None
    assert D.latest("copy-bandwidth", "a100", directory=recs) is None
    assert D.latest("launch-overhead", directory=recs)["provenance"]["run_id"] == "20260101T000000Z"
    assert D.latest("launch-overhead", directory=recs, include_quick=True) is not None


def test_other_metrics_and_their_units(recs):
    c = D.compare("copy-bandwidth", Q_(4000, "GB/s"), metric="bandwidth_triton", directory=recs)
    assert c.metric == "bandwidth_triton" and "triton" in str(c)
    knee = D.compare("gemm-batch-sweep", 206, directory=recs)
    assert knee.metric == "knee_m" and knee.measured.unitless and "from the medians of the sweep" in str(knee)
    t = D.compare("launch-overhead", Q_(5, "us"), directory=recs)
    assert t.measured.check("[time]") and "µs" in dict(t.rows())["predicted"]
    with pytest.raises(KeyError, match="has no metric"):
        D.compare("copy-bandwidth", Q_(1, "TB/s"), metric="nope", directory=recs)
    with pytest.raises(DimensionalityError):
        D.compare("copy-bandwidth", Q_(1, "TFLOP/s"), directory=recs)
    with pytest.raises(KeyError, match="unknown measurement"):
        D.compare("nope", None, directory=recs)


def test_the_datasheet_figure(recs, h100_catalog):
    c = D.compare("matmul-rate", directory=recs)        # no prediction given: the datasheet stands in
    assert c.predicted.to("FLOP/s").magnitude == pytest.approx(989.4e12)
    c = D.compare("copy-bandwidth", Q_(4.8, "TB/s"), directory=recs)
    assert "datasheet" in str(c) and "3.35 TB/s" in str(c) and "of it" in str(c)
    ridge = D.datasheet("gemm-batch-sweep", "knee_m", "NVIDIA H200")[0]
    assert ridge.unitless and ridge.magnitude == pytest.approx(989.4e12 / 3.35e12)
    assert D.datasheet("launch-overhead", "launch_torch", "NVIDIA H200") is None
    nothing = D.compare("matmul-rate", directory=recs.parent / "nowhere", gpu="h100-sxm")
    assert nothing.measured is None and "989 TFLOP/s" in str(nothing)


def test_catalog_keys():
    assert D.catalog_key("NVIDIA H100 80GB HBM3") == "h100-sxm"
    assert D.catalog_key("NVIDIA H100 PCIe") == "h100-pcie", "a PCIe part is compared with its own datasheet, not the SXM's"
    assert D.catalog_key("Fake GPU (test)") is None


def test_ceilings_come_from_one_run(recs):
    c = D.ceilings(directory=recs)
    rec = D.latest("copy-bandwidth", directory=recs)
    assert c.gpu == "NVIDIA H200" and c.record == rec["_file"]
    assert c.copy_bandwidth.to("B/s").magnitude == pytest.approx(rec["ceilings"]["copy_bandwidth"]["value"])
    assert c.bf16_matmul_rate.to("FLOP/s").magnitude == pytest.approx(rec["ceilings"]["bf16_matmul_rate"]["value"])
    assert c.ridge.units == Q_(1, "FLOP/B").units
    assert D.ceilings("a100", directory=recs) is None


def test_fake_timer_records_are_never_read(tmp_path):
    rc = M.main(["--out", str(tmp_path), "--only", "copy-bandwidth"], runtime=M.FakeRuntime(), mode="tiny",
                stdout=io.StringIO(), stderr=io.StringIO())
    assert rc == 0 and list(tmp_path.glob("*.json"))
    assert D.records(directory=tmp_path) == [] and "not yet measured" in str(D.compare("copy-bandwidth", directory=tmp_path))


def test_a_broken_record_is_an_error(tmp_path):
    (tmp_path / "copy-bandwidth--x--20260101T000000Z.json").write_text('{"name": "copy-bandwidth"}')
    with pytest.raises(ValueError, match="not a valid measurement record"):
        D.latest("copy-bandwidth", directory=tmp_path)
    (tmp_path / "copy-bandwidth--x--20260101T000000Z.json").write_text("{")
    with pytest.raises(ValueError, match="not JSON"):
        D.latest("copy-bandwidth", directory=tmp_path)


def test_live_without_a_gpu_says_so(recs, monkeypatch):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    c = D.compare("copy-bandwidth", Q_(4.8, "TB/s"), live=True, directory=recs)
    assert "no GPU is present" in str(c)


def test_live_with_a_gpu_re_measures(recs, monkeypatch):
    monkeypatch.setattr(D, "_gpu_available", lambda: (True, ""))
    monkeypatch.setattr(M, "CudaRuntime", H200Fake)
    monkeypatch.setattr(D, "LIVE_MODE", "tiny")
    c = D.compare("copy-bandwidth", Q_(4.8, "TB/s"), live=True, directory=recs)
    row = dict(c.rows())["live"]
    assert row.endswith(")") and "now on NVIDIA H200 (tiny sizes; median of 3 runs" in row


def test_listing(recs, tmp_path, h100_catalog):
    assert str(D.listing(directory=tmp_path)).startswith("No measurement has been recorded yet")
    assert "\n" not in str(D.listing(directory=tmp_path))
    lst = D.listing(directory=recs)
    assert len(lst.rows) == len(D.records(directory=recs))
    text, md = str(lst), lst._repr_markdown_()
    assert text.splitlines()[0].split()[:2] == ["measurement", "GPU"]
    assert md.startswith("| measurement | GPU |") and md.count("\n") == len(lst.rows) + 1
    row = next(r for r in lst.rows if r[0] == "matmul-rate")
    assert row[1] == "NVIDIA H200" and row[4].startswith("bf16_rate ") and row[5] == "989 TFLOP/s" and row[6].endswith("%")
    assert next(r for r in lst.rows if r[0] == "launch-overhead")[5:] == ("-", "-")


def test_the_book_reads_its_own_folder():
    assert D.RECORDS == ROOT / "book" / "measurements" and D.RECORDS.is_dir()
    D.records()                    # every committed record is valid (there may be none)


def test_catalog_key_follows_the_memory_size_in_the_name():
    assert D.catalog_key("NVIDIA A100-SXM4-40GB") == "a100-sxm4-40gb"
    assert D.catalog_key("NVIDIA A100-SXM4-80GB") == "a100-sxm-80gb"
    assert D.catalog_key("NVIDIA H100 80GB HBM3") == "h100-sxm"
