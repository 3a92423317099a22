"""bench/llm_peers.py's wire reference: the pcap reader, request/response pairing, the first
token and [DONE] on the wire, and matching a tool's calls to the exchanges (synthetic pcaps)."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "bench"))

import llm_peers as lp  # bench/ is not a package: on the path above

SERVER = 8080
T0 = 1_800_000_000.0


def packet(client: int, from_client: bool, seq: int, payload: bytes, flags: int = 0x18) -> bytes:
    """An Ethernet + IPv4 + TCP frame on 127.0.0.1."""
    sport, dport = (client, SERVER) if from_client else (SERVER, client)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, 6, 0, bytes([127, 0, 0, 1]), bytes(4)
    )
    return bytes(12) + b"\x08\x00" + ip + tcp


def write_pcap(path: Path, frames: list[tuple[float, bytes]]) -> Path:
    """Classic pcap, nanosecond magic, little-endian, link type Ethernet (as tcpdump on lo)."""
    out = bytearray(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65550, 1))
    for when, frame in frames:
        seconds = int(when)
        nanos = round((when - seconds) * 1e9)
        out += struct.pack("<IIII", seconds, nanos, len(frame), len(frame)) + frame
    path.write_bytes(bytes(out))
    return path


def chunk(event: dict[str, object] | str) -> bytes:
    data = event if isinstance(event, str) else json.dumps(event)
    body = f"data: {data}\n\n".encode()
    return f"{len(body):x}\r\n".encode() + body + b"\r\n"


def delta(content: str | None) -> dict[str, object]:
    return {"choices": [{"index": 0, "delta": {"role": "assistant", "content": content}}]}


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def exchange(client: int, start: float, mark: str, words: list[str]) -> list[tuple[float, bytes]]:
    """A connection: SYN, a health check, then a POST in two segments and its streamed answer
    (a role-only event, content events, [DONE], the terminator), one event per packet, 10 ms
    apart from 100 ms on; one content packet retransmitted."""
    body = json.dumps({"messages": [{"role": "user", "content": f"{mark} Write"}]}).encode()
    request = b"POST /v1/chat/completions HTTP/1.1\r\nX-Request-ID: " + mark.encode() + b"\r\n\r\n"
    frames = [
        (start, packet(client, True, 0, b"", flags=0x02)),
        (start + 0.0001, packet(client, True, 1, b"GET /health HTTP/1.1\r\n\r\n")),
        (start + 0.0002, packet(client, False, 1, b"HTTP/1.1 200 OK\r\n\r\n{}")),
        (start + 0.001, packet(client, True, 100, request)),
        (start + 0.002, packet(client, True, 100 + len(request), body)),
        (start + 0.050, packet(client, False, 100, HEAD)),
        (start + 0.090, packet(client, False, 200, chunk(delta(None)))),
    ]
    seq = 300
    for i, word in enumerate(words):
        payload = chunk(delta(word))
        frames.append((start + 0.100 + 0.010 * i, packet(client, False, seq, payload)))
        if i == 0:  # a retransmission of the first token: not a new packet of the answer
            frames.append((start + 0.101, packet(client, False, seq, payload)))
        seq += len(payload)
    end = start + 0.100 + 0.010 * len(words)
    frames.append((end, packet(client, False, seq, chunk("[DONE]"))))
    frames.append((end + 0.002, packet(client, False, seq + 100, b"0\r\n\r\n")))
    return frames


def test_wire_exchange_times(tmp_path: Path) -> None:
    """The POST only; its request ends at its last segment, the first token is the first
    content delta (not the role-only event), the end is the [DONE] packet, and the body size
    is the dechunked SSE text."""
    frames = exchange(40000, T0, "[0badcafe]", ["Once", " upon", " a"])
    pcap = write_pcap(tmp_path / "one.pcap", frames)
    (got,) = lp.wire_exchanges(pcap, SERVER)
    assert got.request.startswith(b"POST ")
    assert got.complete
    assert abs(got.request_last - (T0 + 0.002)) < 1e-6
    assert got.ttft is not None
    assert abs(got.ttft - 0.098) < 1e-6
    assert got.latency is not None
    assert abs(got.latency - 0.128) < 1e-6
    sse = (
        b"".join(
            f"data: {e}\n\n".encode()
            for e in [json.dumps(delta(None))]
            + [json.dumps(delta(w)) for w in ["Once", " upon", " a"]]
        )
        + b"data: [DONE]\n\n"
    )
    assert got.body_bytes == len(sse)


def test_a_cut_answer_is_not_complete(tmp_path: Path) -> None:
    frames = exchange(40000, T0, "[0badcafe]", ["Once", " upon"])[:-2]  # no [DONE]
    pcap = write_pcap(tmp_path / "cut.pcap", frames)
    done, incomplete = lp.complete_exchanges(lp.wire_exchanges(pcap, SERVER))
    assert (done, incomplete) == ([], 1)


def test_calls_matched_by_identity_then_by_shifted_time(tmp_path: Path) -> None:
    """aiperf-like: each call names its request. latency-gate-like: two answers of one size are
    told apart by time after the offset the size-settled pairs show (2 ms here)."""
    frames: list[tuple[float, bytes]] = []
    starts = {40001: 0.0, 40002: 0.0004, 40003: 0.0008}
    words = {40001: ["aa", "b"], 40002: ["cc", "d"], 40003: ["e", "f", "g"]}
    marks = {40001: "[00000001]", 40002: "[00000002]", 40003: "[00000003]"}
    for client, start in starts.items():
        frames += exchange(client, T0 + start, marks[client], words[client])
    pcap = write_pcap(tmp_path / "burst.pcap", sorted(frames, key=lambda f: f[0]))
    exchanges = lp.wire_exchanges(pcap, SERVER)
    assert len(exchanges) == 3

    by_request = lp.Calls()
    for client in (40003, 40001, 40002):
        ex = next(e for e in exchanges if e.client == client)
        assert ex.latency is not None
        by_request.add(
            "burst", ex.ttft, ex.latency + 0.001, None, start=ex.request_first, ident=marks[client]
        )
    pairs, by_identity = lp.match_wire(by_request, exchanges)
    assert by_identity == 3
    assert [(exchanges[j].client) for _, j, _ in pairs] == [40003, 40001, 40002]

    by_size = lp.Calls()
    for ex in exchanges:  # tool times 2 ms before the wire; 40001 and 40002 have one size
        assert ex.ttft is not None
        assert ex.latency is not None
        by_size.add(
            "burst", ex.ttft, ex.latency, None, start=ex.request_last - 0.002, ident=ex.body_bytes
        )
    assert exchanges[0].body_bytes == exchanges[1].body_bytes != exchanges[2].body_bytes
    pairs, by_identity = lp.match_wire(by_size, exchanges)
    assert by_identity == 1
    assert [(i, j) for i, j, _ in pairs] == [(0, 0), (1, 1), (2, 2)]
