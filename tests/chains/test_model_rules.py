"""The models an expert checks first (chapters/AUTHORING.md, DESIGN.md), held across every chain module:
- no throughput at 100% of a datasheet peak: a module that reads a peak rate from the catalog has a parameter for
  the achieved share of it (an MFU, a compute or bandwidth fraction, a link's efficiency), with a source, unless
  the roof itself is the chapter's point (AT_THE_ROOF, each with its reason);
- a simulation reports its spread: a module with a `seed` parameter declares SEEDS (the seeds its checks run on
  and its ranges span, at least three) or STEADY_STATE (why one run is a steady state), and its checks run on
  each of those seeds.
The chapter's own test holds the rule's numbers (the fraction moves the rate; every seed passes); this file holds
that no chapter is left out."""
import re
from pathlib import Path

import pytest

from utils import chains

ROOT = Path(__file__).resolve().parents[2]
PEAK = re.compile(r'"(bf16_dense|fp8_dense|fp16_dense|tf32_dense|hbm_bandwidth)"|roofline\.chip\(|\bchip\(')
SHARE = re.compile(r"fraction|mfu|efficiency|utili[sz]ation|achieved|share")
# Chapters that read a peak and derive no rate a fleet runs at from it: the roof is what they are about, or the
# rate is a side figure taken at the catalog's achieved share.
AT_THE_ROOF = {
    "memory-wall": "compares the datasheets' own ratios (bytes per FLOP) across generations; derives no rate",
    "occupancy": "a kernel's bytes in flight against the roof it needs to reach (Little's law); the measured "
                 "ceiling is the page's measurement",
    "coalescing": "sector counts per warp load; the time at the roof is labelled as the roof's",
    "bank-conflicts": "shared-memory wavefronts; HBM's roof only bounds the transpose's time, labelled so",
    "reading-a-kernel-profile": "reads a profile's achieved share of the roof: the share is the measurement",
    "top-k-radix-select": "passes over one row against the roof, the kernel's bound, labelled so",
    "triton-vs-cuda": "what each language can express; the peak only names the tensor-core rate",
    "flash-attention-versions": "the papers' own reported shares of the peak are the subject",
    "attention-traffic": "bytes each attention variant moves: the roof bounds a kernel, labelled so",
    "kernel-fusion": "bytes moved fused and unfused; the time at the roof is the bound fusion changes",
    "gemm-tiling": "a tile's arithmetic intensity against the ridge: the ridge is the point",
    "data-pipeline-15t": "the GPUs' consumption rate is the bill-of-materials chapter's, at its claim's MFU",
    "peak-vs-average": "its results are a load curve's GPU-hours; a replica's decode step, a side check on the "
                       "page, runs at the catalog's achieved share of HBM bandwidth (utils.roofline.FRACTIONS)",
}


def _source(slug: str) -> str:
    return (ROOT / "utils" / "chains" / f"{slug.replace('-', '_')}.py").read_text()


@pytest.mark.parametrize("slug", chains.slugs())
def test_a_rate_from_a_datasheet_peak_runs_at_an_achieved_share(slug):
    if not PEAK.search(_source(slug)) or slug in AT_THE_ROOF:
        return
    shares = [p for p in chains.parameters(slug) if SHARE.search(p.name) and p.unit in ("", None)]
    assert shares, (f"{slug} reads a datasheet peak but has no parameter for the share of it a run achieves "
                    f"(fraction_params() in utils/roofline.py, or its own MFU/efficiency with a source)")
    assert all(p.source for p in shares), [p.name for p in shares if not p.source]


def test_the_exemptions_are_chapters_that_read_a_peak():
    assert all(PEAK.search(_source(slug)) for slug in AT_THE_ROOF)


@pytest.mark.parametrize("slug", [s for s in chains.slugs() if any(p.name == "seed" for p in chains.parameters(s))])
def test_a_simulation_declares_its_seeds_or_its_steady_state(slug):
    m = chains.module(slug)
    seeds, steady = getattr(m, "SEEDS", None), getattr(m, "STEADY_STATE", "")
    assert seeds is not None or steady, (f"{slug} draws random numbers: declare SEEDS (the seeds its checks run on, "
                                         f"three or more) or STEADY_STATE (why one run is a steady state)")
    if seeds is not None:
        n = seeds if isinstance(seeds, int) else len(tuple(seeds))
        assert n >= 3, f"{slug}: SEEDS is {n}; one or two seeds are not a spread"
