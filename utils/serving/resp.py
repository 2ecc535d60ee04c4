"""A tiny Redis client: RESP2 over one TCP socket, standard library only.

    r = Resp("127.0.0.1", 6379)
    r.call("SET", "k", "v")                    # b'OK'
    sha = r.call("SCRIPT", "LOAD", lua)        # then r.call("EVALSHA", sha, 1, key, ...)
    r.pipeline([("INCR", "a"), ("INCR", "a")]) # [1, 2]: written in one send, read in order

RESP (the Redis serialization protocol, version 2): a command is an array of bulk strings,
`*<n>\\r\\n` then `$<len>\\r\\n<bytes>\\r\\n` for each argument. A reply starts with one type byte:
`+` simple string, `-` error, `:` integer, `$` bulk string (`$-1` is nil), `*` array (`*-1` is nil).
Arguments are sent as bytes: str is UTF-8, int as its decimal digits, float as repr (the shortest
string that reads back as the same double, so a Lua `tonumber` on the server gets the exact value).
An error reply raises RespError (its first word, e.g. NOSCRIPT, is `.code`) and leaves the connection
usable: the reply was read in full. Any other failure inside a call (a timeout, a reset, a reply cut short)
closes the connection for good: its reply may still arrive, and read by the next command it would answer
that command, so a later call raises ConnectionError and the caller opens a new one. An argument that
cannot be sent exactly (a lone surrogate, a NaN, None, a bool) raises before anything is sent. One
connection is not thread-safe; give each thread its own.

Chapters: none directly (used by utils.serving.token_limits).
"""
from __future__ import annotations

import socket


class RespError(Exception):
    """An error reply from the server: `code` is its first word (ERR, NOSCRIPT, WRONGTYPE, ...)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.code = message.split(" ", 1)[0]


def _arg(a) -> bytes:
    if isinstance(a, bytes):
        return a
    if isinstance(a, bool):                    # a bool is an int in Python; Redis has no booleans
        raise TypeError("send 0 or 1, not a bool")
    if isinstance(a, float):
        if a != a:
            raise ValueError("cannot send NaN: Lua's tonumber reads it as nil")
        return repr(a).encode()
    if isinstance(a, (int, str)):
        return str(a).encode()                 # a lone surrogate raises UnicodeEncodeError (a ValueError)
    raise TypeError(f"cannot send {type(a).__name__} to Redis")


def encode(*args) -> bytes:
    """One command as a RESP array of bulk strings."""
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = _arg(a)
        parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(parts)


class Resp:
    def __init__(self, host: str = "127.0.0.1", port: int = 6379, timeout: float = 5.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        # Small commands, one round trip each: Nagle's algorithm would hold each one back for an ACK.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = self.sock.makefile("rb")
        self.broken = False

    def close(self) -> None:
        self.rfile.close()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read(self):
        line = self.rfile.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection closed by the server")
        kind, body = line[:1], line[1:-2]
        if kind == b"+":
            return body
        if kind == b"-":
            return RespError(body.decode(errors="replace"))
        if kind == b":":
            return int(body)
        if kind == b"$":
            n = int(body)
            if n < 0:
                return None
            data = self.rfile.read(n + 2)
            if len(data) != n + 2:
                raise ConnectionError("connection closed inside a bulk string")
            return data[:-2]
        if kind == b"*":
            n = int(body)
            if n < 0:
                return None
            items = [self._read() for _ in range(n)]
            for x in items:                    # an error nested in an array (a script's) still raises
                if isinstance(x, RespError):
                    return x
            return items
        raise ConnectionError(f"unknown RESP type byte {kind!r}")

    def _exchange(self, payload: bytes, n: int) -> list:
        """Send, then read n replies; any failure but an error reply closes the connection for good."""
        if self.broken:
            raise ConnectionError("this connection failed mid-command and was closed: open a new one")
        try:
            self.sock.sendall(payload)
            return [self._read() for _ in range(n)]
        except BaseException:
            self.broken = True
            self.close()
            raise

    def call(self, *args):
        """Send one command and return its reply; an error reply raises RespError."""
        r = self._exchange(encode(*args), 1)[0]
        if isinstance(r, RespError):
            raise r
        return r

    def pipeline(self, commands) -> list:
        """Send every command in one write, then read every reply in order (one round trip in all).
        Error replies come back in the list as RespError objects; nothing raises halfway."""
        return self._exchange(b"".join(encode(*c) for c in commands), len(commands))
