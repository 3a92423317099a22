"""One stamping connection: socket reads through `recvmsg` in the reader callback, writes, and
TLS over `ssl.MemoryBIO` so https keeps the kernel stamps; `is_readable` for httpcore's pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
import ssl
from collections.abc import Iterator
from typing import Any

import httpcore

from latency_gate.measure.transport.stamps import _ANCILLARY_SIZE, _current, _kernel_stamp, now_ns

_RAW_READ_SIZE = 64 * 1024  # raw bytes per recvmsg under TLS


@contextlib.contextmanager
def _map_errors(mapping: dict[type[BaseException], type[Exception]]) -> Iterator[None]:
    """Translate low-level errors into httpcore's, which httpx translates into its own."""
    try:
        yield
    except httpcore.NetworkError:
        raise
    except Exception as exc:
        for from_exc, to_exc in mapping.items():
            if isinstance(exc, from_exc):
                raise to_exc(str(exc) or type(exc).__name__) from exc
        raise


def _socket_readable(sock: socket.socket) -> bool:
    """Whether a read would return at once (data, or EOF from a server that closed)."""
    fd = sock.fileno()
    if fd < 0:
        return True
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)  # pragma: no cover - not Linux
    return bool(readable)


class _RawSocket:
    """A non-blocking socket read and written from the event loop, reads carrying stamps."""

    def __init__(self, sock: socket.socket, *, kernel_stamps: bool) -> None:
        self.sock = sock
        self.kernel_stamps = kernel_stamps
        self._loop = asyncio.get_running_loop()
        self._fd = sock.fileno()
        self.closed = False

    def _recv_now(self, max_bytes: int) -> tuple[bytes, int | None, int]:
        if self.kernel_stamps:
            data, ancdata, _flags, _addr = self.sock.recvmsg(max_bytes, _ANCILLARY_SIZE)
            returned = now_ns()
            return data, _kernel_stamp(ancdata), returned
        data = self.sock.recv(max_bytes)
        return data, None, now_ns()

    def _on_readable(
        self, waiter: asyncio.Future[tuple[bytes, int | None, int]], max_bytes: int
    ) -> None:
        # Read here, in the reader callback, not when the waiting task resumes: the loop may run
        # many other callbacks in between, and more packets arriving meanwhile would be merged.
        if waiter.done():
            return
        try:
            result = self._recv_now(max_bytes)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._loop.remove_reader(self._fd)
            waiter.set_exception(exc)
            return
        self._loop.remove_reader(self._fd)
        waiter.set_result(result)

    async def recv(self, max_bytes: int) -> tuple[bytes, int | None, int]:
        """One read: (data, kernel receive stamp or None, time the read returned)."""
        if self.closed:
            raise OSError("socket is closed")
        try:
            return self._recv_now(max_bytes)
        except (BlockingIOError, InterruptedError):
            pass
        waiter: asyncio.Future[tuple[bytes, int | None, int]] = self._loop.create_future()
        self._loop.add_reader(self._fd, self._on_readable, waiter, max_bytes)
        try:
            return await waiter
        finally:
            if not self.closed:
                self._loop.remove_reader(self._fd)

    def _on_writable(self, waiter: asyncio.Future[None]) -> None:
        if not waiter.done():
            waiter.set_result(None)

    async def send_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self.closed:
                raise OSError("socket is closed")
            try:
                sent = self.sock.send(view)
            except (BlockingIOError, InterruptedError):
                waiter: asyncio.Future[None] = self._loop.create_future()
                self._loop.add_writer(self._fd, self._on_writable, waiter)
                try:
                    await waiter
                finally:
                    if not self.closed:
                        self._loop.remove_writer(self._fd)
                continue
            view = view[sent:]

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._loop.remove_reader(self._fd)
        self._loop.remove_writer(self._fd)
        self.sock.close()


class _TLSState:
    """An SSLObject over memory buffers: the raw socket below stays ours, stamps included."""

    def __init__(self, ssl_context: ssl.SSLContext, server_hostname: str | None) -> None:
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.ssl_object = ssl_context.wrap_bio(
            self.incoming, self.outgoing, server_side=False, server_hostname=server_hostname
        )
        # Receive stamps of the newest raw read fed in: decrypted bytes came with it (or earlier).
        self.kernel_ns: int | None = None
        self.returned_ns: int = 0


class StampingStream(httpcore.AsyncNetworkStream):
    """One connection; stamps its reads and writes on the call found in the context variable."""

    def __init__(self, raw: _RawSocket, tls: _TLSState | None = None) -> None:
        self._raw = raw
        self._tls = tls
        # Set on a stream opened ahead with TLS: httpcore's start_tls must not shake hands twice.
        self._tls_ready = False
        # Whether the server has sent anything on this connection yet: only a connection that
        # has answered before can be a stale kept-alive one (calls.py retries only those).
        self.answered = False

    # Reading.

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _map_errors({TimeoutError: httpcore.ReadTimeout, OSError: httpcore.ReadError}):
            async with asyncio.timeout(timeout):
                if self._tls is None:
                    data, kernel_ns, returned_ns = await self._raw.recv(max_bytes)
                else:
                    data, kernel_ns, returned_ns = await self._read_tls(self._tls, max_bytes)
        if data:
            self.answered = True
            stamps = _current.get()
            if stamps is not None:
                stamps._stamp_read(len(data), kernel_ns, returned_ns)
        return data

    async def _read_tls(self, tls: _TLSState, max_bytes: int) -> tuple[bytes, int | None, int]:
        while True:
            try:
                data = tls.ssl_object.read(max_bytes)
            except ssl.SSLWantReadError:
                await self._flush_tls(tls)
                raw, kernel_ns, returned_ns = await self._raw.recv(_RAW_READ_SIZE)
                if raw:
                    tls.incoming.write(raw)
                    tls.kernel_ns, tls.returned_ns = kernel_ns, returned_ns
                else:
                    tls.incoming.write_eof()
                continue
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                # A close_notify, or a server that closed without one: both end the stream,
                # as httpcore's own backend treats them (anyio, standard_compatible=False).
                return b"", None, now_ns()
            except ssl.SSLError as exc:
                raise OSError(f"TLS error: {exc}") from exc
            await self._flush_tls(tls)
            return data, tls.kernel_ns, tls.returned_ns

    async def _flush_tls(self, tls: _TLSState) -> None:
        if tls.outgoing.pending:
            await self._raw.send_all(tls.outgoing.read())

    # Writing.

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        with _map_errors({TimeoutError: httpcore.WriteTimeout, OSError: httpcore.WriteError}):
            async with asyncio.timeout(timeout):
                if self._tls is not None:
                    try:
                        self._tls.ssl_object.write(buffer)
                    except ssl.SSLError as exc:
                        raise OSError(f"TLS error: {exc}") from exc
                    buffer = self._tls.outgoing.read()
                stamps = _current.get()
                if stamps is not None:
                    if stamps.first_write_ns is None:
                        stamps.reused_answered = self.answered
                    stamps._stamp_write(now_ns())
                await self._raw.send_all(buffer)

    async def aclose(self) -> None:
        self._raw.close()

    # TLS.

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if self._tls_ready:
            self._tls_ready = False
            return self
        stamps = _current.get()
        if stamps is not None:
            stamps.tls_start_ns = now_ns()
        tls_stream = await self._handshake(ssl_context, server_hostname, timeout)
        if stamps is not None:
            stamps.tls_end_ns = now_ns()
        return tls_stream

    async def _handshake(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None, timeout: float | None
    ) -> StampingStream:
        try:
            with _map_errors(
                {
                    TimeoutError: httpcore.ConnectTimeout,
                    ssl.SSLError: httpcore.ConnectError,
                    OSError: httpcore.ConnectError,
                }
            ):
                tls = _TLSState(ssl_context, server_hostname)
                async with asyncio.timeout(timeout):
                    while True:
                        try:
                            tls.ssl_object.do_handshake()
                            break
                        except ssl.SSLWantReadError:
                            await self._flush_tls(tls)
                            raw, kernel_ns, returned_ns = await self._raw.recv(_RAW_READ_SIZE)
                            if not raw:
                                raise OSError(
                                    "server closed the connection during TLS handshake"
                                ) from None
                            tls.incoming.write(raw)
                            # Application data may come with the handshake's last records (an
                            # HTTP/2 server's SETTINGS frame does): it arrived with this read.
                            tls.kernel_ns, tls.returned_ns = kernel_ns, returned_ns
                    await self._flush_tls(tls)
        except BaseException:
            self._raw.close()
            raise
        return StampingStream(self._raw, tls)

    def get_extra_info(self, info: str) -> Any:
        sock = self._raw.sock
        if info == "ssl_object":
            return None if self._tls is None else self._tls.ssl_object
        if info == "socket":
            return sock
        if info in ("client_addr", "server_addr"):
            try:
                return sock.getsockname() if info == "client_addr" else sock.getpeername()
            except OSError:
                return None
        if info == "is_readable":
            return self.is_readable()
        return None

    def is_readable(self) -> bool:
        """Whether a read would return at once; on an idle connection that means it was closed."""
        if self._raw.closed:
            return True
        if self._tls is None:
            return _socket_readable(self._raw.sock)
        if self._tls.ssl_object.pending():
            return True
        if not _socket_readable(self._raw.sock) and not self._tls.incoming.pending:
            return False
        return self._tls_has_more_than_housekeeping(self._tls)

    def _tls_has_more_than_housekeeping(self, tls: _TLSState) -> bool:
        # A TLS 1.3 server sends session tickets after the handshake: they make the socket
        # readable on a connection that is perfectly usable. Feed what is there to the TLS
        # layer; only end-of-stream or application data means the connection is done for.
        while True:
            try:
                raw = self._raw.sock.recv(_RAW_READ_SIZE)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                return True
            if not raw:
                return True
            tls.incoming.write(raw)
        try:
            tls.ssl_object.read(_RAW_READ_SIZE)
        except ssl.SSLWantReadError:
            return False
        except ssl.SSLError:
            return True
        return True  # data nobody asked for (or EOF): the connection cannot be reused
