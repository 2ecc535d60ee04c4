"""kernel-profile and occupancy-query (utils/gpu/measurements/kernel_profile.py, occupancy_query.py) without a
GPU: the records the fake runtime writes (every profile and query skipped, with its reason), ncu's CSV
parsed from strings built here, the skip paths (ncu missing, ncu unable to read the counters) and the
profiled path with ncu replaced by a stand-in, the occupancy query's check, and the limits the harness reads without
pint against the catalog's. Nothing here is a measurement."""
import io
import json
import subprocess
from pathlib import Path

import pytest

from utils.catalog import entry, keys
from utils.gpu import harness as M
from utils.gpu import occupancy as occ
from utils.gpu.kernel_profile import parse_ncu_csv
from utils.gpu.measurements import kernel_profile as kp
from utils.gpu.measurements import occupancy_query as oq

NAMES = ("kernel-profile", "occupancy-query")


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    out = tmp_path_factory.mktemp("profile-records")
    stdout, stderr = io.StringIO(), io.StringIO()
    rc = M.main(["--out", str(out), "--only", *NAMES], runtime=M.FakeRuntime(), mode="tiny", stdout=stdout,
                stderr=stderr)
    assert rc == 0, stderr.getvalue()
    recs = {r["name"]: r for r in (json.loads(p.read_text()) for p in out.glob("*.json"))}
    return recs, stderr.getvalue()


def test_under_the_fake_runtime_each_writes_a_valid_record_with_the_profile_and_query_skipped(records):
    recs, log = records
    assert set(NAMES) <= set(recs)
    for name in NAMES:
        M.validate(recs[name])
    prof, query = recs["kernel-profile"], recs["occupancy-query"]
    assert [s["variant"] for s in prof["skipped"]] == ["ncu-stride-1", "ncu-stride-32"]
    assert all(s["reason"] == "Nsight Compute needs a GPU (this runtime runs on the CPU)" for s in prof["skipped"])
    assert [s["variant"] for s in query["skipped"]] == [f"query-{k}" for k in oq.KERNELS]
    assert all("needs a GPU and libcuda" in s["reason"] for s in query["skipped"])
    assert all("\n" not in s["reason"] for s in prof["skipped"] + query["skipped"])
    # no number that was not measured: only the in-process timings, no counter, no query
    assert set(prof["metrics"]) == {"useful_bandwidth_s1", "useful_bandwidth_s32", "slowdown_s32"}
    assert not any(k.startswith(("blocks_per_sm", "regs_")) for k in query["metrics"])
    assert {c["variant"] for c in query["checks"]} == set(oq.KERNELS), "every kernel checked before it is timed"
    assert "ncu-stride-1 skipped" in log


# --- ncu's CSV ----------------------------------------------------------------------------------------

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
          '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def ncu_csv(values: dict, kernel: str = kp.KERNEL, kid: int = 0) -> str:
    rows = [f'"{kid}","4242","python3","127.0.0.1","{kernel}","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{m}","{u}","{v}"' for m, (v, u) in values.items()]
    return "\n".join(rows)


def csv_values(dram="12.08", sectors="4,194,304", requests="1,048,576") -> dict:
    return {kp.METRICS["dram_pct"]: (dram, "%"), kp.METRICS["memory_pct"]: ("82.41", "%"),
            kp.METRICS["l1_pct"]: ("61.5", "%"), kp.METRICS["duration"]: ("1,234,567", "nsecond"),
            kp.METRICS["sectors"]: (sectors, "sector"), kp.METRICS["requests"]: (requests, "request")}


def test_the_harness_reads_ncu_s_csv_with_the_chapter_s_parser():
    """One parser (utils.gpu.kernel_profile.parse_ncu_csv, tested in tests/gpu/test_kernel_profile.py): here, that it
    reads the rows this harness asks ncu for, past the program's output, with thousands separators."""
    text = "\n".join(["==PROF== Connected to process 4242", "some line the program printed", HEADER,
                      ncu_csv(csv_values()), "==PROF== Disconnected from process 4242",
                      ncu_csv({kp.METRICS["dram_pct"]: ("n/a", "%")}, kernel="other_kernel", kid=1)])
    got = {(launch.id, launch.kernel): launch.metrics for launch in parse_ncu_csv(text)}
    assert set(got) == {("0", kp.KERNEL), ("1", "other_kernel")}
    row = got[("0", kp.KERNEL)]
    assert row[kp.METRICS["dram_pct"]] == (12.08, "%")
    assert row[kp.METRICS["sectors"]] == (4194304.0, "sector")
    assert row[kp.METRICS["duration"]] == (1234567.0, "nsecond")
    assert got[("1", "other_kernel")][kp.METRICS["dram_pct"]] == (None, "%")


# --- the skip paths and the profiled path, ncu replaced ---------------------------------------------

def stand_in(monkeypatch, *, rc=0, stdout="", stderr="", differ=0, write_check=True):
    """ncu found at a made-up path; subprocess.run answers as ncu would, writing the child's check."""
    calls, real = [], subprocess.run
    monkeypatch.setattr(kp, "find_ncu", lambda: "/opt/fake/ncu")

    def run(cmd, **kw):
        if cmd[0] != "/opt/fake/ncu":                   # git, nvidia-smi: the real thing
            return real(cmd, **kw)
        calls.append(cmd)
        if cmd[1:] == ["--version"]:
            return subprocess.CompletedProcess(cmd, 0, "NVIDIA (R) Nsight Compute\nVersion 2025.3.1.0\n", "")
        if write_check:
            n, stride, path = cmd[-3:]
            Path(path).write_text(json.dumps({"n": int(n), "stride": int(stride), "differ": differ,
                                              "all_written": True}))
        return subprocess.CompletedProcess(cmd, rc, stdout, stderr)
    monkeypatch.setattr(kp.subprocess, "run", run)
    return calls


def test_ncu_missing_is_a_one_line_reason(monkeypatch):
    monkeypatch.setattr(kp, "find_ncu", lambda: None)
    assert kp.profile(1000, 32) == (None, "ncu (Nsight Compute) is not on the PATH")


def test_ncu_that_cannot_load_its_library_is_a_reason_not_a_number(monkeypatch):
    stand_in(monkeypatch, rc=1, write_check=False,
             stdout="==PROF== Connected to process 17\n==ERROR== Failed to initialize the profiler: LibraryNotLoaded\n")
    got, reason = kp.profile(1000, 1)
    assert got is None and "LibraryNotLoaded" in reason and "status 1" in reason and "\n" not in reason


def test_ncu_without_counter_permission_and_no_rows_is_a_reason(monkeypatch):
    stand_in(monkeypatch, rc=0, stdout="==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to "
                                        "access NVIDIA GPU Performance Counters\n==PROF== Disconnected\n")
    got, reason = kp.profile(1000, 1)
    assert got is None and "ERR_NVGPUCTRPERM" in reason and "no launch" in reason


def test_the_profile_runs_the_gather_in_a_child_under_ncu_with_the_clocks_left_alone(monkeypatch):
    calls = stand_in(monkeypatch, stdout=HEADER + "\n" + ncu_csv(csv_values()))
    got, version = kp.profile(1000, 32, timeout_s=5)
    cmd = calls[0]
    assert cmd[:3] == ["/opt/fake/ncu", "--clock-control", "none"] and "--csv" in cmd
    assert cmd[cmd.index("--metrics") + 1].split(",") == list(kp.METRICS.values())
    assert cmd[-3:-1] == ["1000", "32"] and "_child" in cmd[-4]
    assert got["dram_pct"] == (12.08, "%") and got["sectors"][0] == 4194304 and version == "Version 2025.3.1.0"


def test_a_profiled_kernel_that_fails_its_check_fails_the_measurement(monkeypatch):
    stand_in(monkeypatch, stdout=HEADER + "\n" + ncu_csv(csv_values()), differ=3)
    with pytest.raises(RuntimeError, match="failed its check"):
        kp.profile(1000, 32)


def test_through_the_harness_a_missing_ncu_is_recorded_and_a_working_one_gives_the_metrics(monkeypatch):
    monkeypatch.setattr(kp, "why_not_here", lambda rt: None)
    monkeypatch.setattr(kp, "find_ncu", lambda: None)
    rec = M.measure(M.REGISTRY["kernel-profile"], M.FakeRuntime(), "tiny")
    assert [s["reason"] for s in rec["skipped"]] == ["ncu (Nsight Compute) is not on the PATH"] * 2
    stand_in(monkeypatch, stdout=HEADER + "\n" + ncu_csv(csv_values()))
    rec = M.measure(M.REGISTRY["kernel-profile"], M.FakeRuntime(), "tiny")
    assert rec["skipped"] == []
    met = rec["metrics"]
    for s in kp.STRIDES:
        assert met[f"dram_pct_s{s}"]["value"] == 12.08 and met[f"dram_pct_s{s}"]["unit"] == "percent"
        assert met[f"memory_pct_s{s}"]["value"] == 82.41 and met[f"l1_pct_s{s}"]["value"] == 61.5
        assert met[f"sectors_per_request_s{s}"]["value"] == 4.0 and met[f"sectors_per_request_s{s}"]["unit"] == ""
        assert met[f"duration_s{s}"]["value"] == pytest.approx(1.234567e-3) and met[f"duration_s{s}"]["unit"] == "s"
        assert "clock-control none" in met[f"dram_pct_s{s}"]["note"]
    full = {**rec, "command": "test", "ceilings": None,
            "provenance": M.provenance(M.FakeRuntime(), M._dt.datetime(2026, 12, 1, tzinfo=M._dt.timezone.utc))}
    M.validate({k: full[k] for k in M._FIELD_ORDER})


# --- occupancy-query ----------------------------------------------------------------------------------

def test_the_limits_the_harness_reads_without_pint_are_the_catalog_s_on_every_gpu():
    launches = [(t, r, s) for t in (32, 64, 96, 128, 256, 384, 512, 1024, 1025) for r in (1, 16, 24, 32, 33, 40,
                64, 72, 96, 128, 168, 255, 256) for s in (0, 1, 4096, 48 * 1024, 100_000, 300_000)]
    seen = set()
    for gpu in keys("sm_limit"):
        lim, cap = occ.sm_limits(gpu), str(entry("sm_limit", gpu).q("compute_capability"))
        plain = oq.sm_limits_for(cap)        # the first GPU of that capability: the limits are the capability's
        assert plain is not None and all(plain[f] == getattr(lim, f) for f in occ.SMLimits.__dataclass_fields__), gpu
        if cap in seen:
            continue
        seen.add(cap)
        for t, r, s in launches:
            try:
                want = occ.occupancy(t, r, s, lim).blocks
            except ValueError:
                want = None
            assert oq.calculator_blocks(t, r, s, plain) == want, (gpu, t, r, s)
    assert {"8.0", "9.0"} <= seen and oq.sm_limits_for("0.0") is None


def test_the_query_check_fails_a_query_outside_one_to_the_block_limit():
    ok = M.CheckResult("fraction of elements that differ from the source", 0.0, 0.0, True)
    try:
        for blocks, passed in ((8, True), (0, False), (33, False), (32, True)):
            oq._QUERIES[7] = {"strided-s1": {"query": blocks, "hw_max": 32}}
            c = oq._with_query(lambda: ok, 7, "strided-s1")()
            assert c.passed is passed and "occupancy query" in c.metric
        assert oq._with_query(lambda: ok, 7, "max-occupancy")() is ok      # no query for it: the output check
    finally:
        oq._QUERIES.pop(7, None)


def test_the_record_the_query_writes_is_what_the_occupancy_chapter_compares():
    """occupancy-query's metrics (built from a stand-in query) carry what utils.chains.occupancy needs: the
    calculator there, on the record's registers, threads and shared memory, gives the harness's own
    blocks_per_sm_calc; a kernel whose query is missing is left out, and no record gives nothing."""
    from utils.chains import occupancy as oc
    size = {"n": 4096, "dtype": "float32"}
    results = [{"variant": k, "size": size, "median_s": 1e-6, "bandwidth": 1e9} for k in oq.KERNELS]
    lim = oq.sm_limits_for("9.0")
    launches = {"max-occupancy": (256, 16, 0), "register-blocked": (128, 72, 0), "strided-s1": (256, 26, 2048)}
    oq._QUERIES[4096] = {k: {"regs": r, "spills": 0, "shared": s, "threads": t, "query": 8, "hw_max": 32,
                             "calc": oq.calculator_blocks(t, r, s, lim), "limits": "sm_limits.toml"}
                         for k, (t, r, s) in launches.items()}
    met = oq._metrics(results)
    assert 4096 not in oq._QUERIES, "the metrics take this run's query"
    assert {"blocks_per_sm_query_max_occupancy", "blocks_per_sm_calc_register_blocked", "regs_strided_s1",
            "bandwidth_strided_s32"} <= set(met) and "regs_strided_s32" not in met
    calc = oc.calculator_on_record({"metrics": met}, "h200")
    assert set(calc) == {"max_occupancy", "register_blocked", "strided_s1"} == set(oc.QUERY_KERNELS) - {"strided_s32"}
    for k, blocks in calc.items():
        assert blocks == met[f"blocks_per_sm_calc_{k}"]["value"]
        t, r, s = launches[k.replace("_", "-")]
        assert blocks == occ.occupancy(t, r, s, occ.sm_limits("h200")).blocks
    assert oc.calculator_on_record(None, "h200") == {}


def test_the_child_checks_the_gather_it_launched(tmp_path):
    """The profiled program itself, on the CPU under the interpreter: one launch, then its output against
    the source, written for the parent."""
    path = tmp_path / "check.json"
    kp._child(["777", "32", str(path), "cpu"])
    assert json.loads(path.read_text()) == {"n": 777, "stride": 32, "differ": 0, "all_written": True}
