"""Failures that come in clumps: the error budget's test counts clumps, not calls.

Real failures come in runs: a restart, a deploy, an upstream outage, a full queue fail several
calls in a row. The error budget's test (checks.py) weighs a healthy failure share p0 against a
failing one p1; counted call by call, five failures in a row among 200 calls are five
independent pieces of evidence and FAIL a run whose endpoint fails 0.5 % of its calls, while a
clean stretch of 127 calls PASSes one that fails 3 % of its calls five at a time (a clean
stretch of 127 calls is then no rarer than one clump).

So the test counts clumps (maximal runs of consecutive failed calls, in the order the calls were
made) as its events. A share p of calls failing in clumps of mean length m is a clump starting
at p / m of the calls that could start one (every call not inside a clump), and the test is the
same SPRT on that count between p0 / m and p1 / m (sequential.py). Independent failures are
clumps of 1, and the test is then the call-by-call one.

The mean length m is what the calls show, each side of the test taking the value that makes it
slower to decide:

- FAIL: m the clumps' own mean length (1 with no failure). Five failures in a row count as one
  event, not five.
- PASS: as if one more clump of ERROR_CLUMP calls (config/plan/hypotheses.py) had been seen:
  (failed + ERROR_CLUMP) / (clumps + 1), and never under the clumps' own mean. With no failure at
  all, a clean stretch must be long enough to rule out the failing share in clumps of ERROR_CLUMP
  calls, and every clump seen after that brings m nearer the lengths the endpoint shows.

To first order the test's log likelihood ratio is the call-by-call one divided by m (the
quasi-likelihood of an overdispersed count): clumps change how much evidence a failure is, not
on which side it lies, so the estimate rule at the cap (the nearer of the two shares) is the
same whichever m. docs/statistics.md, "Failures in clumps", has the figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from latency_gate.assess.maths.sequential import Decision, Sprt
from latency_gate.config.plan import hypotheses
from latency_gate.config.plan.hypotheses import ERROR_ALPHA, ERROR_BETA, error_shares
from latency_gate.formatting import plural

__all__ = [
    "SPOKEN_CLUMP",
    "ClumpTests",
    "Clumps",
    "clean_run_chance",
    "clump_tests",
    "clumped",
    "clumps_of",
]

# The clump length a clean PASS's sentence speaks of: what it does not rule out.
SPOKEN_CLUMP = 5
# A clump counts as one event per this many calls: a run whose calls all fail is an endpoint
# that is down, not one piece of bad luck (a burst's worth of calls is one moment).
EVENT_CALLS = 10


@dataclass(frozen=True)
class Clumps:
    """The failed calls of a run in the order they were made: `failed` of `calls` failed, in
    `count` clumps of consecutive failures, which the test counts as `events` (one a clump, one
    per EVENT_CALLS calls of a longer one); `spans`, the first and last call (1-based) of each
    clump, when the order is known."""

    calls: int
    failed: int = 0
    count: int = 0
    events: int = 0
    spans: tuple[tuple[int, int], ...] = ()

    @classmethod
    def apart(cls, failed: int, calls: int) -> Clumps:
        """Counts alone, the failures taken as independent (each its own clump)."""
        return cls(calls, failed, failed, failed)

    @property
    def clumped(self) -> bool:
        """Some failures came two or more in a row."""
        return self.failed > self.count

    @property
    def trials(self) -> int:
        """The calls that could have started an event: every call not inside one."""
        return self.calls - self.failed + self.events

    def describe(self, most: int = 4) -> str:
        """ "7 failures in 2 clumps: calls 41-45 and 102-103" (the `most` longest when there
        are more: "..., 7-9 and 3 more")."""
        text = f"{plural(self.failed, 'failure')} in {plural(self.count, 'clump')}"
        if not self.spans:
            return text
        shown = sorted(sorted(self.spans, key=lambda s: (s[0] - s[1], s[0]))[:most])
        words = [f"{a}-{b}" if b > a else f"{a}" for a, b in shown]
        if self.count > len(shown):
            words.append(f"{self.count - len(shown)} more")
        listed = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
        return f"{text}: calls {listed}"

    def __add__(self, other: Clumps) -> Clumps:
        """These calls followed by `other`'s (a clump across the seam counts as two)."""
        moved = tuple((a + self.calls, b + self.calls) for a, b in other.spans)
        return Clumps(
            self.calls + other.calls,
            self.failed + other.failed,
            self.count + other.count,
            self.events + other.events,
            self.spans + moved,
        )


def clumps_of(oks: Iterable[bool]) -> Clumps:
    """The clumps of failed calls among calls given in order (True: the call succeeded)."""
    spans: list[tuple[int, int]] = []
    start: int | None = None
    calls = 0
    for position, ok in enumerate(oks, start=1):
        calls = position
        if not ok and start is None:
            start = position
        elif ok and start is not None:
            spans.append((start, position - 1))
            start = None
    if start is not None:
        spans.append((start, calls))
    lengths = [last - first + 1 for first, last in spans]
    events = sum(math.ceil(length / EVENT_CALLS) for length in lengths)
    return Clumps(calls, sum(lengths), len(spans), events, tuple(spans))


@dataclass(frozen=True)
class ClumpTests:
    """The error budget's two one-sided tests on clumps: `fail` at the clumps' own mean length,
    `passing` at the length a PASS must allow for; `length` of each."""

    fail: Sprt
    passing: Sprt
    fail_length: float
    pass_length: float

    def decide(self, clumps: Clumps) -> Decision:
        """FAIL, PASS or UNDECIDED for these clumps."""
        if clumps.calls <= 0:
            return Decision.UNDECIDED
        if self.fail.decide(clumps.events, clumps.trials) is Decision.FAIL:
            return Decision.FAIL
        if self.passing.decide(clumps.events, clumps.trials) is Decision.PASS:
            return Decision.PASS
        return Decision.UNDECIDED

    def nearer_healthy(self, clumps: Clumps) -> bool:
        """Are the clumps nearer (in likelihood) the healthy share than the failing one?"""
        return self.fail.llr(clumps.events, clumps.trials) <= 0

    def clean_calls_to_pass(self, clumps: Clumps) -> int:
        """The fewest further calls, all successful, after which the test PASSes (0 if it has)."""
        test = self.passing
        if test.decide(clumps.events, clumps.trials) is Decision.PASS:
            return 0
        up = math.log(test.p1 / test.p0)
        down = math.log((1 - test.p1) / (1 - test.p0))
        need = math.ceil((math.log(test.beta) - clumps.events * (up - down)) / down)
        extra = max(0, need - clumps.trials - 1)
        while test.decide(clumps.events, clumps.trials + extra) is not Decision.PASS:
            extra += 1
        return extra


def clumped(fail: Sprt, passing: Sprt, failed: int, events: int, assumed: float) -> ClumpTests:
    """Two call-by-call tests on counts of calls (`fail` decides FAIL, `passing` decides PASS)
    made tests on `failed` calls counted as `events` clumps: each share divided by the mean
    clump length its side takes (FAIL: the clumps' own; PASS: as if one more clump of
    `assumed` calls had been seen, never under the own)."""
    own = failed / events if events else 1.0
    allowed = max(own, (failed + assumed) / (events + 1))
    return ClumpTests(
        fail=replace(fail, p0=fail.p0 / own, p1=fail.p1 / own),
        passing=replace(passing, p0=passing.p0 / allowed, p1=passing.p1 / allowed),
        fail_length=own,
        pass_length=allowed,
    )


def clump_tests(
    budget: float, failed: int, events: int, *, assumed: float | None = None
) -> ClumpTests | None:
    """The tests for `failed` failures counted as `events` under an error budget (None for a
    budget of 0: one failure fails). `assumed`: the clump length a PASS allows for until the
    calls show theirs (config.plan.hypotheses.ERROR_CLUMP when None)."""
    shares = error_shares(budget)
    if shares is None:
        return None
    healthy, failing = shares
    test = Sprt(p0=healthy, p1=failing, alpha=ERROR_ALPHA, beta=ERROR_BETA)
    return clumped(
        test, test, failed, events, hypotheses.ERROR_CLUMP if assumed is None else assumed
    )


def clean_run_chance(share: float, calls: int, length: int = SPOKEN_CLUMP) -> float:
    """How often an endpoint failing `share` of its calls in clumps of `length` shows no failure
    at all in `calls` calls: what a PASS on a clean run does not rule out."""
    start = share / (length * (1 - share) + share)
    return (1 - start) ** calls
