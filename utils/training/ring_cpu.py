"""A ring all-reduce on the CPU: two or more processes joined by PyTorch's gloo backend over loopback,
each all-reducing one tensor with torch.distributed.all_reduce and again with the ring written out in
point-to-point sends (the schedule of utils.training.collectives.ring_schedule), counting every byte it sends and
receives. Both results are compared with the exact sum (small integers in float32, so the order of the
additions cannot matter). It checks the algorithm and counts its bytes; its times mean nothing.

    python -m utils.training.ring_cpu ELEMENTS N [N ...]     # prints one JSON list of per-rank rows
    run_cpu_rings(elements, rings)                  # the same, from Python, in a fresh interpreter

Chapters: ring-allreduce.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile


def ring_allreduce(x, rank, n):
    """Reduce-scatter, then all-gather, around the ring, in place; the bytes this rank sent and received."""
    import torch
    import torch.distributed as dist

    from utils.training.collectives import ring_schedule
    chunks = list(x.chunk(n))
    right, left = (rank + 1) % n, (rank - 1) % n
    buf = torch.empty_like(chunks[0])
    sent = received = 0
    for phase, _, r, send_i, recv_i in ring_schedule(n):
        if r != rank:
            continue
        req = dist.isend(chunks[send_i], right)
        dist.recv(buf, left)
        req.wait()
        sent += chunks[send_i].numel() * chunks[send_i].element_size()
        received += buf.numel() * buf.element_size()
        if phase == "reduce-scatter":
            chunks[recv_i] += buf
        else:
            chunks[recv_i].copy_(buf)
    return sent, received


def _local_tensor(rank, elements):
    import torch
    return (torch.arange(elements, dtype=torch.float32) % 97) + rank


def _worker(rank, n, elements, store, out):
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=n)
    expected = sum(_local_tensor(r, elements) for r in range(n))
    a = _local_tensor(rank, elements)
    dist.all_reduce(a)
    b = _local_tensor(rank, elements)
    sent, received = ring_allreduce(b, rank, n)
    out.put(dict(n=n, rank=rank, tensor_bytes=a.numel() * a.element_size(), sent=sent, received=received,
                 all_reduce_ok=bool(torch.equal(a, expected)), ring_ok=bool(torch.equal(b, expected))))
    dist.destroy_process_group()


def main(elements: int, rings) -> list[dict]:
    import torch.multiprocessing as mp
    ctx = mp.get_context("fork")
    rows = []
    for n in rings:
        with tempfile.TemporaryDirectory() as d:
            q = ctx.SimpleQueue()
            procs = [ctx.Process(target=_worker, args=(r, n, elements, os.path.join(d, "store"), q)) for r in range(n)]
            for p in procs:
                p.start()
            got = [q.get() for _ in procs]
            for p in procs:
                p.join()
            if any(p.exitcode != 0 for p in procs):
                raise RuntimeError(f"a ring process failed: {[p.exitcode for p in procs]}")
            rows += sorted(got, key=lambda g: g["rank"])
    return rows


def run_cpu_rings(elements: int, rings, timeout: float = 120) -> list[dict]:
    """Run main() in a fresh interpreter (gloo over loopback, one thread each) and return its rows."""
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-m", "utils.training.ring_cpu", str(elements), *map(str, rings)],
                         capture_output=True, text=True, env=env, timeout=timeout)
    if run.returncode != 0:
        raise RuntimeError("the CPU ring did not run:\n" + run.stderr[-2000:])
    return json.loads(run.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), [int(a) for a in sys.argv[2:]])))


def byte_table(rows: list[dict]) -> list[tuple]:
    """Per ring size: (n, tensor bytes, bytes each rank sent, 2(n-1)/n x tensor), after checking that every
    rank sent and received the same, that it is the formula's count, and that both results are the sum."""
    from utils.training.collectives import allreduce_bytes
    if not all(r["all_reduce_ok"] and r["ring_ok"] for r in rows):
        raise AssertionError("a result differs from the exact sum")
    out = []
    for n in sorted({r["n"] for r in rows}):
        rs = [r for r in rows if r["n"] == n]
        formula = allreduce_bytes(rs[0]["tensor_bytes"], n)
        if len(rs) != n or any(r["sent"] != r["received"] or r["sent"] != rs[0]["sent"] for r in rs):
            raise AssertionError(f"ranks of the ring of {n} moved different amounts")
        if rs[0]["sent"] != round(formula):
            raise AssertionError(f"ring of {n}: sent {rs[0]['sent']}, formula {formula}")
        out.append((n, rs[0]["tensor_bytes"], rs[0]["sent"], formula))
    return out
