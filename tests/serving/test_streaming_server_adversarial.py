"""utils.serving.streaming_server against hostile clients: a request that cannot be served is answered with
an error line and stops nothing else, a quiet connection is closed after the request timeout, and a client
process killed mid-stream (SIGKILL) costs its slot only until the grace. 127.0.0.1 only; steps of 1 ms."""
import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from utils.serving.streaming_server import StreamingServer, reference, request, request_line

HOSTILE = [b'{"prompt": "\\ud800", "tokens": 5}\n',            # a lone surrogate: valid JSON, not UTF-8
           b'{"prompt": "x", "tokens": 0}\n', b'{"prompt": "x", "tokens": -3}\n',
           b'{"prompt": "x", "tokens": 2.5}\n', b'{"prompt": "x", "tokens": true}\n',
           b'{"prompt": "x", "tokens": NaN}\n', b'{"prompt": null, "tokens": 5}\n',
           b'{"prompt": 7, "tokens": 5}\n', b'{"tokens": 5}\n', b'[1, 2]\n', b'not json\n', b'\xff\xfe\n',
           b'{"resume": "0", "offset": 0}\n', b'{"resume": 0, "offset": -1}\n', b'{"resume": true}\n',
           b'{"prompt": "x", "tokens": 5, "key": 12}\n', b'{"prompt": "x", "tokens": 5, "key": "\\udc00"}\n',
           b'{"prompt": "' + b"a" * 70_000 + b'", "tokens": 5}\n']


def test_each_hostile_request_gets_an_error_line_and_the_engine_keeps_serving():
    async def main():
        server = await StreamingServer(slots=2, step_s=0.001).start()
        answers = []
        for body in HOSTILE:
            out = await asyncio.wait_for(request(server.port, body), 2.0)
            answers.append(out["header"])
        good = await asyncio.wait_for(request(server.port, request_line(prompt="after", tokens=30)), 2.0)
        alive = not server._engine.done()
        await server.close()
        return answers, good, alive, server
    answers, good, alive, server = asyncio.run(main())
    assert all("error" in a for a in answers), [a for a in answers if "error" not in a]
    assert alive and good["done"] and good["tokens"] == reference("after", 30)
    assert server.active_slots() == 0 and not server.tasks and not server.open_writers


def test_a_failing_stream_is_cancelled_and_the_engine_survives(monkeypatch):
    """The engine guarded: a token that cannot be computed ends that stream with an error, not the loop."""
    import utils.serving.streaming_server as ss
    real = ss.token
    monkeypatch.setattr(ss, "token", lambda p, i: (_ for _ in ()).throw(RuntimeError("boom")) if p == "bad"
                        else real(p, i))

    async def main():
        server = await StreamingServer(slots=2, step_s=0.001).start()
        bad, good = await asyncio.wait_for(asyncio.gather(
            request(server.port, request_line(prompt="bad", tokens=10)),
            request(server.port, request_line(prompt="good", tokens=40))), 3.0)
        await server.close()
        return bad, good, server
    bad, good, server = asyncio.run(main())
    assert not bad["done"] and bad["tokens"] == [] and "error" in bad and good["tokens"] == reference("good", 40)
    assert server.failed == 1 and server.active_slots() == 0


def test_a_connection_that_never_sends_a_request_is_closed_after_the_timeout():
    async def main():
        server = await StreamingServer(slots=1, step_s=0.001, request_timeout_s=0.2).start()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        t0 = time.monotonic()
        line = await asyncio.wait_for(reader.readline(), 2.0)        # the error line, then EOF
        rest = await asyncio.wait_for(reader.read(), 2.0)
        waited = time.monotonic() - t0
        writer.close()
        await asyncio.sleep(0.05)
        held = len(server.tasks)
        await server.close()
        return json.loads(line), rest, waited, held
    header, rest, waited, held = asyncio.run(main())
    assert "error" in header and rest == b"" and 0.15 < waited < 1.5 and held == 0


CLIENT = r"""
import json, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall((json.dumps({"prompt": sys.argv[2], "tokens": int(sys.argv[3])}) + "\n").encode())
f = s.makefile("rb")
print(f.readline().decode().strip(), flush=True)      # the header
n = 0
for line in f:
    msg = json.loads(line)
    if msg.get("done"):
        break
    n += 1
    if n == 5:
        print("reading", flush=True)
print(json.dumps({"tokens": n}), flush=True)
"""


def test_client_processes_one_killed_mid_stream_the_rest_complete_and_its_slot_is_freed():
    loop = asyncio.new_event_loop()
    server = StreamingServer(slots=4, step_s=0.001, grace_steps=50)
    ready = threading.Event()

    def serve():
        asyncio.set_event_loop(loop)
        loop.run_until_complete(server.start())
        ready.set()
        loop.run_forever()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(5)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    procs = [subprocess.Popen([sys.executable, "-c", CLIENT, str(server.port), f"p{i}", "1500" if i == 0 else "200"],
                              stdout=subprocess.PIPE, text=True, env=env) for i in range(4)]
    try:
        victim = procs[0]
        assert json.loads(victim.stdout.readline())["stream"] is not None
        assert victim.stdout.readline().strip() == "reading"        # it is mid-stream: kill it there
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(5)
        outs = [json.loads(p.communicate(timeout=10)[0].splitlines()[-1]) for p in procs[1:]]
        deadline = time.monotonic() + 5
        while server.active_slots() and time.monotonic() < deadline:
            time.sleep(0.01)
        freed, cancelled = server.active_slots() == 0, server.cancelled
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        asyncio.run_coroutine_threadsafe(server.close(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
    assert outs == [{"tokens": 200}] * 3
    assert freed and cancelled == 1 and not server.tasks and not server.open_writers


def test_resume_and_keyed_retry_with_hostile_offsets_are_refused_not_served():
    async def main():
        server = await StreamingServer(slots=1, step_s=0.001).start()
        first = await request(server.port, request_line(prompt="k", tokens=20, key="key-1"))
        sid = first["header"]["stream"]
        outs = [await request(server.port, (json.dumps(b) + "\n").encode()) for b in
                ({"resume": sid, "offset": 10 ** 30}, {"resume": sid, "offset": "3"},
                 {"prompt": "k", "tokens": 20, "key": "key-1", "offset": -5},
                 {"prompt": "k", "tokens": 21, "key": "key-1"})]
        await server.close()
        return first, outs
    first, outs = asyncio.run(main())
    assert first["tokens"] == reference("k", 20)
    assert all("error" in o["header"] for o in outs)


@pytest.mark.parametrize("name, value", [("request_timeout_s", 0.0), ("request_timeout_s", float("nan")),
                                         ("max_tokens", 0), ("step_s", float("nan"))])
def test_bad_arguments_are_refused(name, value):
    with pytest.raises(ValueError, match=name):
        StreamingServer(**{name: value})
