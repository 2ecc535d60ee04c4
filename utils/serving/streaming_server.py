"""A token-streaming server on loopback (asyncio, standard library only): an engine loop that decodes one
token per step for up to N slots, and one writer task per connection that never makes the engine wait.

    server = StreamingServer(slots=4, step_s=0.001, buffer_events=8, grace_steps=50)
    await server.start()                                   # 127.0.0.1, an ephemeral port: server.port
    r, w = await asyncio.open_connection("127.0.0.1", server.port)
    w.write(request_line(prompt="hello", tokens=100, key="k-1"))        # one JSON line per request
    # ... the server answers {"stream": id, "replayed": false} then {"i": offset, "t": token} lines
    await server.close()                                   # every task ended, every socket closed

The rules (tests/serving/test_streaming_server.py holds each of them):
- The engine owns the slots (a slot is a KV-cache reservation on a GPU). Each step it emits one token
  for every stream in a slot and hands it to each attached connection with `put_nowait` on that
  connection's bounded asyncio.Queue: the engine never awaits a reader. A connection whose queue is
  full is a slow reader: it is cut (its socket closed), and the client resumes from its last offset.
  `blocking=True` keeps the bug to show it: `await queue.put(...)`, so one stalled reader stops the
  engine and every other stream with it.
- A stream's tokens are appended to its log (host memory, not GPU memory), each with its offset (the
  event id), so a reconnect with {"resume": stream, "offset": k} gets exactly tokens k, k+1, ... :
  from the log first, then live. A finished stream's log is kept `retain_steps` after it finishes, so
  a resume after the end is served with no slot at all.
- A stream with no connection attached for `grace_steps` steps is cancelled and its slot freed: a
  dropped client stops costing GPU time after the grace, and a client that comes back inside the grace
  loses nothing.
- A request may carry an idempotency key. Same key, same request (the SHA-256 of the body, as
  utils.components.idempotent_api.request_hash computes it): the retry attaches to the same stream
  (`"replayed": true`) and no second generation starts. Same key, another body: an error line, nothing
  started. The key is forgotten with its stream.
- Tokens are a pure function of (prompt, offset), so a test can compare any delivery with the reference
  answer: `reference(prompt, n)`.

The contract for every input a client can send (tests/serving/test_streaming_server_adversarial.py feeds each,
and kills client processes mid-stream): asyncio's own rules, bounded buffers, timeouts and abort().
- Validation at the boundary: a request is one JSON object on one line of at most MAX_LINE bytes, read within
  `request_timeout_s` (a connection that stays quiet is answered with an error line and closed: it holds no
  task for ever). prompt: a string of at most MAX_PROMPT characters that UTF-8 can encode (a lone surrogate
  cannot); tokens: a whole number from 1 to `max_tokens`; key: a string of at most MAX_KEY characters, or
  absent; resume and offset: whole numbers >= 0. Anything else is answered with one error line, nothing
  started.
- No single request stops the others. The engine is guarded: a stream whose step raises is cancelled (its
  clients get an error line, its slot is freed, `failed` counts it) and the step goes on with the rest. It is
  supervised too: were the loop itself to raise, it is restarted (`engine_restarts` counts it).

Chapters: streaming-connections.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import math
import socket
from dataclasses import dataclass, field

from utils.components.idempotent_api import MAX_KEY, request_hash, utf8_encodable, valid_key

PAD = 1000         # bytes of padding per event: a token event with its metadata, large enough that a stalled
                   # reader fills the small socket buffers of the test in tens of events
MAX_LINE = 64 * 1024   # bytes of one request line (asyncio's default StreamReader limit)
MAX_PROMPT = 16_384    # characters of a prompt


def token(prompt: str, i: int) -> str:
    """The i-th token of the answer to `prompt`: deterministic, so every delivery can be checked."""
    return hashlib.sha256(f"{prompt}\x00{i}".encode()).hexdigest()[:6]


def reference(prompt: str, n: int) -> list[str]:
    return [token(prompt, i) for i in range(n)]


def request_line(*, prompt: str | None = None, tokens: int | None = None, key: str | None = None,
                 resume: int | None = None, offset: int = 0) -> bytes:
    """One request: a new stream (prompt, tokens, optional key) or a resume (stream id and offset)."""
    body = {"resume": resume, "offset": offset} if resume is not None else {"prompt": prompt, "tokens": tokens}
    if key is not None:
        body["key"] = key
    return (json.dumps(body) + "\n").encode()


@dataclass
class Stream:
    id: int
    prompt: str
    n_tokens: int
    key: str | None = None
    log: list = field(default_factory=list)     # tokens so far; offset = index (the event id)
    conns: set = field(default_factory=set)     # attached connections
    slot: int | None = None                     # the engine slot (KV reservation) it holds
    state: str = "queued"                       # queued -> running -> finished | cancelled
    detached_steps: int = 0                     # consecutive steps with no connection attached
    ended_step: int | None = None
    slot_steps: int = 0                         # steps it held a slot: GPU time spent on it


class Conn:
    """One client connection: a bounded queue the engine fills and a writer task that drains it."""

    def __init__(self, writer: asyncio.StreamWriter, maxsize: int):
        self.writer = writer
        self.queue: asyncio.Queue = asyncio.Queue(maxsize)
        self.cut = False                         # set when the engine found the queue full

    def offer(self, event) -> bool:
        try:
            self.queue.put_nowait(event)
            return True
        except asyncio.QueueFull:
            self.cut = True
            return False


class StreamingServer:
    def __init__(self, *, slots: int = 4, step_s: float = 0.001, buffer_events: int = 8,
                 grace_steps: int = 50, retain_steps: int = 10_000, blocking: bool = False,
                 sndbuf: int = 4096, request_timeout_s: float = 10.0, max_tokens: int = 1_000_000):
        for name, v in (("slots", slots), ("buffer_events", buffer_events), ("grace_steps", grace_steps),
                        ("retain_steps", retain_steps), ("sndbuf", sndbuf), ("max_tokens", max_tokens)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
        for name, v in (("step_s", step_s), ("request_timeout_s", request_timeout_s)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
        self.request_timeout_s, self.max_tokens = request_timeout_s, max_tokens
        self.n_slots, self.step_s, self.buffer_events = slots, step_s, buffer_events
        self.grace_steps, self.retain_steps, self.blocking, self.sndbuf = grace_steps, retain_steps, blocking, sndbuf
        self.free = list(range(slots))
        self.streams: dict[int, Stream] = {}
        self.keys: dict[str, tuple[str, int]] = {}        # key -> (request hash, stream id)
        self.pending: list[Stream] = []
        self.steps = 0
        self.started = 0                                  # generations started (slots ever taken)
        self.cuts = 0                                     # slow readers cut
        self.cancelled = 0                                # streams cancelled after the grace
        self.failed = 0                                   # streams ended because their step raised
        self.engine_restarts = 0                          # times the supervisor restarted the engine loop
        self.tasks: set[asyncio.Task] = set()
        self.open_writers: set[asyncio.StreamWriter] = set()
        self._server = None
        self._engine = None
        self._next_id = 0

    # --- lifecycle --------------------------------------------------------------------------------
    async def start(self):
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        self._engine = asyncio.create_task(self._supervise())
        return self

    async def close(self):
        self._engine.cancel()
        await asyncio.gather(self._engine, return_exceptions=True)
        self._server.close()
        for w in list(self.open_writers):
            w.close()
        for t in list(self.tasks):
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self._server.wait_closed()
        for s in list(self.streams.values()):        # nothing holds a slot once the server is gone
            self._release(s, "cancelled")

    def active_slots(self) -> int:
        return self.n_slots - len(self.free)

    # --- the engine: one token per running stream per step, never awaiting a reader ---------------
    async def _supervise(self):
        """Restart the engine loop if it ever raises: no request can leave the server without an engine."""
        while True:
            try:
                await self._engine_loop()
            except Exception:                              # CancelledError (close) is not caught
                self.engine_restarts += 1
                await asyncio.sleep(self.step_s)

    async def _engine_loop(self):
        loop = asyncio.get_running_loop()
        tick = loop.time()
        while True:
            await self._step()
            self.steps += 1
            # A fixed cadence: sleep to the next tick (a real engine's step is the decode-step time). A
            # late tick is not made up with a burst of steps: a GPU step takes its time whenever it runs.
            tick = max(tick + self.step_s, loop.time())
            await asyncio.sleep(max(0.0, tick - loop.time()))

    async def _step(self):
        while self.pending and self.free:                  # admission: a free slot takes the next stream
            s = self.pending.pop(0)
            s.slot, s.state = self.free.pop(0), "running"
            self.started += 1
        for s in [s for s in self.streams.values() if s.state == "running"]:
            if not s.conns:                                # nobody attached: count towards the grace
                s.detached_steps += 1
                if s.detached_steps > self.grace_steps:
                    self.cancelled += 1
                    self._release(s, "cancelled")
                    continue
            else:
                s.detached_steps = 0
            i = len(s.log)
            try:
                s.log.append(token(s.prompt, i))
            except Exception as e:                         # guarded: this stream ends, the others go on
                self._fail(s, e)
                continue
            s.slot_steps += 1
            event = (i, s.log[i])
            for c in list(s.conns):
                if self.blocking:
                    await c.queue.put(event)               # THE BUG: the whole engine waits on this reader
                elif not c.offer(event):
                    self._cut(s, c)
            if len(s.log) == s.n_tokens:
                self._release(s, "finished")
                for c in list(s.conns):
                    c.offer(None) if not self.blocking else await c.queue.put(None)
        for s in [s for s in self.streams.values() if s.state in ("finished", "cancelled")]:
            if self.steps - s.ended_step >= self.retain_steps and not s.conns:
                self._forget(s)

    def _release(self, s: Stream, state: str):
        if s.slot is not None:
            self.free.append(s.slot)
            s.slot = None
        if s in self.pending:
            self.pending.remove(s)
        if s.state in ("queued", "running"):
            s.state, s.ended_step = state, self.steps
        if state == "cancelled":
            self._forget(s)                                # a cancelled stream cannot be resumed

    def _fail(self, s: Stream, e: Exception):
        self.failed += 1
        line = (json.dumps({"error": f"stream failed: {type(e).__name__}"}) + "\n").encode()
        for c in list(s.conns):
            s.conns.discard(c)
            c.cut = True
            if not c.writer.is_closing():
                c.writer.write(line)
                c.writer.close()
        self._release(s, "cancelled")

    def _forget(self, s: Stream):
        self.streams.pop(s.id, None)
        if s.key is not None and self.keys.get(s.key, (None, None))[1] == s.id:
            del self.keys[s.key]

    def _cut(self, s: Stream, c: Conn):
        """A slow reader: detach it and close its socket; the client resumes from its last offset."""
        self.cuts += 1
        s.conns.discard(c)
        c.writer.close()

    # --- a connection ---------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        task = asyncio.current_task()
        self.tasks.add(task)
        self.open_writers.add(writer)
        sock = writer.get_extra_info("socket")
        if sock is not None:                               # small kernel buffers: backpressure shows fast
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.sndbuf)
        writer.transport.set_write_buffer_limits(high=self.sndbuf)
        conn, stream, watcher = None, None, None
        try:
            try:
                line = await asyncio.wait_for(reader.readline(), self.request_timeout_s)
            except asyncio.TimeoutError:
                line, error = None, f"no request line within {self.request_timeout_s:g} s"
            except ValueError:                             # longer than the StreamReader's limit
                line, error = None, f"request line longer than {MAX_LINE} bytes"
            else:
                if not line:
                    return
                try:
                    stream, start, replayed, error = self._open(_parse(line))
                except ValueError as e:
                    line, error = None, str(e)
            if line is None:
                stream = None
            if error:
                writer.write((json.dumps({"error": error}) + "\n").encode())
                await writer.drain()
                return
            conn = Conn(writer, self.buffer_events)
            writer.write((json.dumps({"stream": stream.id, "replayed": replayed}) + "\n").encode())
            # Attach first, then copy the log up to now: no token is missed or sent twice, because the
            # engine cannot run between these two lines (one event loop, no await between them).
            backlog = stream.log[start:]
            done = stream.state == "finished"
            if not done:
                stream.conns.add(conn)
                stream.detached_steps = 0
            watcher = asyncio.create_task(reader.read())   # EOF from the client = it went away
            for i, t in enumerate(backlog, start):
                if conn.cut or writer.is_closing():
                    break
                writer.write(_event(i, t))
                await writer.drain()
            while not done:
                get = asyncio.create_task(conn.queue.get())
                try:
                    await asyncio.wait({get, watcher}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    get.cancel()
                if not get.done() or get.cancelled():        # the client closed its end
                    break
                event = get.result()
                if conn.cut or writer.is_closing():           # the engine cut this slow reader
                    break
                if event is None:
                    done = True
                    break
                writer.write(_event(*event))
                await writer.drain()
            if done and not conn.cut:
                writer.write((json.dumps({"done": True, "n": len(stream.log)}) + "\n").encode())
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass           # a client gone, or the server closing: end normally, cleanup below
        finally:
            if stream is not None and conn is not None:
                stream.conns.discard(conn)
            writer.close()
            try:
                if watcher is not None:
                    watcher.cancel()
                    await asyncio.gather(watcher, return_exceptions=True)
                await writer.wait_closed()
            except (ConnectionError, OSError, asyncio.CancelledError):
                pass
            self.open_writers.discard(writer)
            self.tasks.discard(task)

    def _open(self, req):
        """(stream, start offset, replayed, error): a new stream, a keyed retry, or a resume."""
        problem = self._invalid(req)
        if problem:
            return None, 0, False, problem
        if req.get("resume") is not None:
            s = self.streams.get(req["resume"])
            if s is None:
                return None, 0, False, "gone: no such stream (cancelled or forgotten)"
            off = req.get("offset", 0)
            if not 0 <= off <= len(s.log):
                return None, 0, False, f"offset {off} is beyond the {len(s.log)} tokens generated"
            return s, off, True, None
        body = {"prompt": req["prompt"], "tokens": req["tokens"]}
        key = req.get("key")
        if key is not None and key in self.keys:
            digest, sid = self.keys[key]
            if digest != request_hash("POST", "/stream", body):
                return None, 0, False, "idempotency key reused with another request"
            s = self.streams[sid]
            off = req.get("offset", 0)
            if not off <= len(s.log):
                return None, 0, False, f"offset {off} is beyond the {len(s.log)} tokens generated"
            return s, off, True, None
        s = Stream(self._next_id, body["prompt"], int(body["tokens"]), key)
        self._next_id += 1
        self.streams[s.id] = s
        self.pending.append(s)
        if key is not None:
            self.keys[key] = (request_hash("POST", "/stream", body), s.id)
        return s, 0, False, None


    def _invalid(self, req) -> str | None:
        """The error line's text for a request this server will not serve, or None."""
        if not isinstance(req, dict):
            return "a request is one JSON object"
        if req.get("resume") is not None:
            for name in ("resume", "offset"):
                if name in req and not _whole(req[name]):
                    return f"{name} must be a whole number >= 0"
            return None
        prompt, n, key = req.get("prompt"), req.get("tokens"), req.get("key")
        if not isinstance(prompt, str) or len(prompt) > MAX_PROMPT or not utf8_encodable(prompt):
            return f"prompt must be a UTF-8 string of at most {MAX_PROMPT} characters"
        if not _whole(n) or not 1 <= n <= self.max_tokens:
            return f"tokens must be a whole number from 1 to {self.max_tokens}"
        if key is not None and not valid_key(key):
            return f"key must be a UTF-8 string of 1 to {MAX_KEY} characters"
        if "offset" in req and not _whole(req["offset"]):
            return "offset must be a whole number >= 0"
        return None


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0




def _parse(line: bytes):
    """The request object; ValueError for a line that is not JSON (NaN and Infinity are not JSON)."""
    def no_constant(c):
        raise ValueError(c)
    try:
        return json.loads(line, parse_constant=no_constant)
    except ValueError:                                     # UnicodeDecodeError is a ValueError
        raise ValueError("a request is one line of JSON") from None


def _event(i: int, t: str) -> bytes:
    return (json.dumps({"i": i, "t": t, "pad": "." * PAD}) + "\n").encode()


# --- clients, well-behaved and not -----------------------------------------------------------------
async def _connect(port: int, rcvbuf: int = 2048):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)   # set before connect: a small window
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    # A small StreamReader limit too: the reader stops pulling from the socket at twice the limit, so a
    # stalled client stops reading from the kernel (otherwise asyncio buffers 128 KiB for it).
    return await asyncio.open_connection(sock=sock, limit=4096)


async def read_events(reader, *, limit: int | None = None, stall: asyncio.Event | None = None) -> dict:
    """Read a stream's lines: the header, token events, and `done` or EOF. `limit`: stop after that many
    tokens; `stall`: read the header, then wait on the event before reading anything else."""
    header = json.loads(await reader.readline())
    out = dict(header=header, tokens=[], offsets=[], done=False)
    if "error" in header:
        return out
    if stall is not None:
        await stall.wait()
    while limit is None or len(out["tokens"]) < limit:
        try:
            line = await reader.readline()
        except ConnectionError:
            break
        if not line:
            break
        msg = json.loads(line)
        if msg.get("done"):
            out["done"] = True
            break
        if "error" in msg:                 # the server ended this stream (its step failed)
            out["error"] = msg["error"]
            break
        out["offsets"].append(msg["i"])
        out["tokens"].append(msg["t"])
    return out


async def request(port: int, body: bytes, *, limit: int | None = None, stall: asyncio.Event | None = None):
    """Open a connection, send one request, read (as read_events), close."""
    reader, writer = await _connect(port)
    try:
        writer.write(body)
        await writer.drain()
        return await read_events(reader, limit=limit, stall=stall)
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, OSError):
            pass


async def _misbehaving(server: StreamingServer, answer: int, stall_timeout: float) -> dict:
    port, out = server.port, {}
    stalled = asyncio.Event()

    async def good():                      # B: reads everything, while A's reader is stalled
        out["good"] = await request(port, request_line(prompt="good", tokens=answer))
        stalled.set()                      # A's reader wakes only once B has its whole answer

    async def slow():                      # A: reads the header, stalls, then reads and resumes
        first = await request(port, request_line(prompt="slow", tokens=answer, key="k-slow"), stall=stalled)
        sid = first["header"]["stream"]
        rest = await request(port, request_line(resume=sid, offset=len(first["tokens"])))
        out["slow"] = dict(first=first, rest=rest, tokens=first["tokens"] + rest["tokens"])

    async def drop():                      # C: reads a few tokens and hangs up for good
        out["drop"] = await request(port, request_line(prompt="drop", tokens=10 * answer), limit=answer // 10)

    async def resume():                    # D: hangs up part-way and comes back with its offset
        first = await request(port, request_line(prompt="resume", tokens=answer), limit=answer // 3)
        rest = await request(port, request_line(resume=first["header"]["stream"], offset=len(first["tokens"])))
        out["resume"] = dict(first=first, rest=rest, tokens=first["tokens"] + rest["tokens"])

    async def retry():                     # E: times out part-way, retries with the same key and body
        body = request_line(prompt="retry", tokens=answer, key="k-retry")
        first = await request(port, body, limit=answer // 5)
        again = await request(port, body)
        clash = await request(port, request_line(prompt="other", tokens=answer, key="k-retry"))
        out["retry"] = dict(first=first, again=again, clash=clash)

    async def no_key():                    # F: the same retry without a key: a second generation
        body = request_line(prompt="nokey", tokens=answer)
        first = await request(port, body, limit=answer // 5)
        again = await request(port, body)
        out["no_key"] = dict(first=first, again=again)

    jobs = [good(), slow(), drop(), resume(), retry(), no_key()]
    try:
        await asyncio.wait_for(asyncio.gather(*jobs), stall_timeout)
        out["timed_out"] = False
    except asyncio.TimeoutError:
        out["timed_out"] = True
    return out


async def run_scenario(*, slots: int = 8, step_s: float = 0.001, buffer_events: int = 32, grace_steps: int = 200,
                       answer: int = 120, blocking: bool = False, timeout: float = 3.0) -> dict:
    """The misbehaving clients against one server; then close it and count what is left behind."""
    server = await StreamingServer(slots=slots, step_s=step_s, buffer_events=buffer_events,
                                   grace_steps=grace_steps, blocking=blocking).start()
    out = await _misbehaving(server, answer, timeout)
    drop = out.get("drop", {}).get("header", {}).get("stream")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (0 if out["timed_out"] else timeout)
    while drop in server.streams and server.streams[drop].state == "running" and loop.time() < deadline:
        await asyncio.sleep(step_s)              # the dropped stream runs until its grace is spent
    gone = server.streams.get(drop)
    out["drop_freed"] = gone is None or gone.state != "running"
    out["during"] = dict(started=server.started, cuts=server.cuts, cancelled=server.cancelled,
                         steps=server.steps, slots_held=server.active_slots(),
                         streams=sorted((s.prompt, s.state, len(s.log)) for s in server.streams.values()))
    await server.close()
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    out["after"] = dict(slots_held=server.active_slots(), tasks=len(server.tasks), open_sockets=len(server.open_writers),
                        other_tasks=len(others))
    out["answer"] = answer
    return out


def scenario(**kw) -> dict:
    """run_scenario in a fresh event loop (for a notebook or a test). Inside a running loop (a Jupyter
    kernel runs one) the fresh loop runs in a thread of its own, joined before returning."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_scenario(**kw))
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run_scenario(**kw)).result()


# --- the contract, small and in-process (the chapter's check; the tests run the full set) ------------------
HOSTILE = (b'{"prompt": "\\ud800", "tokens": 5}\n', b'{"prompt": "x", "tokens": 0}\n',
           b'{"prompt": "x", "tokens": -3}\n', b'{"prompt": "x", "tokens": 2.5}\n', b'{"prompt": "x", "tokens": NaN}\n',
           b'{"prompt": null, "tokens": 5}\n', b'[1, 2]\n', b'not json\n', b'{"resume": "0", "offset": 0}\n',
           b'{"prompt": "x", "tokens": 5, "key": "\\udc00"}\n')


async def _contract() -> dict:
    server = await StreamingServer(slots=2, step_s=0.001, request_timeout_s=0.2).start()
    refused = 0
    for body in HOSTILE:                                  # each answered with an error line, nothing started
        refused += "error" in (await asyncio.wait_for(request(server.port, body), 5.0))["header"]
    _, w = await asyncio.open_connection("127.0.0.1", server.port)   # a client that never sends a line
    await asyncio.sleep(0.4)
    quiet_closed = len(server.tasks) == 0
    w.close()
    good = await asyncio.wait_for(request(server.port, request_line(prompt="after", tokens=20)), 5.0)
    served = good["tokens"] == reference("after", 20) and server.started == 1
    await server.close()
    held = [refused == len(HOSTILE), quiet_closed, served, server.active_slots() == 0 and not server.open_writers]
    return dict(scenarios=len(HOSTILE) + 3, held=refused + sum(held[1:3]) + held[3])


def contract_scenarios() -> dict:
    """Hostile requests, a quiet connection and a good request after them, on one loopback server:
    {scenarios, held}. The full set (processes killed mid-stream) is the adversarial test file's."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_contract())
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _contract()).result()
