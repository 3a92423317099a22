"""The answer parser: SSE framing, each format's events and documents, and the servers' quirks."""

from __future__ import annotations

import json
import random
import tracemalloc
from collections.abc import Iterable

import pytest

from latency_gate.config import Format
from latency_gate.measure.streams import (
    MAX_EVENT,
    MAX_KEPT,
    FeedResult,
    StreamOutcome,
    StreamParser,
)
from latency_gate.models import ErrorKind

SSE = "text/event-stream"
JSON = "application/json; charset=utf-8"

# --- building bodies ------------------------------------------------------------------------


def sse(*events: object, eol: str = "\n") -> bytes:
    """An event stream: each event a dict (JSON data), a str (data as is) or (name, payload)."""
    out = []
    for event in events:
        name, payload = event if isinstance(event, tuple) else (None, event)
        data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
        head = f"event: {name}{eol}" if name else ""
        out.append(f"{head}data: {data}{eol}{eol}")
    return "".join(out).encode()


# Shaped exactly as a llama.cpp server (xllamacpp 2026.10.11549, SmolLM2-135M) streamed them.
_LLAMA_ID = {
    "created": 1795983708,
    "id": "chatcmpl-5xce0aGAtFCsPJKc7LhldHgw3F0s3RLm",
    "model": "/work/main/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf",
    "system_fingerprint": "b0-unknown",
    "object": "chat.completion.chunk",
}
LLAMA_WORDS = ["Hello", "!", " Just", " a", " friendly", " little", " helper", " in", " the"]
LLAMA_WORDS += [" world", " of", " AI"]
LLAMA_TEXT = "".join(LLAMA_WORDS)


def chunk(
    delta: dict[str, object], finish: str | None = None, **extra: object
) -> dict[str, object]:
    choice = {"finish_reason": finish, "index": 0, "delta": delta}
    return {"choices": [choice], **_LLAMA_ID, **extra}


ROLE = chunk({"role": "assistant", "content": None})
FINISH = chunk({}, "length")
USAGE = {
    "choices": [],
    **_LLAMA_ID,
    "usage": {"completion_tokens": 12, "prompt_tokens": 36, "total_tokens": 48},
    "timings": {"prompt_n": 36, "predicted_n": 12, "predicted_per_second": 76.41595287219778},
}
CONTENT = [chunk({"content": word}) for word in LLAMA_WORDS]
LLAMA_EVENTS: list[object] = [ROLE, *CONTENT, FINISH, USAGE, "[DONE]"]
LLAMA_STREAM = sse(*LLAMA_EVENTS)
LLAMA_DOCUMENT = json.dumps(
    {
        "choices": [
            {
                "finish_reason": "length",
                "index": 0,
                "message": {"role": "assistant", "content": "Sam:Sammy\n\n#SmolLAMP_"},
            }
        ],
        "created": 1795983708,
        "model": "/work/main/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf",
        "object": "chat.completion",
        "usage": {"completion_tokens": 12, "prompt_tokens": 36, "total_tokens": 48},
        "id": "chatcmpl-bhI5qNqmzktISV40GO3PtFIfF037vxHL",
    }
).encode()

# As OpenAI documents the Responses API stream (event name repeated in the data's "type").
_RESP = {"id": "resp_1", "object": "response", "model": "gpt-4o-mini"}
RESPONSES_STREAM = sse(
    ("response.created", {"type": "response.created", "response": {**_RESP, "status": "queued"}}),
    ("response.in_progress", {"type": "response.in_progress", "response": _RESP}),
    (
        "response.output_item.added",
        {"type": "response.output_item.added", "item": {"type": "message", "content": []}},
    ),
    ("response.content_part.added", {"type": "response.content_part.added", "part": {}}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "Hi"}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "delta": " there"}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "!"}),
    ("response.output_text.done", {"type": "response.output_text.done", "text": "Hi there!"}),
    ("response.output_item.done", {"type": "response.output_item.done", "item": {}}),
    (
        "response.completed",
        {
            "type": "response.completed",
            "response": {**_RESP, "status": "completed", "usage": {"output_tokens": 4}},
        },
    ),
)

# As Anthropic documents the Messages stream.
ANTHROPIC_STREAM = sse(
    (
        "message_start",
        {
            "type": "message_start",
            "message": {"id": "msg_1", "content": [], "usage": {"output_tokens": 1}},
        },
    ),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    ("ping", {"type": "ping"}),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "!"}},
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 3},
        },
    ),
    ("message_stop", {"type": "message_stop"}),
)


# --- feeding --------------------------------------------------------------------------------


def run(
    fmt: Format,
    chunks: Iterable[bytes],
    *,
    content_type: str | None = SSE,
    complete: bool = True,
) -> tuple[list[FeedResult], StreamOutcome]:
    parser = StreamParser(fmt, content_type=content_type)
    results = [parser.feed(piece) for piece in chunks]
    return results, parser.finish(body_complete=complete)


def outcome(
    fmt: Format, body: bytes, *, content_type: str | None = SSE, complete: bool = True
) -> StreamOutcome:
    return run(fmt, [body], content_type=content_type, complete=complete)[1]


def byte_by_byte(body: bytes) -> list[bytes]:
    return [body[i : i + 1] for i in range(len(body))]


def random_splits(body: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(body)), k=min(len(body) - 1, rng.randint(1, 40))))
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]


def chat(*events: object, complete: bool = True) -> StreamOutcome:
    return outcome(Format.OPENAI_CHAT, sse(*events), complete=complete)


# --- the llama.cpp stream, and framing ------------------------------------------------------


def test_llama_cpp_stream_is_judged_ok_with_usage_tokens() -> None:
    """A real llama.cpp stream: ok, 12 tokens from usage (36 of the prompt's), 16 events, end
    marker seen."""
    assert outcome(Format.OPENAI_CHAT, LLAMA_STREAM) == StreamOutcome(
        ok=True,
        error=None,
        detail=None,
        tokens=12,
        tokens_source="usage",
        answer_chars=len(LLAMA_TEXT),
        events=16,
        end_marker=True,
        input_tokens=36,
    )


def test_first_token_is_the_content_chunk_not_the_role_chunk() -> None:
    """One event per read: the role chunk reports nothing, the first content chunk a first token."""
    results, _ = run(Format.OPENAI_CHAT, [sse(event) for event in LLAMA_EVENTS])
    assert results[0] == FeedResult(tokens=0, first_token=False)
    assert results[1] == FeedResult(tokens=1, first_token=True, first_event=True)
    assert results[2:13] == [FeedResult(tokens=1, first_token=False)] * 11
    assert results[13:] == [FeedResult(tokens=0, first_token=False)] * 3


def test_one_read_holding_many_deltas_counts_them_all() -> None:
    """A read that carried several content events reports all of them, and the first token."""
    results, _ = run(Format.OPENAI_CHAT, [sse(ROLE, *CONTENT[:3]), sse(*CONTENT[3:], FINISH)])
    assert results == [FeedResult(3, True, first_event=True), FeedResult(9, False)]


FORMAT_BODIES = [
    (Format.OPENAI_CHAT, LLAMA_STREAM),
    (Format.OPENAI_RESPONSES, RESPONSES_STREAM),
    (Format.ANTHROPIC, ANTHROPIC_STREAM),
    (Format.RAW, LLAMA_STREAM),
    (Format.OPENAI_CHAT, sse(ROLE, chunk({"content": "héllo wörld ✓ 🙂"}), FINISH, "[DONE]")),
    (Format.OPENAI_CHAT, sse(*LLAMA_EVENTS, eol="\r\n")),
    (Format.OPENAI_CHAT, sse(*LLAMA_EVENTS, eol="\r")),
]


@pytest.mark.parametrize(("fmt", "body"), FORMAT_BODIES)
def test_chunking_does_not_change_the_outcome(fmt: Format, body: bytes) -> None:
    """Byte by byte and 20 seeded random splits give the outcome and token total of one read."""
    whole_results, whole = run(fmt, [body])
    assert whole.ok
    for chunks in [byte_by_byte(body)] + [random_splits(body, seed) for seed in range(20)]:
        results, split = run(fmt, chunks)
        assert split == whole
        assert sum(r.tokens for r in results) == whole_results[0].tokens
        assert sum(r.first_token for r in results) == 1


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_each_line_ending_gives_the_same_outcome(eol: str) -> None:
    """LF, CRLF and lone CR all end lines."""
    assert outcome(Format.OPENAI_CHAT, sse(*LLAMA_EVENTS, eol=eol)) == outcome(
        Format.OPENAI_CHAT, LLAMA_STREAM
    )


def test_crlf_split_across_reads_is_one_line_ending() -> None:
    """A \\r closing one read and the \\n opening the next end one line, not a line and an event."""
    results, result = run(Format.RAW, [b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"])
    assert (result.events, result.answer_chars) == (1, 3)  # one event, data "a\nb"
    # The lone \r in the third read is the blank line (spec); the \n after it is its pair.
    assert [r.tokens for r in results] == [0, 0, 1, 0]


def test_data_lines_join_with_newline_and_fields_follow_the_spec() -> None:
    """Comments, a field without colon, `data:x`, unknown fields and id/retry do not add data."""
    body = b": keep-alive\ndata:ab\nid: 7\nretry: 10\nfoo: bar\ndata\ndata:  cd\n\n"
    result = outcome(Format.RAW, body)
    assert (result.events, result.answer_chars) == (1, len("ab\n\n cd"))


def test_event_without_data_is_not_dispatched() -> None:
    """An `event:` line with no data line dispatches nothing (spec), so is not counted."""
    assert outcome(Format.RAW, b"event: ping\n\n: comment\n\ndata: x\n\n").events == 1


def test_leading_byte_order_mark_is_dropped() -> None:
    """A UTF-8 BOM before the first field does not hide that field."""
    result = outcome(Format.OPENAI_CHAT, b"\xef\xbb\xbf" + LLAMA_STREAM)
    assert (result.ok, result.events) == (True, 16)


def test_last_event_without_blank_line_counts_when_the_body_is_complete() -> None:
    """A complete body ending in `data: [DONE]` without its blank line still ends the stream."""
    body = sse(ROLE, *CONTENT, FINISH) + b"data: [DONE]"
    result = outcome(Format.OPENAI_CHAT, body)
    assert (result.ok, result.events, result.end_marker) == (True, 15, True)


def test_last_event_without_blank_line_is_dropped_when_cut() -> None:
    """A cut body's unfinished event is discarded, as the spec says."""
    result = outcome(Format.RAW, b"data: a\n\ndata: b\n", complete=False)
    assert (result.events, result.answer_chars) == (1, 1)


def test_charset_parameter_and_case_still_mean_event_stream() -> None:
    """`Text/Event-Stream; charset=utf-8` is parsed as a stream."""
    parser = StreamParser(Format.OPENAI_CHAT, content_type="Text/Event-Stream; charset=utf-8")
    assert parser.streaming


# --- openai-chat quirks ---------------------------------------------------------------------


def test_no_usage_chunk_counts_the_deltas() -> None:
    """llama-cpp-python sends no usage chunk: tokens are the 12 content deltas."""
    result = chat(ROLE, *CONTENT, FINISH, "[DONE]")
    assert (result.ok, result.tokens, result.tokens_source) == (True, 12, "deltas")


def test_finish_reason_without_done_ends_the_stream() -> None:
    """transformers serve sends no [DONE]: a finish_reason is the end marker."""
    result = chat(ROLE, *CONTENT, FINISH)
    assert (result.ok, result.end_marker) == (True, True)


def test_finish_reason_on_the_last_content_chunk_counts_that_content() -> None:
    """A last chunk with both content and finish_reason is a delta and the end."""
    result = chat(*CONTENT[:-1], chunk({"content": " AI"}, "stop"))
    assert (result.ok, result.tokens, result.answer_chars) == (True, 12, len(LLAMA_TEXT))


def test_empty_string_content_in_first_chunk_is_not_a_token() -> None:
    """`content: ""` in the role chunk: the first token is still the first real text."""
    role = chunk({"role": "assistant", "content": ""})
    results, result = run(Format.OPENAI_CHAT, [sse(role), sse(CONTENT[0]), sse(FINISH)])
    assert [r.first_token for r in results] == [False, True, False]
    assert result.tokens == 1


def test_tool_call_deltas_are_an_answer() -> None:
    """Tool-call name and argument deltas count as tokens; no content is not an empty answer."""
    calls = [
        {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {"name": "get", "arguments": ""},
        },
        {"index": 0, "function": {"arguments": '{"city":'}},
        {"index": 0, "function": {"arguments": '"Oslo"}'}},
    ]
    events = [chunk({"content": None, "tool_calls": [call]}) for call in calls]
    result = chat(ROLE, *events, chunk({}, "tool_calls"), "[DONE]")
    assert (result.ok, result.tokens, result.answer_chars) == (True, 3, len('get{"city":"Oslo"}'))


def test_only_the_first_choice_is_followed() -> None:
    """With n=2 the deltas of choice index 1 are not counted twice."""
    second = {"choices": [{"index": 1, "delta": {"content": "other"}, "finish_reason": None}]}
    result = chat(ROLE, CONTENT[0], second, chunk({"content": "x"}, "stop"))
    assert (result.ok, result.tokens, result.answer_chars) == (True, 2, len("Hellox"))


def test_reasoning_only_stream_is_an_answer() -> None:
    """A stream of reasoning_content alone is an answer (a user saw it arrive), not an empty one."""
    result = chat(ROLE, chunk({"reasoning_content": "Hmm"}), FINISH, "[DONE]")
    assert (result.ok, result.error, result.answer_chars, result.reasoning_chars) == (
        True,
        None,
        0,
        3,
    )
    assert (result.tokens, result.tokens_source, result.reasoning_deltas) == (1, "deltas", 1)


def test_reasoning_is_the_first_event_and_content_the_first_token() -> None:
    """Reasoning then content, one event per read: first event on the reasoning read, first
    token on the first content read."""
    events = [ROLE, chunk({"reasoning_content": "Let"}), chunk({"reasoning": " me"}), *CONTENT[:2]]
    results, result = run(Format.OPENAI_CHAT, [sse(e) for e in [*events, FINISH, "[DONE]"]])
    assert results[:5] == [
        FeedResult(tokens=0, first_token=False),
        FeedResult(tokens=0, first_token=False, reasoning=1, first_event=True),
        FeedResult(tokens=0, first_token=False, reasoning=1),
        FeedResult(tokens=1, first_token=True),
        FeedResult(tokens=1, first_token=False),
    ]
    assert (result.ok, result.reasoning_deltas, result.tokens) == (True, 2, 4)


def test_role_and_finish_only_is_an_empty_answer() -> None:
    """No text at all: EMPTY_ANSWER."""
    result = chat(ROLE, FINISH, USAGE, "[DONE]")
    assert (result.ok, result.error, result.detail) == (
        False,
        ErrorKind.EMPTY_ANSWER,
        "the answer held no text",
    )


def test_error_event_is_a_stream_error_with_its_message() -> None:
    """`{"error": {...}}` mid-stream: STREAM_ERROR quoting type and message."""
    error = {"error": {"message": "Model overloaded", "type": "server_error", "code": 503}}
    result = chat(ROLE, *CONTENT[:2], error)
    assert (result.error, result.detail) == (
        ErrorKind.STREAM_ERROR,
        "server_error: Model overloaded",
    )


def test_error_event_takes_precedence_over_a_cut() -> None:
    """An error event then a dropped connection is reported as the error."""
    result = chat(ROLE, {"error": "out of memory"}, complete=False)
    assert (result.error, result.detail) == (ErrorKind.STREAM_ERROR, "out of memory")


def test_sse_event_named_error_is_a_stream_error() -> None:
    """`event: error` with a JSON message is a stream error too."""
    result = chat(ROLE, ("error", {"message": "rate limited"}))
    assert (result.error, result.detail) == (ErrorKind.STREAM_ERROR, "rate limited")


def test_long_error_message_is_clipped_to_2048_chars() -> None:
    """The detail quotes the server but keeps at most 2,048 characters: the sample's detail is
    cut to 200 only after the secrets are scrubbed from all of it
    (tests/test_hostile_credentials_nested.py)."""
    result = chat({"error": {"message": "x" * 5000}})
    assert result.detail == "x" * 2047 + "…"


def test_cut_connection_is_stream_cut() -> None:
    """body_complete False: STREAM_CUT, with the deltas seen so far."""
    result = chat(ROLE, *CONTENT[:4], complete=False)
    assert (result.error, result.detail, result.tokens) == (
        ErrorKind.STREAM_CUT,
        "connection closed before the body was complete",
        4,
    )


def test_stream_without_end_marker_is_stream_cut() -> None:
    """A complete body that never said it was done: STREAM_CUT."""
    result = chat(ROLE, *CONTENT)
    assert (result.error, result.detail) == (
        ErrorKind.STREAM_CUT,
        "stream ended before its end marker",
    )


def test_invalid_json_event_is_malformed() -> None:
    """An event whose data is not JSON: MALFORMED, naming the event."""
    result = chat(ROLE, '{"choices": [', FINISH, "[DONE]")
    assert result.error is ErrorKind.MALFORMED
    assert result.detail is not None
    assert result.detail.startswith("event 'message' holds invalid JSON: ")


def test_deeply_nested_json_is_malformed_not_a_crash() -> None:
    """100,000 nested brackets are reported, not raised."""
    result = chat("[" * 100_000, "[DONE]")
    assert (result.error, result.detail) == (
        ErrorKind.MALFORMED,
        "event 'message' holds invalid JSON: nested too deeply",
    )


def test_invalid_utf8_in_a_stream_is_malformed() -> None:
    """A byte sequence that is not UTF-8: MALFORMED, and later events are not parsed."""
    body = sse(ROLE) + b"data: \xff\xfe\n\n" + sse(*CONTENT, FINISH)
    results, result = run(Format.OPENAI_CHAT, byte_by_byte(body))
    assert result.error is ErrorKind.MALFORMED
    assert result.detail == "the stream is not valid UTF-8 (invalid start byte)"
    assert sum(r.tokens for r in results) == 0


def test_truncated_utf8_at_the_end_of_a_complete_body_is_malformed() -> None:
    """Half a character at the end of a complete body: MALFORMED."""
    result = outcome(Format.OPENAI_CHAT, LLAMA_STREAM + b"\xc3")
    assert (result.error, result.detail) == (
        ErrorKind.MALFORMED,
        "the stream is not valid UTF-8 (unexpected end of data)",
    )


def test_event_over_the_limit_is_malformed_and_memory_stays_bounded() -> None:
    """5 MB of data without a blank line: MALFORMED past MAX_EVENT, buffers freed."""
    parser = StreamParser(Format.OPENAI_CHAT, content_type=SSE)
    piece = b"data: " + b"x" * 65_530 + b"\n"
    held = []
    for _ in range(80):
        parser.feed(piece)
        held.append(parser.buffered_bytes)
    result = parser.finish(body_complete=True)
    assert max(held) <= MAX_EVENT
    assert held[-1] == 0
    assert (result.error, result.detail) == (
        ErrorKind.MALFORMED,
        f"an event exceeded {MAX_EVENT} characters without ending",
    )


# --- non-streamed documents -----------------------------------------------------------------


def test_llama_cpp_document_is_ok_with_usage_tokens() -> None:
    """A real llama.cpp JSON answer: ok, tokens from usage (the prompt's too), no events, finish
    reason seen."""
    results, result = run(Format.OPENAI_CHAT, byte_by_byte(LLAMA_DOCUMENT), content_type=JSON)
    assert set(results) == {FeedResult(tokens=0, first_token=False)}
    assert result == StreamOutcome(
        ok=True,
        error=None,
        detail=None,
        tokens=12,
        tokens_source="usage",
        answer_chars=len("Sam:Sammy\n\n#SmolLAMP_"),
        events=0,
        end_marker=True,
        input_tokens=36,
    )


def test_document_without_usage_has_unknown_tokens() -> None:
    """No usage field in a JSON answer: tokens unknown, not a delta count."""
    body = {"choices": [{"message": {"content": "Hi"}, "finish_reason": "stop"}]}
    result = outcome(Format.OPENAI_CHAT, json.dumps(body).encode(), content_type=JSON)
    assert (result.ok, result.tokens, result.tokens_source) == (True, None, None)


def test_document_with_only_tool_calls_is_an_answer() -> None:
    """content null with tool_calls is a complete answer."""
    call = {"id": "c", "type": "function", "function": {"name": "get", "arguments": "{}"}}
    body = {"choices": [{"message": {"content": None, "tool_calls": [call]}}]}
    result = outcome(Format.OPENAI_CHAT, json.dumps(body).encode(), content_type=JSON)
    assert (result.ok, result.answer_chars) == (True, 5)


def test_document_with_empty_content_is_an_empty_answer() -> None:
    """`content: ""` in a JSON answer: EMPTY_ANSWER."""
    body = {"choices": [{"message": {"content": ""}, "finish_reason": "stop"}]}
    result = outcome(Format.OPENAI_CHAT, json.dumps(body).encode(), content_type=JSON)
    assert result.error is ErrorKind.EMPTY_ANSWER


def test_empty_body_is_an_empty_answer() -> None:
    """Zero bytes where a JSON answer was expected: EMPTY_ANSWER, saying the body was empty."""
    result = outcome(Format.OPENAI_CHAT, b"", content_type=JSON)
    assert (result.error, result.detail) == (ErrorKind.EMPTY_ANSWER, "the body was empty")


def test_error_document_is_a_stream_error() -> None:
    """`{"error": {...}}` as the whole body: STREAM_ERROR with its message."""
    body = {"error": {"message": "context too long", "type": "invalid_request_error"}}
    result = outcome(Format.OPENAI_CHAT, json.dumps(body).encode(), content_type=JSON)
    assert (result.error, result.detail) == (
        ErrorKind.STREAM_ERROR,
        "invalid_request_error: context too long",
    )


def test_invalid_json_document_is_malformed() -> None:
    """A body that is not JSON: MALFORMED."""
    result = outcome(Format.OPENAI_CHAT, b"<html>Bad gateway</html>", content_type="text/html")
    assert result.error is ErrorKind.MALFORMED
    assert result.detail is not None
    assert result.detail.startswith("the body is not valid JSON: Expecting value")


def test_event_stream_sent_as_json_is_malformed_with_a_hint() -> None:
    """An event stream with a JSON content type: MALFORMED, saying what it looks like."""
    result = outcome(Format.OPENAI_CHAT, LLAMA_STREAM, content_type="application/json")
    assert result.detail is not None
    assert "looks like an event stream sent as 'application/json'" in result.detail


def test_document_with_invalid_utf8_is_malformed() -> None:
    """A JSON body with a byte that is not UTF-8: MALFORMED."""
    result = outcome(Format.OPENAI_CHAT, b'{"choices": "\xff"}', content_type=JSON)
    assert (result.error, result.detail) == (
        ErrorKind.MALFORMED,
        "the body is not valid UTF-8 (invalid start byte)",
    )


def test_cut_document_is_stream_cut_not_malformed() -> None:
    """Half a JSON body because the connection dropped: STREAM_CUT."""
    result = outcome(Format.OPENAI_CHAT, LLAMA_DOCUMENT[:40], content_type=JSON, complete=False)
    assert result.error is ErrorKind.STREAM_CUT


def test_five_megabyte_document_keeps_at_most_a_mebibyte() -> None:
    """A 5 MB JSON body: at most MAX_KEPT held, peak allocation under 3 MiB, answer unknown."""
    piece = b"x" * 65_536
    start = b'{"x": "' + piece[7:]  # starts like a JSON object, so it is not refused as such
    parser = StreamParser(Format.OPENAI_CHAT, content_type=JSON)
    held = []
    tracemalloc.start()
    try:
        for number in range(80):
            parser.feed(start if number == 0 else piece)
            held.append(parser.buffered_bytes)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert max(held) == MAX_KEPT
    assert held[-1] == 0
    assert peak < 3 * MAX_KEPT
    assert parser.finish(body_complete=True) == StreamOutcome(
        ok=True,
        error=None,
        detail=None,
        tokens=None,
        tokens_source=None,
        answer_chars=0,
        events=0,
        end_marker=False,
    )


# --- raw ------------------------------------------------------------------------------------


def test_raw_document_first_token_is_the_first_non_empty_chunk() -> None:
    """Raw non-SSE: an empty read is skipped, the first bytes are the first token, once."""
    results, result = run(Format.RAW, [b"", b"ab", b"cd"], content_type="text/plain")
    assert [r.first_token for r in results] == [False, True, False]
    assert (result.ok, result.answer_chars, result.tokens) == (True, 4, None)


def test_raw_binary_document_is_fine() -> None:
    """Raw bodies need not be text: invalid UTF-8 is not an error."""
    result = outcome(Format.RAW, b"\xff\x00\xfe", content_type="application/octet-stream")
    assert (result.ok, result.answer_chars) == (True, 3)


def test_raw_five_megabyte_document_is_counted_not_kept() -> None:
    """A 5 MB raw body is counted in full while nothing past MAX_KEPT is held."""
    parser = StreamParser(Format.RAW, content_type=None)
    held = []
    for _ in range(80):
        parser.feed(b"y" * 65_536)
        held.append(parser.buffered_bytes)
    assert max(held) <= MAX_KEPT
    assert parser.finish(body_complete=True).answer_chars == 80 * 65_536


def test_raw_stream_first_token_is_first_event_with_data() -> None:
    """Raw SSE: an empty data event is not a token; the next one is."""
    results, result = run(
        Format.RAW, [b"data:\n\n", b": c\n\n", b"data: hi\n\n", b"data: [DONE]\n\n"]
    )
    assert [r.first_token for r in results] == [False, False, True, False]
    assert (result.ok, result.tokens, result.end_marker, result.events) == (True, 1, True, 3)


def test_raw_stream_is_never_an_empty_answer_nor_needs_an_end_marker() -> None:
    """Raw SSE with no data at all is ok."""
    result = outcome(Format.RAW, b": nothing but a comment\n\n")
    assert (result.ok, result.tokens, result.answer_chars) == (True, 0, 0)


# --- openai-responses -----------------------------------------------------------------------


def test_responses_stream_is_ok_with_usage_from_completed() -> None:
    """Text deltas are tokens; response.completed ends it and carries usage.output_tokens."""
    results, result = run(Format.OPENAI_RESPONSES, [RESPONSES_STREAM])
    assert results == [FeedResult(tokens=3, first_token=True, first_event=True)]
    assert (result.ok, result.tokens, result.tokens_source) == (True, 4, "usage")
    assert (result.answer_chars, result.events, result.end_marker) == (9, 10, True)


def test_responses_failed_is_a_stream_error() -> None:
    """response.failed carries its error message."""
    failed = {
        "type": "response.failed",
        "response": {"status": "failed", "error": {"code": "server_error", "message": "boom"}},
    }
    result = outcome(Format.OPENAI_RESPONSES, sse(("response.failed", failed)))
    assert (result.error, result.detail) == (ErrorKind.STREAM_ERROR, "server_error: boom")


def test_responses_error_event_is_a_stream_error() -> None:
    """The `error` event: STREAM_ERROR with code and message."""
    error = {"type": "error", "code": "ERR_SOMETHING", "message": "Something went wrong"}
    result = outcome(Format.OPENAI_RESPONSES, sse(("error", error)))
    assert (result.error, result.detail) == (
        ErrorKind.STREAM_ERROR,
        "ERR_SOMETHING: Something went wrong",
    )


def test_responses_incomplete_ends_the_stream_with_a_note() -> None:
    """response.incomplete is an end, ok, and says why in detail."""
    incomplete = {
        "type": "response.incomplete",
        "response": {"incomplete_details": {"reason": "max_output_tokens"}},
    }
    delta = {"type": "response.output_text.delta", "delta": "Hi"}
    result = outcome(Format.OPENAI_RESPONSES, sse(delta, incomplete))
    assert (result.ok, result.end_marker, result.detail) == (
        True,
        True,
        "response incomplete: max_output_tokens",
    )


def test_responses_stream_without_completed_is_cut() -> None:
    """Deltas but no response.completed: STREAM_CUT."""
    result = outcome(Format.OPENAI_RESPONSES, RESPONSES_STREAM.rsplit(b"event:", 1)[0])
    assert result.error is ErrorKind.STREAM_CUT


def test_responses_function_call_stream_is_an_answer() -> None:
    """A function call item and its argument deltas are tokens."""
    body = sse(
        {"type": "response.output_item.added", "item": {"type": "function_call", "name": "get"}},
        {"type": "response.function_call_arguments.delta", "delta": "{}"},
        {"type": "response.completed", "response": {"usage": {"output_tokens": 5}}},
    )
    result = outcome(Format.OPENAI_RESPONSES, body)
    assert (result.ok, result.answer_chars, result.tokens) == (True, 5, 5)


def test_responses_document_reads_output_text_parts() -> None:
    """Non-stream: output[].content[] of type output_text, usage.output_tokens."""
    body = {
        "status": "completed",
        "error": None,
        "output": [
            {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "ignored"}]},
            {"type": "message", "content": [{"type": "output_text", "text": "Hello"}]},
        ],
        "usage": {"output_tokens": 2},
    }
    result = outcome(Format.OPENAI_RESPONSES, json.dumps(body).encode(), content_type=JSON)
    assert (result.ok, result.answer_chars, result.tokens, result.end_marker) == (True, 5, 2, True)


def test_responses_document_falls_back_to_output_text() -> None:
    """Non-stream: the convenience field output_text is read when output holds no text."""
    body = {"output_text": "Hey", "output": []}
    result = outcome(Format.OPENAI_RESPONSES, json.dumps(body).encode(), content_type=JSON)
    assert (result.ok, result.answer_chars) == (True, 3)


# --- anthropic ------------------------------------------------------------------------------


def test_anthropic_stream_is_ok_with_usage_from_message_delta() -> None:
    """Text deltas are tokens; message_delta's output_tokens (not message_start's) is the count."""
    result = outcome(Format.ANTHROPIC, ANTHROPIC_STREAM)
    assert (result.ok, result.tokens, result.tokens_source) == (True, 3, "usage")
    assert (result.answer_chars, result.events, result.end_marker) == (3, 8, True)


def test_anthropic_cut_after_message_start_has_no_usage_count() -> None:
    """message_start's provisional output_tokens is not taken as the answer's count."""
    result = outcome(Format.ANTHROPIC, ANTHROPIC_STREAM[:300], complete=False)
    assert (result.error, result.tokens, result.tokens_source) == (
        ErrorKind.STREAM_CUT,
        0,
        "deltas",
    )


def test_anthropic_error_event_is_a_stream_error() -> None:
    """`event: error` with an overloaded_error: STREAM_ERROR."""
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    result = outcome(Format.ANTHROPIC, sse(("error", error)))
    assert (result.error, result.detail) == (ErrorKind.STREAM_ERROR, "overloaded_error: Overloaded")


def test_anthropic_tool_use_stream_is_an_answer() -> None:
    """A tool_use block and its partial_json deltas are tokens."""
    body = sse(
        {"type": "content_block_start", "content_block": {"type": "tool_use", "name": "get"}},
        {
            "type": "content_block_delta",
            "delta": {"type": "input_json_delta", "partial_json": "{}"},
        },
        {"type": "message_stop"},
    )
    result = outcome(Format.ANTHROPIC, body)
    assert (result.ok, result.tokens, result.answer_chars) == (True, 2, 5)


def test_anthropic_thinking_only_is_an_answer() -> None:
    """Thinking deltas are reasoning: not answer text, but not an empty answer either."""
    body = sse(
        {"type": "content_block_start", "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "delta": {"type": "thinking_delta", "thinking": "hm"}},
        {"type": "content_block_delta", "delta": {"type": "signature_delta", "signature": "x"}},
        {"type": "message_stop"},
    )
    result = outcome(Format.ANTHROPIC, body)
    assert (result.ok, result.answer_chars, result.reasoning_chars) == (True, 0, 2)
    assert result.reasoning_deltas == 1


def test_anthropic_document_with_thinking_and_text() -> None:
    """Non-stream: a thinking block is reasoning, the text block the answer."""
    body = {
        "type": "message",
        "content": [
            {"type": "thinking", "thinking": "abc", "signature": "s"},
            {"type": "text", "text": "Hi!"},
        ],
        "stop_reason": "end_turn",
        "usage": {"output_tokens": 7},
    }
    result = outcome(Format.ANTHROPIC, json.dumps(body).encode(), content_type=JSON)
    assert (result.ok, result.answer_chars, result.reasoning_chars, result.tokens) == (
        True,
        3,
        3,
        7,
    )


def test_responses_reasoning_events_are_reasoning() -> None:
    """Responses reasoning summary and text deltas: the first event, then the answer's token."""
    reasoning = {"type": "response.reasoning_summary_text.delta", "delta": "Think"}
    text = {"type": "response.output_text.delta", "delta": "Hi"}
    done = {"type": "response.completed", "response": {"status": "completed"}}
    results, result = run(Format.OPENAI_RESPONSES, [sse(reasoning), sse(text), sse(done)])
    assert results == [
        FeedResult(tokens=0, first_token=False, reasoning=1, first_event=True),
        FeedResult(tokens=1, first_token=True),
        FeedResult(tokens=0, first_token=False),
    ]
    assert (result.ok, result.reasoning_chars, result.answer_chars) == (True, 5, 2)


def test_responses_document_reasoning_only_is_an_answer() -> None:
    """Non-stream Responses: a reasoning item alone (answer cut by max_output_tokens) is no
    empty answer."""
    body = {
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan"}]}],
    }
    result = outcome(Format.OPENAI_RESPONSES, json.dumps(body).encode(), content_type=JSON)
    assert (result.ok, result.reasoning_chars, result.detail) == (
        True,
        4,
        "response incomplete: max_output_tokens",
    )


def test_anthropic_document_reads_text_blocks() -> None:
    """Non-stream: content[].text and usage.output_tokens."""
    body = {
        "type": "message",
        "content": [{"type": "text", "text": "Hi!"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 9, "output_tokens": 3},
    }
    result = outcome(Format.ANTHROPIC, json.dumps(body).encode(), content_type=JSON)
    assert (result.ok, result.answer_chars, result.tokens, result.end_marker) == (True, 3, 3, True)


def test_anthropic_error_document_is_a_stream_error() -> None:
    """A body of type error: STREAM_ERROR."""
    body = {"type": "error", "error": {"type": "api_error", "message": "Internal"}}
    result = outcome(Format.ANTHROPIC, json.dumps(body).encode(), content_type=JSON)
    assert (result.error, result.detail) == (ErrorKind.STREAM_ERROR, "api_error: Internal")


# --- the contract ---------------------------------------------------------------------------


def test_auto_format_is_refused() -> None:
    """The format must be settled before parsing."""
    with pytest.raises(ValueError, match="not auto"):
        StreamParser(Format.AUTO, content_type=SSE)


def test_feed_after_finish_is_refused() -> None:
    """A finished parser takes no more bytes."""
    parser = StreamParser(Format.RAW, content_type=None)
    parser.finish(body_complete=True)
    with pytest.raises(RuntimeError):
        parser.feed(b"x")
