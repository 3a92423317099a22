"""A loopback HTTP/1.1 reference server that records its own truth for every request.

Run it as a separate process (`python bench/refserver.py --port 0`); it prints its port on the
first line of stdout and stops by itself after `--duration` seconds.

One thread, one `selectors` loop, no asyncio and no threads: the time it records just before a
write is taken in the same callback, a few Python statements before `send()`, with no other
thread that could take the GIL in between (the threaded server used before lost up to 1 ms
there under a burst). Per request it records:

- `recv_ns`: the kernel's receive timestamp (SO_TIMESTAMPNS via recvmsg) of the read that
  completed the request, i.e. of its last bytes;
- `send_ns`: wall-clock time just before the first byte of the response is written;
- `first_chunk_ns`: just before the first body chunk of a stream is written;
- `last_ns`: just before the last write of the response.

Truth of a call = `last_ns - recv_ns`; truth of a first token = `first_chunk_ns - recv_ns`.
Both use `time.time_ns()`, the clock of the kernel's stamps.

Paths (query parameters optional):
- `/fixed?ms=50`: a 2-byte body after `ms` milliseconds (Content-Length).
- `/stream?first_ms=200&every_ms=20&chunks=5`: headers at once (chunked, text/event-stream),
  the first SSE event at `first_ms`, then one every `every_ms`.
- `/held?...`: the same, but the headers are held and written with the first event.
- `/big?mb=100&chunk_kb=64`: `mb` MiB of body streamed in chunks as fast as the client reads.
- `/_truth`: the records since the last `/_truth` as JSON (and forgets them); not recorded.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import heapq
import itertools
import json
import selectors
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from urllib.parse import parse_qs, urlsplit

SO_TIMESTAMPNS = 35  # Linux; Python's socket module has no constant for it
_TIMESPEC = struct.Struct("@qq")
_ANC_SIZE = socket.CMSG_SPACE(_TIMESPEC.size)
_MAX_HEAD = 64 * 1024
_STREAM_TEXT = b"tok"


def _kernel_stamp(ancdata: list[tuple[int, int, bytes]]) -> int | None:
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            seconds, nanos = _TIMESPEC.unpack_from(data)
            stamp: int = seconds * 1_000_000_000 + nanos
            return stamp or None
    return None


@dataclass
class Record:
    """The server's truth for one request (wall-clock ns)."""

    id: int
    path: str
    recv_ns: int
    kernel_stamp: bool
    send_ns: int = 0
    first_chunk_ns: int = 0
    last_ns: int = 0
    body_bytes: int = 0
    partial_writes: int = 0  # writes the socket did not take whole (the stamp then leads)


@dataclass(order=True)
class _Timer:
    due_ns: int
    seq: int
    action: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)


class Conn:
    """One accepted connection: a request buffer and a queue of bytes the socket did not take."""

    def __init__(self, server: Server, sock: socket.socket) -> None:
        self.server = server
        self.sock = sock
        self.buf = b""
        self.out = bytearray()
        self.closed = False
        self.busy = False  # a response is in progress; pipelined requests wait in buf
        self.close_after = False
        self.big_left = 0  # bytes of a /big body still to produce
        self.big_chunk = b""
        self.big_record: Record | None = None
        self.done_pending = False  # the response is written whole, maybe not yet flushed
        self.last_rx: tuple[int, bool] = (0, False)  # stamp of the newest read, and if kernel's
        self.timers: list[_Timer] = []

    # Writing: stamp, then send at once; what the socket does not take waits for EPOLLOUT.

    def write(self, data: bytes, record: Record | None = None) -> None:
        if self.closed:
            return
        if self.out:
            self.out += data
            if record is not None:
                record.partial_writes += 1
            return
        try:
            sent = self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self.close()
            return
        if sent < len(data):
            if record is not None:
                record.partial_writes += 1
            self.out += data[sent:]
            self.server.want_write(self, True)

    def on_writable(self) -> None:
        if self.out:
            try:
                sent = self.sock.send(self.out)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.close()
                return
            del self.out[:sent]
        if not self.out:
            if self.big_left > 0:
                self._pump_big()
                return
            self.server.want_write(self, False)
            if self.done_pending:
                self._response_done()

    def _pump_big(self) -> None:
        record = self.big_record
        while self.big_left > 0 and not self.out and not self.closed:
            size = min(self.big_left, len(self.big_chunk))
            piece = self.big_chunk if size == len(self.big_chunk) else self.big_chunk[:size]
            self.big_left -= size
            data = b"%x\r\n%b\r\n" % (size, piece)
            if self.big_left == 0:
                data += b"0\r\n\r\n"
                if record is not None:
                    record.last_ns = time.time_ns()
                    record.body_bytes += size
            elif record is not None:
                record.body_bytes += size
            self.write(data)
        if self.big_left == 0:
            self.finish_when_flushed()
        elif self.out:
            self.server.want_write(self, True)

    def finish_when_flushed(self) -> None:
        """The response is complete: end it now, or once the queued bytes are sent."""
        self.done_pending = True
        if not self.out:
            self.server.want_write(self, False)
            self._response_done()

    def _response_done(self) -> None:
        self.busy = False
        self.done_pending = False
        self.big_record = None
        if self.close_after:
            self.close()
        else:
            self.process()

    # Reading.

    def on_readable(self) -> None:
        try:
            data, anc, _flags, _addr = self.sock.recvmsg(65536, _ANC_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close()
            return
        stamp = _kernel_stamp(anc)
        if not data:
            self.close()
            return
        self.buf += data
        if len(self.buf) > _MAX_HEAD + 1024 * 1024:
            self.close()
            return
        self.last_rx = (stamp or time.time_ns(), stamp is not None)
        self.process()

    def process(self) -> None:
        """Start the next complete request in the buffer, if no response is in progress."""
        if self.busy or self.closed:
            return
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return
        head = self.buf[:end].decode("latin-1")
        lines = head.split("\r\n")
        length = 0
        connection = ""
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip() or 0)
            elif name.strip().lower() == "connection":
                connection = value.strip().lower()
        if len(self.buf) < end + 4 + length:
            return
        self.buf = self.buf[end + 4 + length :]
        parts = lines[0].split(" ")
        target = parts[1] if len(parts) > 1 else "/"
        version = parts[2] if len(parts) > 2 else "HTTP/1.1"
        self.close_after = connection == "close" or (
            version == "HTTP/1.0" and connection != "keep-alive"
        )
        recv_ns, kernel = self.last_rx
        self.busy = True
        self.server.dispatch(self, target, recv_ns, kernel)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for timer in self.timers:
            timer.cancelled = True
        self.server.forget(self)
        self.sock.close()


def _head(status: str, headers: list[tuple[str, str]], keep: bool) -> bytes:
    lines = [f"HTTP/1.1 {status}"] + [f"{k}: {v}" for k, v in headers]
    lines.append("Connection: keep-alive" if keep else "Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _sse_chunk(index: int) -> bytes:
    event = b"data: %b%d\n\n" % (_STREAM_TEXT, index)
    return b"%x\r\n%b\r\n" % (len(event), event)


class Server:
    """The selector loop: accept, read, timers; every request recorded in `records`."""

    def __init__(self, port: int) -> None:
        self.sel = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(4096)
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        self.port: int = self.listener.getsockname()[1]
        self.conns: dict[int, Conn] = {}
        self.timers: list[_Timer] = []
        self.seq = itertools.count()
        self.ids = itertools.count()
        self.records: list[Record] = []

    def want_write(self, conn: Conn, on: bool) -> None:
        if conn.closed:
            return
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if on else 0)
        self.sel.modify(conn.sock, events, conn)

    def forget(self, conn: Conn) -> None:
        self.conns.pop(id(conn), None)
        with contextlib.suppress(KeyError, ValueError):
            self.sel.unregister(conn.sock)

    def at(self, conn: Conn, due_ns: int, action: Callable[[], None]) -> None:
        timer = _Timer(due_ns, next(self.seq), action)
        conn.timers.append(timer)
        heapq.heappush(self.timers, timer)

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Conn(self, sock)
            self.conns[id(conn)] = conn
            self.sel.register(sock, selectors.EVENT_READ, conn)

    def dispatch(self, conn: Conn, target: str, recv_ns: int, kernel: bool) -> None:
        parts = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        path = parts.path
        keep = not conn.close_after
        if path == "/_truth":
            body = json.dumps([asdict(r) for r in self.records]).encode()
            self.records = []
            conn.write(
                _head(
                    "200 OK",
                    [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
                    keep,
                )
                + body
            )
            conn.finish_when_flushed()
            return
        record = Record(id=next(self.ids), path=path, recv_ns=recv_ns, kernel_stamp=kernel)
        self.records.append(record)
        if path in {"/fixed", "/"}:
            delay_ns = int(float(query.get("ms", "50")) * 1e6)
            self.at(conn, recv_ns + delay_ns, lambda: self._fixed(conn, record, keep))
        elif path in ("/stream", "/held"):
            first = int(float(query.get("first_ms", "200")) * 1e6)
            every = int(float(query.get("every_ms", "20")) * 1e6)
            chunks = max(1, int(query.get("chunks", "5")))
            head = _head(
                "200 OK",
                [("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked")],
                keep,
            )
            if path == "/stream":
                record.send_ns = time.time_ns()
                conn.write(head, record)
                head = b""
            for i in range(chunks):
                self.at(
                    conn,
                    recv_ns + first + i * every,
                    functools.partial(
                        self._chunk, conn, record, i, chunks, head if i == 0 else b""
                    ),
                )
        elif path == "/big":
            size = int(float(query.get("mb", "100")) * 1024 * 1024)
            chunk_kb = max(1, int(query.get("chunk_kb", "64")))
            conn.big_chunk = b"x" * (chunk_kb * 1024)
            conn.big_left = size
            conn.big_record = record
            record.send_ns = time.time_ns()
            conn.write(
                _head(
                    "200 OK",
                    [
                        ("Content-Type", "application/octet-stream"),
                        ("Transfer-Encoding", "chunked"),
                    ],
                    keep,
                ),
                record,
            )
            if size == 0:
                record.last_ns = time.time_ns()
                conn.write(b"0\r\n\r\n", record)
                conn.finish_when_flushed()
            else:
                conn._pump_big()
        else:
            body = b"not found"
            record.send_ns = record.last_ns = time.time_ns()
            conn.write(
                _head("404 Not Found", [("Content-Length", str(len(body)))], keep) + body, record
            )
            conn.finish_when_flushed()

    def _fixed(self, conn: Conn, record: Record, keep: bool) -> None:
        head = _head("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")], keep)
        data = head + b"ok"
        # Stamp, then write: nothing else runs in between (one thread, same callback).
        record.send_ns = record.last_ns = time.time_ns()
        conn.write(data, record)
        record.body_bytes = 2
        conn.finish_when_flushed()

    def _chunk(self, conn: Conn, record: Record, index: int, chunks: int, head: bytes) -> None:
        data = head + _sse_chunk(index)
        if index == chunks - 1:
            data += b"0\r\n\r\n"
        now = time.time_ns()
        if head:
            record.send_ns = now
        if index == 0:
            record.first_chunk_ns = now
        record.last_ns = now
        conn.write(data, record)
        record.body_bytes += len(data)
        if index == chunks - 1:
            conn.finish_when_flushed()

    def run(self, duration: float) -> None:
        deadline = time.time_ns() + int(duration * 1e9)
        while time.time_ns() < deadline:
            now = time.time_ns()
            while self.timers and (self.timers[0].due_ns <= now or self.timers[0].cancelled):
                timer = heapq.heappop(self.timers)
                if not timer.cancelled:
                    timer.action()
                now = time.time_ns()
            timeout = 0.2
            if self.timers:
                timeout = max(0.0, min(timeout, (self.timers[0].due_ns - now) / 1e9))
            for key, mask in self.sel.select(timeout):
                if key.data is None:
                    self._accept()
                    continue
                conn: Conn = key.data
                if mask & selectors.EVENT_WRITE and not conn.closed:
                    conn.on_writable()
                if mask & selectors.EVENT_READ and not conn.closed:
                    conn.on_readable()


def main(argv: list[str] | None = None) -> None:
    """Serve on 127.0.0.1 until `--duration` seconds have passed; print the port first."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--duration", type=float, default=1800.0, help="stop after (s)")
    args = parser.parse_args(argv)
    server = Server(args.port)
    print(server.port, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.run(args.duration)


if __name__ == "__main__":
    main()
