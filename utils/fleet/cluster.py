"""Building blocks for sizing a cluster: the spare pool, a rail-optimised fat tree, the checkpoint interval.

- `poisson_quantile(mean, p)`: the spare pool. With failures at a rate lambda and a repair time t_r,
  Little's law puts lambda t_r units out of service on average; the number out is Poisson with that mean,
  and the pool that covers it with probability p is the Poisson quantile.
- `fat_tree(pods, nodes_per_pod, rails, k, s)`: switch and cable counts of a rail-optimised three-tier fat
  tree of radix-k switches, a leaf per rail per k/2 nodes, spines carrying a pod's endpoints down and
  ceil(E_p / s) links up to a core tier tapered s:1 (no core for one pod). It reproduces NVIDIA's DGX
  SuperPOD switch and cable table (tests/fleet/test_cluster.py).
- `young_interval(delta, mtbf)`: the checkpoint interval that minimises delta/tau + tau/(2M), and the
  time lost at it, sqrt(2 delta / M).
Used by bill-of-materials-10k (and any chapter that sizes a fabric or a spare pool).

Chapters: bill-of-materials-10k.
"""
from __future__ import annotations

import math


def poisson_quantile(mean: float, p: float) -> int:
    """The smallest k with P(X <= k) >= p for X ~ Poisson(mean), summed in log space."""
    if not 0 <= p < 1:
        raise ValueError(f"p must be in [0, 1), got {p!r}")
    if mean < 0:
        raise ValueError(f"mean must be >= 0, got {mean!r}")
    if mean == 0:
        return 0
    k, log_pmf = 0, -mean
    cdf = math.exp(log_pmf)
    while cdf < p:
        k += 1
        log_pmf += math.log(mean) - math.log(k)
        cdf += math.exp(log_pmf)
    return k


def pod_limit(k: int) -> int:
    """Endpoints one pod of a three-tier radix-k fat tree can hold below a core tier: (k/2)(k/2)."""
    return k ** 2 // 4


def fat_tree(pods: int, nodes_per_pod: int, rails: int, k: int, s: float) -> dict:
    """Leaf, spine and core switches and the three cable counts (node-leaf, leaf-spine, spine-core)."""
    e_p = rails * nodes_per_pod
    u_p = math.ceil(e_p / s) if pods > 1 else 0
    leaf = pods * rails * math.ceil(2 * nodes_per_pod / k)
    spine = pods * math.ceil((e_p + u_p) / k)
    core = math.ceil(pods * u_p / k)
    return dict(leaf=leaf, spine=spine, core=core, total=leaf + spine + core,
                cables=(pods * e_p, pods * e_p, pods * u_p))


def switches_closed_form(endpoints: float, k: float, s: float) -> float:
    """Without the ceilings: N/(k/2) leaves + (N + N/s)/k spines + (N/s)/k core = (N/k)(3 + 2/s)."""
    return endpoints / k * (3 + 2 / s)


def taper_for(switches: float, endpoints: float, k: float) -> float:
    """The core taper s at which the closed form gives `switches`: s = 2N / (k N_sw - 3N)."""
    return 2 * endpoints / (k * switches - 3 * endpoints)


def young_interval(delta: float, mtbf: float) -> dict:
    """Young's checkpoint interval tau* = sqrt(2 delta M) and the fraction of time lost there."""
    if delta <= 0 or mtbf <= 0:
        raise ValueError(f"delta and mtbf must be > 0, got {delta!r}, {mtbf!r}")
    tau = math.sqrt(2 * delta * mtbf)
    return dict(tau=tau, overhead=delta / tau + tau / (2 * mtbf))
