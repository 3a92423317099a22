"""What the machine, not the code under test, adds to a test's wall-clock time.

A test that bounds a wait or a piece of work in seconds measures the machine too: on cores busy
with something else (issue 42: the suite beside `stress-ng --cpu 2`) a thread that is ready to run
waits for a core, and that wait lands in any wall-clock reading. Linux counts it per thread
(`/proc/thread-self/schedstat`: time on a core, time waiting for one, slices); subtracting the
second field from a wall-clock reading leaves what the code itself spent working or waiting on
what it asked for.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["BesideTest", "Waited", "queued_seconds"]


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


def _cpu_by_process() -> dict[int, tuple[str, float]]:
    """Every process's name and CPU seconds (user + system) so far, from /proc/PID/stat; {}
    where there is no /proc."""
    tick = os.sysconf("SC_CLK_TCK")  # the unit of /proc's CPU times (USER_HZ)
    seen: dict[int, tuple[str, float]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone between the listing and the read
            continue
        name = text[text.find("(") + 1 : text.rfind(")")]
        fields = text[text.rfind(")") + 2 :].split()
        try:
            seen[int(stat.parent.name)] = (name, (int(fields[11]) + int(fields[12])) / tick)
        except (IndexError, ValueError):
            continue
    return seen


class BesideTest:
    """What used the machine's cores while a test ran: the processes that took the most CPU
    seconds over it (this one included), the load average at its start and end, and this
    process's other threads. Read for the tests marked `alone` or `slow` (tests/conftest.py): when
    one of them fails, its report says what ran beside it (stop 47's one-slot goodput search at
    half its pace on a machine said to be quiet, cause not seen)."""

    def __init__(self) -> None:
        self._load = _load()
        self._cpu = _cpu_by_process()

    def said(self, most: int = 6) -> str:
        now = _cpu_by_process()
        used = sorted(
            (
                (seconds - self._cpu.get(pid, (name, 0.0))[1], pid, name)
                for pid, (name, seconds) in now.items()
            ),
            reverse=True,
        )[:most]
        top = ", ".join(f"{name} (pid {pid}) {cpu:.1f} s" for cpu, pid, name in used if cpu >= 0.05)
        threads = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
        return (
            f"beside this test: load {self._load} at its start, {_load()} at its end; CPU used "
            f"over it: {top or 'none counted'}; this process's other threads at its end: "
            f"{', '.join(threads) or 'none'}"
        )


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"
