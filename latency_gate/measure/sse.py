"""Server-sent events from bytes, across arbitrary chunk boundaries, in bounded memory.

Per https://html.spec.whatwg.org/multipage/server-sent-events.html, with one deliberate
leniency: `close()` dispatches a final event that lacks its blank line (the body ended properly;
a probe should not call a complete answer cut).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = ["MAX_EVENT", "Event", "EventDecoder", "EventTooLong"]

MAX_EVENT = 1 << 20
"""Characters one server-sent event may hold before its end; a longer one is MALFORMED."""

_EOL = re.compile(r"\r\n?|\n")


@dataclass(frozen=True)
class Event:
    type: str
    data: str


class EventTooLong(Exception):
    """An event grew past MAX_EVENT without its terminating blank line."""


class EventDecoder:
    """Server-sent events from bytes, across arbitrary chunk boundaries, in bounded memory."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")("strict")
        self._seen_text = False
        self._after_cr = False  # the last chunk ended in \r: a \n opening the next one is its pair
        self._line: list[str] = []
        self._line_len = 0
        self._data: list[str] = []
        self._data_len = 0
        self._type = ""

    @property
    def buffered_chars(self) -> int:
        return self._line_len + self._data_len

    def feed(self, chunk: bytes) -> list[Event]:
        """Events completed by this chunk. Raises UnicodeDecodeError or EventTooLong."""
        return self._feed_text(self._utf8.decode(chunk, final=False))

    def close(self) -> list[Event]:
        """Events left at the end of a complete body (see the module docstring)."""
        events = self._feed_text(self._utf8.decode(b"", final=True))
        if self._line_len or self._line:
            self._take_line(events)
        self._dispatch(events)
        return events

    def _feed_text(self, text: str) -> list[Event]:
        events: list[Event] = []
        if not text:
            return events
        if not self._seen_text:
            self._seen_text = True
            text = text.removeprefix("\ufeff")
        pos = 0
        if self._after_cr:
            self._after_cr = False
            if text.startswith("\n"):
                pos = 1
        end = len(text)
        while pos < end:
            match = _EOL.search(text, pos)
            if match is None:
                self._append(text[pos:])
                break
            self._append(text[pos : match.start()])
            self._take_line(events)
            pos = match.end()
            if match.group() == "\r" and pos == end:
                self._after_cr = True
        return events

    def _append(self, piece: str) -> None:
        if piece:
            self._line.append(piece)
            self._line_len += len(piece)
            if self.buffered_chars > MAX_EVENT:
                raise EventTooLong

    def _take_line(self, events: list[Event]) -> None:
        line = "".join(self._line)
        self._line.clear()
        self._line_len = 0
        if not line:
            self._dispatch(events)
            return
        if line.startswith(":"):
            return  # a comment, often a keep-alive
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._type = value
        elif name == "data":
            self._data.append(value)
            self._data_len += len(value) + 1
            if self.buffered_chars > MAX_EVENT:
                raise EventTooLong
        # `id` and `retry` matter to a reconnecting browser, not to one probe call.

    def _dispatch(self, events: list[Event]) -> None:
        if self._data:
            events.append(Event(self._type or "message", "\n".join(self._data)))
        self._data.clear()
        self._data_len = 0
        self._type = ""
