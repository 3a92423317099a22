"""What a budget's checks mean in calls: the shares each sequential test weighs, and the fewest
clean calls that decide a PASS.

Each gated statement ("warm p95 <= 3 s", "error rate <= 0.01") is decided by a sequential test
between a healthy and a failing share (assess/budget/checks.py, docs/statistics.md). Those shares
are part of what a budget means, so they are defined here, in the config, and the edges can hold
a target's `max-calls` against what its checks need before the first call, without loading the
judging layer (start-up, docs/benchmarks.md).

- A percentile q "at or under the limit" means at most (100 - q) % of calls over the limit. The
  test weighs a share whose odds are PERCENTILE_ODDS times smaller (healthy: 1.98 % for the p95)
  against one whose odds are PERCENTILE_ODDS times larger (failing: 12.0 %).
- The error rate weighs ERROR_HEALTHY x budget (0.5 % for 0.01) against ERROR_FAILING x budget
  (3 %): a PASS rules out three times the budget.
- A level of a load search (assess/load/) holds when its calls rule out LEVEL_SHARE or more of
  them over the budget (its p95 over it) and breaks when they rule out LEVEL_SHARE or fewer: one
  test from each side of that line, against LEVEL_HELD_SHARE and LEVEL_BROKEN_SHARE, wrong at
  most LEVEL_BETA and LEVEL_ALPHA of the time (Ville's bound). Between the two it is near the
  budget.
"""

from __future__ import annotations

import math

__all__ = [
    "ERROR_ALPHA",
    "ERROR_BETA",
    "ERROR_CLUMP",
    "ERROR_FAILING",
    "ERROR_HEALTHY",
    "LEVEL_ALPHA",
    "LEVEL_BETA",
    "LEVEL_BROKEN_SHARE",
    "LEVEL_HELD_SHARE",
    "LEVEL_SHARE",
    "PERCENTILE_ALPHA",
    "PERCENTILE_BETA",
    "PERCENTILE_ODDS",
    "clean_calls_to_pass",
    "clean_calls_to_pass_errors",
    "error_shares",
    "hold_calls",
    "odds_shifted",
    "percentile_shares",
]

PERCENTILE_ODDS = 2.6
PERCENTILE_ALPHA = 0.01  # P(FAIL) for a healthy share, by Ville's inequality
PERCENTILE_BETA = 0.03  # P(PASS) for a failing share

ERROR_HEALTHY = 0.5
ERROR_FAILING = 3.0
ERROR_ALPHA = 0.02
ERROR_BETA = 0.04
# Failures come in clumps (a restart, a deploy, an outage): the error budget's test counts clumps
# (assess/budget/clumps.py), and until the calls show how long theirs are, a PASS allows for clumps
# of this many calls (docs/statistics.md, "Failures in clumps").
ERROR_CLUMP = 1

LEVEL_SHARE = 0.05
LEVEL_HELD_SHARE = 0.01
LEVEL_BROKEN_SHARE = 0.15
LEVEL_ALPHA = 0.01
LEVEL_BETA = 0.025


def odds_shifted(share: float, factor: float) -> float:
    """The share whose odds are `factor` times those of `share` (factor < 1: a smaller share)."""
    odds = share / (1.0 - share) * factor
    return odds / (1.0 + odds)


def percentile_shares(q: float) -> tuple[float, float]:
    """(healthy, failing) shares of calls over the limit for the q-th percentile's check."""
    if not 0 < q < 100:
        raise ValueError(f"a budget check needs 0 < q < 100, got {q}")
    share = 1.0 - q / 100
    return odds_shifted(share, 1 / PERCENTILE_ODDS), odds_shifted(share, PERCENTILE_ODDS)


def error_shares(budget: float) -> tuple[float, float] | None:
    """(healthy, failing) failure shares for an error budget; None for a budget of 0 (no
    failure allowed: decided by the first failure)."""
    if not 0 <= budget < 1:
        raise ValueError(f"an error budget must be in [0, 1), got {budget}")
    if budget == 0:
        return None
    return ERROR_HEALTHY * budget, min(ERROR_FAILING * budget, budget + (1 - budget) / 2)


def clean_calls_to_pass(healthy: float, failing: float, beta: float) -> int:
    """The fewest calls, none of them over the limit (or failed), that decide PASS."""
    return math.ceil(math.log(beta) / math.log((1 - failing) / (1 - healthy)) - 1e-9)


def hold_calls() -> int:
    """The fewest judged calls, none over the budget, that hold a level (its test of
    LEVEL_SHARE against LEVEL_HELD_SHARE of calls over the budget, assess/load/levels.py's
    HOLD_TEST)."""
    return clean_calls_to_pass(LEVEL_HELD_SHARE, LEVEL_SHARE, LEVEL_BETA)


def clean_calls_to_pass_errors(budget: float) -> int | None:
    """The fewest calls without a failure that PASS an error budget (None for a budget of 0):
    its test allows for failures in clumps of ERROR_CLUMP calls until the calls show theirs."""
    shares = error_shares(budget)
    if shares is None:
        return None
    healthy, failing = shares
    return clean_calls_to_pass(healthy / ERROR_CLUMP, failing / ERROR_CLUMP, ERROR_BETA)
