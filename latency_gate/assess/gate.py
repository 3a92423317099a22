"""The gated checks of one run, look by look: what is decided, what is not, what to sample next.

A run is judged at each look (the first is the classic 1 cold + `warm_calls` + one burst; the
sampler adds more while a check is undecided, sampling.py). At each look every gated number is
checked against its budget (checks.py: SPRTs whose error rates hold across looks) and, with a
baseline, tested for a regression (regression.py: at alpha split over the looks). A check keeps
the first decision it reaches. `Gate.look` is what the engine's `more` callback asks after each
look; `Gate.checks` and `Gate.deltas` are the final word the verdict and the report use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from latency_gate.assess.checks import cold_start_check, error_rate_check, percentile_check
from latency_gate.assess.intervals import error_rate_interval, percentile_interval
from latency_gate.assess.regression import (
    ErrorRateRegression,
    Regression,
    error_rate_regression,
    percentile_regression,
)
from latency_gate.assess.sampling import NextStep, Phase, SamplingPlan, next_step, resolve
from latency_gate.assess.sequential import Decision
from latency_gate.assess.stats import first_tokens, latencies
from latency_gate.config import Budget
from latency_gate.config.regression import RegressionLimit
from latency_gate.models import CallPhase, Check, Numbers, RunResult, Sample

__all__ = ["GATED_NUMBERS", "Gate", "plan_for"]

Pick = Callable[[Sequence[Sample]], list[float]]


def _warm(samples: Sequence[Sample]) -> list[float]:
    return latencies(samples, CallPhase.WARM)


def _concurrent(samples: Sequence[Sample]) -> list[float]:
    return latencies(samples, CallPhase.CONCURRENT)


@dataclass(frozen=True)
class _Number:
    name: str
    budget_field: str
    q: float | None  # the percentile; None for cold start and the error rate
    pick: Pick | None  # the calls' values behind the number
    phase: Phase  # where more calls for it come from


# In the order reports show them.
GATED_NUMBERS = (
    _Number("cold_start", "max_cold_start", None, None, Phase.WARM),
    _Number("warm_p50", "max_warm_p50", 50, _warm, Phase.WARM),
    _Number("warm_p95", "max_warm_p95", 95, _warm, Phase.WARM),
    _Number("concurrent_p95", "max_concurrent_p95", 95, _concurrent, Phase.CONCURRENT),
    _Number("error_rate", "max_error_rate", None, None, Phase.ALL),
    _Number("ttft_p95", "max_ttft_p95", 95, first_tokens, Phase.WARM),
)


def plan_for(
    *, max_calls: int, concurrency: int, on_undecided: str, warm_batch: int = 20
) -> SamplingPlan:
    """The sampling plan of a target's settings."""
    return SamplingPlan(
        max_calls=max_calls,
        warm_batch=warm_batch,
        concurrency=concurrency,
        on_undecided="pass" if on_undecided == "pass" else "fail",
    )


def _failed(samples: Sequence[Sample]) -> int:
    return sum(not s.ok for s in samples)


@dataclass
class Gate:
    """The checks of one run across its looks. `base` and `limit`: the baseline, when given
    (an A/B run has the limit alone: its base arm's calls come to each look)."""

    budget: Budget
    plan: SamplingPlan
    base: RunResult | None = None
    limit: RegressionLimit | None = None
    looks: int = 0
    first_look_calls: int = 0
    decisions: dict[str, Decision] = field(default_factory=dict)
    regressions: dict[str, Regression] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    stopped: str = ""
    failed_early: bool = False

    def _limit(self, number: _Number) -> float | None:
        value: float | None = getattr(self.budget, number.budget_field)
        return value

    def look(
        self, samples: Sequence[Sample], base_samples: Sequence[Sample] | None = None
    ) -> NextStep:
        """Judge the calls so far (one more look) and say what to sample before the next.

        `base_samples`: the base arm of an A/B run so far, tested against instead of
        `self.base.samples` (with `self.limit`)."""
        self.looks += 1
        if self.looks == 1:
            self.first_look_calls = len(samples)
        error_calls_to_pass: int | None = None
        for number in GATED_NUMBERS:
            limit = self._limit(number)
            if limit is None or self.decisions.get(number.name) not in (None, Decision.UNDECIDED):
                continue
            if number.name == "cold_start":
                cold = latencies(samples, CallPhase.COLD)
                decision = cold_start_check(cold[0] if cold else None, limit).decision
            elif number.name == "error_rate":
                errors = error_rate_check(_failed(samples), len(samples), limit)
                decision = errors.decision
                error_calls_to_pass = errors.calls_to_pass
            elif number.pick is not None and number.q is not None:
                values = number.pick(samples)
                if number.name == "ttft_p95" and not values:
                    continue  # not a stream: nothing to gate, as before
                decision = percentile_check(values, number.q, limit).decision
            else:
                continue
            self.decisions[number.name] = decision
        self._look_regressions(samples, base_samples)
        undecided = [
            (n.name, n.phase)
            for n in GATED_NUMBERS
            if self.decisions.get(n.name) is Decision.UNDECIDED
        ] + [
            (f"{n.name} regression", n.phase)
            for n in GATED_NUMBERS
            if self.regressions.get(n.name) is Regression.UNDECIDED and n.pick is not None
        ]
        failed = [n for n, d in self.decisions.items() if d is Decision.FAIL] + [
            f"{n} regression" for n, r in self.regressions.items() if r is Regression.REGRESSED
        ]
        if failed:
            # The verdict is FAIL whatever more calls would show: spend no more of them.
            self.stopped = f"{', '.join(failed)} failed, so the run fails whatever more calls show"
            self.failed_early = True
            return NextStep(0, 0, self.stopped)
        step = next_step(
            self.plan,
            looks_done=self.looks,
            calls_made=len(samples),
            undecided=undecided,
            error_calls_to_pass=error_calls_to_pass,
        )
        if step.stop:
            self.stopped = step.reason
        else:
            self.reasons.append(step.reason)
        return step

    def _look_regressions(
        self, samples: Sequence[Sample], base_samples: Sequence[Sample] | None = None
    ) -> None:
        limit = self.limit
        base = self.base.samples if base_samples is None and self.base else base_samples
        if base is None or limit is None:
            return
        for number in GATED_NUMBERS:
            if self.regressions.get(number.name) not in (None, Regression.UNDECIDED):
                continue
            if number.name == "error_rate":
                outcome = self._error_regression(samples, base, limit).outcome
            elif number.pick is not None and number.q is not None:
                found = percentile_regression(
                    number.pick(samples),
                    number.pick(base),
                    number.q,
                    max_relative=limit.relative,
                    max_absolute=limit.absolute,
                    alpha=self.plan.regression_alpha,
                )
                if found is None:
                    continue
                outcome = found.outcome
            else:
                continue
            self.regressions[number.name] = outcome

    def _error_regression(
        self, samples: Sequence[Sample], base: Sequence[Sample], limit: RegressionLimit
    ) -> ErrorRateRegression:
        return error_rate_regression(
            _failed(samples),
            max(len(samples), 1),
            _failed(base),
            max(len(base), 1),
            max_relative=limit.relative or 0.0,
            alpha=self.plan.regression_alpha,
        )

    # --- the final word -------------------------------------------------------------------

    def checks(self, samples: Sequence[Sample], numbers: Numbers) -> tuple[Check, ...]:
        """Each number against its budget: value and 95 % interval over every call, the first
        decision reached (an undecided one resolved by the plan's policy, and said)."""
        if self.looks == 0:
            self.look(samples)  # a run cut short before its first look was judged
        found = (self._check(n, getattr(numbers, n.name), samples) for n in GATED_NUMBERS)
        return tuple(check for check in found if check is not None)

    def _check(
        self, number: _Number, value: float | None, samples: Sequence[Sample]
    ) -> Check | None:
        limit = self._limit(number)
        interval, n = self._interval(number, samples)
        common = {"number": number.name, "value": value, "limit": limit, "n": n}
        if limit is None:
            if number.name == "ttft_p95" and value is None:
                return None  # not a stream: no first token to report
            return Check(**common, passed=None, interval=interval)
        if value is None:
            return Check(**common, passed=False, note="no data")
        decision = self.decisions.get(number.name, Decision.UNDECIDED)
        if decision is Decision.UNDECIDED and self.failed_early:
            # Sampling stopped because another check already failed the run: this one was not
            # needed, and no policy is applied to it.
            note = "undecided: not needed, another check had failed the run"
            return Check(**common, passed=None, note=note, interval=interval, decided=False)
        passed, by_policy = resolve(decision, self.plan)
        note = ""
        if by_policy:
            word = "passed" if passed else "failed"
            policy = self.plan.on_undecided
            note = f"undecided when sampling stopped: {word} by policy (on-undecided: {policy})"
        return Check(
            **common,
            passed=passed,
            note=note,
            interval=interval,
            decided=not by_policy,
            by_policy=by_policy,
        )

    @staticmethod
    def _interval(
        number: _Number, samples: Sequence[Sample]
    ) -> tuple[tuple[float | None, float | None] | None, int]:
        if number.name == "cold_start":
            return None, len(latencies(samples, CallPhase.COLD))
        if number.name == "error_rate":
            counts = error_rate_interval(_failed(samples), len(samples))
            return (counts.interval.low, counts.interval.high), len(samples)
        values = [] if number.pick is None else number.pick(samples)
        if number.q is None or not values:
            return (None, None), len(values)
        found = percentile_interval(values, number.q)
        return (found.low, found.high), len(values)
