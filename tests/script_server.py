"""A scripted OpenAI-chat streaming server on loopback, for token timing, prompts and proxies.

Each request gets the events its `Script` says, each after its own delay, as chunked SSE on a
kept-alive HTTP/1.1 connection. It records each request's body and headers, and answers 503
(as a loading llama.cpp does) until `ready_at` (monotonic seconds), for readiness tests.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Step:
    """Wait `delay` seconds, then send one chat chunk's delta (or the finish when None)."""

    delay: float
    delta: dict[str, str] | None


Script = Callable[[int], list[Step]]


def steady(tokens: int, interval: float) -> list[Step]:
    """`tokens` content deltas `interval` apart, then the finish."""
    return [Step(interval, {"content": f"t{i} "}) for i in range(tokens)] + [Step(0.0, None)]


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    connection: int  # which accepted connection it came on, from 0


@dataclass
class ScriptServer:
    script: Script
    ready_at: float = 0.0
    requests: list[Request] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)
    connections: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    async def start(self, port: int = 0, *, tls: ssl.SSLContext | None = None) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port, ssl=tls)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        connection = self.connections
        self.connections += 1
        try:
            for _ in range(10_000):  # requests on this connection, bounded
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {
                    k.strip().lower(): v.strip()
                    for k, _, v in (line.partition(":") for line in lines[1:] if line)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                if time.monotonic() < self.ready_at:
                    await self._plain(writer, 503, b'{"error":{"message":"Loading model"}}')
                    continue
                if method != "POST":
                    await self._plain(writer, 404, b"{}")
                    continue
                self.requests.append(Request(method, path, headers, body, connection))
                await self._stream(writer, self.script(len(self.requests) - 1))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    @staticmethod
    async def _plain(writer: asyncio.StreamWriter, status: int, body: bytes) -> None:
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        await writer.drain()

    @staticmethod
    async def _stream(writer: asyncio.StreamWriter, steps: list[Step]) -> None:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        await writer.drain()

        async def send(data: bytes) -> None:
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()

        for step in steps:
            await asyncio.sleep(step.delay)
            choice = {"index": 0, "delta": step.delta or {}, "finish_reason": None}
            if step.delta is None:
                choice["finish_reason"] = "stop"
            await send(f"data: {json.dumps({'choices': [choice]})}\n\n".encode())
        await send(b"data: [DONE]\n\n")
        writer.write(b"0\r\n\r\n")
        await writer.drain()
