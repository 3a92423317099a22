"""Calls through a real forward proxy on loopback (Debian's tinyproxy), chosen by --proxy or
by HTTP_PROXY from the environment (issue 14 point 6)."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trustme
from conftest import start_tinyproxy
from one_look import one_look, other_warnings
from script_server import ScriptServer, steady

from latency_gate.config import build_target, with_environment_proxy
from latency_gate.run import probe


@pytest.fixture
def tinyproxy(tmp_path: Path) -> Iterator[str]:
    """tinyproxy's URL; its log is tmp_path/tinyproxy.log."""
    yield from start_tinyproxy(tmp_path)


@pytest.fixture
async def server() -> AsyncIterator[ScriptServer]:
    """A streaming endpoint: 5 deltas 10 ms apart."""
    running = ScriptServer(lambda n: steady(5, 0.01))
    await running.start()
    yield running
    await running.stop()


def _proxied(server: ScriptServer) -> list[bool]:
    """Per request, whether it came through tinyproxy: its connection's first request carried
    the proxy's Via header (tinyproxy relays later requests on a connection untouched)."""
    first: dict[int, bool] = {}
    for request in server.requests:
        first.setdefault(request.connection, "gate-test-proxy" in request.headers.get("via", ""))
    return [first[r.connection] for r in server.requests]


def _raw(url: str) -> dict[str, str]:
    return {
        "url": url,
        "prompt": "hi",
        "stream": "true",
        "warm-calls": "3",
        "concurrency": "3",
        "max-warm-p95": "off",
        "max-concurrent-p95": "off",
        **one_look(7),  # these tests are about the route, not the verdict
    }


async def test_proxy_option_sends_every_call_through_the_proxy(
    tinyproxy: str, server: ScriptServer
) -> None:
    """--proxy: all 7 calls arrive with the proxy's Via header, and the result says the stamps
    are of the socket to the proxy."""
    target = build_target({**_raw(server.url), "proxy": tinyproxy})
    result = await probe(target, measure_floor=False)
    assert [s.error_detail for s in result.samples if not s.ok] == []
    assert len(server.requests) == 7
    assert _proxied(server) == [True] * 7
    assert result.config["proxy"] == tinyproxy
    assert any("went through a proxy" in w for w in result.warnings)


async def test_http_proxy_from_the_environment_and_no_proxy(
    tinyproxy: str, server: ScriptServer
) -> None:
    """HTTP_PROXY (as the edges pass os.environ) routes the calls through tinyproxy; with
    NO_PROXY=127.0.0.1 they go direct."""
    target = with_environment_proxy(build_target(_raw(server.url)), {"HTTP_PROXY": tinyproxy})
    await probe(target, measure_floor=False)
    direct = with_environment_proxy(
        build_target(_raw(server.url)), {"HTTP_PROXY": tinyproxy, "NO_PROXY": "127.0.0.1"}
    )
    result = await probe(direct, measure_floor=False)
    assert other_warnings(result.warnings) == ()
    assert _proxied(server) == [True] * 7 + [False] * 7


async def test_https_proxy_tunnels_tls_calls_with_connect(tinyproxy: str, tmp_path: Path) -> None:
    """HTTPS_PROXY and an https:// endpoint: every connection is a CONNECT tunnel through
    tinyproxy (its log names each), TLS runs inside it, and all 7 calls succeed."""
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    server = ScriptServer(lambda n: steady(5, 0.01))
    await server.start(tls=server_context)
    try:
        url = f"https://127.0.0.1:{server.port}/v1/chat/completions"
        target = with_environment_proxy(
            build_target({**_raw(url), "ca-bundle": str(bundle)}), {"HTTPS_PROXY": tinyproxy}
        )
        result = await probe(target, measure_floor=False)
    finally:
        await server.stop()
    assert [s.error_detail for s in result.samples if not s.ok] == []
    log = (tmp_path / "tinyproxy.log").read_text()
    tunnels = log.count(f"CONNECT 127.0.0.1:{server.port}")
    assert tunnels == server.connections
    assert 1 <= tunnels <= 7
