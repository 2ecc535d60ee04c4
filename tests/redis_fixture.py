"""A real Redis for the tests that need one: Debian's redis-server on loopback, an ephemeral port, a
temp dir, no persistence; started once per test module and killed after it.

Where redis-server is absent the tests skip with one line, except under CI (CI=true), where they fail:
.ci/run installs it, so a missing server there is a broken build, not a reason to skip.
A test module takes the fixture with `redis_server = redis_fixture.redis_server` (tests/serving/test_token_limits.py).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    """(host, port) of a fresh redis-server, or a one-line skip where none is installed."""
    exe = shutil.which("redis-server")
    if exe is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("redis-server is not installed, and under CI it must be (.ci/run installs it)")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    from utils.serving.resp import Resp
    d = tmp_path_factory.mktemp("redis")
    for _ in range(3):                                   # a port taken between probe and bind: try another
        port = _free_port()
        proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                 "--dir", str(d)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with Resp("127.0.0.1", port, timeout=1.0) as r:
                    if r.call("PING") == b"PONG":
                        break
            except OSError:
                time.sleep(0.02)
        if proc.poll() is None:
            break
    else:
        pytest.fail("redis-server did not start on a free loopback port")
    try:
        yield "127.0.0.1", port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
