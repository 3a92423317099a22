"""Embedded loopback endpoints that misbehave on purpose, for the demo and every timing test.

A raw asyncio HTTP/1.1 server rather than a web framework, because the point is to decide exactly
when each byte leaves: headers held back, a stream buffered whole by a "layer in front", a reset
before the first byte, a body cut in the middle. Each `EndpointSpec` describes one endpoint's
behaviour; `DemoServer` serves it and keeps `RequestRecord`s, the server-side truth a test holds
the probe's measurements against.

Timeline of one answer (seconds, relative to the request's last byte):
    cold start wait (first request, or after `cold_after` idle)
    -> queue wait for a `parallelism` slot (FIFO)
    -> `latency` (x lognormal jitter): service time before the response starts
    -> streams: headers and the role/start events, `first_token_delay`, then one content delta
       every `token_interval`, then the finish, usage and end-marker events;
       non-streams: the whole document at once after `first_token_delay + tokens * token_interval`
       (the generation a streamed answer would have shown).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gzip
import http
import json
import logging
import random
import socket
import ssl
import struct
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from email.utils import formatdate
from types import TracebackType
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "DemoServer",
    "EndpointSpec",
    "Fault",
    "FaultKind",
    "RequestRecord",
    "StreamFormat",
    "classic_three",
    "serve_in_thread",
]

logger = logging.getLogger(__name__)

StreamFormat = Literal["openai-chat", "openai-responses", "anthropic", "raw"]
FaultKind = Literal[
    "status",
    "reset",
    "cut",
    "hang",
    "close_before_response",
    "slow_drip",
    "malformed_sse",
    "invalid_utf8",
    "redirect",
    "error_event",
    "bad_gzip",
]

PATHS: dict[str, str] = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "raw": "/",
}
REDIRECT_TARGET = "/elsewhere"  # never redirected itself, so following a redirect terminates
DRIP_INTERVAL = 0.05
DRIP_LIMIT = 60.0
KEEPALIVE_IDLE_TIMEOUT = 60.0  # an idle kept-alive connection is closed after this
REQUEST_READ_TIMEOUT = 30.0  # a started request must arrive whole within this
MAX_HEADER_LINES = 100
MAX_LINE = 16 * 1024
MAX_BODY = 16 * 1024 * 1024
STOP_TIMEOUT = 2.0
START_TIMEOUT = 10.0
INVALID_UTF8 = b"\xff\xfe\xfd"
_PLACEHOLDER = "@@invalid-utf8@@"
_ANSWER = "Latency is what users feel, not what the model streams; measure the whole chain."
_WORDS = _ANSWER.split()


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Fault(_Frozen):
    """One injected misbehaviour, applied to request numbers n (from 0) where n % every == offset.

    - status: answer `status` with `retry_after` as Retry-After and `body` served raw (default:
      an error document in the format's own shape).
    - reset: RST (SO_LINGER 0) before any response byte. cut: close mid-body (FIN, body short).
    - hang: read the request and never answer, until the server stops.
    - close_before_response: close at once without answering (a stale kept-alive connection).
    - slow_drip: 200 headers, then one filler byte every 50 ms until 60 s, then close.
    - malformed_sse: a `data:` line that is not JSON mid-stream (a truncated document otherwise).
    - invalid_utf8: bytes that are not UTF-8 inside a content delta (or the document).
    - redirect: 302 to /elsewhere. error_event: a 200 stream with the format's error event
      mid-stream and no end marker (a 200 error document otherwise).
    - bad_gzip: a document labelled Content-Encoding: gzip that is not gzip (streams: as usual).

    hang and close_before_response act as soon as the request is read; every other fault acts
    when the answer would start: after the cold start, the queue and the service latency.
    """

    kind: FaultKind
    every: int = Field(default=1, ge=1)
    offset: int = Field(default=0, ge=0)
    status: int = Field(default=500, ge=300, le=599)
    retry_after: str | None = None
    body: str | None = None

    @model_validator(mode="after")
    def _offset_below_every(self) -> Self:
        if self.offset >= self.every:
            raise ValueError(f"offset {self.offset} never matches with every={self.every}")
        return self

    def applies_to(self, n: int) -> bool:
        return n % self.every == self.offset


class EndpointSpec(_Frozen):
    """How one demo endpoint behaves. Durations in seconds; see the module docstring's timeline."""

    name: str = "demo"
    latency: float = Field(default=0.05, ge=0)
    jitter: float = Field(default=0.0, ge=0)  # lognormal sigma applied to latency; seeded
    seed: int = 1
    cold_start: float = Field(default=0.0, ge=0)
    cold_after: float | None = Field(default=None, gt=0)
    parallelism: int | None = Field(default=None, ge=1)
    stream_format: StreamFormat = "openai-chat"
    tokens: int = Field(default=20, ge=0, le=100_000)
    token_interval: float = Field(default=0.005, ge=0)
    first_token_delay: float = Field(default=0.0, ge=0)
    buffered: bool = False
    hold_headers: bool = False
    usage_chunk: bool = True  # openai-chat usage chunk; usage in response.completed/message_delta
    done_marker: bool = True  # the format's end marker: [DONE], response.completed, message_stop
    keep_alive: bool = True
    close_after_stream: bool = False
    http10: bool = False
    gzip: bool = False  # non-streamed documents go out gzip-compressed (Content-Encoding: gzip)
    faults: tuple[Fault, ...] = ()

    @property
    def path(self) -> str:
        return PATHS[self.stream_format]


@dataclass
class RequestRecord:
    """Server-side truth for one request; times are wall clock `time.time_ns()`.

    `first_byte_sent_ns` is the write of the first response byte (the headers);
    `first_token_sent_ns` the write holding the first content (for a non-stream, the document);
    `done_ns` the last write or the close. `queued` is seconds waited for a parallelism slot.
    `status` is 0 when no response was sent (reset, hang, close before response).
    """

    index: int
    method: str
    path: str
    received_ns: int
    first_byte_sent_ns: int | None = None
    first_token_sent_ns: int | None = None
    done_ns: int | None = None
    queued: float = 0.0
    stream: bool = False
    status: int = 0
    connection: int = 0  # which accepted connection (1, 2, ...) carried it


# --- the shapes of the answers -------------------------------------------------------------


def _token(i: int) -> str:
    return _WORDS[i % len(_WORDS)] + " "


def _sse(data: Any, event: str | None = None) -> bytes:
    payload = json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class _Shape:
    """One answer in a stream format: its events and its non-stream document."""

    content_type = "text/event-stream"
    document_type = "application/json"

    def __init__(self, index: int, spec: EndpointSpec, prompt_tokens: int) -> None:
        self.id = f"demo-{index}"
        self.model = f"latency-gate-demo-{spec.name}"
        self.created = int(time.time())
        self.spec = spec
        self.prompt_tokens = prompt_tokens
        self.text = ""
        self.deltas = 0

    def prelude(self) -> list[bytes]:
        return []

    def delta(self, text: str) -> bytes:
        self.text += text
        self.deltas += 1
        return self._delta(text)

    def _delta(self, text: str) -> bytes:
        raise NotImplementedError

    def finish(self) -> list[bytes]:
        return []

    def error_event(self) -> bytes:
        raise NotImplementedError

    def malformed(self) -> bytes:
        return b'data: {"choices": [{"delta": {"content": "unterminated\n\n'

    def document(self, text: str) -> bytes:
        raise NotImplementedError

    def error_document(self, status: int) -> bytes:
        message = "Rate limit reached" if status == 429 else "The server had an error"
        error = {"message": message, "type": "server_error", "code": None}
        return json.dumps({"error": error}).encode()

    def usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.deltas,
            "total_tokens": self.prompt_tokens + self.deltas,
        }


class _OpenAIChat(_Shape):
    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return _sse(self._envelope(choices=[choice]))

    def _envelope(self, **fields: Any) -> dict[str, Any]:
        head = {"id": self.id, "object": "chat.completion.chunk", "created": self.created}
        return {**head, "model": self.model, **fields}

    def prelude(self) -> list[bytes]:
        return [self._chunk({"role": "assistant", "content": None})]

    def _delta(self, text: str) -> bytes:
        return self._chunk({"content": text})

    def finish(self) -> list[bytes]:
        events = [self._chunk({}, "stop")]
        if self.spec.usage_chunk:
            events.append(_sse(self._envelope(choices=[], usage=self.usage())))
        if self.spec.done_marker:
            events.append(b"data: [DONE]\n\n")
        return events

    def error_event(self) -> bytes:
        error = {
            "message": "The server had an error while processing your request.",
            "type": "server_error",
            "param": None,
            "code": None,
        }
        return _sse({"error": error})

    def document(self, text: str) -> bytes:
        message = {"role": "assistant", "content": text}
        doc = {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": self.usage(),
        }
        return json.dumps(doc).encode()


class _OpenAIResponses(_Shape):
    item_id = "msg_demo"

    def __init__(self, index: int, spec: EndpointSpec, prompt_tokens: int) -> None:
        super().__init__(index, spec, prompt_tokens)
        self._sequence = 0

    def _event(self, kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        return _sse(data, event=kind)

    def _response(self, status: str, text: str | None) -> dict[str, Any]:
        output = []
        if text is not None:
            output = [self._message(text)]
        usage = None
        if status == "completed" and self.spec.usage_chunk:
            usage = {
                "input_tokens": self.prompt_tokens,
                "output_tokens": self.deltas,
                "total_tokens": self.prompt_tokens + self.deltas,
            }
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "model": self.model,
            "output": output,
            "usage": usage,
        }

    def _message(self, text: str) -> dict[str, Any]:
        part = {"type": "output_text", "text": text, "annotations": []}
        return {
            "type": "message",
            "id": self.item_id,
            "status": "completed",
            "role": "assistant",
            "content": [part],
        }

    def prelude(self) -> list[bytes]:
        item = {
            "type": "message",
            "id": self.item_id,
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        part = {"type": "output_text", "text": "", "annotations": []}
        return [
            self._event("response.created", response=self._response("in_progress", None)),
            self._event("response.in_progress", response=self._response("in_progress", None)),
            self._event("response.output_item.added", output_index=0, item=item),
            self._event(
                "response.content_part.added",
                item_id=self.item_id,
                output_index=0,
                content_index=0,
                part=part,
            ),
        ]

    def _delta(self, text: str) -> bytes:
        return self._event(
            "response.output_text.delta",
            item_id=self.item_id,
            output_index=0,
            content_index=0,
            delta=text,
        )

    def finish(self) -> list[bytes]:
        where = {"item_id": self.item_id, "output_index": 0, "content_index": 0}
        part = {"type": "output_text", "text": self.text, "annotations": []}
        events = [
            self._event("response.output_text.done", **where, text=self.text),
            self._event("response.content_part.done", **where, part=part),
            self._event("response.output_item.done", output_index=0, item=self._message(self.text)),
        ]
        if self.spec.done_marker:
            response = self._response("completed", self.text)
            events.append(self._event("response.completed", response=response))
        return events

    def error_event(self) -> bytes:
        return self._event(
            "error",
            code="server_error",
            param=None,
            message="The server had an error while processing your request.",
        )

    def document(self, text: str) -> bytes:
        self.text = text
        return json.dumps(self._response("completed", text)).encode()


class _Anthropic(_Shape):
    def _event(self, kind: str, **fields: Any) -> bytes:
        return _sse({"type": kind, **fields}, event=kind)

    def _message(self, content: list[dict[str, Any]], stop_reason: str | None) -> dict[str, Any]:
        output_tokens = self.deltas if stop_reason else 1
        usage = {"input_tokens": self.prompt_tokens, "output_tokens": output_tokens}
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }

    def prelude(self) -> list[bytes]:
        return [
            self._event("message_start", message=self._message([], None)),
            self._event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            self._event("ping"),
        ]

    def _delta(self, text: str) -> bytes:
        return self._event(
            "content_block_delta", index=0, delta={"type": "text_delta", "text": text}
        )

    def finish(self) -> list[bytes]:
        fields: dict[str, Any] = {"delta": {"stop_reason": "end_turn", "stop_sequence": None}}
        if self.spec.usage_chunk:
            fields["usage"] = {"output_tokens": self.deltas}
        events = [
            self._event("content_block_stop", index=0),
            self._event("message_delta", **fields),
        ]
        if self.spec.done_marker:
            events.append(self._event("message_stop"))
        return events

    def error_event(self) -> bytes:
        return self._event("error", error={"type": "overloaded_error", "message": "Overloaded"})

    def document(self, text: str) -> bytes:
        return json.dumps(self._message([{"type": "text", "text": text}], "end_turn")).encode()

    def error_document(self, status: int) -> bytes:
        kind = "rate_limit_error" if status == 429 else "api_error"
        message = "Rate limit reached" if status == 429 else "Internal server error"
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


class _Raw(_Shape):
    content_type = "text/plain; charset=utf-8"
    document_type = "text/plain; charset=utf-8"

    def _delta(self, text: str) -> bytes:
        return text.encode()

    def error_event(self) -> bytes:
        # Plain text has no error event; a stream that stops on an error line is the closest.
        return b"\n[error] upstream failed\n"

    def malformed(self) -> bytes:
        return b""  # plain text has no event framing to break

    def document(self, text: str) -> bytes:
        return text.encode()

    def error_document(self, status: int) -> bytes:
        return f"error {status}\n".encode()


_SHAPES: dict[str, type[_Shape]] = {
    "openai-chat": _OpenAIChat,
    "openai-responses": _OpenAIResponses,
    "anthropic": _Anthropic,
    "raw": _Raw,
}


# --- HTTP plumbing ---------------------------------------------------------------------------


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


class _FifoSlots:
    """At most N holders; waiters are served strictly in arrival order (a real queue)."""

    def __init__(self, size: int) -> None:
        self._free = size
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> None:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # handed the slot just as we were cancelled: pass it on
            else:
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1


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


# --- the server ------------------------------------------------------------------------------


class DemoServer:
    """Serves one `EndpointSpec` on loopback; `records` holds what happened, request by request."""

    def __init__(
        self,
        spec: EndpointSpec,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.spec = spec
        self.host = host
        self.ssl_context = ssl_context  # serve HTTPS with this context (tests' TLS faults)
        self.records: list[RequestRecord] = []
        self.max_in_flight = 0
        self.connections = 0  # connections accepted so far
        self._port = port
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._stopping = asyncio.Event()
        self._slots = _FifoSlots(spec.parallelism) if spec.parallelism else None
        self._rng = random.Random(spec.seed)
        self._in_flight = 0
        self._warm_at: float | None = None  # monotonic time the server is (or was) warm from
        self._last_activity = 0.0

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the demo server is not started")
        return self._port

    @property
    def base_url(self) -> str:
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return self.base_url + self.spec.path

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._accept, self.host, self._port, limit=MAX_LINE, ssl=self.ssl_context
        )
        self._port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Close the listener and every connection, cancel every handler; bounded in time."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=STOP_TIMEOUT)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.wait_closed(), STOP_TIMEOUT)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._stopping.is_set():
            writer.transport.abort()
            return
        self.connections += 1
        task = asyncio.get_running_loop().create_task(
            self._serve_connection(reader, writer, self.connections)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: int
    ) -> None:
        self._writers.add(writer)
        try:
            while True:
                try:
                    request = await _read_request(reader)
                except _BadRequest as exc:
                    writer.write(self._head(exc.status, [("Content-Length", "0")], keep=False))
                    await writer.drain()
                    break
                if request is None or not await self._respond(request, writer, connection):
                    break
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass  # the client went away, or sat idle past the keep-alive timeout
        except Exception:
            logger.exception("demo server %r failed on a request", self.spec.name)
        finally:
            self._writers.discard(writer)
            writer.close()  # FIN after what is still buffered; a no-op after an abort

    # --- one request ---

    def _fault_for(self, index: int, request: _Request) -> Fault | None:
        for fault in self.spec.faults:
            if fault.kind == "redirect" and request.path == REDIRECT_TARGET:
                continue
            if fault.applies_to(index):
                return fault
        return None

    def _cold_wait(self, now: float) -> float:
        spec = self.spec
        if spec.cold_start <= 0:
            return 0.0
        idle = now - self._last_activity
        went_cold = spec.cold_after is not None and self._in_flight == 0 and idle >= spec.cold_after
        if self._warm_at is None or went_cold:
            self._warm_at = now + spec.cold_start
        return max(0.0, self._warm_at - now)

    def _service_time(self) -> float:
        if self.spec.jitter <= 0:
            return self.spec.latency
        return self.spec.latency * self._rng.lognormvariate(0.0, self.spec.jitter)

    async def _respond(
        self, request: _Request, writer: asyncio.StreamWriter, connection: int
    ) -> bool:
        """Answer one request; True when the connection stays open for the next one."""
        record = RequestRecord(
            index=len(self.records),
            method=request.method,
            path=request.path,
            received_ns=time.time_ns(),
            stream=request.stream,
            connection=connection,
        )
        self.records.append(record)
        fault = self._fault_for(record.index, request)
        now = time.monotonic()
        cold_wait = self._cold_wait(now)
        self._last_activity = now
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if fault is not None and fault.kind == "close_before_response":
                record.done_ns = time.time_ns()
                return False
            if fault is not None and fault.kind == "hang":
                await self._stopping.wait()
                return False
            if cold_wait > 0:
                await asyncio.sleep(cold_wait)
            async with self._slot(record):
                await asyncio.sleep(self._service_time())
                return await self._answer(request, record, writer, fault)
        finally:
            self._in_flight -= 1
            self._last_activity = time.monotonic()

    @contextlib.asynccontextmanager
    async def _slot(self, record: RequestRecord) -> AsyncIterator[None]:
        if self._slots is None:
            yield
            return
        started = time.monotonic()
        await self._slots.acquire()
        record.queued = time.monotonic() - started
        try:
            yield
        finally:
            self._slots.release()

    def _head(self, status: int, headers: list[tuple[str, str]], *, keep: bool) -> bytes:
        version = "HTTP/1.0" if self.spec.http10 else "HTTP/1.1"
        lines = [
            f"{version} {status} {_reason(status)}",
            f"Date: {formatdate(usegmt=True)}",
            "Server: latency-gate-demo",
            *(f"{name}: {value}" for name, value in headers),
            f"Connection: {'keep-alive' if keep else 'close'}",
        ]
        if keep and self.spec.close_after_stream:
            lines.append("Keep-Alive: timeout=5")  # what llama.cpp says before closing anyway
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def _answer(
        self,
        request: _Request,
        record: RequestRecord,
        writer: asyncio.StreamWriter,
        fault: Fault | None,
    ) -> bool:
        keep = self.spec.keep_alive and not self.spec.http10 and not request.wants_close
        shape = _SHAPES[self.spec.stream_format](record.index, self.spec, request.prompt_tokens)
        ident = ("X-Demo-Request", str(record.index))
        kind = fault.kind if fault is not None else None
        if kind == "reset":
            sock = writer.get_extra_info("socket")
            # Linger 0 turns close into an RST: the client reads "connection reset by peer".
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            record.done_ns = time.time_ns()
            return False
        if fault is not None and kind in ("status", "redirect"):
            if kind == "redirect":
                status, body = 302, b""
                headers = [ident, ("Location", REDIRECT_TARGET)]
            else:
                status = fault.status
                body = shape.error_document(status) if fault.body is None else fault.body.encode()
                json_body = body.lstrip().startswith((b"{", b"["))
                ctype = "application/json" if json_body else "text/plain; charset=utf-8"
                headers = [ident, ("Content-Type", ctype)]
                if fault.retry_after is not None:
                    headers.append(("Retry-After", fault.retry_after))
            headers.append(("Content-Length", str(len(body))))
            record.status = status
            sink = _Sink(writer, record, chunked=False)
            await sink.raw(self._head(status, headers, keep=keep) + body)
            return keep
        if kind == "slow_drip":
            await self._drip(request, record, writer, shape)
            return False
        if request.stream:
            return await self._stream(record, writer, shape, kind, keep)
        return await self._document(record, writer, shape, kind, keep)

    async def _stream(
        self,
        record: RequestRecord,
        writer: asyncio.StreamWriter,
        shape: _Shape,
        kind: str | None,
        keep: bool,
    ) -> bool:
        spec = self.spec
        chunked = not spec.http10  # HTTP/1.0 has no chunked coding: the close ends the body
        headers = [
            ("X-Demo-Request", str(record.index)),
            ("Content-Type", shape.content_type),
            ("Cache-Control", "no-cache"),
        ]
        if chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        record.status = 200
        sink = _Sink(writer, record, chunked)
        sink.holding = spec.hold_headers or spec.buffered
        sink.release_on_token = spec.hold_headers and not spec.buffered
        await sink.raw(self._head(200, headers, keep=keep))
        if spec.buffered and not spec.hold_headers:
            await sink.flush()  # the layer in front sends headers, then holds the whole body
        for event in shape.prelude():
            await sink.event(event)
        if spec.first_token_delay > 0:
            await asyncio.sleep(spec.first_token_delay)
        middle = spec.tokens // 2
        for i in range(spec.tokens + 1):
            if i == middle and kind == "cut":
                await sink.flush()
                record.done_ns = time.time_ns()
                return False  # the caller's close sends FIN with the body unfinished
            if i == middle and kind == "malformed_sse":
                await sink.event(shape.malformed())
            if i == middle and kind == "error_event":
                await sink.event(shape.error_event())
                await sink.raw(b"0\r\n\r\n" if chunked else b"")
                await sink.flush()
                return keep and chunked
            if i == spec.tokens:
                break
            if i > 0 and spec.token_interval > 0:
                await asyncio.sleep(spec.token_interval)
            if i == middle and kind == "invalid_utf8":
                event = shape.delta(_PLACEHOLDER).replace(_PLACEHOLDER.encode(), INVALID_UTF8)
            else:
                event = shape.delta(_token(i))
            await sink.event(event, token=True)
        for event in shape.finish():
            await sink.event(event)
        sink.holding = False
        await sink.raw(b"0\r\n\r\n" if chunked else b"")
        await sink.flush()
        return keep and chunked and not spec.close_after_stream

    async def _document(
        self,
        record: RequestRecord,
        writer: asyncio.StreamWriter,
        shape: _Shape,
        kind: str | None,
        keep: bool,
    ) -> bool:
        spec = self.spec
        # A non-streamed answer is sent once complete: the generation a stream would show.
        generation = spec.first_token_delay + spec.tokens * spec.token_interval
        if generation > 0:
            await asyncio.sleep(generation)
        words = [_token(i) for i in range(spec.tokens)]
        if kind == "invalid_utf8" and words:
            words[spec.tokens // 2] = _PLACEHOLDER
        shape.deltas = spec.tokens
        if kind == "error_event":
            body = shape.error_document(500)
        else:
            body = shape.document("".join(words)).replace(_PLACEHOLDER.encode(), INVALID_UTF8)
        if kind == "malformed_sse":
            body = body[: len(body) // 2]  # a JSON document that stops half way
        headers = [("X-Demo-Request", str(record.index)), ("Content-Type", shape.document_type)]
        if spec.gzip and kind != "bad_gzip":
            body = gzip.compress(body)
        if spec.gzip or kind == "bad_gzip":
            headers.append(("Content-Encoding", "gzip"))
        headers.append(("Content-Length", str(len(body))))
        record.status = 200
        sink = _Sink(writer, record, chunked=False)
        has_tokens = spec.tokens > 0
        if kind == "cut":
            head = self._head(200, headers, keep=keep)
            await sink.raw(head + body[: len(body) // 2], token=has_tokens)
            return False
        await sink.raw(self._head(200, headers, keep=keep) + body, token=has_tokens)
        return keep

    async def _drip(
        self,
        request: _Request,
        record: RequestRecord,
        writer: asyncio.StreamWriter,
        shape: _Shape,
    ) -> None:
        """Headers, then one filler byte per DRIP_INTERVAL until DRIP_LIMIT, then close."""
        if request.stream:
            ctype, filler = shape.content_type, b":\n"  # ":" lines are SSE comments
        else:
            ctype, filler = shape.document_type, b" "  # JSON allows leading whitespace
        chunked = not self.spec.http10
        headers = [("X-Demo-Request", str(record.index)), ("Content-Type", ctype)]
        if chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        record.status = 200
        sink = _Sink(writer, record, chunked)
        await sink.raw(self._head(200, headers, keep=False))
        deadline = time.monotonic() + DRIP_LIMIT
        sent = 0
        while time.monotonic() < deadline:
            await asyncio.sleep(DRIP_INTERVAL)
            await sink.event(filler[sent % len(filler) : sent % len(filler) + 1])
            sent += 1


# --- running several from sync code, and the classic three -----------------------------------


@contextlib.contextmanager
def serve_in_thread(
    *specs: EndpointSpec, ssl_context: ssl.SSLContext | None = None
) -> Iterator[list[DemoServer]]:
    """Run the servers on their own event loop in a daemon thread (for sync code: CLI tests,
    the `demo` command); on exit, stop them and join the thread. `ssl_context` serves HTTPS."""
    servers = [DemoServer(spec, ssl_context=ssl_context) for spec in specs]
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="latency-gate-demo", daemon=True)
    thread.start()

    async def start_all() -> None:
        for server in servers:
            await server.start()

    async def stop_all() -> None:
        for server in servers:
            await server.stop()

    try:
        asyncio.run_coroutine_threadsafe(start_all(), loop).result(timeout=START_TIMEOUT)
        yield servers
    finally:
        try:
            future = asyncio.run_coroutine_threadsafe(stop_all(), loop)
            future.result(timeout=len(servers) * 2 * STOP_TIMEOUT + 1)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=START_TIMEOUT)
            if not thread.is_alive():
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()


def classic_three() -> list[EndpointSpec]:
    """The three classic environments, tuned for the default probe (1 cold, 20 warm, 10 at once).

    - local: a model on the same machine, ~40-80 ms per answer, honest streaming: passes.
    - free: a free-tier server, cold start ~2.5 s, one request at a time, ~0.38 s each: the
      10-call burst queues, so concurrent p95 ~ 9.5 x 0.38 s ~ 3.5 s breaches the 3 s budget.
    - paid: fast service (~80 ms) but a layer in front buffers the whole stream (40 tokens at
      15 ms): ~0.7 s, within budget, with the first token arriving with the last byte.
    The whole demo of the three takes about 35 s probed one after another.
    """
    local = EndpointSpec(
        name="local", latency=0.035, jitter=0.25, seed=11, tokens=16, token_interval=0.001
    )
    free = EndpointSpec(
        name="free",
        latency=0.3,
        jitter=0.1,
        seed=12,
        cold_start=2.5,
        cold_after=30.0,
        parallelism=1,
        tokens=20,
        token_interval=0.004,
    )
    paid = EndpointSpec(
        name="paid",
        latency=0.08,
        jitter=0.15,
        seed=13,
        tokens=40,
        token_interval=0.015,
        buffered=True,
    )
    return [local, free, paid]
