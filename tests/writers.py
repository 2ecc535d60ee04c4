"""Several writer processes on one SQLite file, the first killed mid-operation: the shape the building blocks'
adversarial tests share (tests/components/test_idempotent_api_adversarial.py, tests/fleet/test_ledger_adversarial.py,
tests/fleet/test_billing_adversarial.py)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys


def writers_one_killed(code: str, path, *, victim_lines: int, survivor_ops: int, n: int = 4,
                       keep_buffered: bool = False, timeout: float = 30) -> list[list[str]]:
    """Run `code` (python -c; argv: path, writer index, operations) in n processes on `path`. The first runs until it
    has acknowledged `victim_lines` lines and is then SIGKILLed mid-operation; the others run `survivor_ops`
    operations each and must exit 0 within `timeout`. Returns every acknowledged line split into words; with
    keep_buffered, also the whole lines the victim wrote before it died that were still in the pipe."""
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), str(k), "100000" if k == 0 else str(survivor_ops)],
                              stdout=subprocess.PIPE, text=True, env=env) for k in range(n)]
    victim, acked = procs[0], []
    for _ in range(victim_lines):
        acked.append(victim.stdout.readline().split())
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(10)
    if keep_buffered:
        rest = victim.stdout.read()
        whole = rest.splitlines() if rest.endswith("\n") else rest.splitlines()[:-1]   # a cut line was not acknowledged
        acked += [line.split() for line in whole]
    for p in procs[1:]:
        out, _ = p.communicate(timeout=timeout)
        assert p.returncode == 0, f"a surviving writer failed: exit {p.returncode}"
        acked += [line.split() for line in out.splitlines()]
    return acked
