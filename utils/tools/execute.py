"""Re-execute notebooks in place, as `make notebooks` does: python -m utils.tools.execute NOTEBOOK [...]

Like `jupyter execute --inplace`, but without per-cell timestamps in the metadata, so re-executing an
unchanged chapter leaves its file unchanged and a diff shows only what moved.
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path, timeout: int = 600) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # timestamps a previous executor left
    NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    nbformat.write(nb, path)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m utils.tools.execute NOTEBOOK [NOTEBOOK ...]", file=sys.stderr)
        return 2
    missing = [a for a in argv if not Path(a).is_file()]
    if missing:
        print(f"error: no such notebook: {', '.join(missing)}", file=sys.stderr)
        return 2
    for arg in argv:
        print(f"executing {arg}", flush=True)
        execute(Path(arg))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
