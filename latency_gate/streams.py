"""Incremental parsing of one answer body: first token, token counts, end marker and errors.

A `StreamParser` is fed the body as the socket delivers it and says, per chunk, how many content
deltas that chunk completed, so the engine can stamp the read that carried the first token. At
the end it judges the whole answer (`StreamOutcome`). Pure code: no I/O, no clock.

Streaming bodies (`text/event-stream`) are decoded as server-sent events per
https://html.spec.whatwg.org/multipage/server-sent-events.html, with one deliberate leniency: a
final event that lacks its blank line is still dispatched when the body ended properly (the spec
discards it; a probe should not call a complete answer cut). Any other body is one document,
parsed at the end, of which at most `MAX_KEPT` bytes are kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from latency_gate.config import Format
from latency_gate.models import ErrorKind
from latency_gate.sse import MAX_EVENT, Event, EventDecoder, EventTooLong

__all__ = ["MAX_EVENT", "MAX_KEPT", "FeedResult", "StreamOutcome", "StreamParser"]

MAX_KEPT = 1 << 20
"""Bytes of a non-streamed body kept for parsing; beyond it the answer is not examined."""
MAX_DETAIL = 200

_LLM_FORMATS = frozenset({Format.OPENAI_CHAT, Format.OPENAI_RESPONSES, Format.ANTHROPIC})


@dataclass(frozen=True)
class FeedResult:
    """What one chunk of the body brought.

    `first_token` is True for exactly one chunk: the one that completed the first non-empty
    content delta (for a raw non-streamed body, the first non-empty chunk; `tokens` is then 0,
    as such a body has no deltas). A non-streamed JSON answer never reports a first token: it
    arrives whole, so its last byte is its first token.
    """

    tokens: int
    first_token: bool


@dataclass(frozen=True)
class StreamOutcome:
    """The judgement on a whole body. `detail` is untrusted text, clipped, not escaped."""

    ok: bool
    error: ErrorKind | None
    detail: str | None
    tokens: int | None
    tokens_source: Literal["usage", "deltas"] | None
    answer_chars: int
    events: int
    end_marker: bool


@dataclass
class _Tally:
    """What the answer held so far; mutated by the format readers below."""

    deltas: int = 0
    answer_chars: int = 0
    tool_call: bool = False
    usage_tokens: int | None = None
    end_marker: bool = False
    stream_error: str | None = None
    malformed: str | None = None
    note: str | None = None

    def text(self, value: object) -> int:
        """Count answer text (a string, or a list of {"text": ...} parts); 1 if non-empty."""
        chars = _text_len(value)
        self.answer_chars += chars
        return 1 if chars else 0

    def tool(self, name: object, arguments: object) -> int:
        """Count a tool call's name and argument text; 1 if either is non-empty."""
        chars = _text_len(name) + _text_len(arguments)
        if chars:
            self.tool_call = True
            self.answer_chars += chars
        return 1 if chars else 0

    def usage(self, usage: object, key: str) -> None:
        value = usage.get(key) if isinstance(usage, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            self.usage_tokens = value

    def error(self, message: str) -> None:
        if self.stream_error is None:
            self.stream_error = message

    def bad(self, message: str) -> None:
        if self.malformed is None:
            self.malformed = message


@dataclass
class _Document:
    """A non-streamed body: the first MAX_KEPT bytes, and how many there were in all."""

    kept: bytearray = field(default_factory=bytearray)
    size: int = 0

    @property
    def overflow(self) -> bool:
        return self.size > MAX_KEPT

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.overflow:
            # Past the limit the answer is not examined at all: free what was kept.
            self.kept = bytearray()
        else:
            self.kept += chunk


class StreamParser:
    """Parse one response body incrementally: `feed` each chunk, then `finish` once."""

    def __init__(self, fmt: Format, *, content_type: str | None) -> None:
        if fmt is Format.AUTO:
            raise ValueError("the answer format must be settled before parsing (not auto)")
        self._fmt = fmt
        self._content_type = content_type
        self._sse = _is_event_stream(content_type)
        self._events: EventDecoder | None = EventDecoder() if self._sse else None
        self._document = _Document()
        self._tally = _Tally()
        self._event_count = 0
        self._first_sent = False
        self._finished = False

    @property
    def streaming(self) -> bool:
        """True when the body is parsed as server-sent events."""
        return self._sse

    @property
    def buffered_bytes(self) -> int:
        """Size of everything the parser holds of the body (characters count as one byte each)."""
        held = len(self._document.kept)
        if self._events is not None:
            held += self._events.buffered_chars
        return held

    def feed(self, chunk: bytes) -> FeedResult:
        """Take the next chunk of the body, as read from the socket."""
        if self._finished:
            raise RuntimeError("feed() after finish()")
        if not self._sse:
            self._document.add(chunk)
            if self._fmt is Format.RAW and chunk and not self._first_sent:
                self._first_sent = True
                return FeedResult(tokens=0, first_token=True)
            return FeedResult(tokens=0, first_token=False)
        decoder = self._events
        if decoder is None:
            return FeedResult(tokens=0, first_token=False)  # broken earlier: only counted
        tokens = sum(self._take(event) for event in self._decode(lambda: decoder.feed(chunk)))
        first = tokens > 0 and not self._first_sent
        self._first_sent = self._first_sent or first
        return FeedResult(tokens=tokens, first_token=first)

    def finish(self, *, body_complete: bool) -> StreamOutcome:
        """Judge the whole body. `body_complete` is False when the connection ended it early."""
        if self._finished:
            raise RuntimeError("finish() called twice")
        self._finished = True
        decoder = self._events
        if decoder is not None and body_complete:
            for event in self._decode(decoder.close):
                self._take(event)
        elif (
            not self._sse
            and body_complete
            and self._fmt in _LLM_FORMATS
            and not self._document.overflow
        ):
            self._read_document()
        return self._outcome(body_complete)

    # --- internals --------------------------------------------------------------------------

    def _decode(self, step: Callable[[], list[Event]]) -> list[Event]:
        """Run one decoder step; a broken stream stops the decoder for good."""
        if self._events is None:
            return []
        try:
            events = step()
        except UnicodeDecodeError as exc:
            self._tally.bad(f"the stream is not valid UTF-8 ({exc.reason})")
        except EventTooLong:
            self._tally.bad(f"an event exceeded {MAX_EVENT} characters without ending")
        else:
            return events
        self._events = None  # drop its buffers; later bytes are not parsed
        return []

    def _take(self, event: Event) -> int:
        """Account for one dispatched event; the number of content deltas it held."""
        self._event_count += 1
        data = event.data
        if data.strip() == "[DONE]":
            self._tally.end_marker = True
            return 0
        if self._fmt is Format.RAW:
            found = self._tally.text(data)
            self._tally.deltas += found
            return found
        if not data.strip():
            return 0  # an empty data line: a keep-alive, not an answer
        obj, problem = _load_json(data)
        if problem is not None:
            self._tally.bad(f"event {event.type!r} holds invalid JSON: {problem}")
            return 0
        if not isinstance(obj, dict):
            self._tally.bad(f"event {event.type!r} holds JSON that is not an object")
            return 0
        if event.type == "error" or obj.get("type") == "error" or obj.get("error"):
            self._tally.error(_error_message(obj))
            return 0
        if self._fmt is Format.OPENAI_CHAT:
            return _chat_chunk(self._tally, obj)
        if self._fmt is Format.OPENAI_RESPONSES:
            return _responses_event(self._tally, str(obj.get("type") or event.type), obj)
        return _anthropic_event(self._tally, str(obj.get("type") or event.type), obj)

    def _read_document(self) -> None:
        tally = self._tally
        try:
            text = self._document.kept.decode("utf-8")
        except UnicodeDecodeError as exc:
            tally.bad(f"the body is not valid UTF-8 ({exc.reason})")
            return
        if not text.strip():
            return  # judged an empty answer
        obj, problem = _load_json(text)
        if problem is not None:
            hint = ""
            if text.lstrip().startswith(("data:", "event:", ":")):
                hint = f" (it looks like an event stream sent as {self._content_type!r})"
            tally.bad(f"the body is not valid JSON{hint}: {problem}")
        elif not isinstance(obj, dict):
            tally.bad("the body is JSON but not an object")
        elif obj.get("type") == "error" or obj.get("error"):
            tally.error(_error_message(obj))
        elif self._fmt is Format.OPENAI_CHAT:
            _chat_document(tally, obj)
        elif self._fmt is Format.OPENAI_RESPONSES:
            _responses_document(tally, obj)
        else:
            _anthropic_document(tally, obj)

    def _outcome(self, body_complete: bool) -> StreamOutcome:
        tally = self._tally
        llm = self._fmt in _LLM_FORMATS
        streamed = self._sse
        error: ErrorKind | None = None
        detail = tally.note
        if tally.stream_error is not None:
            error, detail = ErrorKind.STREAM_ERROR, tally.stream_error
        elif tally.malformed is not None:
            error, detail = ErrorKind.MALFORMED, tally.malformed
        elif not body_complete:
            error, detail = ErrorKind.STREAM_CUT, "connection closed before the body was complete"
        elif streamed and llm and not tally.end_marker:
            error, detail = ErrorKind.STREAM_CUT, "stream ended before its end marker"
        elif llm and not self._document.overflow and not tally.answer_chars + tally.tool_call:
            error, detail = ErrorKind.EMPTY_ANSWER, "the answer held no text"
            if not streamed and self._document.size == 0:
                detail = "the body was empty"

        tokens: int | None = None
        source: Literal["usage", "deltas"] | None = None
        if tally.usage_tokens is not None:
            tokens, source = tally.usage_tokens, "usage"
        elif streamed:
            tokens, source = tally.deltas, "deltas"

        answer_chars = tally.answer_chars
        if not streamed and self._fmt is Format.RAW:
            answer_chars = self._document.size  # a raw body may not be text: count its bytes
        return StreamOutcome(
            ok=error is None,
            error=error,
            detail=_clip(detail),
            tokens=tokens,
            tokens_source=source,
            answer_chars=answer_chars,
            events=self._event_count,
            end_marker=tally.end_marker,
        )


# --- one reader per format ------------------------------------------------------------------
# Each stream reader takes one event's JSON object and returns how many content deltas it held
# (0 or 1); each document reader takes the whole answer. Shapes the servers send differ
# (docs: /work/shared/TESTING.md), so every field is looked up defensively.


def _chat_chunk(tally: _Tally, obj: dict[str, Any]) -> int:
    tally.usage(obj.get("usage"), "completion_tokens")
    found = 0
    for choice in _dicts(obj.get("choices")):
        if choice.get("index") not in (0, None):
            continue  # n > 1: follow the first answer only
        delta = choice.get("delta")
        if isinstance(delta, dict):
            found |= _chat_message(tally, delta)
        if choice.get("finish_reason") is not None:
            tally.end_marker = True
    tally.deltas += found
    return found


def _chat_document(tally: _Tally, obj: dict[str, Any]) -> None:
    tally.usage(obj.get("usage"), "completion_tokens")
    for choice in _dicts(obj.get("choices"))[:1]:
        message = choice.get("message")
        if isinstance(message, dict):
            _chat_message(tally, message)
        if choice.get("finish_reason") is not None:
            tally.end_marker = True


def _chat_message(tally: _Tally, message: dict[str, Any]) -> int:
    """A message or a delta: its content, refusal and tool calls (a tool call is an answer)."""
    found = tally.text(message.get("content")) | tally.text(message.get("refusal"))
    for call in [*_dicts(message.get("tool_calls")), *_dicts([message.get("function_call")])]:
        function = call.get("function", call)  # legacy function_call has no wrapper
        if isinstance(function, dict):
            found |= tally.tool(function.get("name"), function.get("arguments"))
    return found


def _responses_event(tally: _Tally, kind: str, obj: dict[str, Any]) -> int:
    found = 0
    if kind in ("response.output_text.delta", "response.refusal.delta"):
        found = tally.text(obj.get("delta"))
    elif kind == "response.function_call_arguments.delta":
        found = tally.tool(None, obj.get("delta"))
    elif kind == "response.output_item.added":
        item = obj.get("item")
        if isinstance(item, dict) and item.get("type") == "function_call":
            found = tally.tool(item.get("name"), None)
    elif kind in ("response.completed", "response.incomplete", "response.failed"):
        response = obj.get("response")
        response = response if isinstance(response, dict) else {}
        tally.usage(response.get("usage"), "output_tokens")
        if kind == "response.failed":
            tally.error(_error_message(response.get("error") or response))
        else:
            tally.end_marker = True
            if kind == "response.incomplete":
                tally.note = _incomplete(response)
    tally.deltas += found
    return found


def _responses_document(tally: _Tally, obj: dict[str, Any]) -> None:
    tally.usage(obj.get("usage"), "output_tokens")
    for item in _dicts(obj.get("output")):
        if item.get("type") == "function_call":
            tally.tool(item.get("name"), item.get("arguments"))
        for part in _dicts(item.get("content")):
            if part.get("type") == "output_text":
                tally.text(part.get("text"))
            elif part.get("type") == "refusal":
                tally.text(part.get("refusal"))
    if tally.answer_chars == 0:
        tally.text(obj.get("output_text"))  # a convenience field some servers add
    status = obj.get("status")
    if status == "failed":
        tally.error(_error_message(obj.get("error") or obj))
    elif status in ("completed", "incomplete"):
        tally.end_marker = True
        if status == "incomplete":
            tally.note = _incomplete(obj)


def _anthropic_event(tally: _Tally, kind: str, obj: dict[str, Any]) -> int:
    found = 0
    if kind == "content_block_delta":
        delta = obj.get("delta")
        if isinstance(delta, dict):
            # text_delta or input_json_delta; thinking and signature deltas are not the answer
            found = tally.text(delta.get("text")) | tally.tool(None, delta.get("partial_json"))
    elif kind == "content_block_start":
        block = obj.get("content_block")
        if isinstance(block, dict):
            if block.get("type") in ("tool_use", "server_tool_use"):
                found = tally.tool(block.get("name"), None)
            else:
                found = tally.text(block.get("text"))
    elif kind == "message_delta":
        tally.usage(obj.get("usage"), "output_tokens")
        delta = obj.get("delta")
        if isinstance(delta, dict) and delta.get("stop_reason") is not None:
            tally.end_marker = True
    elif kind == "message_stop":
        tally.end_marker = True
    # message_start's usage is a running count (often 1): only message_delta's is final.
    tally.deltas += found
    return found


def _anthropic_document(tally: _Tally, obj: dict[str, Any]) -> None:
    tally.usage(obj.get("usage"), "output_tokens")
    for block in _dicts(obj.get("content")):
        if block.get("type") in ("tool_use", "server_tool_use"):
            tally.tool(block.get("name"), json.dumps(block.get("input", {})))
        elif block.get("type") == "text":
            tally.text(block.get("text"))
    if obj.get("stop_reason") is not None:
        tally.end_marker = True


# --- small helpers --------------------------------------------------------------------------


def _is_event_stream(content_type: str | None) -> bool:
    if content_type is None:
        return False
    return content_type.split(";", 1)[0].strip().lower() == "text/event-stream"


def _load_json(text: str) -> tuple[object, str | None]:
    """The parsed JSON and None, or None and why the text is not JSON."""
    try:
        return json.loads(text), None
    except ValueError as exc:
        return None, str(exc)
    except RecursionError:
        # A hostile or broken body of deeply nested brackets must not crash the probe.
        return None, "nested too deeply"


def _dicts(value: object) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def _text_len(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    return sum(len(part["text"]) for part in _dicts(value) if isinstance(part.get("text"), str))


def _error_message(obj: object) -> str:
    """The most telling short text of an error object: `type: message`, as the server wrote it."""
    if isinstance(obj, dict):
        nested = obj.get("error")
        if isinstance(nested, dict | str) and nested:
            return _error_message(nested)
        message = obj.get("message")
        kind = obj.get("type") if obj.get("type") != "error" else None
        kind = kind or obj.get("code")
        if isinstance(message, str) and message:
            return f"{kind}: {message}" if isinstance(kind, str) and kind else message
        if isinstance(kind, str) and kind:
            return kind
        return "error event: " + json.dumps(obj)[:MAX_DETAIL]
    if isinstance(obj, str) and obj:
        return obj
    return "error event without a message"


def _incomplete(response: dict[str, Any]) -> str:
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    return f"response incomplete: {reason}" if isinstance(reason, str) else "response incomplete"


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_DETAIL:
        return text
    return text[: MAX_DETAIL - 1] + "…"
