"""Hang detection by per-rank collective sequence numbers, and a real reproducer on a gloo process group.

A hang is a collective that one rank never entered: the other ranks sit inside it (on a GPU, an NCCL
kernel spinning at full utilisation, which looks like work) until a timeout fires. What names the
culprit is not the error but a counter: every rank records the sequence number of each collective it
enters (PyTorch's flight recorder keeps the same number per process group), so when the timeout fires
the ranks that entered collective k report k and the missing rank reports less. `missing_ranks` is that
comparison; `reproduce` runs it for real: `world` CPU processes on a gloo process group over a
file:// store, one rank withholding its all_reduce at a chosen step.

Imports torch: chapters and tests only, never a chain module.

Chapters: training-goodput-hangs.
"""
from __future__ import annotations

import os
import queue as _queue
import tempfile
from datetime import timedelta
from typing import Mapping

SEQ_KEY = "seq/{rank}"          # the store key a rank writes before entering a collective


def missing_ranks(seqs: Mapping[int, int]) -> dict:
    """Which ranks lag: the highest sequence number entered, and the ranks whose number is below it.

    seqs maps rank -> the sequence number of the last collective that rank entered (-1: none yet)."""
    if not seqs:
        raise ValueError("no ranks reported a sequence number")
    expected = max(seqs.values())
    return dict(expected=expected, missing=sorted(r for r, s in seqs.items() if s < expected),
                behind={r: expected - s for r, s in seqs.items() if s < expected})


def _worker(rank: int, world: int, init_file: str, withhold_rank: int, hang_step: int, steps: int,
            timeout_s: float, out) -> None:
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    # The timeout is the watchdog: it alone sets how long the other ranks wait inside the collective.
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=timeout_s))
    store = dist.distributed_c10d._get_default_store()
    result = dict(rank=rank, completed=0, timed_out=False, report=None)
    try:
        for k in range(steps):
            if rank == withhold_rank and k == hang_step:
                # The bug under test: this rank skips the collective (a branch only it takes), so it never
                # writes sequence number k. It then waits for the verdict instead of exiting, as a real
                # rank stuck elsewhere would.
                store.wait(["verdict"], timedelta(seconds=10 * timeout_s + 5))
                break
            store.set(SEQ_KEY.format(rank=rank), str(k))
            t = torch.ones(4)
            try:
                dist.all_reduce(t)
            except RuntimeError:
                # Timed out: ask every rank which collective it last entered; the laggard is the answer.
                seqs = {r: int(store.get(SEQ_KEY.format(rank=r))) if store.check([SEQ_KEY.format(rank=r)])
                        else -1 for r in range(world)}
                result.update(timed_out=True, report=missing_ranks(seqs), seqs=seqs, step=k)
                if rank == 0:
                    store.set("verdict", "done")
                break
            assert t[0].item() == world
            result["completed"] = k + 1
    finally:
        out.put(result)
        out.close()
        out.join_thread()          # flush the queue before the hard exit below
    # After a timed-out collective gloo's state is undefined: leave without a collective teardown.
    os._exit(0)


def reproduce(world: int = 4, withhold_rank: int = 2, hang_step: int = 3, steps: int = 6,
              timeout_s: float = 0.5, join_s: float = 20.0, method: str = "fork") -> dict:
    """Run `world` gloo ranks for `steps` all_reduces with rank `withhold_rank` withholding number
    `hang_step`; return each rank's result and the verdict rank 0 reached. Every process is joined (and
    killed if it overstays `join_s`), and the store file is removed.

    method: "fork" (default) starts the ranks from this process's already-imported torch, in well under a
    second; "spawn" re-imports torch in each rank, several seconds each on a small machine."""
    if not 0 <= withhold_rank < world or world < 2:
        raise ValueError(f"need 0 <= withhold_rank < world and world >= 2, got {withhold_rank}, {world}")
    import torch.distributed  # noqa: F401  (imported once here, so forked ranks start warm)
    import torch.multiprocessing as mp
    ctx = mp.get_context(method)
    out = ctx.Queue()
    fd, init_file = tempfile.mkstemp(prefix="hang-store-")
    os.close(fd)
    os.unlink(init_file)            # the file store creates it; it must not exist beforehand
    procs = [ctx.Process(target=_worker, args=(r, world, init_file, withhold_rank, hang_step, steps,
                                               timeout_s, out), daemon=True) for r in range(world)]
    results = {}
    try:
        for p in procs:
            p.start()
        for _ in range(world):
            try:
                r = out.get(timeout=join_s)
            except _queue.Empty:
                break
            results[r["rank"]] = r
    finally:
        for p in procs:
            p.join(timeout=2)
            if p.is_alive():
                p.kill()
                p.join()
        if os.path.exists(init_file):
            os.unlink(init_file)
    reports = [r["report"] for r in results.values() if r.get("report")]
    return dict(results=results, verdict=results.get(0, {}).get("report"), reports=reports,
                exitcodes=[p.exitcode for p in procs])
