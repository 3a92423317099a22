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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from latency_gate.config import Format
from latency_gate.measure.answer_formats import (
    MAX_DETAIL,
    Tally,
    anthropic_document,
    anthropic_event,
    chat_chunk,
    chat_document,
    error_message,
    load_json,
    responses_document,
    responses_event,
)
from latency_gate.measure.sse import MAX_EVENT, Event, EventDecoder, EventTooLong
from latency_gate.models import ErrorKind

__all__ = ["MAX_EVENT", "MAX_KEPT", "FeedResult", "StreamOutcome", "StreamParser"]

MAX_KEPT = 1 << 20
"""Bytes of a non-streamed body kept for parsing; beyond it the answer is not examined."""

_LLM_FORMATS = frozenset({Format.OPENAI_CHAT, Format.OPENAI_RESPONSES, Format.ANTHROPIC})


@dataclass(frozen=True)
class FeedResult:
    """What one chunk of the body brought.

    `first_token` is True for exactly one chunk: the one that completed the first non-empty
    answer delta (for a raw non-streamed body, the first non-empty chunk; `tokens` is then 0,
    as such a body has no deltas); `first_event` likewise for the first delta a user could see,
    reasoning or answer; `reasoning` counts the reasoning deltas the chunk completed. A
    non-streamed JSON answer never reports a first token: it arrives whole, so its last byte is
    its first token.
    """

    tokens: int
    first_token: bool
    reasoning: int = 0
    first_event: bool = False

    @property
    def visible(self) -> int:
        """Deltas a user could see arrive in this chunk: answer and reasoning."""
        return self.tokens + self.reasoning


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
    reasoning_chars: int = 0
    reasoning_deltas: int = 0
    usage_ignored: int | None = None
    input_tokens: int | None = None  # the prompt's tokens, when the usage said them


_HEAD = 256


@dataclass
class _Document:
    """A non-streamed body: the first MAX_KEPT bytes, and how many there were in all."""

    kept: bytearray = field(default_factory=bytearray)
    size: int = 0
    head: bytes = b""  # the first bytes, kept past the limit too: enough to tell JSON from HTML

    @property
    def overflow(self) -> bool:
        return self.size > MAX_KEPT

    def add(self, chunk: bytes) -> None:
        if len(self.head) < _HEAD:
            self.head += chunk[: _HEAD - len(self.head)]
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
        self._tally = Tally()
        self._event_count = 0
        self._first_sent = False
        self._first_event_sent = False
        self._finished = False
        self._bytes = 0

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
        self._bytes += len(chunk)
        if not self._sse:
            self._document.add(chunk)
            if self._fmt is Format.RAW and chunk and not self._first_sent:
                self._first_sent = self._first_event_sent = True
                return FeedResult(tokens=0, first_token=True, first_event=True)
            return FeedResult(tokens=0, first_token=False)
        decoder = self._events
        if decoder is None:
            return FeedResult(tokens=0, first_token=False)  # broken earlier: only counted
        reasoning_before = self._tally.reasoning_deltas
        tokens = sum(self._take(event) for event in self._decode(lambda: decoder.feed(chunk)))
        reasoning = self._tally.reasoning_deltas - reasoning_before
        first = tokens > 0 and not self._first_sent
        self._first_sent = self._first_sent or first
        first_event = tokens + reasoning > 0 and not self._first_event_sent
        self._first_event_sent = self._first_event_sent or first_event
        return FeedResult(
            tokens=tokens, first_token=first, reasoning=reasoning, first_event=first_event
        )

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
        elif not self._sse and body_complete and self._fmt in _LLM_FORMATS:
            self._check_large_document()
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
        obj, problem = load_json(data)
        if problem is not None:
            self._tally.bad(f"event {event.type!r} holds invalid JSON: {problem}")
            return 0
        if not isinstance(obj, dict):
            self._tally.bad(f"event {event.type!r} holds JSON that is not an object")
            return 0
        if event.type == "error" or obj.get("type") == "error" or obj.get("error"):
            self._tally.error(error_message(obj))
            return 0
        if self._fmt is Format.OPENAI_CHAT:
            return chat_chunk(self._tally, obj)
        if self._fmt is Format.OPENAI_RESPONSES:
            return responses_event(self._tally, str(obj.get("type") or event.type), obj)
        return anthropic_event(self._tally, str(obj.get("type") or event.type), obj)

    def _read_document(self) -> None:
        tally = self._tally
        try:
            text = self._document.kept.decode("utf-8")
        except UnicodeDecodeError as exc:
            tally.bad(f"the body is not valid UTF-8 ({exc.reason})")
            return
        if not text.strip():
            return  # judged an empty answer
        obj, problem = load_json(text)
        if problem is not None:
            hint = ""
            if text.lstrip().startswith(("data:", "event:", ":")):
                hint = f" (it looks like an event stream sent as {self._content_type!r})"
            tally.bad(f"the body is not valid JSON{hint}: {problem}")
        elif not isinstance(obj, dict):
            tally.bad("the body is JSON but not an object")
        elif obj.get("type") == "error" or obj.get("error"):
            tally.error(error_message(obj))
        elif self._fmt is Format.OPENAI_CHAT:
            chat_document(tally, obj)
        elif self._fmt is Format.OPENAI_RESPONSES:
            responses_document(tally, obj)
        else:
            anthropic_document(tally, obj)

    def _check_large_document(self) -> None:
        """A body past MAX_KEPT is not parsed, but one that does not even start like a JSON
        object (an HTML error page sent with status 200) is no answer, whatever its size."""
        head = self._document.head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
        if not head.startswith("{"):
            start = " ".join(head[:40].split())
            self._tally.bad(
                f"the body ({self._document.size:,} bytes) is not JSON: it starts with {start!r}"
            )

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
        elif (
            llm
            and not self._document.overflow
            and not tally.answer_chars + tally.tool_call + tally.reasoning_chars
        ):
            error, detail = ErrorKind.EMPTY_ANSWER, "the answer held no text"
            if not streamed and self._document.size == 0:
                detail = "the body was empty"

        tokens: int | None = None
        source: Literal["usage", "deltas"] | None = None
        counted = tally.deltas + tally.reasoning_deltas
        usage, ignored = tally.usage_tokens, None
        # A usage count is the server's word; the stream is what arrived. Fewer tokens than the
        # deltas seen, or more than the body had bytes (a token is at least one), is not a count
        # of this answer: it would decide the time per token (10**9 tokens: 0.0 ms a token; 0
        # or 1: none), so the deltas are counted instead and the call says usage disagreed.
        if usage is not None and ((streamed and usage < counted) or usage > self._bytes):
            usage, ignored = None, usage
        if usage is not None:
            tokens, source = usage, "usage"
        elif streamed:
            tokens, source = counted, "deltas"

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
            reasoning_chars=tally.reasoning_chars,
            reasoning_deltas=tally.reasoning_deltas,
            usage_ignored=ignored,
            input_tokens=tally.usage_input_tokens,
        )


# --- small helpers --------------------------------------------------------------------------


def _is_event_stream(content_type: str | None) -> bool:
    if content_type is None:
        return False
    return content_type.split(";", 1)[0].strip().lower() == "text/event-stream"


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_DETAIL:
        return text
    return text[: MAX_DETAIL - 1] + "…"
