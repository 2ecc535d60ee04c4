"""The roofline: the two ceilings of a chip and which one a piece of work hits.

A kernel doing F FLOPs while moving M bytes through HBM can run no faster than max(F / peak, M / bw).
Its arithmetic intensity I = F / M decides which term wins; the ridge I* = peak / bw is where they tie.
Every quantity is a pint quantity from utils.units, so a FLOP/s can't stand in for a FLOP.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from utils import catalog


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
    return np.minimum(c.peak.to("FLOP/s").m, (intensity * c.bandwidth).to("FLOP/s").m) * c.peak.to("FLOP/s").u


def time_floor(flops, bytes_moved, c: Chip):
    """(time, bound): the larger of compute time and memory time, and which one it was."""
    t_compute = (flops / c.peak).to("s")
    t_memory = (bytes_moved / c.bandwidth).to("s")
    return (t_compute, "compute") if t_compute >= t_memory else (t_memory, "memory")
