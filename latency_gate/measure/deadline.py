"""--max-time: the wall clock a run's calls may take, counted from its cold call.

No new call starts once the time is up; a call or burst under way then finishes (or times
out), so the calls end within the time plus one call's timeout. The first look's warm calls
stop early enough for its burst to start in time (a run cut before its burst would have no
concurrent p95 at all): a warm call starts only while two of the slowest calls so far still fit,
so one that runs late leaves the burst its start. What stopped is said by the caller
(latency_gate.run), and the checks still undecided follow on-undecided.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Deadline"]


@dataclass
class Deadline:
    """The time a run's calls may take (None: no limit). `start()` at the cold call; each
    question comes just before a call, so the time between two is a call's; `passed` is set
    once a call was left unmade for the time."""

    seconds: float | None
    clock: Callable[[], float] = time.monotonic
    began: float = 0.0
    passed: bool = False
    _asked: float = 0.0
    _slowest: float = 0.0

    def start(self) -> None:
        self.began = self._asked = self.clock()

    def _elapsed(self) -> float:
        now = self.clock()
        self._slowest = max(self._slowest, now - self._asked)
        self._asked = now
        return now - self.began

    def allows(self) -> bool:
        """Whether a new call (or burst) may start now."""
        if self.seconds is None:
            return True
        if self._elapsed() < self.seconds:
            return True
        self.passed = True
        return False

    def allows_before_burst(self) -> bool:
        """Whether a warm call of the first look may start: two of the slowest calls so far
        still fit, this one and the look's burst."""
        if self.seconds is None:
            return True
        if self._elapsed() + 2 * self._slowest < self.seconds:
            return True
        self.passed = True
        return False
