"""The embedded demo endpoints, probed over real loopback sockets with httpx.

Bounds are generous (the machine has 2 noisy cores): a 50 ms server must answer in 50-90 ms,
never in 5 ms or 500 ms.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from machine_pace import Waited, queued_seconds

from latency_gate.demo import (
    INVALID_UTF8,
    DemoServer,
    EndpointSpec,
    Fault,
    RequestRecord,
    classic_three,
    serve_in_thread,
)

LLM_FORMATS = ["openai-chat", "openai-responses", "anthropic"]
EXPECTED_TEXT = "Latency is what users feel, not what "  # the first seven tokens


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10.0) as c:
        yield c


def seconds(start_ns: int | None, end_ns: int | None) -> float:
    assert start_ns is not None
    assert end_ns is not None
    return (end_ns - start_ns) / 1e9


def sse_events(body: str) -> list[tuple[str | None, str]]:
    """(event name, data) for each SSE event in a body."""
    events = []
    for block in body.split("\n\n"):
        name, data = None, []
        for line in block.splitlines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data.append(line[len("data: ") :])
        if data:
            events.append((name, "\n".join(data)))
    return events


async def timed_stream(
    client: httpx.AsyncClient, url: str, body: dict[str, Any] | None = None
) -> tuple[float, list[tuple[float, bytes]]]:
    """Seconds to the response headers, and (seconds, bytes) per body piece as it arrived."""
    start = time.perf_counter()
    pieces = []
    async with client.stream("POST", url, json=body or {"stream": True}) as response:
        headers_at = time.perf_counter() - start
        async for piece in response.aiter_raw():
            pieces.append((time.perf_counter() - start, piece))
    return headers_at, pieces


async def collect_stream(client: httpx.AsyncClient, url: str, into: bytearray) -> None:
    """Read a streamed answer into `into` piece by piece (kept when the read fails)."""
    async with client.stream("POST", url, json={"stream": True}) as response:
        async for piece in response.aiter_raw():
            into += piece


async def raw_exchange(server: DemoServer, request: bytes, limit: float = 3.0) -> bytes:
    """Send raw request bytes and read until the server closes (at most `limit` seconds)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(request)
        await writer.drain()
        async with asyncio.timeout(limit):
            return await reader.read(-1)
    finally:
        writer.close()


def stream_request(path: str, *, version: str = "HTTP/1.1") -> bytes:
    body = b'{"stream": true}'
    return (
        f"POST {path} {version}\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


@pytest.fixture
def waited() -> Waited:
    """The seconds this test's thread has waited for a core since it began: every upper bound
    on a span timed here (the client's and the in-process server's loop) allows for them, as
    the machine's, not the server's (issue 42: beside a loaded suite a 50 ms call's headers came
    at 102 ms where 100 ms was the bound, stop 47)."""
    return Waited()


# --- timing ----------------------------------------------------------------------------------


async def test_fixed_latency_answers_in_50_to_90_ms(
    client: httpx.AsyncClient, waited: Waited
) -> None:
    """A 50 ms server answers each warm call in 50-90 ms as the client measures it."""
    spec = EndpointSpec(stream_format="raw", latency=0.05, tokens=0)
    async with DemoServer(spec) as server:
        await client.get(server.url)
        durations = []
        for _ in range(5):
            start = time.perf_counter()
            response = await client.get(server.url)
            durations.append(time.perf_counter() - start)
            assert response.status_code == 200
    assert min(durations) >= 0.05
    assert statistics.median(durations) <= 0.09 + waited()


async def test_records_time_service_from_receipt(client: httpx.AsyncClient, waited: Waited) -> None:
    """The record's first byte is written `latency` after the request's last byte arrived."""
    spec = EndpointSpec(stream_format="raw", latency=0.05, tokens=0)
    async with DemoServer(spec) as server:
        await client.get(server.url)
    record = server.records[0]
    assert 0.05 <= seconds(record.received_ns, record.first_byte_sent_ns) <= 0.08 + waited()
    assert (record.method, record.path, record.status, record.stream) == ("GET", "/", 200, False)


async def test_jitter_spreads_service_times(client: httpx.AsyncClient) -> None:
    """A lognormal jitter of 0.5 spreads eight 50 ms service times by more than 30 ms."""
    spec = EndpointSpec(stream_format="raw", latency=0.05, jitter=0.5, seed=3, tokens=0)
    async with DemoServer(spec) as server:
        for _ in range(8):
            await client.get(server.url)
    service = [seconds(r.received_ns, r.first_byte_sent_ns) for r in server.records]
    assert max(service) - min(service) > 0.03


async def test_cold_start_delays_only_the_first_request(
    client: httpx.AsyncClient, waited: Waited
) -> None:
    """A 300 ms cold start adds to the first call and to none of the next three."""
    spec = EndpointSpec(stream_format="raw", latency=0.01, tokens=0, cold_start=0.3)
    async with DemoServer(spec) as server:
        durations = []
        for _ in range(4):
            start = time.perf_counter()
            await client.get(server.url)
            durations.append(time.perf_counter() - start)
    assert durations[0] >= 0.31
    assert max(durations[1:]) < 0.15 + waited()


async def test_cold_start_returns_after_idle(client: httpx.AsyncClient, waited: Waited) -> None:
    """After `cold_after` seconds without requests the next call is cold again."""
    spec = EndpointSpec(
        stream_format="raw", latency=0.01, tokens=0, cold_start=0.2, cold_after=0.25
    )
    async with DemoServer(spec) as server:
        durations = []
        for pause in (0.0, 0.0, 0.35):
            await asyncio.sleep(pause)
            start = time.perf_counter()
            await client.get(server.url)
            durations.append(time.perf_counter() - start)
    assert durations[0] >= 0.21
    assert durations[1] < 0.1 + waited()
    assert durations[2] >= 0.21


async def test_parallelism_one_serves_a_burst_one_at_a_time(
    client: httpx.AsyncClient, waited: Waited
) -> None:
    """With one slot, a burst of 5 is served in turn: queue waits grow by ~one service time."""
    spec = EndpointSpec(stream_format="raw", latency=0.1, tokens=0, parallelism=1)
    async with DemoServer(spec) as server:
        await asyncio.gather(*(client.get(server.url) for _ in range(5)))
    records = sorted(server.records, key=lambda r: r.queued)
    waits = [r.queued for r in records]
    slack = waited()
    assert waits[0] < 0.02 + slack
    steps = [later - earlier for earlier, later in itertools.pairwise(waits)]
    assert all(0.08 <= step <= 0.2 + slack for step in steps)
    for earlier, later in itertools.pairwise(records):
        assert earlier.done_ns is not None
        assert later.first_byte_sent_ns is not None
        assert later.first_byte_sent_ns >= earlier.done_ns
    assert server.max_in_flight == 5


async def test_unlimited_parallelism_serves_a_burst_together(
    client: httpx.AsyncClient, waited: Waited
) -> None:
    """Without a slot limit, five 100 ms calls at once all finish within ~one service time."""
    spec = EndpointSpec(stream_format="raw", latency=0.1, tokens=0)
    async with DemoServer(spec) as server:
        start = time.perf_counter()
        await asyncio.gather(*(client.get(server.url) for _ in range(5)))
        elapsed = time.perf_counter() - start
    assert elapsed < 0.25 + waited()
    assert [r.queued for r in server.records] == [0.0] * 5


# --- streams ---------------------------------------------------------------------------------


async def test_honest_stream_spreads_tokens_over_time(
    client: httpx.AsyncClient, waited: Waited
) -> None:
    """Ten tokens 30 ms apart arrive as they are made: first early, last ~270 ms later."""
    spec = EndpointSpec(latency=0.05, tokens=10, token_interval=0.03)
    async with DemoServer(spec) as server:
        headers_at, pieces = await timed_stream(client, server.url)
    slack = waited()
    assert 0.05 <= headers_at <= 0.1 + slack
    assert pieces[0][0] - headers_at < 0.05 + slack
    assert pieces[-1][0] >= 0.05 + 0.27
    record = server.records[0]
    assert seconds(record.first_byte_sent_ns, record.first_token_sent_ns) < 0.02 + slack


async def test_buffered_stream_sends_the_body_at_the_end(
    client: httpx.AsyncClient, waited: Waited
) -> None:
    """Buffered: headers at ~latency, then every body byte at once when the stream is done."""
    spec = EndpointSpec(latency=0.05, tokens=10, token_interval=0.03, buffered=True)
    async with DemoServer(spec) as server:
        headers_at, pieces = await timed_stream(client, server.url)
    slack = waited()
    assert 0.05 <= headers_at <= 0.1 + slack
    # A late stamp of the headers shortens a gap read on this side: the lower bound is read
    # from the request's start (no byte can arrive before it was sent) and the server's record.
    assert pieces[0][0] >= 0.3
    assert pieces[-1][0] - pieces[0][0] < 0.03 + slack
    record = server.records[0]
    assert seconds(record.first_byte_sent_ns, record.first_token_sent_ns) >= 0.25
    assert seconds(record.first_token_sent_ns, record.done_ns) < 0.02 + slack


async def test_hold_headers_sends_headers_with_first_token(
    client: httpx.AsyncClient, waited: Waited
) -> None:
    """Held headers leave in the same write as the first content delta, 300 ms late."""
    spec = EndpointSpec(latency=0.05, tokens=3, first_token_delay=0.3, hold_headers=True)
    async with DemoServer(spec) as server:
        headers_at, pieces = await timed_stream(client, server.url)
    assert headers_at >= 0.35
    first_content = next(at for at, piece in pieces if b'"content":"Latency "' in piece)
    assert first_content - headers_at < 0.02 + waited()
    record = server.records[0]
    assert record.first_byte_sent_ns == record.first_token_sent_ns


async def test_first_token_delay_follows_the_role_chunk(
    client: httpx.AsyncClient, waited: Waited
) -> None:
    """The role chunk comes with the headers; the first content delta 300 ms after."""
    spec = EndpointSpec(latency=0.05, tokens=3, first_token_delay=0.3)
    async with DemoServer(spec) as server:
        headers_at, pieces = await timed_stream(client, server.url)
    slack = waited()
    assert headers_at < 0.15 + slack
    assert b'"role":"assistant","content":null' in pieces[0][1]
    assert b'"content":"Latency "' not in pieces[0][1]
    first_content = next(at for at, piece in pieces if b'"content":"Latency "' in piece)
    # The gap's lower bound from the server's record and the request's start: a late stamp of
    # the headers on this side shortened it to 0.2995 s in CI (stop 45).
    assert first_content >= 0.35
    assert first_content - headers_at <= 0.4 + slack
    record = server.records[0]
    assert seconds(record.first_byte_sent_ns, record.first_token_sent_ns) >= 0.3


@pytest.mark.parametrize("stream_format", LLM_FORMATS)
async def test_stream_events_are_json_in_format_shape(
    client: httpx.AsyncClient, stream_format: str
) -> None:
    """Every data line is JSON (or [DONE]); deltas add up to the answer; usage counts them."""
    spec = EndpointSpec(stream_format=stream_format, tokens=7, token_interval=0.0)
    async with DemoServer(spec) as server:
        response = await client.post(server.url, json={"stream": True})
    assert response.headers["content-type"] == "text/event-stream"
    events = sse_events(response.text)
    docs = [json.loads(data) for _, data in events if data != "[DONE]"]
    if stream_format == "openai-chat":
        assert docs[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
        text = "".join(d["choices"][0]["delta"].get("content") or "" for d in docs if d["choices"])
        assert docs[-2]["choices"][0]["finish_reason"] == "stop"
        assert docs[-1]["choices"] == []
        assert docs[-1]["usage"]["completion_tokens"] == 7
        assert events[-1] == (None, "[DONE]")
    elif stream_format == "openai-responses":
        assert [name for name, _ in events] == [d["type"] for d in docs]
        assert docs[0]["type"] == "response.created"
        deltas = [d for d in docs if d["type"] == "response.output_text.delta"]
        text = "".join(d["delta"] for d in deltas)
        assert docs[-1]["type"] == "response.completed"
        assert docs[-1]["response"]["usage"]["output_tokens"] == 7
    else:
        assert [name for name, _ in events] == [d["type"] for d in docs]
        assert docs[0]["type"] == "message_start"
        deltas = [d for d in docs if d["type"] == "content_block_delta"]
        text = "".join(d["delta"]["text"] for d in deltas)
        assert docs[-2]["type"] == "message_delta"
        assert docs[-2]["usage"]["output_tokens"] == 7
        assert docs[-1]["type"] == "message_stop"
    assert text == EXPECTED_TEXT


async def test_stream_without_usage_or_done_marker(client: httpx.AsyncClient) -> None:
    """usage_chunk and done_marker off: the stream ends on the finish chunk."""
    spec = EndpointSpec(tokens=2, usage_chunk=False, done_marker=False)
    async with DemoServer(spec) as server:
        response = await client.post(server.url, json={"stream": True})
    last = json.loads(sse_events(response.text)[-1][1])
    assert last["choices"][0]["finish_reason"] == "stop"
    assert "[DONE]" not in response.text


async def test_raw_stream_is_plain_text_chunks(client: httpx.AsyncClient) -> None:
    """The raw format streams the answer as plain text, one chunk per token."""
    spec = EndpointSpec(stream_format="raw", tokens=7, token_interval=0.02)
    async with DemoServer(spec) as server:
        _, pieces = await timed_stream(client, server.url)
    assert b"".join(piece for _, piece in pieces).decode() == EXPECTED_TEXT
    assert len(pieces) >= 4  # 20 ms apart: they cannot all arrive in one read


@pytest.mark.parametrize("stream_format", [*LLM_FORMATS, "raw"])
async def test_document_has_content_and_usage(
    client: httpx.AsyncClient, stream_format: str
) -> None:
    """A non-streamed answer is one document with Content-Length, the text and usage."""
    spec = EndpointSpec(stream_format=stream_format, tokens=7, token_interval=0.0)
    async with DemoServer(spec) as server:
        response = await client.post(server.url, json={"stream": False})
    assert response.headers["content-length"] == str(len(response.content))
    if stream_format == "raw":
        assert response.text == EXPECTED_TEXT
        return
    doc = response.json()
    if stream_format == "openai-chat":
        assert doc["choices"][0]["message"]["content"] == EXPECTED_TEXT
        assert doc["usage"]["completion_tokens"] == 7
    elif stream_format == "openai-responses":
        assert doc["output"][0]["content"][0]["text"] == EXPECTED_TEXT
        assert doc["usage"]["output_tokens"] == 7
    else:
        assert doc["content"][0]["text"] == EXPECTED_TEXT
        assert doc["usage"]["output_tokens"] == 7


async def test_get_is_answered_with_json(client: httpx.AsyncClient) -> None:
    """A GET to an LLM-format endpoint gets the JSON document."""
    async with DemoServer(EndpointSpec(tokens=2, token_interval=0.0)) as server:
        response = await client.get(server.url)
    assert response.json()["choices"][0]["message"]["content"] == "Latency is "


async def test_chunked_request_body_is_read(client: httpx.AsyncClient) -> None:
    """A chunked request body asking for a stream gets a stream."""

    async def body() -> AsyncIterator[bytes]:
        yield b'{"stream": '
        yield b"true}"

    async with DemoServer(EndpointSpec(tokens=2)) as server:
        response = await client.post(server.url, content=body())
    assert response.text.endswith("data: [DONE]\n\n")
    assert server.records[0].stream is True


async def test_bad_request_line_gets_400() -> None:
    """A request line that is not HTTP gets 400 and a close."""
    async with DemoServer(EndpointSpec()) as server:
        answer = await raw_exchange(server, b"HELLO\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")


# --- faults ----------------------------------------------------------------------------------


async def test_status_fault_sends_status_retry_after_and_body(client: httpx.AsyncClient) -> None:
    """A 429 fault answers 429 with its Retry-After and its body served raw."""
    fault = Fault(kind="status", status=429, retry_after="2", body="slow down")
    async with DemoServer(EndpointSpec(faults=(fault,))) as server:
        response = await client.post(server.url, json={"stream": True})
    assert response.status_code == 429
    assert response.headers["retry-after"] == "2"
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.text == "slow down"
    assert server.records[0].status == 429


async def test_status_fault_default_body_has_format_shape(client: httpx.AsyncClient) -> None:
    """Without a body, a status fault sends the format's own error document."""
    fault = Fault(kind="status", status=529)
    async with DemoServer(EndpointSpec(stream_format="anthropic", faults=(fault,))) as server:
        response = await client.post(server.url, json={})
    assert response.status_code == 529
    assert response.json() == {
        "type": "error",
        "error": {"type": "api_error", "message": "Internal server error"},
    }


async def test_fault_every_and_offset_pick_requests(client: httpx.AsyncClient) -> None:
    """every=3, offset=1 hits request numbers 1 and 4 of six."""
    fault = Fault(kind="status", every=3, offset=1)
    spec = EndpointSpec(latency=0.0, tokens=0, faults=(fault,))
    async with DemoServer(spec) as server:
        statuses = [(await client.get(server.url)).status_code for _ in range(6)]
    assert statuses == [200, 500, 200, 200, 500, 200]


def test_fault_offset_must_be_below_every() -> None:
    """An offset that can never match is refused."""
    with pytest.raises(ValueError, match="never matches"):
        Fault(kind="reset", every=2, offset=2)


async def test_reset_fault_resets_before_any_byte() -> None:
    """A reset fault answers with an RST and no response byte."""
    async with DemoServer(EndpointSpec(faults=(Fault(kind="reset"),))) as server:
        with pytest.raises(ConnectionResetError):
            await raw_exchange(server, stream_request(server.spec.path))
    record = server.records[0]
    assert (record.status, record.first_byte_sent_ns) == (0, None)


async def test_cut_fault_closes_mid_stream(client: httpx.AsyncClient) -> None:
    """A cut stream delivers its first half, then the connection closes mid-body."""
    spec = EndpointSpec(tokens=6, faults=(Fault(kind="cut"),))
    received = bytearray()
    async with DemoServer(spec) as server:
        with pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"):
            await collect_stream(client, server.url, received)
    assert received.count(b'"content":"') == 3
    assert b"[DONE]" not in received


async def test_cut_fault_closes_mid_document(client: httpx.AsyncClient) -> None:
    """A cut document sends half its Content-Length, then closes."""
    async with DemoServer(EndpointSpec(faults=(Fault(kind="cut"),))) as server:
        with pytest.raises(httpx.RemoteProtocolError, match=r"received \d+ bytes, expected"):
            await client.post(server.url, json={})


async def test_hang_fault_never_answers_until_stop() -> None:
    """A hung request gets no answer; stopping the server ends it within a second."""
    server = DemoServer(EndpointSpec(faults=(Fault(kind="hang"),)))
    await server.start()
    try:
        async with httpx.AsyncClient(timeout=0.3) as short:
            with pytest.raises(httpx.ReadTimeout):
                await short.get(server.url)
    finally:
        start = time.perf_counter()
        await server.stop()
    assert time.perf_counter() - start < 1.0
    assert (server.records[0].status, server.records[0].done_ns) == (0, None)


async def test_close_before_response_disconnects(client: httpx.AsyncClient) -> None:
    """The stale keep-alive case: the connection closes with no response at all."""
    spec = EndpointSpec(faults=(Fault(kind="close_before_response"),))
    async with DemoServer(spec) as server:
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await client.get(server.url)


async def test_slow_drip_sends_a_byte_every_50_ms(client: httpx.AsyncClient) -> None:
    """After the headers, one filler byte every 50 ms: about 10 in half a second."""
    async with DemoServer(EndpointSpec(faults=(Fault(kind="slow_drip"),))) as server:
        received = b""
        async with client.stream("POST", server.url, json={"stream": True}) as response:
            deadline = time.perf_counter() + 0.5
            async for piece in response.aiter_raw():
                received += piece
                if time.perf_counter() >= deadline:
                    break
    assert response.status_code == 200
    assert 7 <= len(received) <= 12
    assert set(received) <= set(b":\n")


async def test_malformed_sse_sends_one_data_line_that_is_not_json(
    client: httpx.AsyncClient,
) -> None:
    """Exactly one data line fails to parse; the stream otherwise completes."""
    spec = EndpointSpec(tokens=4, faults=(Fault(kind="malformed_sse"),))
    async with DemoServer(spec) as server:
        response = await client.post(server.url, json={"stream": True})
    bad = []
    for _, data in sse_events(response.text)[:-1]:  # the last is [DONE]
        try:
            json.loads(data)
        except ValueError:
            bad.append(data)
    assert bad == ['{"choices": [{"delta": {"content": "unterminated']


async def test_invalid_utf8_fault_breaks_decoding(client: httpx.AsyncClient) -> None:
    """One content delta carries bytes that are not UTF-8."""
    spec = EndpointSpec(tokens=4, faults=(Fault(kind="invalid_utf8"),))
    async with DemoServer(spec) as server:
        response = await client.post(server.url, json={"stream": True})
    assert response.content.count(INVALID_UTF8) == 1
    with pytest.raises(UnicodeDecodeError):
        response.content.decode("utf-8")


async def test_redirect_points_elsewhere_which_answers(client: httpx.AsyncClient) -> None:
    """A redirect fault answers 302 to /elsewhere, and /elsewhere itself is served."""
    async with DemoServer(EndpointSpec(faults=(Fault(kind="redirect"),))) as server:
        first = await client.post(server.url, json={})
        followed = await client.post(server.url, json={}, follow_redirects=True)
    assert (first.status_code, first.headers["location"]) == (302, "/elsewhere")
    assert followed.status_code == 200
    assert [r.path for r in server.records[-2:]] == ["/v1/chat/completions", "/elsewhere"]


@pytest.mark.parametrize(
    ("stream_format", "error"),
    [
        ("openai-chat", {"error": {"message": "The server had an error while processing your "
                                   "request.", "type": "server_error", "param": None,
                                   "code": None}}),
        ("openai-responses", {"type": "error", "sequence_number": 6, "code": "server_error",
                              "param": None, "message": "The server had an error while "
                                                        "processing your request."}),
        ("anthropic", {"type": "error",
                       "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ],
)  # fmt: skip
async def test_error_event_mid_stream_in_format_shape(
    client: httpx.AsyncClient, stream_format: str, error: dict[str, Any]
) -> None:
    """A 200 stream carries two deltas, the format's error event, and no end marker."""
    spec = EndpointSpec(stream_format=stream_format, tokens=4, faults=(Fault(kind="error_event"),))
    async with DemoServer(spec) as server:
        response = await client.post(server.url, json={"stream": True})
    assert response.status_code == 200
    events = sse_events(response.text)
    assert json.loads(events[-1][1]) == error
    assert response.text.count("Latency ") + response.text.count("is ") == 2
    assert "[DONE]" not in response.text
    assert "message_stop" not in response.text
    assert "response.completed" not in response.text


# --- connections -----------------------------------------------------------------------------


async def test_keep_alive_reuses_one_connection(client: httpx.AsyncClient) -> None:
    """Five sequential calls on one client travel over one connection."""
    async with DemoServer(EndpointSpec(latency=0.0, tokens=2)) as server:
        for _ in range(5):
            await client.post(server.url, json={"stream": True})
    assert server.connections == 1
    assert [r.connection for r in server.records] == [1] * 5


async def test_keep_alive_off_closes_every_connection(client: httpx.AsyncClient) -> None:
    """keep_alive=False says Connection: close and needs a new connection per call."""
    async with DemoServer(EndpointSpec(latency=0.0, tokens=2, keep_alive=False)) as server:
        responses = [await client.post(server.url, json={}) for _ in range(3)]
    assert [r.headers["connection"] for r in responses] == ["close"] * 3
    assert server.connections == 3


async def test_close_after_stream_closes_despite_keep_alive() -> None:
    """llama.cpp's quirk: the streamed answer says keep-alive, then the server closes."""
    async with DemoServer(EndpointSpec(tokens=2, close_after_stream=True)) as server:
        answer = await raw_exchange(server, stream_request(server.spec.path), limit=2.0)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5" in head
    assert body.endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")


async def test_close_after_stream_keeps_non_stream_connections(
    client: httpx.AsyncClient,
) -> None:
    """Non-streamed answers from the same server keep their connection."""
    async with DemoServer(EndpointSpec(tokens=2, close_after_stream=True)) as server:
        for _ in range(3):
            await client.post(server.url, json={})
    assert server.connections == 1


async def test_http10_streams_without_chunking_and_closes() -> None:
    """An HTTP/1.0 endpoint sends the stream unframed and ends it by closing."""
    async with DemoServer(EndpointSpec(tokens=2, http10=True)) as server:
        answer = await raw_exchange(server, stream_request(server.spec.path), limit=2.0)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200 OK\r\n")
    assert b"Transfer-Encoding" not in head
    assert b"\r\nConnection: close" in head
    assert body.startswith(b"data: {")
    assert body.endswith(b"data: [DONE]\n\n")


# --- lifecycle -------------------------------------------------------------------------------


async def test_url_path_fits_the_stream_format() -> None:
    """Each format is served under its API's path."""
    formats = [*LLM_FORMATS, "raw"]
    paths = []
    for stream_format in formats:
        async with DemoServer(EndpointSpec(stream_format=stream_format)) as server:
            assert server.url.startswith(f"http://127.0.0.1:{server.port}/")
            paths.append(server.url.removeprefix(server.base_url))
    assert paths == ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/"]


async def test_stop_closes_everything_and_leaves_no_tasks() -> None:
    """Stop ends a hung request, an idle connection and a drip quickly; no task survives."""
    spec = EndpointSpec(faults=(Fault(kind="hang", every=3), Fault(kind="slow_drip", every=3,
                                                                      offset=1)))  # fmt: skip
    server = DemoServer(spec)
    await server.start()
    async with httpx.AsyncClient(timeout=5.0) as one, httpx.AsyncClient(timeout=5.0) as two:
        hung = asyncio.create_task(one.get(server.url))
        dripping = asyncio.create_task(two.get(server.url))
        idle_reader, idle_writer = await asyncio.open_connection("127.0.0.1", server.port)
        async with asyncio.timeout(2.0):
            while len(server.records) < 2 or server.records[1].first_byte_sent_ns is None:
                await asyncio.sleep(0.01)
        start = time.perf_counter()
        await server.stop()
        stopped_in = time.perf_counter() - start
        outcomes = await asyncio.gather(hung, dripping, return_exceptions=True)
        assert await idle_reader.read() == b""
        idle_writer.close()
    assert stopped_in < 1.0
    assert [type(o) for o in outcomes] == [httpx.RemoteProtocolError] * 2
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_stop_ends_requests_waiting_for_a_slot() -> None:
    """Stop cancels a request in service and one queued behind it, quickly and cleanly."""
    server = DemoServer(EndpointSpec(latency=5.0, parallelism=1))
    await server.start()
    async with httpx.AsyncClient(timeout=10.0) as burst_client:
        calls = [asyncio.create_task(burst_client.get(server.url)) for _ in range(2)]
        async with asyncio.timeout(2.0):
            while len(server.records) < 2:
                await asyncio.sleep(0.01)
        start = time.perf_counter()
        await server.stop()
        stopped_in = time.perf_counter() - start
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
    assert stopped_in < 1.0
    assert [type(o) for o in outcomes] == [httpx.RemoteProtocolError] * 2
    assert asyncio.all_tasks() == {asyncio.current_task()}


def test_serve_in_thread_serves_sync_code() -> None:
    """Servers on their own thread answer a sync client and are gone after the block."""
    specs = (EndpointSpec(name="a", tokens=1), EndpointSpec(name="b", stream_format="raw"))
    with serve_in_thread(*specs) as servers:
        names = [s.spec.name for s in servers]
        statuses = [httpx.post(s.url, json={}, timeout=5.0).status_code for s in servers]
        url = servers[0].url
    assert (names, statuses) == (["a", "b"], [200, 200])
    assert isinstance(servers[0].records[0], RequestRecord)
    assert not any(t.name == "latency-gate-demo" for t in threading.enumerate())
    with pytest.raises(httpx.ConnectError):
        httpx.get(url, timeout=1.0)


# --- the classic three -----------------------------------------------------------------------


def test_classic_three_are_local_free_and_paid() -> None:
    """local streams honestly, free starts cold and serves one at a time, paid is buffered."""
    local, free, paid = classic_three()
    assert (local.name, free.name, paid.name) == ("local", "free", "paid")
    assert (local.buffered, local.parallelism, local.cold_start) == (False, None, 0.0)
    assert free.parallelism == 1
    assert 2.0 <= free.cold_start <= 3.0
    assert (paid.buffered, paid.parallelism) == (True, None)


async def test_classic_paid_buffers_its_stream_in_budget(
    client: httpx.AsyncClient, waited: Waited
) -> None:
    """paid answers in under a second, but its first token comes with its last byte."""
    async with DemoServer(classic_three()[2]) as server:
        headers_at, pieces = await timed_stream(client, server.url)
    slack = waited()
    assert headers_at < 0.2 + slack
    assert 0.5 <= pieces[-1][0] <= 1.0 + slack
    assert pieces[-1][0] - pieces[0][0] < 0.03 + slack


async def test_classic_local_answers_fast(client: httpx.AsyncClient, waited: Waited) -> None:
    """local answers a warm streamed call within 40-150 ms."""
    async with DemoServer(classic_three()[0]) as server:
        await client.post(server.url, json={"stream": True})
        start = time.perf_counter()
        await client.post(server.url, json={"stream": True})
        elapsed = time.perf_counter() - start
    assert 0.04 <= elapsed <= 0.15 + waited()


@pytest.mark.slow
async def test_classic_free_breaches_concurrent_budget() -> None:
    """free's ten-call burst queues: concurrent p95 over 3 s while a warm call stays under 0.6 s."""
    async with DemoServer(classic_three()[1]) as server:
        limits = httpx.Limits(max_connections=10)
        async with httpx.AsyncClient(timeout=30.0, limits=limits) as burst_client:
            start = time.perf_counter()
            await burst_client.post(server.url, json={"stream": True})
            cold = time.perf_counter() - start
            # The warm call less the time this thread (the server's and the client's loop)
            # waited for a core: beside `stress-ng --cpu 2` it took 0.606 s (issue 42).
            start, queued = time.perf_counter(), queued_seconds()
            await burst_client.post(server.url, json={"stream": True})
            warm = time.perf_counter() - start - (queued_seconds() - queued)

            async def timed() -> float:
                begin = time.perf_counter()
                await burst_client.post(server.url, json={"stream": True})
                return time.perf_counter() - begin

            burst = await asyncio.gather(*(timed() for _ in range(10)))
    concurrent_p95 = statistics.quantiles(burst, n=20, method="inclusive")[18]
    assert cold >= 2.5
    assert warm < 0.6
    assert concurrent_p95 > 3.0
