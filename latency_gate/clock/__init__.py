"""Where the probe's timestamps come from: an httpcore network backend that stamps at the socket.

Every HTTP call gets a `CallStamps` in a context variable (`begin_call`), set in the call's own
task; the backend's streams fill it in as they act on the socket, since httpcore does all the I/O
of a request in the task that sent it. Stamps are wall-clock nanoseconds (`time.time_ns()`),
because that is the clock of the kernel's receive timestamps:

- a write is stamped just before the bytes go to `send()`;
- a read is stamped with the kernel's receive time of the data (`SO_TIMESTAMPNS`, read through
  `recvmsg`), which does not depend on when the event loop got round to the socket. Where the
  kernel gives no stamp (not Linux, or it was not asked for) the read is stamped when `recvmsg`
  returned, in the reader callback, and the call says so (`StampSource.READ_RETURN`).

TLS runs on `ssl.MemoryBIO` over the raw socket, so https keeps the kernel stamps too.

The kernel stamps the newest packet a read consumed, and it merges queued packets (a 1-byte read
of two queued packets 50 ms apart still carries the newer one's stamp), so reads must happen
promptly: each read waits with `loop.add_reader` and calls `recvmsg` in the callback itself.
See ../shared/TIMING.md for the measurements behind this design.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import select
import socket
import ssl
import struct
import sys
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import httpcore
import httpx

from latency_gate.models import StampSource

__all__ = [
    "CallStamps",
    "StampingBackend",
    "begin_call",
    "build_transport",
    "current_call",
    "kernel_stamps_supported",
    "make_ssl_context",
    "now_ns",
]

# Linux's SO_TIMESTAMPNS (== SCM_TIMESTAMPNS); Python's socket module has no constant for it.
_SO_TIMESTAMPNS = 35
_TIMESPEC = struct.Struct("@qq")  # struct timespec on 64-bit Linux: tv_sec, tv_nsec
_TIMESPEC32 = struct.Struct("@ii")  # the same on 32-bit platforms without 64-bit time
_ANCILLARY_SIZE = socket.CMSG_SPACE(_TIMESPEC.size)
_RAW_READ_SIZE = 64 * 1024  # raw bytes per recvmsg under TLS

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


def now_ns() -> int:
    """The clock that matches the stamps: wall-clock nanoseconds (the kernel stamps are too)."""
    return time.time_ns()


@dataclass
class CallStamps:
    """Wall-clock ns stamps of one HTTP call, filled by the network backend in the call's own task.

    `source` says what the call actually got: KERNEL only if every read that returned data
    carried a kernel receive stamp. `start_ns` is the call's first network action: the start of
    `connect_tcp` (DNS included) for a call that opened its connection, else its first write.
    """

    source: StampSource
    start_ns: int | None = None
    dns_start_ns: int | None = None
    dns_end_ns: int | None = None
    connect_start_ns: int | None = None
    connect_end_ns: int | None = None
    tls_start_ns: int | None = None
    tls_end_ns: int | None = None
    first_write_ns: int | None = None
    last_write_ns: int | None = None
    first_read_ns: int | None = None  # receive stamp of the first read that returned data
    last_read_ns: int | None = None  # receive stamp of the newest read that returned data
    reads: int = 0
    bytes_read: int = 0
    new_connection: bool = False  # this call opened its connection (timed)
    preconnected: bool = False  # it used a connection opened ahead, untimed

    def _stamp_read(self, nbytes: int, kernel_ns: int | None, returned_ns: int) -> None:
        if kernel_ns is None:
            self.source = StampSource.READ_RETURN
            stamp = returned_ns
        else:
            stamp = kernel_ns
        if self.first_read_ns is None:
            self.first_read_ns = stamp
        self.last_read_ns = stamp
        self.reads += 1
        self.bytes_read += nbytes

    def _stamp_write(self, stamp: int) -> None:
        if self.start_ns is None:
            self.start_ns = stamp
        if self.first_write_ns is None:
            self.first_write_ns = stamp
        self.last_write_ns = stamp


_current: ContextVar[CallStamps | None] = ContextVar("latency_gate_call_stamps", default=None)


@lru_cache(maxsize=1)
def kernel_stamps_supported() -> bool:
    """Whether this platform gives kernel receive timestamps (Linux's SO_TIMESTAMPNS)."""
    # Option numbers differ between systems: 35 means SO_TIMESTAMPNS on Linux only.
    if not sys.platform.startswith("linux"):
        return False
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


def begin_call(source_hint: StampSource | None = None) -> CallStamps:
    """Start the stamps of a new call in the current task (a context variable) and return them.

    Call it inside the task that sends the request: tasks copy the context when created.
    Without a hint the source starts as what this platform can give; a read without a kernel
    stamp lowers it to READ_RETURN.
    """
    if source_hint is None:
        source_hint = StampSource.KERNEL if kernel_stamps_supported() else StampSource.READ_RETURN
    stamps = CallStamps(source=source_hint)
    _current.set(stamps)
    return stamps


def current_call() -> CallStamps | None:
    """The stamps of the call running in this task, or None outside a call."""
    return _current.get()


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


def _kernel_stamp(ancdata: list[tuple[int, int, bytes]]) -> int | None:
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS:
            layout = _TIMESPEC if len(data) >= _TIMESPEC.size else _TIMESPEC32
            seconds, nanoseconds = layout.unpack_from(data)
            stamp: int = seconds * 1_000_000_000 + nanoseconds
            if stamp:
                return stamp
    return None


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

    # Reading.

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _map_errors({TimeoutError: httpcore.ReadTimeout, OSError: httpcore.ReadError}):
            async with asyncio.timeout(timeout):
                if self._tls is None:
                    data, kernel_ns, returned_ns = await self._raw.recv(max_bytes)
                else:
                    data, kernel_ns, returned_ns = await self._read_tls(self._tls, max_bytes)
        if data:
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
                            raw, _, _ = await self._raw.recv(_RAW_READ_SIZE)
                            if not raw:
                                raise OSError(
                                    "server closed the connection during TLS handshake"
                                ) from None
                            tls.incoming.write(raw)
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


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class StampingBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, with stamps: DNS, connect, TLS, each write, each read.

    `kernel_stamps=True` asks for kernel receive timestamps where the platform has them.
    """

    def __init__(self, *, kernel_stamps: bool = True) -> None:
        self._kernel_stamps = kernel_stamps and kernel_stamps_supported()
        self._ahead: dict[tuple[str, int], list[StampingStream]] = {}

    @property
    def source(self) -> StampSource:
        """KERNEL when SO_TIMESTAMPNS works here and was asked for, else READ_RETURN."""
        return StampSource.KERNEL if self._kernel_stamps else StampSource.READ_RETURN

    async def preconnect(
        self,
        host: str,
        port: int,
        count: int,
        *,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None,
        timeout: float,
    ) -> None:
        """Open `count` connections to host:port ahead of time (TCP, and TLS when given a context).

        Untimed: nothing is stamped. `connect_tcp` for the same host and port hands them out
        first. Raises httpcore.ConnectError / ConnectTimeout like a connect would.
        """
        if ssl_context is not None:
            # What httpcore sets before its own handshake (HTTP/1.1 only).
            ssl_context.set_alpn_protocols(["http/1.1"])
        token = _current.set(None)
        try:
            streams = await asyncio.gather(
                *(
                    self._open_ahead(host, port, ssl_context, server_hostname, timeout)
                    for _ in range(count)
                ),
                return_exceptions=True,
            )
        finally:
            _current.reset(token)
        opened = [stream for stream in streams if isinstance(stream, StampingStream)]
        self._ahead.setdefault((host, port), []).extend(opened)
        for outcome in streams:
            if isinstance(outcome, BaseException):
                raise outcome

    async def _open_ahead(
        self,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None,
        timeout: float,
    ) -> StampingStream:
        stream = await self._connect(host, port, timeout, None, None)
        if ssl_context is None:
            return stream
        tls_stream = await stream._handshake(ssl_context, server_hostname or host, timeout)
        tls_stream._tls_ready = True
        return tls_stream

    def _take_ahead(
        self, host: str, port: int, socket_options: Iterable[SocketOption] | None
    ) -> StampingStream | None:
        waiting = self._ahead.get((host, port))
        while waiting:
            stream = waiting.pop(0)
            if stream.is_readable():  # closed by the server while it waited
                stream._raw.close()
                continue
            for option in socket_options or ():
                stream._raw.sock.setsockopt(*option)
            return stream
        return None

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stamps = _current.get()
        ahead = self._take_ahead(host, port, socket_options)
        if ahead is not None:
            if stamps is not None:
                stamps.preconnected = True
            return ahead
        if stamps is not None:
            stamps.new_connection = True
        return await self._connect(host, port, timeout, local_address, socket_options)

    async def _connect(
        self,
        host: str,
        port: int,
        timeout: float | None,
        local_address: str | None,
        socket_options: Iterable[SocketOption] | None,
    ) -> StampingStream:
        stamps = _current.get()
        loop = asyncio.get_running_loop()
        with _map_errors({TimeoutError: httpcore.ConnectTimeout, OSError: httpcore.ConnectError}):
            async with asyncio.timeout(timeout):
                started = connect_start = now_ns()
                if stamps is not None and stamps.start_ns is None:
                    stamps.start_ns = started
                if _is_ip_literal(host):
                    # No lookup: getaddrinfo would still cost a trip through a worker thread.
                    family = socket.AF_INET6 if ":" in host else socket.AF_INET
                    addresses: list[tuple[int, tuple[Any, ...]]] = [(family, (host, port))]
                else:
                    if stamps is not None:
                        stamps.dns_start_ns = started
                    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                    if stamps is not None:
                        stamps.dns_end_ns = now_ns()
                    addresses = [(info[0], info[4]) for info in infos]
                    connect_start = now_ns()
                if stamps is not None:
                    stamps.connect_start_ns = connect_start
                sock = await self._connect_any(addresses, local_address, socket_options)
                if stamps is not None:
                    stamps.connect_end_ns = now_ns()
        return StampingStream(_RawSocket(sock, kernel_stamps=self._kernel_stamps))

    async def _connect_any(
        self,
        addresses: list[tuple[int, tuple[Any, ...]]],
        local_address: str | None,
        socket_options: Iterable[SocketOption] | None,
    ) -> socket.socket:
        loop = asyncio.get_running_loop()
        options = list(socket_options or ())
        last_error: OSError = OSError("no address to connect to")
        for family, address in addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.setblocking(False)
                # asyncio's own TCP connections set TCP_NODELAY; so does every HTTP client.
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if self._kernel_stamps:
                    sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
                for option in options:
                    sock.setsockopt(*option)
                if local_address is not None:
                    sock.bind((local_address, 0))
                await loop.sock_connect(sock, address)
            except OSError as exc:
                sock.close()
                last_error = exc
                continue
            except BaseException:
                sock.close()
                raise
            return sock
        raise last_error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stamps = _current.get()
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with _map_errors(
                {TimeoutError: httpcore.ConnectTimeout, OSError: httpcore.ConnectError}
            ):
                sock.setblocking(False)
                if self._kernel_stamps:
                    sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
                for option in socket_options or ():
                    sock.setsockopt(*option)
                async with asyncio.timeout(timeout):
                    started = now_ns()
                    if stamps is not None:
                        stamps.new_connection = True
                        stamps.connect_start_ns = started
                        if stamps.start_ns is None:
                            stamps.start_ns = started
                    await loop.sock_connect(sock, path)
                    if stamps is not None:
                        stamps.connect_end_ns = now_ns()
        except BaseException:
            sock.close()
            raise
        return StampingStream(_RawSocket(sock, kernel_stamps=self._kernel_stamps))

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def aclose(self) -> None:
        """Close connections opened ahead and never handed out."""
        for streams in self._ahead.values():
            for stream in streams:
                await stream.aclose()
        self._ahead.clear()


@lru_cache(maxsize=2)
def _default_ssl_context(verify: bool) -> ssl.SSLContext:
    return httpx.create_ssl_context(verify=verify)


def make_ssl_context(verify: ssl.SSLContext | bool | str = True) -> ssl.SSLContext:
    """The SSL context httpx would build for `verify`, shared for True/False.

    Building one loads the CA bundle (tens of ms): one client per concurrent slot must share it.
    """
    if isinstance(verify, ssl.SSLContext):
        return verify
    if isinstance(verify, bool):
        return _default_ssl_context(verify)
    if os.path.isdir(verify):
        return ssl.create_default_context(capath=verify)
    return ssl.create_default_context(cafile=verify)


def build_transport(
    backend: StampingBackend,
    *,
    verify: ssl.SSLContext | bool | str = True,
    max_connections: int = 1,
    keepalive_expiry: float | None = 60.0,
) -> httpx.AsyncBaseTransport:
    """An httpx transport (HTTP/1.1) whose connections all go through `backend`.

    httpx 0.28 takes no network backend, so the transport's pool is replaced by one built here;
    httpx's translation of httpcore's exceptions stays, as it lives in the transport's methods.
    """
    ssl_context = make_ssl_context(verify)
    limits = httpx.Limits(
        max_connections=max_connections,
        max_keepalive_connections=max_connections,
        keepalive_expiry=keepalive_expiry,
    )
    transport = httpx.AsyncHTTPTransport(verify=ssl_context, limits=limits, http1=True, http2=False)
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=ssl_context,
        max_connections=max_connections,
        max_keepalive_connections=max_connections,
        keepalive_expiry=keepalive_expiry,
        http1=True,
        http2=False,
        network_backend=backend,
    )
    return transport
