"""Findings on real stacks (issue 14 point 7): llama.cpp with one and two slots, and Debian's
nginx in front of it, buffering a gzip-compressed stream or passing it through."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from conftest import free_port, stop_process
from one_look import one_look

from latency_gate.config import Target, build_target
from latency_gate.models import RunResult
from latency_gate.run import probe

pytestmark = pytest.mark.llm

NGINX_START_TIMEOUT = 10.0

# nginx holds a gzip-compressed answer in its buffers until the end: one burst at the end.
# llama.cpp sends `X-Accel-Buffering: no`, which nginx obeys unless told to ignore it (as a
# site-wide config often does); gzip alone streams (nginx 1.22 sync-flushes each read), and
# buffering alone streams too: it takes both to hold the whole answer (measured here).
BUFFERED = """
            proxy_buffering on;
            proxy_ignore_headers X-Accel-Buffering;
            gzip on;
            gzip_types text/event-stream;
            gzip_min_length 0;
"""
# What a stream needs from a proxy: no buffering, no compression.
PASS_THROUGH = """
            proxy_buffering off;
            gzip off;
"""


def _nginx(tmp_path: Path, upstream: str, location: str) -> Iterator[str]:
    """nginx on 127.0.0.1 with its own config in front of `upstream`, in the foreground;
    yields its base URL and is stopped by its PID."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(binary).is_file():
        pytest.skip("nginx is not installed (apt-get install nginx-light; .ci/run does)")
    port = free_port()
    up = urlsplit(upstream)
    (tmp_path / "temp").mkdir()
    user = "user root;\n" if os.geteuid() == 0 else ""  # workers can then use tmp_path
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
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://{up.hostname}:{up.port};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
{location}
        }}
    }}
}}
"""
    )
    process = subprocess.Popen(
        [binary, "-c", str(config), "-p", str(tmp_path)], stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + NGINX_START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{url}/health", timeout=2.0)
                break
            except httpx.HTTPError:
                time.sleep(0.05)
        else:
            pytest.fail(f"nginx did not listen within {NGINX_START_TIMEOUT:.0f} s")
        yield url
    finally:
        stop_process(process)


@pytest.fixture
def nginx_buffered(tmp_path: Path, llama_server: str) -> Iterator[str]:
    """nginx buffering and gzip-compressing the llama.cpp server's streams."""
    yield from _nginx(tmp_path, llama_server, BUFFERED)


@pytest.fixture
def nginx_streaming(tmp_path: Path, llama_server: str) -> Iterator[str]:
    """nginx passing the llama.cpp server's streams through as they come."""
    yield from _nginx(tmp_path, llama_server, PASS_THROUGH)


def _target(base_url: str, *, warm: int, concurrency: int, max_tokens: int) -> Target:
    """A streamed chat target; only the error rate gates (latency on a shared CPU varies)."""
    return build_target(
        {
            "url": f"{base_url}/v1/chat/completions",
            "prompt": "Count from one to twenty.",
            "stream": "true",
            "max-tokens": str(max_tokens),
            "warm-calls": str(warm),
            "concurrency": str(concurrency),
            "timeout": "120s",
            "max-warm-p95": "off",
            "max-concurrent-p95": "off",
            # A real model on a shared CPU is slow: one look is plenty.
            **one_look(1 + warm + concurrency),
        }
    )


def _codes(result: RunResult) -> dict[str, str]:
    return {f.code: f.evidence for f in result.findings}


async def test_nginx_buffering_gzip_stream_is_named(nginx_buffered: str) -> None:
    """nginx with proxy_buffering and gzip of text/event-stream: every answer arrives in one
    burst, and the buffered-stream finding says so."""
    result = await probe(
        _target(nginx_buffered, warm=5, concurrency=2, max_tokens=24), measure_floor=False
    )
    assert [s.error_detail for s in result.samples if not s.ok] == []
    assert "buffered-stream" in _codes(result)
    assert "arrived in one burst" in _codes(result)["buffered-stream"]


async def test_nginx_passing_the_stream_through_is_silent(nginx_streaming: str) -> None:
    """nginx with buffering and gzip off: the tokens stream, and no buffered-stream finding."""
    result = await probe(
        _target(nginx_streaming, warm=5, concurrency=2, max_tokens=24), measure_floor=False
    )
    assert [s.error_detail for s in result.samples if not s.ok] == []
    assert "buffered-stream" not in _codes(result)
    assert result.numbers.itl_p95 is not None


async def test_queue_finding_says_one_slot(llama_server_one_slot: str) -> None:
    """llama.cpp with one slot and 6 calls at once: queued, served about 1 at a time (6 calls
    against 6 warm ones, so a busy shared CPU cannot hide a queue six answers deep)."""
    result = await probe(
        _target(llama_server_one_slot, warm=6, concurrency=6, max_tokens=32), measure_floor=False
    )
    assert result.numbers.error_rate == 0.0
    assert "as if served about 1 at a time" in _codes(result)["serialized"]


async def test_queue_finding_says_two_slots(llama_server: str) -> None:
    """llama.cpp with two slots and 8 calls at once: queued, served about 2 at a time (the
    estimate from end times alone said 1: batched slots slow each other)."""
    result = await probe(
        _target(llama_server, warm=6, concurrency=8, max_tokens=32), measure_floor=False
    )
    assert result.numbers.error_rate == 0.0
    assert "as if served about 2 at a time" in _codes(result)["serialized"]
    assert "tokens-per-second" not in _codes(result)


@pytest.mark.parametrize(
    ("path", "extra"),
    [
        ("/v1/chat/completions", {}),
        ("/v1/chat/completions", {"token-limit-field": "max_completion_tokens"}),
        ("/v1/responses", {}),
        ("/v1/messages", {}),
    ],
)
async def test_max_tokens_limits_the_answer_in_every_format(
    llama_server: str, path: str, extra: dict[str, str]
) -> None:
    """--max-tokens 5 against llama.cpp's chat, responses and messages APIs, streamed: no call
    answers with more than 5 tokens by the server's own usage count, and the model, asked to
    count to twenty, is cut at 5 (a sampled answer may end sooner, so not every call)."""
    raw = {
        "url": f"{llama_server}{path}",
        "prompt": "Count from one to twenty.",
        "stream": "true",
        "max-tokens": "5",
        "warm-calls": "2",
        "concurrency": "2",
        "timeout": "120s",
        "max-warm-p95": "off",
        "max-concurrent-p95": "off",
        **one_look(5),
    }
    result = await probe(build_target({**raw, **extra}), measure_floor=False)
    assert [s.error_detail for s in result.samples if not s.ok] == []
    assert {s.tokens_source for s in result.samples} == {"usage"}
    counts = [s.tokens or 0 for s in result.samples]
    assert all(1 <= n <= 5 for n in counts)
    assert max(counts) == 5
