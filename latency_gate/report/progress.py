"""Progress while a run goes: a live line on a terminal, one plain line per stage in a CI log."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from latency_gate.measure.engine import Progress

ProgressPrinter = Callable[[Progress], None]


def progress_printer(name: str, stream: TextIO, *, live: bool) -> ProgressPrinter:
    """A callback for `probe(progress=...)` writing to stream.

    live: rewrite one line in place (a TTY); otherwise print a line when a stage begins.
    """
    seen: set[str] = set()
    started = time.monotonic()

    def show(event: Progress) -> None:
        if live:
            end = "\n" if event.stage == "done" else ""
            stream.write(f"\r\x1b[2K{describe(event, name)}{end}")
            stream.flush()
        elif event.stage not in seen:
            seen.add(event.stage)
            text = describe(event, name)
            if event.stage == "done":
                text += f" in {time.monotonic() - started:.1f} s"
            stream.write(text + "\n")
            stream.flush()

    return show


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
