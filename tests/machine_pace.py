"""What the machine, not the code under test, adds to a test's wall-clock time.

A test that bounds a wait or a piece of work in seconds measures the machine too: on cores busy
with something else (issue 42: the suite beside `stress-ng --cpu 2`) a thread that is ready to run
waits for a core, and that wait lands in any wall-clock reading. Linux counts it per thread
(`/proc/thread-self/schedstat`: time on a core, time waiting for one, slices); subtracting the
second field from a wall-clock reading leaves what the code itself spent working or waiting on
what it asked for.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["Waited", "queued_seconds"]


def queued_seconds() -> float:
    """Seconds this thread has spent runnable but waiting for a core, as Linux counts them; 0.0
    where the kernel does not say (the wall clock is then read as it is)."""
    try:
        return int(Path("/proc/thread-self/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class Waited:
    """Seconds this thread has waited for a core since this was made (called: `waited()`): the
    slack of an upper bound on a wall-clock span that this thread's own loop timed, the
    loopback servers' included (they run on it). On a quiet machine it is about 0."""

    def __init__(self) -> None:
        self._start = queued_seconds()

    def __call__(self) -> float:
        return queued_seconds() - self._start
