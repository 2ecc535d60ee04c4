"""Shared helpers for the book-level tests: the toc, the notebooks it names, their markdown."""
from __future__ import annotations

import functools
import re
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent


def toc_files() -> list[Path]:
    """Every page the toc names, resolved to its .md or .ipynb file (None where neither exists)."""
    return list(_toc_files())


@functools.cache
def _toc_files() -> tuple[Path, ...]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]]
    for part in toc.get("parts", []):
        names += [c["file"] for c in part.get("chapters", [])]
    out = []
    for name in names:
        hits = [ROOT / f"{name}{ext}" for ext in (".md", ".ipynb") if (ROOT / f"{name}{ext}").exists()]
        out.append(hits[0] if hits else ROOT / name)
    return tuple(out)


def chapter_notebooks() -> list[Path]:
    return sorted((ROOT / "chapters").glob("*/*.ipynb"))


def read(path: Path):
    return nbformat.read(path, as_version=4)


def markdown_cells(path: Path) -> list[str]:
    if path.suffix == ".md":
        return [path.read_text()]
    return [c.source for c in read(path).cells if c.cell_type == "markdown"]


GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`([^`]+)`")


def glue_keys_used(path: Path) -> set[str]:
    keys = set()
    for src in markdown_cells(path):
        keys |= {k.split(":")[0].strip() for k in GLUE_ROLE.findall(src)}
    return keys


def glue_keys_defined(path: Path) -> set[str]:
    keys = set()
    for cell in read(path).cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                keys.add(name)
    return keys


_STRIP = [
    re.compile(r"```.*?```", re.S),                 # fenced code
    re.compile(r"\$\$.*?\$\$", re.S),               # display math
    re.compile(r"\$[^$\n]+\$"),                     # inline math: structural constants (6ND, 2pqr)
    re.compile(r"\{[\w:-]+\}`[^`]*`"),              # roles: glue, ref, cite, numref
    re.compile(r"`[^`\n]*`"),                       # inline code
    re.compile(r"\]\([^)]*\)"),                     # link targets
    re.compile(r"^\(.*\)=\s*$", re.M),              # labels
    re.compile(r"^:[\w-]+:.*$", re.M),              # directive options
    re.compile(r"<!--.*?-->", re.S),
    re.compile(r"^\s*\d+\.\s", re.M),               # numbered-list markers
    re.compile(r"^\*\*\d+\.\*\*", re.M),              # exercise numbers: **1.**
]
# A number: digits (with separators, decimals, an exponent or a magnitude suffix) standing alone.
# Digits glued to a name (H100, Llama-3-70B, fp8, sm_90, 6ND) are not numbers in prose.
NUMBER = re.compile(r"(?<![\w\-./])\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?(?:[kKMBGTx]\b)?(?![\w])")


def typed_numbers(markdown: str) -> list[str]:
    for pattern in _STRIP:
        markdown = pattern.sub(" ", markdown)
    return NUMBER.findall(markdown)


# A bare number below 1e-12 in a committed output is a rounding residue (it changes with the thread
# count and the BLAS build), unless a unit follows it (1.65e-18 USD/FLOP) or it is quoted code.
_RESIDUE = re.compile(r"(?<![\w.`-])(\d\.\d+)e-(\d+)(?![\w`/.])(?!\s*[A-Za-zµ%])")


def output_texts(path: Path) -> list[str]:
    """Every text a notebook's committed outputs show (streams, plain text, markdown, HTML)."""
    texts = []
    for cell in read(path).cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                texts.append(out.get("text", ""))
            data = out.get("data", {})
            if any(k.startswith("application/vnd.aibook") for k in data):
                continue  # the machine-readable results record: full-precision floats by design
            texts += [data[k] for k in ("text/plain", "text/markdown", "text/html") if k in data]
    return texts


def rounding_residues(text: str) -> list[str]:
    return [m.group(0) for m in _RESIDUE.finditer(text) if int(m.group(2)) >= 13]
