"""The sequential sampling plan: after each look, take more calls where a check is undecided.

Looks. Look 1 is the classic run: 1 cold call, `warm_calls` (20) sequential calls, one burst of
`concurrency` (10) calls; its five numbers keep their meaning. After each look the engine asks
`next_step`: while a gated check is undecided, the next look adds `warm_batch` (20) sequential
calls if a warm check is undecided, and ceil(warm_batch / concurrency) bursts if a concurrent
check is undecided; when the error rate is undecided, bursts again (the quickest calls to make):
enough for it to pass if every call succeeds (`error_calls_to_pass`, less the look's warm calls,
which count in it too, and the last few taken as warm calls when the look takes some anyway
or they are fewer than half a burst),
at most the calls left spread evenly over the looks left. It stops when every gated check is
decided at the same look, after `max_looks` looks, or when the next step would pass
`max_calls` calls in all (a step is trimmed to what fits first).

Error rates across looks. Budget checks are SPRTs with Ville's bound (sequential.py): their
error rates hold for any number of looks, and a check judged again on every call at each look
can only end FAIL (PASS) where its test crossed that boundary at some look. Baseline
regressions are permutation tests: their alpha is spent the Haybittle-Peto way, a little at each
look and what is left at the last (regression.look_alpha).

Undecided when sampling stops: a budget check follows `on_undecided`: "estimate" (the default)
decides it by what every call says: a percentile by its value against its limit, the error rate
by whether its failures are nearer (in likelihood) a healthy share, half the budget, or a failing
one, three times it (checks.nearer_healthy); "fail" and "pass" decide it that way whatever the
calls say. The reports
say which checks were decided so, and checks.worst_errors gives the error rates of the whole
procedure, the policy included. A regression still undecided follows `on_undecided_regression`
("pass" by default, said as a warning wherever the verdict is said).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from latency_gate.assess.maths.sequential import Decision
from latency_gate.config.plan.needs import DEFAULT_MAX_CALLS, LOOK_WARM_CALLS, MAX_LOOKS

__all__ = [
    "DEFAULT_PLAN",
    "MAX_LOOKS",
    "NextStep",
    "OnUndecided",
    "Phase",
    "SamplingPlan",
    "next_step",
    "on_undecided_policy",
    "resolve",
]

OnUndecided = Literal["estimate", "fail", "pass"]


def on_undecided_policy(name: str) -> OnUndecided:
    """A setting's `on-undecided` as a policy (the settings have checked it already)."""
    return "pass" if name == "pass" else "fail" if name == "fail" else "estimate"


class Phase(StrEnum):
    """Where a check's calls come from."""

    WARM = "warm"
    CONCURRENT = "concurrent"
    ALL = "all"  # the error rate counts every call


@dataclass(frozen=True)
class SamplingPlan:
    """The limits of sequential sampling (defaults: up to 8 looks, 500 calls; an undecided check
    decided by its value, an undecided regression not called one)."""

    max_calls: int = DEFAULT_MAX_CALLS
    max_looks: int = MAX_LOOKS
    warm_batch: int = LOOK_WARM_CALLS
    concurrency: int = 10
    on_undecided: OnUndecided = "estimate"
    on_undecided_regression: Literal["fail", "pass"] = "pass"

    def __post_init__(self) -> None:
        if self.max_looks < 1 or self.warm_batch < 1 or self.concurrency < 1:
            raise ValueError("max_looks, warm_batch and concurrency must be at least 1")

    @property
    def bursts_per_look(self) -> int:
        return math.ceil(self.warm_batch / self.concurrency)


DEFAULT_PLAN = SamplingPlan()


@dataclass(frozen=True)
class NextStep:
    """What to sample before the next look; nothing (stop) with the reason."""

    warm_calls: int
    bursts: int
    reason: str

    @property
    def stop(self) -> bool:
        return self.warm_calls == 0 and self.bursts == 0


def next_step(
    plan: SamplingPlan,
    *,
    looks_done: int,
    calls_made: int,
    undecided: Iterable[tuple[str, Phase]],
    error_calls_to_pass: int | None = None,
) -> NextStep:
    """The sampling for the next look, given the checks still undecided at this one.

    `looks_done` counts looks taken (1 after the classic run), `calls_made` every call so far
    (cold, warm and concurrent, failed ones included), `undecided` the (number, phase) of each
    gated check (budget or regression) still undecided, `error_calls_to_pass` the error-rate
    check's `calls_to_pass` when it is undecided. The reason names the checks.
    """
    pending = list(undecided)
    if not pending:
        return NextStep(0, 0, "every gated check is decided")
    names = ", ".join(name for name, _ in pending)
    if looks_done >= plan.max_looks:
        return NextStep(0, 0, f"undecided at the cap of {plan.max_looks} looks: {names}")
    phases = {phase for _, phase in pending}
    warm = plan.warm_batch if Phase.WARM in phases else 0
    bursts = plan.bursts_per_look if Phase.CONCURRENT in phases else 0
    room = max(0, plan.max_calls - calls_made)
    if Phase.ALL in phases:
        # The error rate is undecided: rare failures need many calls, and bursts are the
        # quickest to make, so take what could decide it if every call succeeds, at most the
        # calls left spread evenly over the looks left (also when other checks take calls too:
        # a run that the regressions keep going must not leave the error rate short of calls).
        per_look = max(
            plan.bursts_per_look, (room - warm) // (plan.max_looks - looks_done) // plan.concurrency
        )
        if error_calls_to_pass is not None:
            # No more than could decide it: the look's warm calls count in the error rate too,
            # so bursts for the rest only (a smaller first look then spends no more calls).
            rest = max(0, error_calls_to_pass - warm)
            per_look = min(per_look, math.ceil(rest / plan.concurrency))
            few = rest - (per_look - 1) * plan.concurrency  # the last burst's calls needed
            if per_look * plan.concurrency > rest >= plan.concurrency * bursts and (
                warm or 2 * few < plan.concurrency
            ):
                # The last few as warm calls rather than a burst mostly past what the error
                # rate needs: when the look takes warm calls anyway, or fewer than half of it.
                per_look = rest // plan.concurrency
                warm += rest - per_look * plan.concurrency
        bursts = max(bursts, per_look)
    warm = min(warm, room)
    bursts = min(bursts, (room - warm) // plan.concurrency)
    if warm == 0 and bursts == 0:
        return NextStep(0, 0, f"undecided at the cap of {plan.max_calls} calls: {names}")
    return NextStep(warm, bursts, f"undecided: {names}")


def resolve(decision: Decision, plan: SamplingPlan, *, within: bool) -> tuple[bool, bool]:
    """(passed, by_policy) of a budget check after the last look: an undecided check is decided
    by plan.on_undecided ("estimate": `within`, whether its value over every call is within the
    limit), and by_policy says the report must tell so."""
    if decision is Decision.UNDECIDED:
        if plan.on_undecided == "estimate":
            return within, True
        return plan.on_undecided == "pass", True
    return decision is Decision.PASS, False
