"""Hostile input: streams no parser expected, judged rather than crashed on.

An answer nested 50,000 deep (a document, or one event of a stream), a usage count of 10**400 (CLI
and action), answers of reasoning only, Anthropic's redacted thinking, and a cold call that timed
out while the later calls answered. docs/faults.md, "Hostile input", says what each case did before
its fix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hostile_data import _samples
from hostile_kit import (
    CHAT,
    FAST,
    ONE_LOOK,
    chunk,
    http,
    judged,
    paced,
    run_action,
    run_cli,
    sse_pieces,
)


def _huge_usage(_: bytes) -> list[bytes]:
    usage = json.dumps({"choices": [], "usage": {"completion_tokens": 10**400}})
    return sse_pieces(
        [chunk({"content": "a"}), chunk({"content": "b"}), chunk({}, "stop"), usage, "[DONE]"]
    )


def _reasoning_only(_: bytes) -> list[bytes]:
    """A reasoning model cut by its token limit: reasoning deltas, no answer text."""
    thoughts = [chunk({"reasoning_content": f"step {i} "}) for i in range(3)]
    return sse_pieces([*thoughts, chunk({}, "length"), "[DONE]"])


def _anthropic_redacted(_: bytes) -> list[bytes]:
    """An Anthropic stream whose thinking is all redacted, then stopped by its limit."""
    events = [
        ("message_start", {"type": "message_start", "message": {"usage": {"output_tokens": 1}}}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "redacted_thinking",
                    "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDF",
                },
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "max_tokens"},
                "usage": {"output_tokens": 64},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    pieces = [
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    ]
    for name, data in events:
        event = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
        pieces.append(f"{len(event):x}\r\n".encode() + event + b"\r\n")
    pieces[-1] += b"0\r\n\r\n"
    return pieces


@pytest.mark.parametrize("streamed", [False, True], ids=["document", "stream"])
def test_answer_nested_deep_is_a_malformed_call(tmp_path: Path, streamed: bool) -> None:
    """An endpoint's answer of valid JSON nested 50,000 deep (a document, or one event of a
    stream) is a `malformed` call of a judged run (kept: it was already)."""
    deep = '{"choices": [], "x": ' + "[" * 50_000 + "]" * 50_000 + "}"
    pieces = (
        sse_pieces([chunk({"content": "a"}), deep]) if streamed else [http("200 OK", deep.encode())]
    )
    with paced(lambda _: pieces) as (base, _):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "--stream" if streamed else "--no-stream", *FAST]
        judged(run_cli("probe", *args, "--json", str(json_path)))
    assert {s["error"] for s in _samples(json_path)} == {"malformed"}


def test_usage_count_of_10_400_is_a_judged_run(tmp_path: Path) -> None:
    """A stream whose usage says 10**400 tokens is judged; the count is left out and tokens come
    from the deltas (tokens/s overflowed a float: exit 3)."""
    with paced(_huge_usage) as (base, _):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "--stream", *FAST, "--json", str(json_path)]
        judged(run_cli("probe", *args))
    samples = json.loads(json_path.read_text())["samples"]
    assert {(s["tokens"], s["tokens_source"]) for s in samples} == {(2, "deltas")}


def test_usage_count_of_10_400_in_the_action_writes_summary_and_outputs(tmp_path: Path) -> None:
    """The action against the same stream: summary, outputs and exit 0/1 (was exit 3 with
    neither written)."""
    with paced(_huge_usage) as (base, _):
        inputs = {"url": base + CHAT, "prompt": "hi", "stream": "true", **ONE_LOOK}
        run = run_action(tmp_path, inputs)
    assert run.code in (0, 1), run.log
    assert "latency-gate:" in run.summary
    assert "verdict=" in run.outputs


def test_reasoning_only_answers_have_a_first_token(tmp_path: Path) -> None:
    """Answers of reasoning only (every call ok) pass a first-token budget on their first
    reasoning delta, which is what the user saw arrive (they failed it with "no data")."""
    with paced(_reasoning_only) as (base, _):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "--stream", "--max-ttft-p95", "5s", *FAST]
        result = judged(run_cli("probe", *args, "--on-undecided", "pass", "--json", str(json_path)))
    assert "no data" not in result.output
    for sample in _samples(json_path):
        assert sample["ok"]
        assert sample["timings"]["first_token"] == sample["timings"]["first_event"] is not None
    ttft = next(
        c
        for c in json.loads(json_path.read_text())["verdict"]["checks"]
        if c["number"] == "ttft_p95"
    )
    assert ttft["value"] is not None
    assert ttft["passed"] is True


def test_anthropic_redacted_thinking_is_an_answer(tmp_path: Path) -> None:
    """Anthropic's redacted_thinking (encrypted, no deltas) is reasoning the user saw arrive,
    not an empty answer (every call was `empty_answer`)."""
    with paced(_anthropic_redacted) as (base, _):
        json_path = tmp_path / "r.json"
        args = [base + "/v1/messages", "--prompt", "hi", "--stream", *FAST, "--on-undecided"]
        judged(run_cli("probe", *args, "pass", "--json", str(json_path)))
    for sample in _samples(json_path):
        assert (sample["ok"], sample["error"]) == (True, None)
        assert sample["reasoning_events"] == 1
        assert sample["timings"]["first_token"] is not None


def test_cold_call_that_timed_out_is_a_finding(tmp_path: Path) -> None:
    """The cold call times out, the later calls answer: a finding says cold start was not
    measured and why (it was a PASS with cold start "—" and nothing said)."""
    answered = http(
        "200 OK", b'{"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}'
    )

    def answer(_: bytes) -> list[bytes]:
        first = len(seen.requests) == 1
        return [] if first else [answered]  # the first request is never answered

    with paced(answer) as (base, seen):
        json_path = tmp_path / "r.json"
        args = [base + CHAT, "--prompt", "hi", "--timeout", "0.5s", *FAST, "--on-undecided"]
        judged(run_cli("probe", *args, "pass", "--max-error-rate", "off", "--json", str(json_path)))
    document = json.loads(json_path.read_text())
    assert document["numbers"]["cold_start"] is None
    [finding] = [f for f in document["findings"] if f["code"] == "cold-call-failed"]
    assert finding["title"] == "Cold start not measured: the cold call failed"
    assert finding["evidence"].startswith(
        "the cold call (the first, on a new connection) failed (read_timeout: no answer within "
        "the 0.5 s timeout), while 3 of 3 later calls were answered"
    )
    assert finding["hint"].startswith("a cold start longer than the timeout fails like this")
