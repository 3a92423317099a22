"""The stamping network backend against real loopback servers (plain and TLS)."""

from __future__ import annotations

import asyncio
import pathlib
import socket
import ssl
import struct
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpcore
import httpx
import pytest
import trustme

from latency_gate.measure import transport
from latency_gate.measure.transport import stamps as stamps_module
from latency_gate.models import StampSource

MS = 1_000_000  # nanoseconds

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="kernel receive stamps are Linux only"
)


@dataclass
class LoopbackServer:
    """An HTTP/1.1 server on 127.0.0.1 whose paths each behave one way (see `_respond`)."""

    port: int
    connections: int = 0
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    def url(self, path: str, *, scheme: str = "http", host: str = "127.0.0.1") -> str:
        return f"{scheme}://{host}:{self.port}{path}"


async def _respond(path: str, writer: asyncio.StreamWriter) -> bool:
    """Answer one request; False when the connection is to be dropped."""
    if path == "/slow":  # a fixed 50 ms service time
        await asyncio.sleep(0.05)
    if path == "/split":  # headers now, the body 200 ms later
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.write(b"body")
        await writer.drain()
        return True
    if path == "/reset":  # the connection is reset instead of answered
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
        return False
    if path == "/hang":  # never answers
        await asyncio.sleep(30)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    await writer.drain()
    if path == "/close-later":  # keep-alive promised, then closed while the client idles
        await asyncio.sleep(0.02)
        return False
    return True


async def _start(tls: ssl.SSLContext | None = None) -> tuple[LoopbackServer, asyncio.Server]:
    server_state = LoopbackServer(port=0)

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server_state.connections += 1
        server_state.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1].decode()
                if not await _respond(path, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client went away, or the test ended
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    server_state.port = server.sockets[0].getsockname()[1]
    return server_state, server


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    state, srv = await _start()
    yield state
    srv.close()
    for writer in state.writers:
        writer.close()
    await srv.wait_closed()


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
async def tls_server(ca: trustme.CA) -> AsyncIterator[LoopbackServer]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
    state, srv = await _start(context)
    yield state
    srv.close()
    for writer in state.writers:
        writer.close()
    await srv.wait_closed()


def _client(
    backend: transport.StampingBackend, verify: ssl.SSLContext | bool = True
) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=transport.build_transport(backend, verify=verify))


def _trusting(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


async def test_new_connection_stamps_are_present_and_ordered(server: LoopbackServer) -> None:
    """A call that resolves and connects gets every stamp, in the order the events happened."""
    async with _client(transport.StampingBackend()) as client:
        stamps = transport.begin_call()
        response = await client.get(server.url("/", host="localhost"))
    assert response.text == "ok"
    assert stamps.new_connection is True
    assert stamps.preconnected is False
    order = [
        stamps.start_ns,
        stamps.dns_start_ns,
        stamps.dns_end_ns,
        stamps.connect_start_ns,
        stamps.connect_end_ns,
        stamps.first_write_ns,
        stamps.last_write_ns,
        stamps.first_read_ns,
        stamps.last_read_ns,
    ]
    assert all(isinstance(stamp, int) for stamp in order)
    assert order == sorted(order)  # type: ignore[type-var]
    assert stamps.start_ns == stamps.dns_start_ns
    assert stamps.tls_start_ns is None
    assert stamps.reads == 1
    assert stamps.bytes_read == len(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")


async def test_ip_literal_skips_dns(server: LoopbackServer) -> None:
    """An IP address is not looked up: no DNS stamps, the call starts at the connect."""
    async with _client(transport.StampingBackend()) as client:
        stamps = transport.begin_call()
        await client.get(server.url("/"))
    assert stamps.dns_start_ns is None
    assert stamps.dns_end_ns is None
    assert stamps.start_ns == stamps.connect_start_ns


async def test_reused_connection_starts_at_first_write(server: LoopbackServer) -> None:
    """On a kept-alive connection the call starts at its first write and opens nothing."""
    async with _client(transport.StampingBackend()) as client:
        transport.begin_call()
        await client.get(server.url("/"))
        stamps = transport.begin_call()
        await client.get(server.url("/"))
    assert server.connections == 1
    assert stamps.new_connection is False
    assert stamps.connect_start_ns is None
    assert stamps.start_ns == stamps.first_write_ns


@linux_only
async def test_kernel_stamps_on_linux(server: LoopbackServer) -> None:
    """On Linux the backend and the call both report kernel receive stamps."""
    backend = transport.StampingBackend()
    async with _client(backend) as client:
        stamps = transport.begin_call(backend.source)
        await client.get(server.url("/"))
    assert transport.kernel_stamps_supported() is True
    assert backend.source is StampSource.KERNEL
    assert stamps.source is StampSource.KERNEL


@linux_only
async def test_first_read_of_every_new_connection_has_a_kernel_stamp() -> None:
    """Linux turns receive stamping on lazily, in deferred kernel work, after the first
    stamping socket opens: a server that speaks first (a TLS ServerHello, a greeting) got about
    one first read in three unstamped, so a cold call fell back to READ_RETURN. Every new
    connection's first read keeps its kernel stamp."""

    async def greet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello")
        await writer.drain()
        writer.close()

    srv = await asyncio.start_server(greet, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    sources = []
    try:
        for _ in range(40):
            stream = await transport.StampingBackend().connect_tcp("127.0.0.1", port, timeout=5.0)
            stamps = transport.begin_call()
            try:
                assert await stream.read(64, timeout=5.0) == b"hello"
            finally:
                await stream.aclose()
            sources.append(stamps.source)
            await asyncio.sleep(0.01)  # the kernel turns stamping off again when nobody asks
    finally:
        srv.close()
        await srv.wait_closed()
    assert sources == [StampSource.KERNEL] * 40


def test_hold_kernel_stamps_makes_a_fresh_connection_stamped() -> None:
    """After hold_kernel_stamps, a loopback segment on a brand-new socket carries a stamp."""
    transport.hold_kernel_stamps()
    if not transport.kernel_stamps_supported():
        pytest.skip("kernel receive stamps are Linux only")
    assert all(stamps_module._loopback_segment_stamped() for _ in range(20))


async def test_read_return_when_kernel_stamps_are_off(server: LoopbackServer) -> None:
    """Without kernel stamps the call is stamped at read return and says so."""
    backend = transport.StampingBackend(kernel_stamps=False)
    async with _client(backend) as client:
        stamps = transport.begin_call(StampSource.KERNEL)
        await client.get(server.url("/"))
    assert backend.source is StampSource.READ_RETURN
    assert stamps.source is StampSource.READ_RETURN
    assert stamps.last_read_ns is not None


@pytest.mark.parametrize("kernel_stamps", [True, False])
async def test_fifty_ms_server_measures_fifty_ms(
    server: LoopbackServer, kernel_stamps: bool
) -> None:
    """A warm call to a 50 ms server measures 50-80 ms from start to last read."""
    async with _client(transport.StampingBackend(kernel_stamps=kernel_stamps)) as client:
        transport.begin_call()
        await client.get(server.url("/"))
        stamps = transport.begin_call()
        await client.get(server.url("/slow"))
    assert stamps.start_ns is not None
    assert stamps.last_read_ns is not None
    assert 50 * MS <= stamps.last_read_ns - stamps.start_ns <= 80 * MS


async def test_headers_and_late_body_get_their_own_stamps(server: LoopbackServer) -> None:
    """A body sent 200 ms after the headers is stamped ~200 ms after them."""
    async with _client(transport.StampingBackend()) as client:
        stamps = transport.begin_call()
        async with client.stream("GET", server.url("/split")) as response:
            headers_ns = stamps.last_read_ns
            body = await response.aread()
    assert body == b"body"
    assert headers_ns is not None
    assert stamps.first_read_ns == headers_ns
    assert stamps.last_read_ns is not None
    assert 190 * MS <= stamps.last_read_ns - headers_ns <= 300 * MS
    assert stamps.reads == 2


async def test_preconnected_connection_is_handed_out_untimed(server: LoopbackServer) -> None:
    """A call after preconnect uses the connection opened ahead and stamps no connect."""
    backend = transport.StampingBackend()
    outer = transport.begin_call()
    await backend.preconnect(
        "127.0.0.1", server.port, 1, ssl_context=None, server_hostname=None, timeout=5.0
    )
    assert outer.connect_start_ns is None  # preconnect stamps nothing, even inside a call
    assert server.connections == 1
    async with _client(backend) as client:
        stamps = transport.begin_call()
        await client.get(server.url("/"))
    assert server.connections == 1
    assert stamps.preconnected is True
    assert stamps.new_connection is False
    assert stamps.connect_start_ns is None
    assert stamps.start_ns == stamps.first_write_ns


async def test_preconnected_connection_closed_by_server_is_skipped(
    server: LoopbackServer,
) -> None:
    """A connection opened ahead that the server closed meanwhile is not handed out."""
    backend = transport.StampingBackend()
    await backend.preconnect(
        "127.0.0.1", server.port, 1, ssl_context=None, server_hostname=None, timeout=5.0
    )
    server.writers[0].close()
    await asyncio.sleep(0.1)
    async with _client(backend) as client:
        stamps = transport.begin_call()
        response = await client.get(server.url("/"))
    assert response.text == "ok"
    assert server.connections == 2
    assert stamps.preconnected is False
    assert stamps.new_connection is True


async def test_preconnect_burst_gets_one_connection_per_client(server: LoopbackServer) -> None:
    """Ten one-connection clients on one backend each take a connection opened ahead."""
    backend = transport.StampingBackend()
    await backend.preconnect(
        "127.0.0.1", server.port, 10, ssl_context=None, server_hostname=None, timeout=5.0
    )
    clients = [_client(backend) for _ in range(10)]

    async def one(client: httpx.AsyncClient) -> transport.CallStamps:
        stamps = transport.begin_call()
        await client.get(server.url("/slow"))
        return stamps

    try:
        results = await asyncio.gather(*(one(client) for client in clients))
    finally:
        for client in clients:
            await client.aclose()
    assert server.connections == 10
    assert [stamps.preconnected for stamps in results] == [True] * 10
    assert [stamps.new_connection for stamps in results] == [False] * 10


async def test_idle_connection_closed_by_server_is_not_reused(server: LoopbackServer) -> None:
    """A kept-alive connection the server closed while idle is dropped; the next call reconnects."""
    async with _client(transport.StampingBackend()) as client:
        transport.begin_call()
        await client.get(server.url("/close-later"))
        await asyncio.sleep(0.2)
        stamps = transport.begin_call()
        response = await client.get(server.url("/"))
    assert response.text == "ok"
    assert server.connections == 2
    assert stamps.new_connection is True


async def test_is_readable_sees_a_closed_peer(server: LoopbackServer) -> None:
    """is_readable is False on a quiet open connection and True once the server closed it."""
    backend = transport.StampingBackend()
    stream = await backend.connect_tcp("127.0.0.1", server.port, timeout=5.0)
    try:
        assert stream.get_extra_info("is_readable") is False
        await stream.write(b"GET /close-later HTTP/1.1\r\nHost: x\r\n\r\n", timeout=5.0)
        await stream.read(1024, timeout=5.0)
        await asyncio.sleep(0.2)
        assert stream.get_extra_info("is_readable") is True
    finally:
        await stream.aclose()


async def test_end_of_stream_is_not_stamped(server: LoopbackServer) -> None:
    """A read that returns no data (the server closed) leaves the stamps alone."""
    backend = transport.StampingBackend()
    stream = await backend.connect_tcp("127.0.0.1", server.port, timeout=5.0)
    try:
        await stream.write(b"GET /close-later HTTP/1.1\r\nHost: x\r\n\r\n", timeout=5.0)
        await stream.read(1024, timeout=5.0)
        stamps = transport.begin_call()
        assert await stream.read(1024, timeout=5.0) == b""
    finally:
        await stream.aclose()
    assert stamps.reads == 0
    assert stamps.last_read_ns is None


async def test_extra_info_names_the_connection(server: LoopbackServer) -> None:
    """get_extra_info answers socket, both addresses, and no ssl_object on plain TCP."""
    stream = await transport.StampingBackend().connect_tcp("127.0.0.1", server.port, timeout=5.0)
    try:
        sock = stream.get_extra_info("socket")
        assert isinstance(sock, socket.socket)
        assert stream.get_extra_info("server_addr") == ("127.0.0.1", server.port)
        assert stream.get_extra_info("client_addr") == sock.getsockname()
        assert stream.get_extra_info("ssl_object") is None
        assert stream.get_extra_info("something else") is None
    finally:
        await stream.aclose()


async def test_https_keeps_kernel_stamps(tls_server: LoopbackServer, ca: trustme.CA) -> None:
    """An https call through the TLS layer works, stamps its handshake, and keeps its source."""
    backend = transport.StampingBackend()
    async with _client(backend, verify=_trusting(ca)) as client:
        stamps = transport.begin_call()
        response = await client.get(tls_server.url("/", scheme="https", host="localhost"))
        warm = transport.begin_call()
        await client.get(tls_server.url("/slow", scheme="https", host="localhost"))
    assert response.text == "ok"
    assert stamps.connect_end_ns is not None
    assert stamps.tls_start_ns is not None
    assert stamps.tls_end_ns is not None
    assert stamps.first_write_ns is not None
    assert stamps.connect_end_ns <= stamps.tls_start_ns <= stamps.tls_end_ns
    assert stamps.tls_end_ns <= stamps.first_write_ns
    assert stamps.source is backend.source
    assert warm.source is backend.source
    assert warm.start_ns is not None
    assert warm.last_read_ns is not None
    assert 50 * MS <= warm.last_read_ns - warm.start_ns <= 80 * MS


async def test_https_preconnect_skips_the_handshake(
    tls_server: LoopbackServer, ca: trustme.CA
) -> None:
    """A TLS connection opened ahead is used as it is: no second handshake, no TLS stamps."""
    backend = transport.StampingBackend()
    context = _trusting(ca)
    await backend.preconnect(
        "localhost", tls_server.port, 1, ssl_context=context, server_hostname=None, timeout=5.0
    )
    async with _client(backend, verify=context) as client:
        stamps = transport.begin_call()
        response = await client.get(tls_server.url("/", scheme="https", host="localhost"))
    assert response.text == "ok"
    assert tls_server.connections == 1
    assert stamps.preconnected is True
    assert stamps.tls_start_ns is None


async def test_https_with_untrusted_certificate_is_a_connect_error(
    tls_server: LoopbackServer,
) -> None:
    """A certificate the client does not trust fails as httpx.ConnectError."""
    async with _client(transport.StampingBackend(), verify=ssl.create_default_context()) as client:
        transport.begin_call()
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(tls_server.url("/", scheme="https", host="localhost"))


async def test_closed_port_is_a_connect_error() -> None:
    """Connecting to a port nobody listens on raises httpx.ConnectError."""
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
    async with _client(transport.StampingBackend()) as client:
        transport.begin_call()
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/")


async def test_reset_connection_is_a_read_error(server: LoopbackServer) -> None:
    """A server that resets the connection instead of answering raises httpx.ReadError."""
    async with _client(transport.StampingBackend()) as client:
        transport.begin_call()
        with pytest.raises(httpx.ReadError):
            await client.get(server.url("/reset"))


async def test_silent_server_is_a_read_timeout(server: LoopbackServer) -> None:
    """A server that never answers raises httpx.ReadTimeout after the read timeout."""
    async with _client(transport.StampingBackend()) as client:
        transport.begin_call()
        with pytest.raises(httpx.ReadTimeout):
            await client.get(server.url("/hang"), timeout=httpx.Timeout(5.0, read=0.2))


async def test_handshake_that_never_finishes_is_a_connect_timeout(server: LoopbackServer) -> None:
    """A TLS handshake the server never answers raises httpx.ConnectTimeout."""
    async with _client(transport.StampingBackend(), verify=ssl.create_default_context()) as client:
        transport.begin_call()
        with pytest.raises(httpx.ConnectTimeout):
            await client.get(server.url("/", scheme="https"), timeout=httpx.Timeout(0.2))


async def test_write_to_a_server_that_does_not_read_times_out(server: LoopbackServer) -> None:
    """A write that cannot drain raises httpcore.WriteTimeout (httpx maps it to WriteTimeout)."""
    backend = transport.StampingBackend()
    small_buffer = (socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    stream = await backend.connect_tcp(
        "127.0.0.1", server.port, timeout=5.0, socket_options=[small_buffer]
    )
    try:
        # The server reads the request head only, then sleeps: the rest fills every buffer.
        with pytest.raises(httpcore.WriteTimeout):
            await stream.write(b"GET /hang HTTP/1.1\r\n\r\n" + b"x" * 64_000_000, timeout=0.3)
    finally:
        await stream.aclose()


async def test_no_call_means_no_stamps(server: LoopbackServer) -> None:
    """Outside begin_call there is no current call, and requests still work."""
    assert transport.current_call() is None
    async with _client(transport.StampingBackend()) as client:
        response = await client.get(server.url("/"))
    assert response.text == "ok"
    stamps = transport.begin_call()
    assert transport.current_call() is stamps


async def test_unix_socket_connection_is_stamped(tmp_path: pathlib.Path) -> None:
    """A Unix-socket connection is stamped as a new connection and its reads are stamped."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    path = str(tmp_path / "http.sock")
    unix_server = await asyncio.start_unix_server(answer, path)
    try:
        stamps = transport.begin_call()
        stream = await transport.StampingBackend().connect_unix_socket(path, timeout=5.0)
        try:
            await stream.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", timeout=5.0)
            data = await stream.read(1024, timeout=5.0)
        finally:
            await stream.aclose()
    finally:
        unix_server.close()
        await unix_server.wait_closed()
    assert data.endswith(b"ok")
    assert stamps.new_connection is True
    assert stamps.start_ns == stamps.connect_start_ns
    assert stamps.last_read_ns is not None
    assert stamps.reads == 1
