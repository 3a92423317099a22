"""What goes out for one request, byte by byte and when, given the endpoint's spec and the fault
that applies: fault answers (status, redirect, reset, slow drip) and the stream or document."""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
import time
from dataclasses import dataclass
from email.utils import formatdate

from latency_gate.demo.shapes import _SHAPES, _Shape, _token
from latency_gate.demo.spec import INVALID_UTF8, REDIRECT_TARGET, EndpointSpec, Fault, RequestRecord
from latency_gate.demo.wire import _reason, _Request, _Sink

DRIP_INTERVAL = 0.05
DRIP_LIMIT = 60.0
_PLACEHOLDER = "@@invalid-utf8@@"


@dataclass(frozen=True)
class _Reply:
    """One request's answer, streamed or whole: its record, the connection it goes out on, the
    format's shape, the fault that applies to it (`kind`, None: none) and whether the
    connection is kept open after it."""

    record: RequestRecord
    writer: asyncio.StreamWriter
    shape: _Shape
    kind: str | None
    keep: bool


class _Responder:
    """Writes the answers of one `EndpointSpec`; the server decides when an answer starts."""

    def __init__(self, spec: EndpointSpec) -> None:
        self.spec = spec

    def head(self, status: int, headers: list[tuple[str, str]], *, keep: bool) -> bytes:
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

    async def answer(
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
            await sink.raw(self.head(status, headers, keep=keep) + body)
            return keep
        if kind == "slow_drip":
            await self._drip(request, record, writer, shape)
            return False
        reply = _Reply(record, writer, shape, kind, keep)
        if request.stream:
            return await self._stream(reply)
        return await self._document(reply)

    async def _stream(self, reply: _Reply) -> bool:
        spec = self.spec
        chunked = not spec.http10  # HTTP/1.0 has no chunked coding: the close ends the body
        headers = [
            ("X-Demo-Request", str(reply.record.index)),
            ("Content-Type", reply.shape.content_type),
            ("Cache-Control", "no-cache"),
        ]
        if chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        reply.record.status = 200
        sink = _Sink(reply.writer, reply.record, chunked)
        sink.holding = spec.hold_headers or spec.buffered
        sink.release_on_token = spec.hold_headers and not spec.buffered
        await sink.raw(self.head(200, headers, keep=reply.keep))
        if spec.buffered and not spec.hold_headers:
            await sink.flush()  # the layer in front sends headers, then holds the whole body
        for event in reply.shape.prelude():
            await sink.event(event)
        if spec.first_token_delay > 0:
            await asyncio.sleep(spec.first_token_delay)
        middle = spec.tokens // 2
        for i in range(spec.tokens + 1):
            if i == middle and reply.kind == "cut":
                await sink.flush()
                reply.record.done_ns = time.time_ns()
                return False  # the caller's close sends FIN with the body unfinished
            if i == middle and reply.kind == "malformed_sse":
                await sink.event(reply.shape.malformed())
            if i == middle and reply.kind == "error_event":
                await sink.event(reply.shape.error_event())
                await sink.raw(b"0\r\n\r\n" if chunked else b"")
                await sink.flush()
                return reply.keep and chunked
            if i == spec.tokens:
                break
            if i > 0 and spec.token_interval > 0:
                await asyncio.sleep(spec.token_interval)
            if i == middle and reply.kind == "invalid_utf8":
                event = reply.shape.delta(_PLACEHOLDER).replace(_PLACEHOLDER.encode(), INVALID_UTF8)
            else:
                event = reply.shape.delta(_token(i))
            await sink.event(event, token=True)
        for event in reply.shape.finish():
            await sink.event(event)
        sink.holding = False
        await sink.raw(b"0\r\n\r\n" if chunked else b"")
        await sink.flush()
        return reply.keep and chunked and not spec.close_after_stream

    async def _document(self, reply: _Reply) -> bool:
        spec = self.spec
        # A non-streamed answer is sent once complete: the generation a stream would show.
        generation = spec.first_token_delay + spec.tokens * spec.token_interval
        if generation > 0:
            await asyncio.sleep(generation)
        words = [_token(i) for i in range(spec.tokens)]
        if reply.kind == "invalid_utf8" and words:
            words[spec.tokens // 2] = _PLACEHOLDER
        reply.shape.deltas = spec.tokens
        if reply.kind == "error_event":
            body = reply.shape.error_document(500)
        else:
            body = reply.shape.document("".join(words)).replace(_PLACEHOLDER.encode(), INVALID_UTF8)
        if reply.kind == "malformed_sse":
            body = body[: len(body) // 2]  # a JSON document that stops half way
        headers = [
            ("X-Demo-Request", str(reply.record.index)),
            ("Content-Type", reply.shape.document_type),
        ]
        if spec.gzip and reply.kind != "bad_gzip":
            body = gzip.compress(body)
        if spec.gzip or reply.kind == "bad_gzip":
            headers.append(("Content-Encoding", "gzip"))
        headers.append(("Content-Length", str(len(body))))
        reply.record.status = 200
        sink = _Sink(reply.writer, reply.record, chunked=False)
        has_tokens = spec.tokens > 0
        if reply.kind == "cut":
            head = self.head(200, headers, keep=reply.keep)
            await sink.raw(head + body[: len(body) // 2], token=has_tokens)
            return False
        await sink.raw(self.head(200, headers, keep=reply.keep) + body, token=has_tokens)
        return reply.keep

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
        await sink.raw(self.head(200, headers, keep=False))
        deadline = time.monotonic() + DRIP_LIMIT
        sent = 0
        while time.monotonic() < deadline:
            await asyncio.sleep(DRIP_INTERVAL)
            await sink.event(filler[sent % len(filler) : sent % len(filler) + 1])
            sent += 1
