"""Progress while a run goes: a live line on a terminal; in a CI log, a line when a stage begins
and, while it goes on, one at least every ten seconds with its counts (a log that stops moving
looks stuck). Each look after the first gets a line of its own, kept on a terminal too, saying
how many more calls and why: "local: look 2: 40 more calls, because warm p95 is undecided"."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TextIO, TypeVar

from latency_gate.config import Target
from latency_gate.config.plan.needs import effective_max_calls, needs_of
from latency_gate.formatting import clean_text, fmt_duration
from latency_gate.measure.engine import Progress
from latency_gate.report.rows import humane

ProgressPrinter = Callable[[Progress], None]
T = TypeVar("T")

HEARTBEAT_SECONDS = 10.0
_NAME_LIMIT = 60


@dataclass(frozen=True)
class Look:
    """A look after the first that asks for more calls: its number (2 is the first after the
    classic run), what it asks for, and the gate's reason, as the gate words it."""

    number: int
    warm_calls: int
    bursts: int
    concurrency: int
    reason: str


class TargetProgress:
    """One target's progress printer: called with each `Progress`, and `look(Look)` for each
    look after the first (latency_gate.run finds it by this type)."""

    def __init__(self, show: ProgressPrinter, look: Callable[[Look], None]) -> None:
        self._show = show
        self.look = look

    def __call__(self, event: Progress) -> None:
        self._show(event)


def progress_printer(name: str, stream: TextIO, *, live: bool) -> TargetProgress:
    """A callback for `probe(progress=...)` writing to stream.

    live: rewrite one line in place (a TTY), a look's line kept; otherwise print a line when a
    stage begins, and one per look.
    """
    if not live:
        return ProgressLog(stream).printer(name)
    shown = clean_text(name, _NAME_LIMIT)

    def show(event: Progress) -> None:
        end = "\n" if event.stage == "done" else ""
        stream.write(f"\r\x1b[2K{describe(event, shown)}{end}")
        stream.flush()

    def look(step: Look) -> None:
        stream.write(f"\r\x1b[2K{describe_look(step, shown)}\n")
        stream.flush()

    return TargetProgress(show, look)


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

    def printer(self, name: str) -> TargetProgress:
        """The callback for one target's run (its name made safe to print)."""
        shown = clean_text(name, _NAME_LIMIT)
        seen: set[str] = set()
        started = self._clock()

        def show(event: Progress) -> None:
            self._current = (shown, event, started)
            # A line for each level of the capacity search, not only its first.
            key = f"capacity {event.total}" if event.stage == "capacity" else event.stage
            key = f"rate {event.rate:g}" if event.stage == "rate" else key
            if key in seen:
                return
            seen.add(key)
            text = describe(event, shown)
            if event.stage == "done":
                text += f" in {self._clock() - started:.1f} s"
                self._current = None
            self._write(text)

        def look(step: Look) -> None:
            self._write(describe_look(step, shown))

        return TargetProgress(show, look)

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
        case "capacity":
            calls = "call" if event.total == 1 else "calls"
            return f"{name}: capacity search, {event.total} {calls} at once"
        case "rate":
            rate = f"{float(f'{event.rate:.3g}'):,g}/s"
            return f"{name}: calls at {rate}, at most {event.total:,}"
        case _:
            return f"{name}: done"


def describe_cost(target: Target) -> str:
    """What a run may spend, said before its first call: "endpoint: at most 500 calls; a clean
    PASS takes 131 (the error budget 0.01 passes after 127 calls without a failure)", and the
    wall clock bound with --max-time."""
    cap = effective_max_calls(target)
    needs = needs_of(target)
    text = f"{clean_text(target.name, _NAME_LIMIT)}: at most {cap:,} calls"
    if needs.minimum <= cap:
        text += f"; a clean PASS takes {needs.minimum:,} ({needs.why})"
    else:
        text += (
            f", under the {needs.minimum:,} a clean PASS takes ({needs.why}): what is undecided "
            f"then follows on-undecided ({target.on_undecided})"
        )
    if target.max_time is not None:
        text += (
            f"; no call starts after {fmt_duration(target.max_time)} from the first "
            "(--max-time), plus one call's timeout to end"
        )
    return text


def describe_look(look: Look, name: str) -> str:
    """ "local: look 2: 40 more calls, because warm p95 is undecided": one line of a log.

    The reason is the gate's: "undecided: warm_p95, error_rate" is said as a sentence, any other
    wording is kept as it is (made one safe line, number keys as readers know them).
    """
    calls = look.warm_calls + look.bursts * look.concurrency
    text = f"{name}: look {look.number}: {calls:,} more call{'s' if calls != 1 else ''}"
    reason = humane(clean_text(look.reason, 200))
    undecided = reason.removeprefix("undecided:").strip() if reason.startswith("undecided:") else ""
    items = [item.strip() for item in undecided.split(",") if item.strip()]
    if items:
        listed = items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
        return f"{text}, because {listed} {'is' if len(items) == 1 else 'are'} undecided"
    return f"{text}: {reason}" if reason else text
