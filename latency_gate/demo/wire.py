"""HTTP/1.1 by hand: reading a request off the connection, and writing a response's bytes when
the demo decides (chunked or raw, held back or flushed), stamping the `RequestRecord` as they go."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http
import json
import time
from dataclasses import dataclass

from latency_gate.demo.spec import RequestRecord

KEEPALIVE_IDLE_TIMEOUT = 60.0  # an idle kept-alive connection is closed after this
REQUEST_READ_TIMEOUT = 30.0  # a started request must arrive whole within this
MAX_HEADER_LINES = 100
MAX_LINE = 16 * 1024
MAX_BODY = 16 * 1024 * 1024


class _BadRequest(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


@dataclass
class _Request:
    method: str
    target: str
    version: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def wants_close(self) -> bool:
        tokens = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" not in tokens
        return "close" in tokens

    @functools.cached_property
    def stream(self) -> bool:
        """`"stream": true` in a JSON body; without a stream field, an Accept of event-stream."""
        with contextlib.suppress(ValueError):
            doc = json.loads(self.body) if self.body else None
            if isinstance(doc, dict) and "stream" in doc:
                return doc["stream"] is True
        return "text/event-stream" in self.headers.get("accept", "")

    @property
    def prompt_tokens(self) -> int:
        return max(1, len(self.body) // 4)


async def _read_line(reader: asyncio.StreamReader) -> bytes:
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.LimitOverrunError:
        raise _BadRequest(431, "line too long") from None
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise _BadRequest(400, "connection closed mid-line") from None
        raise
    return line


async def _read_request(reader: asyncio.StreamReader) -> _Request | None:
    """The next request on the connection, or None when the client closed it between requests."""
    try:
        async with asyncio.timeout(KEEPALIVE_IDLE_TIMEOUT):
            line = b"\r\n"
            for _ in range(4):  # RFC 9112 2.2: ignore a few empty lines before a request line
                line = await _read_line(reader)
                if line.strip():
                    break
    except asyncio.IncompleteReadError:
        return None
    async with asyncio.timeout(REQUEST_READ_TIMEOUT):
        parts = line.decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _BadRequest(400, "bad request line")
        method, target, version = parts
        headers: dict[str, str] = {}
        for _ in range(MAX_HEADER_LINES):
            raw = await _read_line(reader)
            if not raw.strip():
                break
            name, sep, value = raw.decode("latin-1").partition(":")
            if not sep or not name.strip():
                raise _BadRequest(400, "bad header line")
            key = name.strip().lower()
            headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
        else:
            raise _BadRequest(431, "too many header lines")
        body = await _read_body(reader, headers)
    return _Request(method.upper(), target, version, headers, body)


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            size_line = (await _read_line(reader)).split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise _BadRequest(400, "bad chunk size") from None
            if size == 0:
                while (await _read_line(reader)).strip():  # trailers
                    pass
                return bytes(body)
            if len(body) + size > MAX_BODY:
                raise _BadRequest(413, "body too large")
            body += await reader.readexactly(size)
            await _read_line(reader)
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise _BadRequest(400, "bad content-length") from None
    if not 0 <= length <= MAX_BODY:
        raise _BadRequest(413, "body too large")
    return await reader.readexactly(length)


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data) if data else b""


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Status"


class _Sink:
    """Writes one response, holding bytes back while `holding` (a buffering layer, held headers)."""

    def __init__(self, writer: asyncio.StreamWriter, record: RequestRecord, chunked: bool) -> None:
        self.writer = writer
        self.record = record
        self.chunked = chunked
        self.holding = False
        self.release_on_token = False
        self._held = bytearray()
        self._token_held = False

    async def raw(self, data: bytes, *, token: bool = False) -> None:
        self._held += data
        self._token_held = self._token_held or token
        if not self.holding:
            await self.flush()

    async def event(self, data: bytes, *, token: bool = False) -> None:
        self._held += _chunk(data) if self.chunked else data
        if token:
            self._token_held = True
            if self.release_on_token:
                self.holding = False
        if not self.holding:
            await self.flush()

    async def flush(self) -> None:
        if not self._held:
            return
        now = time.time_ns()
        if self.record.first_byte_sent_ns is None:
            self.record.first_byte_sent_ns = now
        if self._token_held and self.record.first_token_sent_ns is None:
            self.record.first_token_sent_ns = now
        self._token_held = False
        self.writer.write(bytes(self._held))
        self._held.clear()
        await self.writer.drain()
        self.record.done_ns = time.time_ns()
