"""The measurement harness without a GPU: the whole record path end to end with a fake timer (every
registered measurement, tiny sizes, CPU tensors, Triton under the interpreter), the schema and its
validator, the command line's errors, and every committed record under book/measurements/.

What is left untested here is the timing itself (utils.measure.CudaRuntime)."""
import ast
import copy
import io
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from utils.gpu import harness as M

ROOT = Path(__file__).resolve().parents[2]
NAMES = list(M.REGISTRY)
FILE = re.compile(r"^(?P<name>[a-z0-9-]+)--(?P<gpu>[a-z0-9-]+)--(?P<stamp>\d{8}T\d{6}Z)\.json$")


def fake_run(out: Path, argv=(), **fake) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    rc = M.main(["--out", str(out), *argv], runtime=M.FakeRuntime(**fake), mode="tiny", stdout=stdout,
                stderr=stderr)
    return rc, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("records")
    rc, stdout, stderr = fake_run(out)
    records = {p.name: json.loads(p.read_text()) for p in sorted(out.glob("*.json"))}
    return rc, stdout, stderr, records


def test_every_measurement_writes_one_valid_record(full_run):
    rc, stdout, stderr, records = full_run
    assert rc == 0, stderr
    assert sorted(r["name"] for r in records.values()) == sorted(NAMES)
    run_ids = {r["provenance"]["run_id"] for r in records.values()}
    assert len(run_ids) == 1, "one run, one timestamp"
    for fname, rec in records.items():
        match = FILE.match(fname)
        assert match, fname
        assert (match["name"], match["gpu"], match["stamp"]) == (
            rec["name"], rec["provenance"]["gpu_slug"], rec["provenance"]["run_id"])
        M.validate(rec)
        assert M.errors(rec) == []


def test_the_persistent_softmax_and_autotuned_gemm_metrics(full_run):
    """The fused-softmax and gemm-tiling variants' metrics, read off the whole run's records."""
    *_, records = full_run
    by_name = {r["name"]: r for r in records.values()}
    soft = by_name["fused-softmax"]
    assert {r["variant"] for r in soft["results"]} == {"triton", "triton_persistent", "torch", "copy"}
    met = soft["metrics"]
    per = [v["value"] for k, v in met.items() if k.startswith("persistent_fraction_of_copy_")]
    assert len(per) == 2 and met["persistent_fraction_of_copy"]["value"] == min(per)
    assert met["persistent_fraction_of_copy"]["variant"] == "triton_persistent"
    gemm = by_name["gemm-tiling"]
    res = {r["variant"]: r for r in gemm["results"]}
    assert gemm["metrics"]["triton_over_torch"]["value"] == pytest.approx(res["torch"]["median_s"]
                                                                         / res["autotuned"]["median_s"])
    assert "BLOCK 32x32x32" in gemm["metrics"]["triton_over_torch"]["note"]
    assert gemm["metrics"]["flop_rate_autotuned"]["unit"] == "FLOP/s"


def test_records_carry_counts_samples_ceilings_and_provenance(full_run):
    *_, records = full_run
    ceilings = {json.dumps(r["ceilings"], sort_keys=True) for r in records.values()}
    assert len(ceilings) == 1, "every record of a run stores the same two ceilings"
    for rec in records.values():
        m = M.REGISTRY[rec["name"]]
        assert rec["sizes"] == m.sizes["tiny"] and rec["mode"] == "tiny"
        assert rec["command"].startswith("python3 -m utils.measure --out ")
        assert rec["method"]["timer"] == "fake" and rec["method"]["statistic"] == "median"
        assert rec["headline"] in rec["metrics"]
        variants = {r["variant"] for r in rec["results"]}
        assert {c["variant"] for c in rec["checks"]} == variants, "every timed variant was checked first"
        for r in rec["results"]:
            assert r["bytes"] == m.bytes(r["size"], r["variant"]) and r["flops"] == m.flops(r["size"], r["variant"])
            assert len(r["samples_s"]) == M.SETTINGS["tiny"].min_reps
            assert r["median_s"] == sorted(r["samples_s"])[len(r["samples_s"]) // 2]
        p = rec["provenance"]
        assert p["gpu"] == "Fake GPU (test)" and p["driver"]  # "unknown" where nvidia-smi is absent
        assert re.fullmatch(r"[0-9a-f]{40}|unknown", p["git_commit"])
        for key in ("torch", "triton", "python", "cuda", "date"):
            assert p[key]


def test_the_measurements_count_what_they_say():
    s = {"m": 4, "k": 8, "n": 16}
    sweep, mm = M.REGISTRY["gemm-batch-sweep"], M.REGISTRY["matmul-rate"]
    assert sweep.flops(s, "bf16") == 2 * 4 * 8 * 16
    assert sweep.bytes(s, "bf16") == 2 * (8 * 16 + 4 * 8 + 4 * 16)      # W once, x, y
    assert mm.bytes(s, "fp8") == (4 * 8 + 8 * 16) + 2 * 4 * 16           # fp8 in, bf16 out
    assert M.REGISTRY["copy-bandwidth"].bytes({"n": 10, "dtype": "float32"}, "torch") == 80  # read + write
    assert M.REGISTRY["host-device-copy"].bytes({"n": 10, "dtype": "float32"}, "h2d-pinned") == 40
    full = M.REGISTRY["gemm-batch-sweep"].sizes["full"]
    ms = [s["m"] for s in full]
    assert ms[0] == 1 and ms[-1] == 4096 and all(s["k"] * s["n"] * 2 >= 100e6 for s in full)
    big = M.REGISTRY["copy-bandwidth"].sizes["full"]
    assert all(2 * s["n"] * 4 >= 2**31 for s in big), "copies of at least a GiB a buffer, far past the L2"
    sm, fusion = M.REGISTRY["fused-softmax"], M.REGISTRY["kernel-fusion"]
    s = {"rows": 3, "cols": 10, "dtype": "bfloat16"}
    assert sm.bytes(s, "triton") == sm.bytes(s, "torch") == sm.bytes(s, "copy") == 2 * 3 * 10 * 2   # read + write
    assert sm.flops(s, "triton") == 5 * 30 and sm.flops(s, "copy") == 0
    assert all(s["rows"] * s["cols"] * M._DTYPES[s["dtype"]] == 2**28 for s in sm.sizes["full"]), \
        "every softmax tensor 256 MiB, far past the L2"
    assert {s["cols"] for s in sm.sizes["full"]} == {1024, 4096, 16384}
    s = {"n": 1000, "dtype": "bfloat16"}
    assert fusion.bytes(s, "eager") == 5 * fusion.bytes(s, "triton") == 5 * 2 * 1000 * 2     # five passes vs one
    assert fusion.bytes(s, "compile") == fusion.bytes(s, "copy") == fusion.bytes(s, "triton")
    from utils.gpu.kernels.fused_chain import N_OPS
    assert M.CHAIN_OPS == N_OPS == 5
    ns = [s["n"] for s in fusion.sizes["full"]]
    assert ns[0] * 2 <= 2**16 and ns[-1] * 2 >= 2**29, "from launch-bound sizes to half a GiB a tensor"


def test_the_table_is_printed_last(full_run):
    _, stdout, stderr, records = full_run
    lines = stdout.rstrip("\n").splitlines()
    assert lines[0].split()[:3] == ["measurement", "metric", "median"]
    for name in NAMES:
        row = next(line for line in lines if line.startswith(name + " "))
        assert any(f in row for f in records), f"{name}'s row names its record file"
    assert lines[-1].startswith("ceilings: copy ") and "bf16 matmul" in lines[-1] and "FLOP/B" in lines[-1]
    assert len(lines) == len(NAMES) + 3
    assert "the ceilings" in stderr and "check" not in stdout.lower()


def test_fp8_unavailable_is_recorded_as_skipped(tmp_path):
    rc, _, _ = fake_run(tmp_path, ["--only", "matmul-rate"], fp8=False)
    assert rc == 0
    (path,) = tmp_path.glob("matmul-rate--*.json")
    rec = json.loads(path.read_text())
    assert [s["variant"] for s in rec["skipped"]] == ["fp8"] and rec["skipped"][0]["reason"]
    assert {r["variant"] for r in rec["results"]} == {"bf16"} and "fp8_rate" not in rec["metrics"]


def test_fp8_runs_where_scaled_mm_works(full_run):
    *_, records = full_run
    (rec,) = [r for r in records.values() if r["name"] == "matmul-rate"]
    if rec["skipped"]:
        pytest.skip(f"torch._scaled_mm does not work on this CPU: {rec['skipped'][0]['reason']}")
    assert "fp8_rate" in rec["metrics"]


def test_a_failed_check_writes_no_record(tmp_path, monkeypatch):
    import utils.gpu.kernels
    monkeypatch.setattr(utils.gpu.kernels, "tick", lambda counter: None)       # launches that do nothing
    rc, stdout, stderr = fake_run(tmp_path, ["--only", "launch-overhead"])
    assert rc == 1
    assert list(tmp_path.glob("*.json")) == [], "the ceilings run anyway but only selected records are written"
    assert "launch-overhead    FAILED" in stdout and "check failed" in stdout


def test_failed_ceilings_still_write_the_other_records(tmp_path, monkeypatch):
    import utils.gpu.kernels

    def half_copy(src, out=None, **kw):
        out[: src.numel() // 2] = src[: src.numel() // 2]              # leaves half the output unwritten
        return out
    monkeypatch.setattr(utils.gpu.kernels, "copy", half_copy)
    rc, stdout, stderr = fake_run(tmp_path, ["--only", "copy-bandwidth", "host-device-copy"])
    records = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert rc == 1 and [r["name"] for r in records] == ["host-device-copy"]
    assert records[0]["ceilings"] is None
    M.validate(records[0])
    assert "the ceilings could not both be measured" in stderr
    assert "copy-bandwidth" in json.loads(next(tmp_path.glob("*.manifest")).read_text())["failed"]


# --- the schema and its validator ------------------------------------------------------------------

@pytest.fixture
def record(full_run):
    *_, records = full_run
    return copy.deepcopy(next(r for r in records.values() if r["name"] == "gemm-batch-sweep"))


@pytest.mark.parametrize("field", M.schema()["required"])
def test_a_record_missing_a_field_fails(record, field):
    del record[field]
    with pytest.raises(M.SchemaError, match=f"missing field '{field}'"):
        M.validate(record)


@pytest.mark.parametrize("edit,message", [
    (lambda r: r["provenance"].pop("git_commit"), "missing field 'git_commit'"),
    (lambda r: r["results"][0].pop("samples_s"), "missing field 'samples_s'"),
    (lambda r: r["results"][0].update(median_s=r["results"][0]["median_s"] * 1.1), "not the median"),
    (lambda r: r["results"][0].update(bandwidth=1.0), "bandwidth is not bytes / median_s"),
    (lambda r: r["results"][0]["samples_s"].append(-1.0), "<= 0"),
    (lambda r: r["results"].clear(), "fewer than 1 items"),
    (lambda r: r.update(headline="nope"), "is not one of the metrics"),
    (lambda r: r.update(extra=1), "unknown field 'extra'"),
    (lambda r: r["checks"][0].update(passed=False), "is not one of"),
    (lambda r: r["units"].update(bandwidth="GB/s"), "is not one of"),
    (lambda r: r["provenance"].update(date="yesterday"), "does not match"),
    (lambda r: r["ceilings"]["copy_bandwidth"].update(value="fast"), "expected number"),
    (lambda r: r.update(mode="full"), "a fake timer can only write a 'tiny' record"),
    (lambda r: r["results"][0].update(calls=True), "expected integer"),
])
def test_a_tampered_record_fails(record, edit, message):
    edit(record)
    with pytest.raises(M.SchemaError, match=re.escape(message)):
        M.validate(record)


def test_the_schema_is_json_schema_and_agrees_with_the_validator(full_run, record):
    jsonschema = pytest.importorskip("jsonschema")
    *_, records = full_run
    jsonschema.Draft202012Validator.check_schema(M.schema())
    for rec in records.values():
        jsonschema.validate(rec, M.schema())
    del record["provenance"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(record, M.schema())


def test_every_committed_record_is_valid_and_real():
    """Records come only from GPU runs; none is typed by hand (and there may be none yet)."""
    for path in sorted((ROOT / "book" / "measurements").glob("*.json")):
        rec = json.loads(path.read_text())
        M.validate(rec)
        assert FILE.match(path.name) and M.record_filename(rec) == path.name, path.name
        assert rec["method"]["timer"] == "cuda-events", f"{path.name} was not timed on a GPU"


# --- the command line -------------------------------------------------------------------------------

def run_cli(*args, env_extra=None):
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRITON_INTERPRET"}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "utils.measure", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env=env)


def test_without_a_gpu_it_says_so_in_one_line_and_exits_2():
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    run = run_cli()
    assert run.returncode == 2
    assert run.stdout == "" and len(run.stderr.strip().splitlines()) == 1
    assert "no CUDA GPU" in run.stderr


@pytest.mark.parametrize("args", [["--only", "nope"], ["--bogus"], ["--quick", "extra"], ["--only"]])
def test_bad_arguments_one_line_exit_2(args, capsys):
    assert M.main(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("utils.measure: ")


def test_list_and_help(capsys):
    assert M.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()] == NAMES
    assert M.main(["--help"]) == 0
    assert "--quick" in capsys.readouterr().out


def test_the_no_gpu_reasons(monkeypatch):
    import torch
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert "is_available() is False" in M._no_gpu_reason()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert "TRITON_INTERPRET" in M._no_gpu_reason()
    monkeypatch.delenv("TRITON_INTERPRET")
    assert M._no_gpu_reason() is None
    monkeypatch.setitem(sys.modules, "torch", None)
    assert "torch is not installed" in M._no_gpu_reason()


# --- small parts ------------------------------------------------------------------------------------

def test_choose_reps():
    s = M.Settings(warmup=1, warmup_s=0, min_reps=10, max_reps=100, target_s=1.0)
    assert M.choose_reps(1e-3, s) == 100 and M.choose_reps(0.05, s) == 20 and M.choose_reps(5.0, s) == 10
    assert M.choose_reps(0.0, s) == 100 and M.choose_reps(math.nan, s) == 100


def test_rotation_beats_the_cache():
    rt = M.FakeRuntime(l2=50 * 2**20)
    assert M.rotation(rt, 2**30) == 1
    n = M.rotation(rt, 128 * 2**20)
    assert n * 128 * 2**20 >= 4 * 50 * 2**20 and n == 2
    assert M.rotation(rt, 1) == 8, "capped"


def test_human():
    assert M.human(4.3e12, "B/s") == "4.30 TB/s"
    assert M.human(7.88e14, "FLOP/s") == "788 TFLOP/s"
    assert M.human(5.1e-6, "s") == "5.10 us"
    assert M.human(0, "B/s") == "0 B/s"
    assert M.human(206.4, "") == "206"


def test_provenance_fallbacks(monkeypatch):
    monkeypatch.setattr(M, "_run_text", lambda cmd: None)
    monkeypatch.delenv("BOOK_GIT_COMMIT", raising=False)
    assert M.git_state() == ("unknown", None, "none")
    assert M.driver_version() == "unknown"
    monkeypatch.setattr(M, "_run_text", lambda cmd: "580.159.04\n580.159.04" if cmd[0] == "nvidia-smi" else "x")
    assert M.driver_version() == "580.159.04"
    assert M.git_state() == ("unknown", None, "none")


def test_slug():
    assert M.slug("NVIDIA H200") == "nvidia-h200"
    assert M.slug("NVIDIA A100-SXM4-80GB") == "nvidia-a100-sxm4-80gb"
    assert M.slug("???") == "unknown"


def test_registry_refuses_duplicates_and_missing_modes():
    m = M.REGISTRY["copy-bandwidth"]
    with pytest.raises(ValueError, match="twice"):
        M.register(m)
    with pytest.raises(ValueError, match="every mode"):
        M.register(M.Measurement(**{**m.__dict__, "name": "x", "sizes": {"full": []}}))


def test_live_returns_an_unwritten_record():
    rec = M.live("copy-bandwidth", runtime=M.FakeRuntime(), mode="tiny")
    assert rec["ceilings"] is None and rec["metrics"]["bandwidth"]["value"] > 0
    with pytest.raises(KeyError):
        M.live("nope", runtime=M.FakeRuntime())


# --- what the GPU machine has: the standard library, numpy, torch and triton ------------------------

# Everything under utils/gpu/ (and the `python -m utils.measure` entry point): the harness, its schema, the
# measurements, the kernels and the GPU rules both sides use.
HARNESS = [ROOT / "utils" / "measure.py", *sorted((ROOT / "utils" / "gpu").rglob("*.py"))]


@pytest.mark.parametrize("path", HARNESS, ids=lambda p: str(p.relative_to(ROOT / "utils")))
def test_the_harness_imports_only_what_the_gpu_machine_has(path):
    allowed = set(sys.stdlib_module_names) | {"numpy", "torch", "triton", "utils"}
    tree = ast.parse(path.read_text())
    mods = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    bad = {m for m in mods if m.split(".")[0] not in allowed or (m.startswith("utils") and not m.startswith("utils.gpu"))}
    assert not bad, f"{path.name} imports {sorted(bad)}"


def test_the_harness_runs_without_pint():
    code = ("import sys; sys.modules['pint'] = None; sys.modules['sympy'] = None; "
            "import utils.measure, utils.gpu.kernels, utils.gpu.harness; print(len(utils.gpu.harness.REGISTRY))")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == str(len(NAMES))


def test_a_graph_capture_that_fails_is_recorded_as_skipped():
    class NoGraphs(M.FakeRuntime):
        def graph(self, fn):
            raise RuntimeError("capture refused")
    rec = M.measure(M.REGISTRY["launch-overhead"], NoGraphs(), "tiny")
    assert rec["skipped"] == [{"variant": "triton-graph", "reason": "CUDA graph capture failed: RuntimeError: capture refused"}]
    assert "graph_replay_per_launch" not in rec["metrics"] and "launch_triton" in rec["metrics"]


# --- the kernel-fusion measurement's torch.compile variant ------------------------------------------

def test_torch_compile_unavailable_is_recorded_as_skipped(full_run):
    *_, records = full_run
    (rec,) = [r for r in records.values() if r["name"] == "kernel-fusion"]
    assert [s["variant"] for s in rec["skipped"]] == ["compile"] and "switched off" in rec["skipped"][0]["reason"]
    assert {r["variant"] for r in rec["results"]} == {"eager", "triton", "triton_exp2", "copy"}
    assert "compile_over_fused" not in rec["metrics"] and "eager_over_fused" in rec["metrics"]


def test_torch_compile_is_checked_then_timed_where_it_works():
    rec = M.measure(M.REGISTRY["kernel-fusion"], M.FakeRuntime(compile=True), "tiny")
    assert rec["skipped"] == []
    assert {c["variant"] for c in rec["checks"]} == {"eager", "triton", "triton_exp2", "copy", "compile"}
    assert "compile_over_fused" in rec["metrics"] and "time_compile_smallest" in rec["metrics"]


def test_a_compiled_chain_that_computes_the_wrong_thing_is_skipped_not_timed():
    import torch

    class WrongCompiler(M.FakeRuntime):
        def compile(self, fn):
            return lambda x: torch.ones_like(x)          # runs, finite, and wrong
    rec = M.measure(M.REGISTRY["kernel-fusion"], WrongCompiler(), "tiny")
    assert [s["variant"] for s in rec["skipped"]] == ["compile"] and "failed its check" in rec["skipped"][0]["reason"]
    assert "compile" not in {r["variant"] for r in rec["results"]}


def test_a_softmax_that_leaves_a_row_unwritten_fails_and_writes_no_record(tmp_path, monkeypatch):
    import utils.gpu.kernels
    real = utils.gpu.kernels.softmax

    def lazy(x, out=None):
        real(x[:-1], out[:-1])                            # the last row keeps its NaN poison
        return out
    monkeypatch.setattr(utils.gpu.kernels, "softmax", lazy)
    rc, stdout, stderr = fake_run(tmp_path, ["--only", "fused-softmax"])
    assert rc == 1 and not list(tmp_path.glob("fused-softmax--*.json"))
    assert "fused-softmax      FAILED" in stdout and "check failed" in stdout


def test_the_fusion_and_softmax_metrics_say_what_they_compare(full_run):
    *_, records = full_run
    sm = next(r for r in records.values() if r["name"] == "fused-softmax")
    fractions = {k: v["value"] for k, v in sm["metrics"].items() if k.startswith("fraction_of_copy_")}
    assert set(fractions) == {"fraction_of_copy_fp32_37", "fraction_of_copy_bf16_130"}
    assert sm["metrics"]["fraction_of_copy"]["value"] == min(fractions.values())
    for r in sm["results"]:
        same = {x["variant"]: x for x in sm["results"] if x["size"] == r["size"]}
        key = f"fraction_of_copy_{M._shape_key(r['size'])}"
        assert sm["metrics"][key]["value"] == pytest.approx(same["triton"]["bandwidth"] / same["copy"]["bandwidth"])
    fu = next(r for r in records.values() if r["name"] == "kernel-fusion")
    big = {r["variant"]: r for r in fu["results"] if r["size"]["n"] == max(s["n"] for s in fu["sizes"])}
    assert fu["metrics"]["eager_over_fused"]["value"] == pytest.approx(big["eager"]["median_s"] / big["triton"]["median_s"])
    assert fu["metrics"]["eager_over_fused"]["unit"] == "" and fu["headline"] == "eager_over_fused"


# --- the attention-forward measurement --------------------------------------------------------------

def test_the_attention_measurement_counts_the_chapters_bytes():
    import importlib
    att = M.REGISTRY["attention-forward"]
    kern = importlib.import_module("utils.gpu.kernels.attention")
    s = {"batch": 2, "heads": 3, "n": 8192, "d": 128, "dtype": "bfloat16"}
    heads = 6
    assert att.bytes(s, "materialised") == heads * kern.materialised_bytes(8192, 128, 2) \
        == heads * (4 * 8192 ** 2 * 2 + 4 * 8192 * 128 * 2)                # S written, read; P written, read
    assert att.bytes(s, "triton") == heads * kern.tiled_bytes(8192, 128, 2, kern.BLOCK_Q)
    assert att.bytes(s, "sdpa") == heads * 4 * 8192 * 128 * 2                # Q, K, V read once, O written once
    assert att.flops(s, "triton") == att.flops(s, "materialised") == heads * kern.flops(8192, 128)
    assert M.ATTENTION_BLOCK_Q == kern.BLOCK_Q
    assert all(s["dtype"] == "bfloat16" for s in att.sizes["full"] + att.sizes["quick"])
    assert {s["n"] for s in att.sizes["full"]} == {1024, 4096, 8192}
    assert all(3 * s["batch"] * s["heads"] * s["n"] * s["d"] * 2 >= 4 * 50e6 for s in att.sizes["full"]), \
        "Q, K and V together at least four times an H200's L2"
    assert all(s["dtype"] in ("float32", "float16") for s in att.sizes["tiny"]), \
        "the tiny sizes run under the interpreter, where tl.dot on bf16 is garbage"


def test_the_attention_metrics_say_what_they_compare(full_run):
    *_, records = full_run
    rec = next(r for r in records.values() if r["name"] == "attention-forward")
    assert rec["headline"] == "speedup_vs_materialised"
    checked = {c["variant"] for c in rec["checks"]}
    skipped = {s["variant"] for s in rec["skipped"]}
    from utils.gpu.measurements.attention_forward import SDPA_BACKENDS
    backends = {v for _, v in SDPA_BACKENDS}
    assert checked - backends == {"triton", "triton_exp2", "materialised", "sdpa"}
    assert checked & backends | skipped == backends and not checked & skipped, \
        "every SDPA backend is either checked and timed or recorded as skipped"
    assert all(s["reason"].startswith("SDPA backend ") for s in rec["skipped"])
    assert all(c["metric"].startswith("relative-error norm vs float64") for c in rec["checks"])
    big = {r["variant"]: r for r in rec["results"] if r["size"]["n"] == max(s["n"] for s in rec["sizes"])}
    assert rec["metrics"]["speedup_vs_materialised"]["value"] == pytest.approx(
        big["materialised"]["median_s"] / big["triton"]["median_s"])
    assert rec["metrics"]["triton_over_sdpa"]["value"] == pytest.approx(big["sdpa"]["median_s"] / big["triton"]["median_s"])
    assert rec["metrics"]["flop_rate_triton"]["unit"] == "FLOP/s"
    for r in rec["results"]:
        n = r["size"]["n"]
        assert rec["metrics"][f"time_{r['variant']}_{n}"]["value"] == r["median_s"]


def test_an_attention_that_leaves_a_head_unwritten_fails_and_writes_no_record(tmp_path, monkeypatch):
    import utils.gpu.kernels
    real = utils.gpu.kernels.attention

    def lazy(q, k, v, out=None, **kw):
        real(q[..., :-1, :, :], k[..., :-1, :, :], v[..., :-1, :, :], out[..., :-1, :, :], **kw)
        return out                                      # the last head keeps its NaN poison: caught whether
                                                        # or not the float64 comparison samples it
    monkeypatch.setattr(utils.gpu.kernels, "attention", lazy)
    rc, stdout, stderr = fake_run(tmp_path, ["--only", "attention-forward"])
    assert rc == 1 and not list(tmp_path.glob("attention-forward--*.json"))
    assert "attention-forward  FAILED" in stdout and "check failed" in stdout


# ---- a short GPU window: records as they finish, an archive, the commit without .git ---------------

def test_a_failing_measurement_is_recorded_and_the_run_goes_on(tmp_path, monkeypatch):
    real = M.measure

    def flaky(m, rt, mode, log=None):
        if m.name == "strided-copy":
            raise RuntimeError("injected failure")
        return real(m, rt, mode, log=log)
    monkeypatch.setattr(M, "measure", flaky)
    rc, _, stderr = fake_run(tmp_path, ["--only", "strided-copy", "vector-add"])
    assert rc == 1
    names = {json.loads(p.read_text())["name"] for p in tmp_path.glob("*.json")}
    assert "vector-add" in names and "strided-copy" not in names
    manifest = json.loads(next(tmp_path.glob("*.manifest")).read_text())
    assert manifest["failed"] == {"strided-copy": "RuntimeError: injected failure"}
    assert "vector-add: record written" in stderr


def test_archive_holds_every_record_of_the_run(tmp_path):
    import tarfile
    archive = tmp_path / "records.tar.gz"
    rc, _, _ = fake_run(tmp_path / "out", ["--only", "vector-add", "--archive", str(archive)])
    assert rc == 0
    with tarfile.open(archive) as tar:
        names = sorted(Path(n).name for n in tar.getnames())
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == written and any(n.endswith(".manifest") for n in names) and len(names) == 2


def test_commit_comes_from_book_git_commit_where_there_is_no_git(monkeypatch):
    monkeypatch.setattr(M, "_run_text", lambda cmd: None)       # no git, no nvidia-smi
    monkeypatch.setenv("BOOK_GIT_COMMIT", "abc1234")
    assert M.git_state() == ("abc1234", None, "BOOK_GIT_COMMIT")
    monkeypatch.setenv("BOOK_GIT_COMMIT", "not-a-commit")
    assert M.git_state() == ("unknown", None, "none")


def test_fake_needs_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    stderr = io.StringIO()
    assert M.main(["--fake"], stdout=io.StringIO(), stderr=stderr) == 2
    assert "TRITON_INTERPRET=1" in stderr.getvalue()


def test_killed_halfway_the_records_already_written_stay(tmp_path):
    """The command as a GPU window runs it, killed part-way: every record it had written is whole."""
    import os
    import signal
    import time
    env = {**os.environ, "TRITON_INTERPRET": "1", "BOOK_GIT_COMMIT": "abc1234"}
    proc = subprocess.Popen([sys.executable, "-m", "utils.measure", "--fake", "--out", str(tmp_path)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while len(list(tmp_path.glob("*.json"))) < 3 and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    records = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert len(records) >= 3
    for rec in records:
        M.validate(rec)
        assert rec["provenance"]["git_commit"] in ("abc1234",) or len(rec["provenance"]["git_commit"]) == 40


def test_estimate_prints_a_duration():
    out = io.StringIO()
    assert M.main(["--estimate"], stdout=out, stderr=io.StringIO()) == 0
    assert re.search(r"about \d+ min for \d+ measurements \(full sizes\)", out.getvalue())


# --- the batch-invariance measurement (chapters/serving/deterministic-sampling.ipynb) ------------------

def test_batch_invariance_counts_and_sizes():
    bi = M.REGISTRY["batch-invariance"]
    s = {"d": 8, "vocab": 16, "batch": 4, "dtype": "bfloat16"}
    assert bi.flops(s, "default") == bi.flops(s, "alone") == 2 * 4 * 8 * 16
    assert bi.bytes(s, "default") == 2 * (8 * 16 + 4 * (8 + 16))           # W once, the batch in and out
    assert bi.bytes(s, "alone") == 2 * (4 * 8 * 16 + 4 * (8 + 16))         # W once per row
    full = bi.sizes["full"]
    assert {x["batch"] for x in full} == {1, 8, 64, 256} and {x["dtype"] for x in full} == {"float32", "bfloat16"}
    assert all(x["d"] == 4096 and x["vocab"] == 32768 for x in full)


def test_batch_invariance_ties_are_exact_and_ulps_count_floats():
    import torch

    from utils.gpu.measurements import batch_invariance as bi
    size = {"d": 64, "vocab": 40, "batch": 1, "dtype": "float32"}
    ws, h, ref = bi._operands(M.FakeRuntime(), size)
    w, n = ws[0].double(), bi.ties(40)
    # products of float32s are exact in float64; fsum rounds their exact sum once
    exact = [math.fsum((h.double() * w[:, j]).tolist()) for j in range(40)]
    assert exact[0:2 * n:2] == exact[1:2 * n:2], "each pair ties in exact arithmetic"
    assert max(range(40), key=exact.__getitem__) in (0, 1), "the constructed pair is the row's top two"
    one = torch.tensor([1.0, -1.0, 0.0], dtype=torch.float32)
    up = torch.nextafter(one, torch.full_like(one, 2.0))
    assert (bi.ordered_bits(up) - bi.ordered_bits(one)).tolist() == [1, 1, 1]
    down = torch.tensor([-0.0, 1.0], dtype=torch.bfloat16)
    assert (bi.ordered_bits(torch.tensor([0.0, 1.0078125], dtype=torch.bfloat16)) - bi.ordered_bits(down)).tolist() == [0, 1]


def test_batch_invariance_record_says_what_the_batch_did(full_run):
    *_, records = full_run
    (rec,) = [r for r in records.values() if r["name"] == "batch-invariance"]
    assert {r["variant"] for r in rec["results"]} == {"default", "alone"} and rec["headline"] == "share_differ_fp32"
    m = rec["metrics"]
    for t in ("fp32", "bf16"):
        for b in (8, 64, 256):
            assert 0 <= m[f"share_differ_{t}_b{b}"]["value"] <= 1 and m[f"max_ulps_{t}_b{b}"]["value"] >= 0
            assert m[f"argmax_changed_{t}_b{b}"]["value"] in (0.0, 1.0)
            assert m[f"alone_share_differ_{t}_b{b}"]["value"] == 0, "rows computed alone never change"
        assert m[f"alone_over_default_{t}"]["value"] > 1, "the fake roofline charges W once per row"


def test_batch_invariance_a_variant_that_skips_rows_fails(monkeypatch):
    import torch
    real = torch.matmul

    def lazy(a, b, out=None):
        if a.shape[0] > 1:
            return real(a[:-1], b, out=out[:-1])                     # the last row keeps its NaN poison
        return real(a, b, out=out)
    monkeypatch.setattr(torch, "matmul", lazy)
    with pytest.raises(M.CheckFailed, match="batch-invariance default"):
        M.measure(M.REGISTRY["batch-invariance"], M.FakeRuntime(), "tiny")


# --- occupancy-ilp (chapters/kernels/occupancy.ipynb) ---------------------------------------------
def test_occupancy_ilp_record_and_its_kernels(full_run):
    from utils.gpu.measurements import occupancy_ilp as oi
    rec = next(r for name, r in full_run[3].items() if name.startswith("occupancy-ilp--"))
    assert {"bandwidth_max_occupancy", "bandwidth_register_blocked", "blocked_speedup"} <= set(rec["metrics"])
    assert oi.elements_per_thread("max-occupancy") == 1 and oi.elements_per_thread("register-blocked") == 32
    import torch
    src = torch.arange(3001, dtype=torch.float32)      # not a multiple of either tile: the mask matters
    for block, ilp, warps in oi.CONFIGS.values():
        dst = torch.full_like(src, float("nan"))
        assert torch.equal(oi.ilp_copy(src, dst, block, ilp, warps), src)


def test_training_step_counts_six_n_per_token_and_checks_its_gradient():
    """training-step (step-time-budget): 6 x layers x width^2 FLOPs per token; the check passes on CPU."""
    ts = M.REGISTRY["training-step"]
    s = {"layers": 3, "width": 16, "tokens": 5, "dtype": "float32"}
    assert ts.flops(s, "step") == 6 * 3 * 16 * 16 * 5
    rec = M.measure(ts, M.FakeRuntime(), "tiny")
    assert all(c["passed"] for c in rec["checks"]) and rec["metrics"]["step_time"]["value"] > 0
