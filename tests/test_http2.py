"""--http2 through Debian's nginx on loopback: HTTP/2 over TLS (ALPN) and with prior knowledge
(h2c), in front of a scripted streaming server; kernel stamps kept (issue 14 point 6)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trustme
from conftest import free_port, stop_process
from one_look import one_look
from script_server import ScriptServer, steady

from latency_gate.config import build_target
from latency_gate.measure.transport import kernel_stamps_supported
from latency_gate.models import StampSource
from latency_gate.run import probe

NGINX_START_TIMEOUT = 10.0


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptServer]:
    """A streaming endpoint: 8 deltas 10 ms apart."""
    running = ScriptServer(lambda n: steady(8, 0.01))
    await running.start()
    yield running
    await running.stop()


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def nginx_h2(tmp_path: Path, upstream: ScriptServer, ca: trustme.CA) -> Iterator[tuple[str, str]]:
    """nginx serving HTTP/2 over TLS on one port and h2c on another, both proxying to the
    scripted server; yields the two base URLs, stopped by its PID."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).is_file():
        pytest.skip("nginx is not installed (apt-get install nginx-light; .ci/run does)")
    cert = ca.issue_cert("127.0.0.1")
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "cert.pem"))
    cert.private_key_pem.write_to_path(str(tmp_path / "key.pem"))
    tls_port, h2c_port = free_port(), free_port()
    (tmp_path / "temp").mkdir()
    user = "user root;\n" if os.geteuid() == 0 else ""
    location = f"""
        location / {{
            proxy_pass http://127.0.0.1:{upstream.port};
            proxy_http_version 1.1;
            proxy_buffering off;
        }}"""
    config = tmp_path / "nginx.conf"
    config.write_text(
        f"""{user}worker_processes 1;
daemon off;
pid {tmp_path}/nginx.pid;
error_log {tmp_path}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {tmp_path}/temp/body;
    proxy_temp_path {tmp_path}/temp/proxy;
    fastcgi_temp_path {tmp_path}/temp/fastcgi;
    uwsgi_temp_path {tmp_path}/temp/uwsgi;
    scgi_temp_path {tmp_path}/temp/scgi;
    server {{
        listen 127.0.0.1:{tls_port} ssl http2;
        ssl_certificate {tmp_path}/cert.pem;
        ssl_certificate_key {tmp_path}/key.pem;{location}
    }}
    server {{
        listen 127.0.0.1:{h2c_port} http2;{location}
    }}
}}
"""
    )
    process = subprocess.Popen(
        [binary, "-c", str(config), "-p", str(tmp_path)], stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + NGINX_START_TIMEOUT
        while time.monotonic() < deadline:
            # A TCP connect, not a request: the upstream runs on this thread's event loop,
            # which this synchronous fixture blocks.
            try:
                socket.create_connection(("127.0.0.1", tls_port), timeout=2.0).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail(f"nginx did not listen within {NGINX_START_TIMEOUT:.0f} s")
        yield f"https://127.0.0.1:{tls_port}", f"http://127.0.0.1:{h2c_port}"
    finally:
        stop_process(process)


def _raw(base_url: str, **extra: str) -> dict[str, str]:
    return {
        "url": f"{base_url}/v1/chat/completions",
        "prompt": "hi",
        "stream": "true",
        "warm-calls": "4",
        "concurrency": "3",
        "timeout": "20s",
        "max-warm-p95": "off",
        "max-concurrent-p95": "off",
        **one_look(8),  # these tests are about the protocol, not the verdict
        **extra,
    }


async def test_http2_over_tls_keeps_kernel_stamps(
    nginx_h2: tuple[str, str], ca: trustme.CA, tmp_path: Path
) -> None:
    """--http2 against an HTTP/2 TLS endpoint: all 8 calls speak HTTP/2, stream their tokens,
    and are stamped by the kernel."""
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    target = build_target(_raw(nginx_h2[0], http2="true", **{"ca-bundle": str(bundle)}))
    result = await probe(target, measure_floor=False)
    assert [s.error_detail for s in result.samples if not s.ok] == []
    assert [s.http_version for s in result.samples] == ["HTTP/2"] * 8
    assert all(s.token_gaps is not None and s.token_gaps.count == 7 for s in result.samples)
    if kernel_stamps_supported():
        assert result.stamp_source is StampSource.KERNEL


async def test_without_http2_the_same_endpoint_speaks_http11(
    nginx_h2: tuple[str, str], ca: trustme.CA, tmp_path: Path
) -> None:
    """No --http2: ALPN offers only HTTP/1.1, and every call speaks it."""
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    result = await probe(
        build_target(_raw(nginx_h2[0], **{"ca-bundle": str(bundle)})), measure_floor=False
    )
    assert [s.http_version for s in result.samples] == ["HTTP/1.1"] * 8


async def test_http2_prior_knowledge_for_plain_http(nginx_h2: tuple[str, str]) -> None:
    """--http2 on an http:// URL: HTTP/2 with prior knowledge (h2c), every call."""
    result = await probe(build_target(_raw(nginx_h2[1], http2="true")), measure_floor=False)
    assert [s.error_detail for s in result.samples if not s.ok] == []
    assert [s.http_version for s in result.samples] == ["HTTP/2"] * 8
