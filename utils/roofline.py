"""The roofline: the two ceilings of a chip and which one a piece of work hits.

A kernel doing F FLOPs while moving M bytes through HBM can run no faster than max(F / peak, M / bw).
Its arithmetic intensity I = F / M decides which term wins; the ridge I* = peak / bw is where they tie.
Every quantity is a pint quantity from utils.units, so a FLOP/s can't stand in for a FLOP.
"""
from __future__ import annotations

from dataclasses import dataclass

from utils import catalog, formula_math
from utils.params import Param
from utils.units import q


@dataclass(frozen=True)
class Chip:
    key: str
    name: str
    peak: object        # FLOP/s, dense, for the chosen dtype
    bandwidth: object   # byte/s, HBM

    @property
    def ridge(self):
        """FLOP per byte at which the compute and memory ceilings meet."""
        return (self.peak / self.bandwidth).to("FLOP/byte")


def chip(gpu: str, dtype: str = "bf16") -> Chip:
    """A catalog accelerator's dense tensor rate for `dtype` and its HBM bandwidth."""
    e = catalog.accelerator(gpu)
    return Chip(gpu, e.name, e.q(f"{dtype}_dense").to("FLOP/s"), e.q("hbm_bandwidth").to("byte/s"))


def attainable(intensity, c: Chip):
    """The roofline: min(peak, intensity x bandwidth). `intensity` in FLOP/byte (array or scalar)."""
    return formula_math.minimum(c.peak.to("FLOP/s").m, (intensity * c.bandwidth).to("FLOP/s").m) * c.peak.to("FLOP/s").u


def time_floor(flops, bytes_moved, c: Chip):
    """(time, bound): the larger of compute time and memory time, and which one it was."""
    t_compute = (flops / c.peak).to("s")
    t_memory = (bytes_moved / c.bandwidth).to("s")
    return (t_compute, "compute") if t_compute >= t_memory else (t_memory, "memory")


# --- achieved shares of a datasheet peak ---------------------------------------------------------------

# No rate runs at 100% of a datasheet peak: the achieved shares others measured on an H100 (catalog: software
# achieved-fraction), shared by every chapter that turns a peak into a throughput.
ACHIEVED = catalog.entry("software", "achieved-fraction")


def fraction_source(field: str) -> str:
    v = ACHIEVED[field]
    return f"catalog: {ACHIEVED.name}, {field} ({v.kind}): {v.note.split(':')[0]}; {v.cite}"


def fraction_params() -> tuple:
    """The two achieved-share parameters, with the catalog's values as defaults (a test holds them equal)."""
    return (Param("compute_fraction", 0.75, "achieved share of the dense bf16 peak (1 = the datasheet's roof)",
                  check="fraction", source=fraction_source("bf16_dense")),
            Param("bandwidth_fraction", 0.866, "achieved share of the datasheet HBM bandwidth (1 = the roof)",
                  check="fraction", source=fraction_source("hbm_bandwidth")))


def add_fraction_inputs(ch, compute_fraction: float, bandwidth_fraction: float, source: str = "parameters cell"):
    """eta_P and eta_W: the catalog's achieved shares at their defaults, the reader's otherwise."""
    for sym, value, field, label in (("eta_P", compute_fraction, "bf16_dense", "achieved share of the dense peak"),
                                     ("eta_W", bandwidth_fraction, "hbm_bandwidth", "achieved share of HBM bandwidth")):
        cat = ACHIEVED[field]
        if value == float(cat.q.m):
            ch.given(sym, cat, label)
        else:
            ch.given(sym, q(value, ""), label, kind="assumption" if value < 1 else "definition",
                     source=source if value < 1 else "the datasheet's roof itself")


FRACTIONS = (float(ACHIEVED.q("bf16_dense").m), float(ACHIEVED.q("hbm_bandwidth").m))   # (compute, bandwidth)
