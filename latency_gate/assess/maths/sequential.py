"""The sequential probability ratio test on a count, valid at every look.

Each budget check is a share: of the calls so far, how many took longer than the limit (for a
percentile), or how many failed (for the error rate). The test weighs a "healthy" share p0
against a "failing" share p1 by the log likelihood ratio of the count,

    LLR(k, n) = k ln(p1 / p0) + (n - k) ln((1 - p1) / (1 - p0)),

and decides FAIL once LLR >= ln(1 / alpha), PASS once LLR <= ln(beta), undecided in between.
The likelihood ratio is a martingale under p0 (its inverse under p1), so by Ville's inequality
P(ever FAIL | share <= p0) <= alpha and P(ever PASS | share >= p1) <= beta, however many looks
are taken and whenever they are taken: no alpha needs to be split between looks. A share between
p0 and p1 is the indifference zone: either outcome is acceptable there, and it may end undecided.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from latency_gate.config.plan.hypotheses import odds_shifted

__all__ = ["Decision", "Sprt", "odds_shifted", "operating_characteristic"]


class Decision(StrEnum):
    """A check's outcome at one look."""

    PASS = "pass"  # noqa: S105 - an outcome, not a password
    FAIL = "fail"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class Sprt:
    """A Wald SPRT between shares p0 < p1 with Ville bounds: FAIL when the count says p1,
    with P(FAIL | p <= p0) <= alpha; PASS when it says p0, with P(PASS | p >= p1) <= beta."""

    p0: float
    p1: float
    alpha: float
    beta: float

    def __post_init__(self) -> None:
        if not 0.0 < self.p0 < self.p1 < 1.0:
            raise ValueError(f"need 0 < p0 < p1 < 1, got p0={self.p0}, p1={self.p1}")
        if not (0.0 < self.alpha < 1.0 and 0.0 < self.beta < 1.0):
            raise ValueError("alpha and beta must be between 0 and 1")

    def llr(self, k: int, n: int) -> float:
        """The log likelihood ratio of p1 against p0 for k events in n trials."""
        return k * math.log(self.p1 / self.p0) + (n - k) * math.log(
            (1.0 - self.p1) / (1.0 - self.p0)
        )

    def decide(self, k: int, n: int) -> Decision:
        """FAIL, PASS or UNDECIDED for k events (exceedances, failures) in n trials."""
        if n <= 0:
            return Decision.UNDECIDED
        llr = self.llr(k, n)
        if llr >= math.log(1.0 / self.alpha):
            return Decision.FAIL
        if llr <= math.log(self.beta):
            return Decision.PASS
        return Decision.UNDECIDED

    def max_events_to_pass(self, n: int) -> int | None:
        """The most events with which n trials already decide PASS (None: none can)."""
        if n <= 0:
            return None
        # LLR is increasing in k: solve LLR(k, n) <= ln(beta) for k, then check the rounding.
        up, down = math.log(self.p1 / self.p0), math.log((1 - self.p1) / (1 - self.p0))
        k = math.floor((math.log(self.beta) - n * down) / (up - down))
        k = min(k, n)
        while k >= 0 and self.decide(k, n) is not Decision.PASS:
            k -= 1
        while k + 1 <= n and self.decide(k + 1, n) is Decision.PASS:
            k += 1
        return k if k >= 0 else None

    def min_events_to_fail(self, n: int) -> int | None:
        """The fewest events with which n trials decide FAIL (None: not even n can)."""
        if n <= 0:
            return None
        up, down = math.log(self.p1 / self.p0), math.log((1 - self.p1) / (1 - self.p0))
        k = max(0, math.ceil((math.log(1 / self.alpha) - n * down) / (up - down)))
        while k - 1 >= 0 and self.decide(k - 1, n) is Decision.FAIL:
            k -= 1
        while k <= n and self.decide(k, n) is not Decision.FAIL:
            k += 1
        return k if k <= n else None

    def clean_trials_to_pass(self) -> int:
        """The fewest trials without an event that decide PASS."""
        n = max(1, math.ceil(math.log(self.beta) / math.log((1 - self.p1) / (1 - self.p0))))
        while n > 1 and self.decide(0, n - 1) is Decision.PASS:
            n -= 1
        while self.decide(0, n) is not Decision.PASS:
            n += 1
        return n


# Paths less likely than this are dropped from the dynamic programme: far below any rate shown.
_NEGLIGIBLE = 1e-15


def operating_characteristic(
    test: Sprt, looks: Sequence[int], share: float, final_pass_max: Callable[[int], int]
) -> tuple[float, float]:
    """Exact (P(PASS), P(FAIL)) of `test` judged at these looks, for a true share of events.

    `looks` are the cumulative numbers of trials at each look; the test is judged at each and
    the run stops at its first decision (a check judged again on every call at later looks can
    only be decided where this run would have been). A check still undecided at the last look
    passes when its events are at most `final_pass_max(n)` (-1: it fails; n: it passes), as
    the `on-undecided` policy does. Binomial dynamic programming over the count of events.
    """
    alive = {0: 1.0}
    passed = failed = 0.0
    before = 0
    for position, n in enumerate(looks):
        added = n - before
        if added < 0:
            raise ValueError("looks must not decrease")
        before = n
        weights = [
            math.comb(added, j) * share**j * (1 - share) ** (added - j) for j in range(added + 1)
        ]
        grown: dict[int, float] = {}
        for k, w in alive.items():
            for j, pj in enumerate(weights):
                if w * pj > _NEGLIGIBLE:
                    grown[k + j] = grown.get(k + j, 0.0) + w * pj
        alive = {}
        last = position == len(looks) - 1
        for k, w in grown.items():
            decision = test.decide(k, n)
            if decision is Decision.PASS:
                passed += w
            elif decision is Decision.FAIL:
                failed += w
            elif last:
                if k <= final_pass_max(n):
                    passed += w
                else:
                    failed += w
            else:
                alive[k] = w
    return passed, failed
