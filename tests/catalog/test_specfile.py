"""gpu= takes a spec file in the catalog's schema: a reader adds an accelerator without editing the repo."""
import subprocess
import sys

import pytest
from book_files import ROOT

from utils import catalog
from utils.catalog import CatalogFileError
from utils.catalog.specfile import accelerator_entry
from utils.params import ParameterError, key

EXAMPLE = ROOT / "tests" / "data" / "specs" / "example-gpu.toml"


def test_a_spec_file_is_an_accelerator_with_sources():
    e = catalog.resolve("accelerator", str(EXAMPLE))
    assert e.name == "Example GPU (made up)"
    assert e.q("bf16_dense").to("FLOP/s").m == 2e15 and e["hbm_bandwidth"].source.read == "2026-12-01"
    assert key("accelerator", gpu=str(EXAMPLE)).key == "example-gpu"


SOURCE = "[sources.s]\ntitle='t'\nurl='u'\nread='2026-12-01'\n"
RATE = "bf16_dense = { value = 1e15, unit = 'FLOP/s' }\n"


@pytest.mark.parametrize("text, message", [
    ("not = [toml", "is not valid TOML"),
    ("[accelerator.x]\nname = 'x'\n" + RATE, "source None is not in"),
    (SOURCE + "[accelerator.x]\nsource='s'\n" + RATE, "lacks hbm_capacity"),
    ("[sources.s]\ntitle='t'\nurl='u'\n", "lacks ['read']"),
])
def test_a_bad_spec_file_names_its_problem(tmp_path, text, message):
    path = tmp_path / "gpu.toml"
    path.write_text(text)
    with pytest.raises(CatalogFileError, match=message.replace("[", r"\[").replace("]", r"\]")):
        accelerator_entry(path)


def _with(field: str, value: str) -> str:
    """The example spec file with one line of the accelerator table replaced (or added)."""
    lines = [line for line in EXAMPLE.read_text().splitlines() if not line.startswith(f"{field} =")]
    return "\n".join(lines + [f"{field} = {value}"]) + "\n"


# Each fault a reader's spec file may hold, and what the one line must say: the field and what was expected.
BAD_SPEC_FILES = {
    "wrong-unit": (_with("hbm_bandwidth", "{ value = 8.0, unit = 'TB/z' }"),
                   "hbm_bandwidth has unit 'TB/z', which is not a unit"),
    "wrong-dimension": (_with("hbm_bandwidth", "{ value = 8.0, unit = 'TB' }"), "hbm_bandwidth has 'TB'"),
    "no-unit": (_with("hbm_capacity", "192"), "hbm_capacity has no unit"),
    "zero": (_with("hbm_capacity", "{ value = 0, unit = 'GB' }"), "hbm_capacity must be a finite number > 0, got 0"),
    "negative": (_with("hbm_bandwidth", "{ value = -8.0, unit = 'TB/s' }"), "hbm_bandwidth must be a finite number > 0"),
    "nan": (_with("bf16_dense", "{ value = nan, unit = 'FLOP/s' }"), "bf16_dense must be a finite number > 0, got nan"),
    "infinite": (_with("bf16_dense", "{ value = inf, unit = 'FLOP/s' }"), "got inf"),
    "huge": (_with("bf16_dense", "{ value = 1" + "0" * 400 + ", unit = 'FLOP/s' }"), "bf16_dense must be a finite number"),
    "text-number": (_with("hbm_capacity", "{ value = 'lots', unit = 'GB' }"), "got 'lots'"),
    "bool-number": (_with("sm_count", "true"), "sm_count must be a finite number > 0, got True"),
    "number-for-text": (_with("scaleup_link", "{ value = 18 }"), "scaleup_link must be text, got 18"),
    "count-with-unit": (_with("sm_count", "{ value = 132, unit = 'GB' }"), "expected no unit (a count)"),
    "missing-field": (_with("hbm_bandwidth", "{ value = 8.0, unit = 'TB/s' }").replace("hbm_bandwidth", "hbm_bandwith"),
                      "lacks hbm_bandwidth"),
    "not-a-table": ("accelerator = 3\n" + SOURCE, "accelerator must be a table"),
    "name-not-text": (_with("name", "7"), "name must be text, got 7"),
}


@pytest.mark.parametrize("case", sorted(BAD_SPEC_FILES))
def test_each_bad_value_is_one_line_naming_file_field_and_expectation(tmp_path, case):
    text, message = BAD_SPEC_FILES[case]
    path = tmp_path / f"{case}.toml"
    path.write_text(text)
    with pytest.raises(CatalogFileError) as e:
        accelerator_entry(path)
    line = str(e.value)
    assert "\n" not in line and message in line and (path.name in line or "TOML" in line), line


def test_a_binary_file_is_refused(tmp_path):
    path = tmp_path / "weights.toml"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(CatalogFileError, match="weights.toml is not a text file"):
        accelerator_entry(path)


def test_a_missing_file_is_a_parameter_error():
    with pytest.raises(ParameterError, match="no such file"):
        key("accelerator", gpu="/no/such/gpu.toml")


@pytest.mark.parametrize("case, slug", [("wrong-unit", "fleet-size"), ("negative", "decode-roofline")])
def test_a_bad_spec_file_is_one_line_and_exit_2_from_rederive(tmp_path, case, slug):
    text, message = BAD_SPEC_FILES[case]
    path = tmp_path / "my-gpu.toml"
    path.write_text(text)
    r = subprocess.run([sys.executable, "-m", "utils.rederive", slug, "--set", f"gpu={path}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr, (r.returncode, r.stdout, r.stderr)
    assert message in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "my-gpu.toml" in r.stderr
