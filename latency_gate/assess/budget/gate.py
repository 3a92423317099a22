"""The gated checks of one run, look by look: what is decided, what is not, what to sample next.

A run is judged at each look (the first is the classic 1 cold + `warm_calls` + one burst; the
sampler adds more while a check is undecided, sampling.py). At each look every gated number is
judged again on every call so far: against its budget (checks.py: SPRTs whose error rates hold
across looks) and, with a baseline, for a regression (regression.py: at alpha split over the
looks). Sampling stops once every gated check has been decided; a check keeps the latest decision
it reached (calls taken later for another check may leave it undecided again without overturning
it, and its sentence says so), so a decision rests on the calls a reader sees. `Gate.look` is
what the engine's `more` callback asks after each look; `Gate.checks` and
`Gate.regression_outcomes` are the final word the verdict and the report use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from latency_gate.assess.budget import gated
from latency_gate.assess.budget.checks import error_rate_check, nearer_healthy
from latency_gate.assess.budget.gated import (
    GATED_NUMBERS,
    NO_DATA,
    SETTLED,
    GatedNumber,
    p95_tail_ratio,
    settled_meaning,
)
from latency_gate.assess.budget.meaning import Judged, check_meaning
from latency_gate.assess.budget.sampling import (
    NextStep,
    SamplingPlan,
    next_step,
    on_undecided_policy,
    resolve,
)
from latency_gate.assess.compare.judged import Look, judge_number
from latency_gate.assess.compare.regression import Alphas, Regression, look_alpha
from latency_gate.assess.maths.intervals import LEVEL
from latency_gate.assess.maths.sequential import Decision
from latency_gate.config import Budget
from latency_gate.config.regression import RegressionLimit
from latency_gate.models import Check, Numbers, RunResult, Sample

__all__ = ["GATED_NUMBERS", "NOT_NEEDED", "Gate", "plan_for"]

NOT_NEEDED = "undecided: not needed, another check had failed the run"


def plan_for(
    *,
    max_calls: int,
    concurrency: int,
    on_undecided: str,
    on_undecided_regression: str = "pass",
    warm_batch: int = 20,
) -> SamplingPlan:
    """The sampling plan of a target's settings."""
    return SamplingPlan(
        max_calls=max_calls,
        warm_batch=warm_batch,
        concurrency=concurrency,
        on_undecided=on_undecided_policy(on_undecided),
        on_undecided_regression="fail" if on_undecided_regression == "fail" else "pass",
    )


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
    judged: dict[str, Judged] = field(default_factory=dict)
    # The latest look at which each check was decided (PASS or FAIL): a check that later calls
    # (taken for other checks) leave undecided again keeps it, as Ville's bound allows.
    last_decided: dict[str, Judged] = field(default_factory=dict)
    # The number of calls behind each check at each look: the looks its error rates are for.
    history: dict[str, list[int]] = field(default_factory=dict)
    regressions: dict[str, Regression] = field(default_factory=dict)
    regressions_decided: dict[str, Regression] = field(default_factory=dict)
    regression_looks: dict[str, Look] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    stopped: str = ""
    failed_early: bool = False
    calls_at_look: int = 0

    @property
    def decisions(self) -> dict[str, Decision]:
        """Each budget check's decision at the latest look."""
        return {name: judged.decision for name, judged in self.judged.items()}

    def _limit(self, number: GatedNumber) -> float | None:
        value: float | None = getattr(self.budget, number.budget_field)
        return value

    def look(
        self, samples: Sequence[Sample], base_samples: Sequence[Sample] | None = None
    ) -> NextStep:
        """Judge the calls so far (one more look) and say what to sample before the next.

        `base_samples`: the base arm of an A/B run so far, tested against instead of
        `self.base.samples` (with `self.limit`)."""
        self.looks += 1
        self.calls_at_look = len(samples)
        if self.looks == 1:
            self.first_look_calls = len(samples)
        for number in GATED_NUMBERS:
            limit = self._limit(number)
            if limit is None:
                continue
            judged = gated.judge(number, limit, samples)
            if judged is None:
                continue
            self.judged[number.name] = judged
            if judged.decision is not Decision.UNDECIDED:
                self.last_decided[number.name] = judged
            self.history.setdefault(number.name, []).append(judged.n)
        self._look_regressions(samples, base_samples, look_alpha(self.looks - 1, last=False))
        step = self._next(samples)
        pending = self._undecided_regressions() if step.stop and not self.failed_early else []
        if pending:
            # The last look: the undecided regressions are tested again with what the looks
            # before left of their alpha (Haybittle-Peto), on the same calls; the reason the
            # run stopped is said again from what that test left undecided.
            last = look_alpha(self.looks - 1, last=True)
            self._look_regressions(samples, base_samples, last, undecided_only=True)
            step = self._next(samples)
            decided = [n for n in pending if n not in self._undecided_regressions()]
            if decided and not self._failed():
                names = ", ".join(f"{n} regression" for n in decided)
                step = NextStep(0, 0, f"{step.reason}; the last look's test decided {names}")
        if step.stop:
            self.stopped = step.reason
        else:
            self.reasons.append(step.reason)
        return step

    def time_up(
        self,
        samples: Sequence[Sample],
        base_samples: Sequence[Sample] | None,
        why: str,
    ) -> None:
        """The last look when --max-time left calls unmade: every call judged once more (the
        tests hold at any look, whenever it is taken), and `why` said as the reason sampling
        stopped, with the checks it left undecided; they follow on-undecided, as at the cap."""
        if not self.looks or len(samples) > self.calls_at_look:
            self.look(samples, base_samples)
        if self.stopped:
            return  # the last look decided every check (or one failed the run)
        asked = self.reasons.pop() if self.reasons else ""
        self.stopped = f"{why}; {asked}" if asked else why

    def _undecided_regressions(self) -> list[str]:
        return [
            name
            for name, outcome in self.regressions.items()
            if outcome is Regression.UNDECIDED and name not in self.regressions_decided
        ]

    def _failed(self) -> list[str]:
        return [n for n, j in self.judged.items() if j.decision is Decision.FAIL] + [
            f"{n} regression" for n, r in self.regressions.items() if r is Regression.REGRESSED
        ]

    def _next(self, samples: Sequence[Sample]) -> NextStep:
        """Stop when a check has failed the run; else what the plan takes for the checks still
        undecided. A check decided at an earlier look needs no more calls, even if the calls
        taken since for other checks leave it undecided again (its decision stands: `_check`)."""
        failed = self._failed()
        if failed:
            # The verdict is FAIL whatever more calls would show: spend no more of them.
            self.failed_early = True
            return NextStep(
                0, 0, f"{', '.join(failed)} failed, so the run fails whatever more calls show"
            )
        pending = set(self._undecided_regressions())
        undecided = [
            (n.name, n.phase)
            for n in GATED_NUMBERS
            if n.name in self.judged
            and self.judged[n.name].decision is Decision.UNDECIDED
            and n.name not in self.last_decided
        ] + [
            (f"{n.name} regression", n.phase)
            for n in GATED_NUMBERS
            if n.name in pending and n.pick is not None
        ]
        return next_step(
            self.plan,
            looks_done=self.looks,
            calls_made=len(samples),
            undecided=undecided,
            error_calls_to_pass=self._error_calls_to_pass(samples),
        )

    def _error_calls_to_pass(self, samples: Sequence[Sample]) -> int | None:
        limit = self.budget.max_error_rate
        judged = self.judged.get("error_rate")
        if limit is None or judged is None or judged.decision is not Decision.UNDECIDED:
            return None
        return error_rate_check(judged.events, judged.n, limit, judged.clumps).calls_to_pass

    def _look_regressions(
        self,
        samples: Sequence[Sample],
        base_samples: Sequence[Sample] | None,
        alpha: Alphas,
        *,
        undecided_only: bool = False,
    ) -> None:
        """Each compared number's regression at this look's `alpha`, judged again on every call
        (only numbers with a budget are tested, or the default budget's when every budget is
        off: `Budget.compared`; any other number is shown, not held to anything), against
        the base arm of an A/B run when `base_samples` is given (its calls got the head's
        prompts, call by call), else the baseline run; by `judge_number`, as the report's
        comparison is. A regression decided at a look keeps that decision when later calls
        leave it undecided (`regressions_decided`), and the look it was decided at
        (`regression_looks`), where the report computes its interval."""
        limit = self.limit
        base = self.base.samples if base_samples is None and self.base else base_samples
        if base is None or limit is None:
            return
        compared = self.budget.compared()
        for number in GATED_NUMBERS:
            if number.name not in compared:
                continue
            if undecided_only and self.regressions.get(number.name) is not Regression.UNDECIDED:
                continue
            found = judge_number(
                number.name,
                samples,
                base,
                limit,
                alpha,
                concurrency=self.plan.concurrency,
                paired=base_samples is not None,
            )
            if found is None:
                continue
            self.regressions[number.name] = found.outcome
            if found.outcome is not Regression.UNDECIDED:
                self.regressions_decided[number.name] = found.outcome
                self.regression_looks[number.name] = Look(len(samples), len(base), alpha)

    @property
    def regression_outcomes(self) -> dict[str, Regression]:
        """Each tested regression's final word: its latest decision, else undecided."""
        return {
            name: self.regressions_decided.get(name, outcome)
            for name, outcome in self.regressions.items()
        }

    # --- the final word -------------------------------------------------------------------

    def checks(self, samples: Sequence[Sample], numbers: Numbers) -> tuple[Check, ...]:
        """Each number against its budget: value and 95 % interval over every call, its decision
        at the last look (an undecided one resolved by the plan's policy, and said), and in
        words what that decision ruled out."""
        if self.looks == 0:
            self.look(samples)  # a run cut short before its first look was judged
        found = (self._check(n, getattr(numbers, n.name), samples) for n in GATED_NUMBERS)
        return tuple(check for check in found if check is not None)

    def _check(
        self, number: GatedNumber, value: float | None, samples: Sequence[Sample]
    ) -> Check | None:
        limit = self._limit(number)
        interval, n = gated.interval(number, samples, self.interval_level)
        common = {"number": number.name, "value": value, "limit": limit, "n": n}
        if limit is None:
            if number.name in ("ttft_p95", "tpot_p95") and value is None:
                return None  # not a stream: no first token to report
            return Check(**common, passed=None, interval=interval)
        if value is None:
            return Check(**common, passed=False, note="no data", meaning=NO_DATA[number.name])
        judged = self.judged.get(number.name) or gated.judge(number, limit, samples)
        if judged is None:
            return Check(**common, passed=None, interval=interval)
        within = (
            nearer_healthy(judged.events, judged.n, limit, judged.clumps)
            if number.name == "error_rate"
            else value <= limit
        )
        earlier = self.last_decided.get(number.name)
        agrees = earlier is not None and (earlier.decision is Decision.PASS) == within
        if judged.decision is Decision.UNDECIDED and earlier is not None and agrees:
            # Decided at an earlier look; the calls taken since for other checks neither
            # confirm nor overturn it, and what every call says agrees with it. A FAIL (PASS)
            # that the test reached at some look is wrong at most alpha (beta) of the time, so
            # the earlier decision stands. Where every call says otherwise (a PASS beside a p95
            # now over its budget), the check is what it is at the last look: undecided, and
            # the policy below decides it, so a report never shows a PASS beside a value its
            # own rule would fail.
            return Check(
                **common,
                passed=earlier.decision is Decision.PASS,
                note=f"decided after {earlier.n:,} calls; undecided again at the last look",
                interval=interval,
                meaning=self._meaning(number, earlier, value, limit, now=judged),
            )
        settled = gated.settled(interval, limit)
        if judged.decision is Decision.UNDECIDED and self.failed_early and settled is not None:
            # Sampling stopped because another check failed the run, before this one's test
            # decided; but its calls already put it on one side of its budget (3 of 3 calls
            # refused: 14 % to 100 % against 1 %), and its row says so, not "not needed".
            return Check(
                **common,
                passed=settled,
                note=SETTLED,
                interval=interval,
                meaning=settled_meaning(number.name, interval, limit, passed=settled),
            )
        if judged.decision is Decision.UNDECIDED and self.failed_early:
            # Sampling stopped because another check already failed the run: this one was not
            # needed, and no policy is applied to it.
            return Check(
                **common,
                passed=None,
                note=NOT_NEEDED,
                meaning=NOT_NEEDED,
                interval=interval,
                decided=False,
            )
        passed, by_policy = resolve(judged.decision, self.plan, within=within)
        note = ""
        if by_policy:
            word = "passed" if passed else "failed"
            policy = self.plan.on_undecided
            how = "by its value" if policy == "estimate" else "by policy"
            note = f"undecided when sampling stopped: {word} {how} (on-undecided: {policy})"
        return Check(
            **common,
            passed=passed,
            note=note,
            interval=interval,
            decided=not by_policy,
            by_policy=by_policy,
            meaning=self._meaning(
                number, judged, value, limit, passed=passed, tail=p95_tail_ratio(number, samples)
            ),
        )

    def _meaning(
        self,
        number: GatedNumber,
        judged: Judged,
        value: float,
        limit: float,
        *,
        passed: bool | None = None,
        now: Judged | None = None,
        tail: float | None = None,
    ) -> str:
        """The check's sentence (assess/budget/meaning.py) with this run's policy and looks."""
        return check_meaning(
            number.name,
            number.q,
            judged,
            value,
            limit,
            policy=self.plan.on_undecided,
            looks=self.history.get(number.name, [judged.n]),
            passed=passed,
            now=now,
            tail=tail,
        )

    @property
    def interval_level(self) -> float:
        """The level each look's interval is computed at so that the one shown holds at 95 %
        wherever sampling stopped: the run chose its stop from the calls (stopping when a check
        was decided), so the 5 % is split over the looks it could have stopped at (Bonferroni).
        A plan whose cap ends it at the first look could stop nowhere else."""
        looks = 1 if self.plan.max_calls <= self.first_look_calls else self.plan.max_looks
        return 1 - (1 - LEVEL) / looks
