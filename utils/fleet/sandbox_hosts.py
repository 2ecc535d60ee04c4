"""Sessions onto hosts: each session holds memory and CPU, plus its isolation's fixed memory overhead.

The closed form for identical sessions is the smaller of the two densities, floor(usable memory /
(session memory + overhead)) and floor(vCPUs x oversubscription / session CPU), and the host count is the
ceiling of sessions over that. Real sessions differ, so `place` packs a list of them first-fit decreasing
in two dimensions (largest memory first, into the first host with room on both axes); its tests hold it to
the closed form on identical sessions and to never overfilling a host on either axis.

Chapters: sandbox-isolation.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:      # numpy only where arrays are: density and hosts_for run without it (in the browser)
    import numpy as np


def density(host_mem, host_cpu, session_mem, session_cpu, overhead_mem=0.0, oversubscription=1.0) -> dict:
    """Sessions per host by memory, by CPU, and the smaller (same units on each axis)."""
    if session_mem + overhead_mem <= 0 or session_cpu <= 0:
        raise ValueError("a session must hold some memory and some CPU")
    by_mem = math.floor(host_mem / (session_mem + overhead_mem) + 1e-9)
    by_cpu = math.floor(host_cpu * oversubscription / session_cpu + 1e-9)
    return dict(by_mem=by_mem, by_cpu=by_cpu, per_host=min(by_mem, by_cpu),
                binds="memory" if by_mem <= by_cpu else "CPU")


def hosts_for(sessions: int, per_host: int) -> int:
    if per_host < 1:
        raise ValueError("not one session fits on a host")
    return -(-int(sessions) // int(per_host))


def place(mem, cpu, host_mem, host_cpu, overhead_mem=0.0) -> np.ndarray:
    """First-fit decreasing on two axes: the load (memory, CPU) of each host opened, one row per host."""
    import numpy as np
    mem = np.asarray(mem, float) + overhead_mem
    cpu = np.asarray(cpu, float)
    if np.any(mem > host_mem) or np.any(cpu > host_cpu):
        raise ValueError("a session is larger than a host")
    loads: list[list[float]] = []
    for i in np.argsort(-mem, kind="stable"):
        for h in loads:
            if h[0] + mem[i] <= host_mem + 1e-9 and h[1] + cpu[i] <= host_cpu + 1e-9:
                h[0] += mem[i]
                h[1] += cpu[i]
                break
        else:
            loads.append([mem[i], cpu[i]])
    return np.array(loads).reshape(-1, 2)


def lower_bound(mem, cpu, host_mem, host_cpu, overhead_mem=0.0) -> int:
    """No packing uses fewer hosts than the total on the fuller axis allows."""
    import numpy as np
    m = (np.sum(mem) + overhead_mem * len(mem)) / host_mem
    return int(math.ceil(max(m, np.sum(cpu) / host_cpu) - 1e-9))
