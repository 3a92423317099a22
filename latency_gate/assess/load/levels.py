"""One level of a load search, whatever its load (calls at once, requests a second): what it is
held to, what its checks read of its calls, and the one test that says held, broke or near.

A level is judged at each look on the share of its calls over `max-concurrent-p95` (and
first-token p95 over `max-ttft-p95` when budgeted), by two sequential tests, one from each side
of LEVEL_SHARE (5 %: the p95 at the budget; config/plan.py):

- held: the calls rule out LEVEL_SHARE or more over the budget (a test of 5 % against 1 %):
  a level whose p95 is over the budget holds at most LEVEL_BETA (2.5 %) of the time;
- broke: they rule out LEVEL_SHARE or fewer (5 % against 15 %): a level whose p95 is within
  the budget breaks at most LEVEL_ALPHA (1 %) of the time;
- near the budget: neither, at the level's end (LEVEL_CALLS calls at once, 130 at every
  concurrency; a level at a rate, its length). Its p95 is then too near the budget for the calls
  to tell, and the figure is said as an interval around it, not decided by a coin.

Ville's inequality holds both bounds whatever bursts a level took. The error rate of a level's
calls breaks it when its test says FAIL (error_rate_check, failures in a row counted as one
clump) or, at the level's end, when its failures are nearer the failing share than the healthy
one; it asks for another burst only once a call failed: a 1 % budget passes after 127 clean
calls, so a clean level is not held back for it (docs/statistics.md, "Capacity").

`level_decision` is the two tests on calls counted one by one; `clumped_decision` counts the calls
over the budget in clumps (runs of consecutive ones, in the order the calls were due or started),
as the error test counts failures. `LEVEL_TEST`, the one both searches judge every level by, is
`clumped_decision`: a queue's slow calls come in runs, and one by one they broke levels at a
rate whose p95 was within the budget; on closed bursts it costs some calls and changes no figure
beyond the simulations' noise (docs/statistics.md, "One level test for both loads"). What it
assumes: the clumps are independent of each other, the calls inside one are not; a dependence
over a longer stretch (a busy period whose slow calls are broken by a few within the budget, a
quiet stretch that holds a level) is not allowed for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from latency_gate.assess.budget.checks import error_rate_check, nearer_healthy
from latency_gate.assess.budget.clumps import Clumps, clumped, clumps_of
from latency_gate.assess.maths.sequential import Decision, Sprt
from latency_gate.config import Budget
from latency_gate.config.plan.hypotheses import (
    ERROR_ALPHA,
    ERROR_BETA,
    LEVEL_ALPHA,
    LEVEL_BETA,
    LEVEL_BROKEN_SHARE,
    LEVEL_HELD_SHARE,
    LEVEL_SHARE,
)
from latency_gate.models import Sample

__all__ = [
    "BREAK_TEST",
    "HOLD_TEST",
    "LEVEL_TEST",
    "P95",
    "Decided",
    "LevelCalls",
    "LevelJudged",
    "LevelLimits",
    "clumped_decision",
    "judge_level",
    "level_checks",
    "level_decision",
]

Decided = Literal["the run", "test", "level cap", "max-calls"]
P95 = 95.0
# Held: PASS of the test of LEVEL_SHARE against LEVEL_HELD_SHARE (wrong at most its beta).
HOLD_TEST = Sprt(p0=LEVEL_HELD_SHARE, p1=LEVEL_SHARE, alpha=LEVEL_ALPHA, beta=LEVEL_BETA)
# Broke: FAIL of the test of LEVEL_SHARE against LEVEL_BROKEN_SHARE (wrong at most its alpha).
BREAK_TEST = Sprt(p0=LEVEL_SHARE, p1=LEVEL_BROKEN_SHARE, alpha=LEVEL_ALPHA, beta=LEVEL_BETA)


@dataclass(frozen=True)
class LevelLimits:
    """What every level is held to: the target's budget, and its `on-undecided` policy (for a
    `--min-capacity` the levels near the budget leave undecided)."""

    concurrent_p95: float
    error_rate: float | None = None
    ttft_p95: float | None = None
    on_undecided: str = "estimate"

    @classmethod
    def of(cls, budget: Budget, on_undecided: str, *, why: str) -> LevelLimits:
        """A target's budget as its levels' limits; `why` names the search in the error raised
        without a concurrent p95 budget (the config refuses such a search before a run)."""
        if budget.max_concurrent_p95 is None:
            raise ValueError(why)
        return cls(
            concurrent_p95=budget.max_concurrent_p95,
            error_rate=budget.max_error_rate,
            ttft_p95=budget.max_ttft_p95,
            on_undecided=on_undecided,
        )


@dataclass(frozen=True)
class LevelCalls:
    """What a level's checks read of its calls: successful latencies and first tokens, and the
    clumps of its failed calls (how many failed of how many)."""

    latencies: tuple[float, ...] = ()
    first_tokens: tuple[float, ...] = ()
    clumps: Clumps = field(default_factory=lambda: Clumps(0))

    @property
    def failed(self) -> int:
        return self.clumps.failed

    @property
    def calls(self) -> int:
        return self.clumps.calls

    @classmethod
    def of(cls, samples: Sequence[Sample]) -> LevelCalls:
        ok = [s for s in samples if s.ok and s.latency is not None]
        return cls(
            latencies=tuple(s.latency for s in ok if s.latency is not None),
            first_tokens=tuple(
                s.timings.first_token for s in ok if s.timings.first_token is not None
            ),
            clumps=clumps_of(s.ok for s in samples),
        )

    def __add__(self, other: LevelCalls) -> LevelCalls:
        return LevelCalls(
            self.latencies + other.latencies,
            self.first_tokens + other.first_tokens,
            self.clumps + other.clumps,
        )


@dataclass(frozen=True)
class LevelJudged:
    """A level at one look: `held` True (it holds), False (it breaks, or with `near` it is near
    the budget) or None (take another burst); how it was decided; the checks that broke it; how
    often such a decision is wrong at most (the deciding test's bound; None for a near level)."""

    held: bool | None
    by: Decided = "test"
    broke_on: tuple[str, ...] = ()
    wrong_at_most: float | None = None
    near: bool = False


def level_decision(values: Sequence[float], limit: float) -> Decision:
    """The level's tests on these values: FAIL (broke), PASS (held) or UNDECIDED; no values at
    all breaks the level (no data)."""
    if not values:
        return Decision.FAIL
    over, n = sum(v > limit for v in values), len(values)
    if BREAK_TEST.decide(over, n) is Decision.FAIL:
        return Decision.FAIL
    if HOLD_TEST.decide(over, n) is Decision.PASS:
        return Decision.PASS
    return Decision.UNDECIDED


def clumped_decision(values: Sequence[float], limit: float) -> Decision:
    """A level's two tests (`level_decision`: broke, held or neither) on `values` in the order
    their calls were due or started, with the calls over `limit` counted in clumps (runs of
    consecutive ones), as the error test counts failures (assess/budget/clumps.py): a queue's slow
    calls come in runs (one long call delays the calls behind it), and counted one by one a
    run of five over the budget weighed as five independent calls. The break test takes the
    clumps' own mean length, the hold test the length as if one more clump of one call had been
    seen (so a level with no call over the budget is judged call by call, as before); no value
    at all breaks the level (no data)."""
    if not values:
        return Decision.FAIL
    clumps = clumps_of(value <= limit for value in values)
    return clumped(BREAK_TEST, HOLD_TEST, clumps.failed, clumps.events, 1.0).decide(clumps)


LEVEL_TEST: Callable[[Sequence[float], float], Decision] = clumped_decision


@dataclass(frozen=True)
class LevelChecks:
    """A level's checks at one look: each latency check's values and budget, what each test
    says, and the error rate's test (None without an error budget)."""

    latency: dict[str, tuple[tuple[float, ...], float]]
    decisions: dict[str, Decision]
    errors: Decision | None
    failed: int

    @property
    def broke(self) -> tuple[str, ...]:
        """The checks whose test failed, the error rate last."""
        broke = tuple(name for name, d in self.decisions.items() if d is Decision.FAIL)
        return broke + (("error_rate",) if self.errors is Decision.FAIL else ())

    @property
    def pending(self) -> list[str]:
        return [name for name, d in self.decisions.items() if d is Decision.UNDECIDED]

    @property
    def errors_pending(self) -> bool:
        """The error rate undecided with a failure among the calls (a clean level does not
        wait for it)."""
        return self.errors is Decision.UNDECIDED and self.failed > 0


def level_checks(
    calls: LevelCalls,
    limits: LevelLimits,
    decide: Callable[[Sequence[float], float], Decision],
) -> LevelChecks:
    """The concurrent p95 (and first-token p95 when budgeted) by `decide`, and the error rate by
    its own test with failures in a row counted as one clump."""
    latency = {"concurrent_p95": (calls.latencies, limits.concurrent_p95)}
    if limits.ttft_p95 is not None and calls.first_tokens:
        latency["ttft_p95"] = (calls.first_tokens, limits.ttft_p95)
    errors = (
        None
        if limits.error_rate is None
        else error_rate_check(calls.failed, calls.calls, limits.error_rate, calls.clumps).decision
    )
    return LevelChecks(
        latency,
        {name: decide(v, limit) for name, (v, limit) in latency.items()},
        errors,
        calls.failed,
    )


def judge_level(
    calls: LevelCalls,
    limits: LevelLimits,
    *,
    looks: Sequence[int],
    last: bool,
    decide: Callable[[Sequence[float], float], Decision] | None = None,
) -> LevelJudged:
    """A level after the burst that brought its calls to `looks[-1]` (`looks`: its calls at each
    look so far). Breaks as soon as a check's calls rule out a p95 within its budget (or the
    error rate fails); holds once every latency check's calls rule out a p95 over its budget
    and the error rate has not failed (nor has a failure still undecided); otherwise undecided,
    unless `last` (no further burst: the level's cap or max-calls), where an undecided latency
    check leaves the level near the budget and the error rate goes by the nearer of its two
    shares. `decide`: the latency checks' tests (LEVEL_TEST when None)."""
    del looks  # Ville's bounds hold at any looks: the decision needs only the calls so far
    if not calls.calls:  # no call judged (a level at a rate whose calls were all in its
        # warm-up): it says nothing, where no successful call among some breaks it
        return LevelJudged(False, "level cap", (), None, near=True) if last else LevelJudged(None)
    checks = level_checks(calls, limits, LEVEL_TEST if decide is None else decide)
    broke, pending, errors_pending = checks.broke, checks.pending, checks.errors_pending
    if broke:
        wrong = ERROR_ALPHA if broke == ("error_rate",) else LEVEL_ALPHA
        return LevelJudged(False, "test", broke, wrong)
    if not pending and not errors_pending:
        return LevelJudged(True, "test", (), LEVEL_BETA)
    if not last:
        return LevelJudged(None)
    rate = limits.error_rate
    if (
        errors_pending
        and rate is not None
        and not nearer_healthy(calls.failed, calls.calls, rate, calls.clumps)
    ):
        return LevelJudged(False, "level cap", ("error_rate",), ERROR_ALPHA)
    if pending:
        return LevelJudged(False, "level cap", (), None, near=True)
    # Only the error rate was open, and its failures are nearer the healthy share.
    return LevelJudged(True, "level cap", (), ERROR_BETA)
