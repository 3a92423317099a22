"""--max-time: the wall clock a run's calls may take, counted from its cold call.

No new call starts once the time is up; a call or burst under way then finishes (or times
out), so the calls end within the time plus one call's timeout. The first look's warm calls
stop one call early, by the pace of the calls so far, so that its burst still starts in time:
a run cut before its burst would have no concurrent p95 at all. What stopped is said by the
caller (latency_gate.run), and the checks still undecided follow on-undecided.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Deadline"]


@dataclass
class Deadline:
    """The time a run's calls may take (None: no limit). `start()` at the cold call; `passed`
    is set once a call was left unmade for it."""

    seconds: float | None
    clock: Callable[[], float] = time.monotonic
    began: float = 0.0
    passed: bool = False

    def start(self) -> None:
        self.began = self.clock()

    def allows(self) -> bool:
        """Whether a new call (or burst) may start now."""
        if self.seconds is None:
            return True
        if self.clock() - self.began < self.seconds:
            return True
        self.passed = True
        return False

    def allows_before_burst(self, calls: int) -> bool:
        """Whether a warm call of the first look may start, the `calls` made so far setting the
        pace: one more still leaves the look's burst time to start."""
        if self.seconds is None:
            return True
        elapsed = self.clock() - self.began
        pace = elapsed / max(1, calls)
        if elapsed + pace < self.seconds:
            return True
        self.passed = True
        return False
