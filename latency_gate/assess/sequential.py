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
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Decision", "Sprt", "odds_shifted"]


class Decision(StrEnum):
    """A check's outcome at one look."""

    PASS = "pass"  # noqa: S105 - an outcome, not a password
    FAIL = "fail"
    UNDECIDED = "undecided"


def odds_shifted(share: float, factor: float) -> float:
    """The share whose odds are `factor` times those of `share` (factor < 1: a smaller share)."""
    odds = share / (1.0 - share) * factor
    return odds / (1.0 + odds)


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
        best: int | None = None
        for k in range(n + 1):
            if self.decide(k, n) is Decision.PASS:
                best = k
            else:
                break
        return best

    def min_events_to_fail(self, n: int) -> int | None:
        """The fewest events with which n trials decide FAIL (None: not even n can)."""
        for k in range(n + 1):
            if self.decide(k, n) is Decision.FAIL:
                return k
        return None
