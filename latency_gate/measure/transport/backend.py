"""httpcore's network backend with stamps (connect, DNS, connections opened ahead), and the
httpx transport and SSL contexts built on it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import ssl
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import httpcore
import httpx

from latency_gate.measure.transport.stamps import (
    _SO_TIMESTAMPNS,
    _current,
    hold_kernel_stamps,
    kernel_stamps_supported,
    now_ns,
)
from latency_gate.measure.transport.stream import StampingStream, _map_errors, _RawSocket
from latency_gate.models import StampSource

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


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
        http2: bool = False,
    ) -> None:
        """Open `count` connections to host:port ahead of time (TCP, and TLS when given a context).

        Untimed: nothing is stamped. `connect_tcp` for the same host and port hands them out
        first. Raises httpcore.ConnectError / ConnectTimeout like a connect would.
        """
        if ssl_context is not None:
            # What httpcore sets before its own handshake; it reads the protocol the server chose
            # from the TLS object of the stream it is handed.
            ssl_context.set_alpn_protocols(["http/1.1", "h2"] if http2 else ["http/1.1"])
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
        if self._kernel_stamps:
            hold_kernel_stamps()  # before the call's first stamp: once per process, at most 50 ms
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
    proxy: str | None = None,
    http2: bool = False,
    http1: bool = True,
) -> httpx.AsyncBaseTransport:
    """An httpx transport (HTTP/1.1) whose connections all go through `backend`.

    `http2`: HTTP/2 where the server offers it in the TLS handshake (ALPN); with `http1=False`
    too, HTTP/2 only, which for http:// URLs means prior knowledge (h2c). The stamps stay the
    socket's, as each connection carries one call at a time.

    httpx 0.28 takes no network backend, so the transport's pool is replaced by one built here;
    httpx's translation of httpcore's exceptions stays, as it lives in the transport's methods.
    With `proxy` (an http:// forward proxy, credentials in its URL), every connection goes to the
    proxy: plain http is forwarded, https tunnelled with CONNECT; the stamps are then those of
    the socket to the proxy.
    """
    ssl_context = make_ssl_context(verify)
    limits = httpx.Limits(
        max_connections=max_connections,
        max_keepalive_connections=max_connections,
        keepalive_expiry=keepalive_expiry,
    )
    transport = httpx.AsyncHTTPTransport(verify=ssl_context, limits=limits, http1=True, http2=False)
    # The pool's own settings, the same through a proxy or straight to the server.
    pool: dict[str, Any] = {
        "ssl_context": ssl_context,
        "max_connections": max_connections,
        "max_keepalive_connections": max_connections,
        "keepalive_expiry": keepalive_expiry,
        "http1": http1,
        "http2": http2,
        "network_backend": backend,
    }
    if proxy is None:
        transport._pool = httpcore.AsyncConnectionPool(**pool)
        return transport
    url = httpx.URL(proxy)
    auth = (url.username, url.password) if url.username or url.password else None
    transport._pool = httpcore.AsyncHTTPProxy(
        proxy_url=str(url.copy_with(username=None, password=None)),
        proxy_auth=auth,
        proxy_ssl_context=make_ssl_context(True) if url.scheme == "https" else None,
        **pool,
    )
    return transport
