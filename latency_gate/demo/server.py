"""The demo server: accepts connections, applies cold start, queueing and service latency, picks
the fault for each request, and keeps the `RequestRecord`s; `serve_in_thread` runs several from
sync code.

A raw asyncio HTTP/1.1 server rather than a web framework, because the point is to decide exactly
when each byte leaves: headers held back, a stream buffered whole by a "layer in front", a reset
before the first byte, a body cut in the middle.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import ssl
import threading
import time
from asyncio import Transport
from collections import deque
from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import Self

from latency_gate.demo.answers import _Responder
from latency_gate.demo.spec import REDIRECT_TARGET, EndpointSpec, Fault, RequestRecord
from latency_gate.demo.wire import MAX_LINE, _BadRequest, _read_request, _Request

logger = logging.getLogger(__name__)

STOP_TIMEOUT = 2.0
START_TIMEOUT = 10.0


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
        self._responder = _Responder(spec)
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
        # A handshake delay needs the TLS handshake in our hands: start TLS per connection.
        tls_at_accept = self.ssl_context if not self.spec.handshake_delay else None
        self._server = await asyncio.start_server(
            self._accept, self.host, self._port, limit=MAX_LINE, ssl=tls_at_accept
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
        transport = writer.transport
        if self.ssl_context and self.spec.handshake_delay and isinstance(transport, Transport):
            # Leave the ClientHello in the socket until TLS starts: read now as plain bytes,
            # it would be lost to the handshake.
            transport.pause_reading()
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
            if self.ssl_context is not None and self.spec.handshake_delay:
                await asyncio.sleep(self.spec.handshake_delay)
                await writer.start_tls(self.ssl_context)
            while True:
                try:
                    request = await _read_request(reader)
                except _BadRequest as exc:
                    writer.write(
                        self._responder.head(exc.status, [("Content-Length", "0")], keep=False)
                    )
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
            body=request.body,
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
                return await self._responder.answer(request, record, writer, fault)
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
