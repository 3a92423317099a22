"""Progress while a run goes: a live line on a terminal; in a CI log, a line when a stage begins
and, while it goes on, one at least every ten seconds with its counts (a log that stops moving
looks stuck)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import TextIO, TypeVar

from latency_gate.formatting import clean_text
from latency_gate.measure.engine import Progress

ProgressPrinter = Callable[[Progress], None]
T = TypeVar("T")

HEARTBEAT_SECONDS = 10.0
_NAME_LIMIT = 60


def progress_printer(name: str, stream: TextIO, *, live: bool) -> ProgressPrinter:
    """A callback for `probe(progress=...)` writing to stream.

    live: rewrite one line in place (a TTY); otherwise print a line when a stage begins.
    """
    if not live:
        return ProgressLog(stream).printer(name)
    shown = clean_text(name, _NAME_LIMIT)

    def show(event: Progress) -> None:
        end = "\n" if event.stage == "done" else ""
        stream.write(f"\r\x1b[2K{describe(event, shown)}{end}")
        stream.flush()

    return show


class ProgressLog:
    """Plain progress lines for a log: a line when a stage begins, and `beat()` adds one with
    the counts when nothing was printed for `every` seconds; `beating(work)` beats meanwhile."""

    def __init__(
        self,
        stream: TextIO,
        *,
        every: float = HEARTBEAT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._every = every
        self._clock = clock
        self._last_line = clock()
        self._current: tuple[str, Progress, float] | None = None

    def printer(self, name: str) -> ProgressPrinter:
        """The callback for one target's run (its name made safe to print)."""
        shown = clean_text(name, _NAME_LIMIT)
        seen: set[str] = set()
        started = self._clock()

        def show(event: Progress) -> None:
            self._current = (shown, event, started)
            if event.stage in seen:
                return
            seen.add(event.stage)
            text = describe(event, shown)
            if event.stage == "done":
                text += f" in {self._clock() - started:.1f} s"
                self._current = None
            self._write(text)

        return show

    def beat(self) -> None:
        """A line with the counts so far, when nothing was printed for `every` seconds."""
        if self._current is None or self._clock() - self._last_line < self._every:
            return
        name, event, started = self._current
        self._write(f"{describe(event, name)}, {self._clock() - started:.0f} s so far")

    async def beating(self, work: Awaitable[T]) -> T:
        """Await `work`, beating every second meanwhile (a line at most every `every` s)."""

        async def beats() -> None:
            while True:
                await asyncio.sleep(min(1.0, self._every))
                self.beat()

        ticker = asyncio.ensure_future(beats())
        try:
            return await work
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker

    def _write(self, text: str) -> None:
        self._last_line = self._clock()
        self._stream.write(text + "\n")
        self._stream.flush()


def describe(event: Progress, name: str) -> str:
    """One line saying where the run is."""
    match event.stage:
        case "floor":
            return f"{name}: measuring the gate's own floor"
        case "ready":
            return f"{name}: waiting up to {event.seconds:g} s for the endpoint to answer"
        case "idle":
            return f"{name}: idle {event.seconds:g} s before the cold call"
        case "cold":
            return f"{name}: cold call"
        case "warm":
            return f"{name}: warm calls {event.done}/{event.total}"
        case "concurrent":
            calls = "call" if event.total == 1 else "calls"
            return f"{name}: {event.total} concurrent {calls}"
        case _:
            return f"{name}: done"
