"""The cold-start chain as a small dependency graph: each stage moves some bytes at some rate (or takes a
fixed time), starts when the stages it depends on are done, and the first token waits for the last.

    stage time = fixed + bytes / rate;   start = max(end of its dependencies);   ready = max(end)

Stages that do not depend on each other overlap (weights can stream while the image unpacks), so the
cold start is the critical path, not the sum; `timeline` returns both, and `critical_path` names the
stages that set it.

Chapters: serverless-cold-start.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    """One stage: name, bytes moved (0 for a fixed-time stage), rate in bytes per second, a fixed time
    in seconds, and the names of the stages it waits for."""
    name: str
    nbytes: float = 0.0
    rate: float = 0.0
    fixed: float = 0.0
    after: tuple = ()

    @property
    def seconds(self) -> float:
        if self.nbytes and self.rate <= 0:
            raise ValueError(f"stage {self.name!r} moves bytes but has no rate")
        if self.nbytes < 0 or self.fixed < 0:
            raise ValueError(f"stage {self.name!r}: bytes and fixed time must be >= 0")
        return self.fixed + (self.nbytes / self.rate if self.nbytes else 0.0)


def timeline(stages) -> dict:
    """Start and end of every stage (seconds from the request), in the order given; a stage may only
    wait for stages listed before it (so a cycle is impossible). Returns starts, ends, ready (the last
    end) and serial (the sum of stage times: what it would take with nothing overlapped)."""
    starts, ends = {}, {}
    for s in stages:
        if s.name in ends:
            raise ValueError(f"stage {s.name!r} listed twice")
        missing = [d for d in s.after if d not in ends]
        if missing:
            raise ValueError(f"stage {s.name!r} waits for {missing}, which are not listed before it")
        starts[s.name] = max((ends[d] for d in s.after), default=0.0)
        ends[s.name] = starts[s.name] + s.seconds
    return dict(starts=starts, ends=ends, ready=max(ends.values(), default=0.0),
                serial=sum(s.seconds for s in stages))


def critical_path(stages) -> list[str]:
    """The chain of stages that sets the ready time, first to last (ties go to the earlier-listed)."""
    t = timeline(stages)
    by_name = {s.name: s for s in stages}
    last = max(t["ends"], key=lambda n: t["ends"][n])
    path = [last]
    while by_name[path[-1]].after:
        deps = by_name[path[-1]].after
        path.append(max(deps, key=lambda d: t["ends"][d]))
    return path[::-1]
