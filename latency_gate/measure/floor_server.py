"""A loopback server that answers every request at once: the floor the gate measures against.

Deliberately tiny (the demo server is richer but costs import time on the way to the first
request): HTTP/1.1 keep-alive, GET without a body, a fixed two-byte answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
_MAX_HEAD = 16 * 1024


class FloorServer:
    """`async with FloorServer() as server:` serves `server.url` on 127.0.0.1 until the end."""

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self.url = ""

    async def __aenter__(self) -> FloorServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._handlers):
            task.cancel()
        for task in list(self._handlers):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if len(head) > _MAX_HEAD:
                    break
                writer.write(ANSWER)
                await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        except asyncio.CancelledError:
            # Stopped by __aexit__: end normally, because Python 3.11's start_server callback
            # calls task.exception() on a cancelled handler and prints a traceback per task.
            pass
        finally:
            writer.close()
            if task is not None:
                self._handlers.discard(task)
