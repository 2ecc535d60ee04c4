"""An agent session: think on the GPU, run a tool in a sandbox, repeat; where its KV cache waits during
the tool call, and a step journal that resumes a crashed session at its last step, not its start.

Three pieces, each small and exact:

- `Session`, the state machine. STARTING (the sandbox cold-starts) -> THINKING (the model decodes on a
  GPU replica) -> TOOL (the sandbox runs the call; the model waits) -> THINKING ... -> DONE. Any other
  move raises `IllegalTransition`, so a tool result that arrives twice, or a think step started while a
  tool still runs, is caught where it happens, not three steps later.
- `park_cost` / `choose_tier`: what waiting costs in each place the KV cache can sit while the tool runs.
  In HBM it holds a share of the replica's KV budget for the whole call (GPU-seconds, when memory is what
  limits the batch); in host memory or on local NVMe it costs the copy out and back (time, not GPU
  memory), within that tier's capacity; dropped, it costs a re-prefill of the whole context from the
  transcript (GPU-seconds of FLOPs). `choose_tier` takes the cheapest in GPU-seconds among the tiers whose
  resume time fits a budget, and breaks ties toward the faster resume.
- `Journal`, an append-only JSON-lines file: a step's tool call and result are written (flushed and fsynced) before
  the session moves on, each step under its index as an idempotency key. `run_session` replays the
  journal's steps without calling their tools again and continues from the first step it lacks, so a
  crash loses at most the step in flight.

Chapters: agent-sessions.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

STARTING, THINKING, TOOL, DONE = "starting", "thinking", "tool", "done"
MOVES = {STARTING: {THINKING}, THINKING: {TOOL, DONE}, TOOL: {THINKING}, DONE: set()}
TIERS = ("hbm", "host", "nvme", "drop")


class IllegalTransition(RuntimeError):
    pass


class Session:
    """The state machine; `history` records every state entered, in order."""

    def __init__(self):
        self.state, self.history, self.steps = STARTING, [STARTING], 0

    def move(self, new: str) -> None:
        if new not in MOVES.get(self.state, ()):
            raise IllegalTransition(f"{self.state} -> {new} is not a move of an agent session")
        if self.state == TOOL and new == THINKING:
            self.steps += 1            # a step is one think and the tool call it made
        self.state = new
        self.history.append(new)


# --- where the KV waits ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Costs:
    """Plain floats, per replica: KV bytes of the context, the replica's KV budget (bytes) and GPUs, the
    host-link and NVMe read rates (bytes/s, whole replica), host and NVMe room (bytes), and re-prefill
    GPU-seconds and wall-seconds for the context."""
    kv_bytes: float
    kv_budget: float
    gpus: int
    host_rate: float
    nvme_rate: float
    host_room: float
    nvme_room: float
    prefill_gpu_s: float
    prefill_s: float


def park_cost(tier: str, tool_s: float, c: Costs) -> dict:
    """GPU-seconds a tool call of tool_s costs with the KV parked in `tier`, and the time to resume."""
    if tier == "hbm":
        return dict(gpu_s=c.gpus * tool_s * c.kv_bytes / c.kv_budget, resume_s=0.0, fits=c.kv_bytes <= c.kv_budget)
    if tier == "host":     # copied out during the call (overlapped), back before the next think step
        return dict(gpu_s=0.0, resume_s=c.kv_bytes / c.host_rate, fits=c.kv_bytes <= c.host_room)
    if tier == "nvme":     # through host memory to the drives, and back
        return dict(gpu_s=0.0, resume_s=c.kv_bytes / c.nvme_rate, fits=c.kv_bytes <= c.nvme_room)
    if tier == "drop":
        return dict(gpu_s=c.prefill_gpu_s, resume_s=c.prefill_s, fits=True)
    raise ValueError(f"tier must be one of {TIERS}, got {tier!r}")


def choose_tier(tool_s: float, c: Costs, resume_budget_s: float) -> str:
    """The cheapest tier in GPU-seconds whose resume fits the budget and whose room holds the KV; ties
    go to the faster resume. Dropping always fits (the transcript is durable), even over budget."""
    if tool_s < 0:
        raise ValueError(f"tool_s must be >= 0, got {tool_s!r}")
    ok = [t for t in TIERS if (x := park_cost(t, tool_s, c))["fits"] and x["resume_s"] <= resume_budget_s]
    ok = ok or ["drop"]
    return min(ok, key=lambda t: (park_cost(t, tool_s, c)["gpu_s"], park_cost(t, tool_s, c)["resume_s"]))


def crossover_s(c: Costs) -> float:
    """Tool-call length at which holding the KV in HBM costs as many GPU-seconds as re-prefilling it."""
    return c.prefill_gpu_s * c.kv_budget / (c.gpus * c.kv_bytes)


# --- the step journal -----------------------------------------------------------------------------
class Journal:
    """Append-only JSON lines at `path`; one record per finished step: {"step": i, "result": {"call", "result"}}."""

    def __init__(self, path):
        self.path = Path(path)

    def steps(self) -> dict:
        out = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    break                     # a torn last line: the crash came mid-write; ignore it
                out.setdefault(rec["step"], rec["result"])   # the first write of a step wins
        return out

    def commit(self, step: int, result) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps({"step": step, "result": result}) + "\n")
            f.flush()
            os.fsync(f.fileno())


class Crash(RuntimeError):
    """Raised by a test's tool to stand for the process dying mid-step."""


def run_session(journal: Journal, n_steps: int, think, tool) -> tuple[list, Session]:
    """Run (or resume) a session of n_steps: for each step, think(step, results so far) gives the tool
    call, tool(call) its result, and both are committed before the next step. Steps already in the
    journal are replayed from it, neither think nor tool called again. Returns the results and the
    session."""
    done = journal.steps()
    s, results = Session(), []
    s.move(THINKING)
    for i in range(n_steps):
        if i in done:                         # replayed: neither the model nor the tool runs again
            call, result = done[i]["call"], done[i]["result"]
            s.move(TOOL)
        else:
            call = think(i, list(results))
            s.move(TOOL)
            result = tool(call)
            journal.commit(i, {"call": call, "result": result})
        results.append(result)
        s.move(THINKING)
    s.move(DONE)
    return results, s
