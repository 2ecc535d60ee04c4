"""nbval is what keeps committed numbers honest: prove that a changed number in a committed output fails."""
import shutil
import subprocess
import sys

import nbformat
from book_files import ROOT


def test_a_changed_output_number_fails_nbval(tmp_path):
    src = ROOT / "chapters" / "training" / "six-nd.ipynb"
    nb = nbformat.read(src, as_version=4)
    edited = False
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            md = out.get("data", {}).get("text/markdown", "")
            if "| training compute, the 6ND rule |" in md and not edited:
                out["data"]["text/markdown"] = md.replace("| **6.", "| **7.", 1)
                edited = "| **7." in out["data"]["text/markdown"]
    assert edited, "the chain table's training compute was not found in six-nd's outputs"
    nbformat.write(nb, tmp_path / "six-nd.ipynb")
    shutil.copy(ROOT / "tests" / "nbval_sanitize.cfg", tmp_path)
    # -x: the first failing cell (the chain table) is the proof; the rest of the page need not run.
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--nbval",
                          "--nbval-current-env", "--nbval-sanitize-with", "nbval_sanitize.cfg", "six-nd.ipynb"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout[-2000:]
    assert "**7." in run.stdout and "failed" in run.stdout
