"""gpu= takes a spec file in the catalog's schema: a reader adds an accelerator without editing the repo."""
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


@pytest.mark.parametrize("text, message", [
    ("not = [toml", "is not valid TOML"),
    ("[accelerator.x]\nname = 'x'\nbf16_dense = 1\n", "source None is not in"),
    ("[sources.s]\ntitle='t'\nurl='u'\nread='2026-12-01'\n[accelerator.x]\nsource='s'\nbf16_dense = 1\n", "lacks hbm_capacity"),
    ("[sources.s]\ntitle='t'\nurl='u'\n", "lacks ['read']"),
])
def test_a_bad_spec_file_names_its_problem(tmp_path, text, message):
    path = tmp_path / "gpu.toml"
    path.write_text(text)
    with pytest.raises(CatalogFileError, match=message.replace("[", r"\[").replace("]", r"\]")):
        accelerator_entry(path)


def test_a_missing_file_is_a_parameter_error():
    with pytest.raises(ParameterError, match="no such file"):
        key("accelerator", gpu="/no/such/gpu.toml")
