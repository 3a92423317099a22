"""Regressions against a baseline: an earlier run's JSON, or the base endpoint of an A/B run
measured beside the head (`--baseline-url`), compared number by number.

Each gated percentile (warm p50, warm p95, concurrent p95, first-token p95) is tested on that
percentile itself, with the null hypothesis "head is worse than base by at most the limit"
(`--max-regression 20%`, `200ms` or `20%,200ms`, both to be exceeded; `10%` when none is given):
an exact permutation test at the limit (assess/compare/regression.py). Three outcomes: regressed,
not regressed, undecided; while one is undecided the run takes more calls (assess/budget/gate.py),
and one still undecided at the cap is not called a regression unless `on-undecided-regression` is
fail (a regression is a claim that needs evidence; the budget guards the level), and is said as a
warning wherever the verdict is. Only numbers with a budget are tested, and a streamed answer's
first token and time per token whatever the budget (`Budget.compared`). The error rate: the
exact conditional test of two counts against the relative limit. Cold start is one call on each
side: shown, never called a regression. docs/statistics.md has the methods and the simulated
error rates.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from latency_gate.assess.compare.judged import Judged, Look, judge_number
from latency_gate.assess.compare.reference import (
    CALL_KINDS,
    LATENCIES,
    STREAMED,
    Reference,
    config_differences,
    held_against,
    no_base_data,
    origin_of,
    too_few_calls,
    with_origins,
)
from latency_gate.assess.compare.regression import (
    REGRESSION_ALPHA,
    WITHIN_ALPHA,
    Alphas,
    Regression,
    look_alpha,
)
from latency_gate.assess.compare.same_work import SameWork, what_changed
from latency_gate.assess.numbers.stats import numbers as numbers_of
from latency_gate.config import Target
from latency_gate.config.regression import RegressionLimit
from latency_gate.config.target import STREAM_COMPARED
from latency_gate.errors import ConfigError, InputProblem
from latency_gate.formatting import fmt_change, fmt_ratio
from latency_gate.models import (
    BaselineCheck,
    NumberDelta,
    Numbers,
    PartDelta,
    RunResult,
    Sample,
)

__all__ = [
    "TEST_NAME",
    "BaselinePlan",
    "baseline_for",
    "compare",
    "config_differences",
    "match_baseline",
    "missing_baseline",
    "origin_of",
    "with_origins",
]

TEST_NAME = (
    "exact permutation test of each percentile at the limit (the exact conditional test of two "
    f"counts for the error rate), one-sided alpha {REGRESSION_ALPHA:g} for a regression and "
    f"{WITHIN_ALPHA:g} for 'not regressed', spent over the looks"
)
SAME_WORK_TEST_NAME = (
    "at the same work: each whole-call percentile by the exact permutation test of each call's "
    "latency over what its answer's length predicts, and the answers' length by Student's t on "
    "the pairs of the same prompt (Welch's against an earlier run), each at half the number's "
    f"one-sided alpha {REGRESSION_ALPHA:g} for a regression; {WITHIN_ALPHA:g} for 'not "
    "regressed', spent over the looks"
)


def match_baseline(
    targets: Sequence[Target], base_runs: Sequence[RunResult], source: str
) -> dict[str, RunResult | None]:
    """The baseline run of each target (by name; one run against one target pairs whatever the
    names). Raises ConfigError (exit 2, before anything is measured) when a matched baseline
    measured something else, saying which settings differ."""
    by_name = {run.target: run for run in base_runs}
    matched: dict[str, RunResult | None] = {}
    problems: list[InputProblem] = []
    for target in targets:
        run = by_name.get(target.name)
        if run is None and len(targets) == 1 and len(base_runs) == 1:
            run = base_runs[0]
        matched[target.name] = run
        if run is None:
            continue
        differences = config_differences(target.comparable(), run.config)
        if differences:
            shown = "; ".join(f"{k}: {b!r} then, {h!r} now" for k, b, h in differences)
            problems.append(
                InputProblem(
                    source,
                    f"the baseline of {target.name!r} measured a different configuration "
                    f"({shown}); a comparison would mean nothing. Use a baseline from the same "
                    "settings, or drop --baseline for this run",
                )
            )
    if problems:
        raise ConfigError(problems)
    return matched


def compare(
    samples: Sequence[Sample],
    numbers: Numbers,
    base: RunResult | None,
    limit: RegressionLimit,
    source: str,
    *,
    outcomes: Mapping[str, Regression] | None = None,
    alpha: Alphas | None = None,
    gated: Collection[str] | None = None,
    stopped_early: bool = False,
    on_undecided: str = "pass",
    base_samples: Sequence[Sample] | None = None,
    looks: Mapping[str, Look] | None = None,
    concurrency: int = 10,
    intervals: bool = True,
) -> BaselineCheck:
    """Every number of a run (its `samples` and `numbers`) against `base`: values, head / base
    with its interval, and the outcome, each tested by `judge_number` as the looks were: a number
    the looks decided (`outcomes`, at the look in `looks`) on that look's calls at its alphas
    (the same test on the same calls: the same decision), any other on every call at `alpha`
    (what is left of each side's alpha at the last look; the whole when None). The interval is
    the decision's own (its levels in `interval_levels`), so the two never disagree;
    `intervals=False` leaves them out (the simulations).

    `base_samples`, when given, are the base arm of an A/B run measured beside the head (kind
    "side-by-side", `source` its redacted URL, the same prompts call by call), used instead of
    `base` (None then). A run whose answers have a length is compared at the same work, the
    length beside it (assess/compare/same_work.py), and what changed is named (`parts`, `cause`).

    Only the numbers in `gated` (those with a budget; every number when None) are tested: the
    others are shown beside their base. A regression still undecided is not a regression, unless
    `on_undecided` is "fail" (counted as one, `by_policy`); when the run stopped early because a
    check had already failed it (`stopped_early`), it was not needed and is said so.
    """
    final = alpha or look_alpha(0, last=True)
    side_by_side = base_samples is not None
    if base_samples is not None:
        base_numbers = numbers_of(base_samples)
    elif base is not None:
        base_samples, base_numbers = base.samples, base.numbers
    else:
        raise ValueError("compare needs a base run or the base arm's samples")
    same = SameWork(samples, base_samples, concurrency=concurrency, paired=side_by_side)
    parts = same.parts(limit) if same.applies else ()
    reference = _Base(
        samples,
        base_samples,
        base_numbers,
        limit,
        final,
        same=same,
        cause=what_changed(parts),
        outcomes=outcomes,
        looks=looks,
        stopped_early=stopped_early,
        on_undecided=on_undecided,
        intervals=intervals,
    )
    deltas = held_against(reference, numbers, gated)
    return BaselineCheck(
        status="compared",
        kind="side-by-side" if side_by_side else "earlier-run",
        source=source,
        test=SAME_WORK_TEST_NAME if same.applies else TEST_NAME,
        max_relative=limit.relative,
        max_absolute=limit.absolute,
        deltas=deltas,
        parts=parts,
        length=reference.length,
    )


class _Base(Reference):
    """A base's calls as the reference: the base arm of an A/B run, or an earlier run's. Each
    number is tested by `judge_number` on the calls of the look that decided it (`looks`), else
    on every call at `final`; one still undecided follows `on_undecided`."""

    one_call = "one call each"
    order = (*LATENCIES, *STREAMED, "error_rate")

    def __init__(
        self,
        samples: Sequence[Sample],
        base_samples: Sequence[Sample],
        base_numbers: Numbers,
        limit: RegressionLimit,
        final: Alphas,
        *,
        same: SameWork,
        cause: str,
        outcomes: Mapping[str, Regression] | None,
        looks: Mapping[str, Look] | None,
        stopped_early: bool,
        on_undecided: str,
        intervals: bool,
    ) -> None:
        self.samples, self.base_samples, self.base_numbers = samples, base_samples, base_numbers
        self.limit, self.final, self.same, self.cause = limit, final, same, cause
        self.outcomes, self.looks, self.intervals = outcomes, looks, intervals
        self.stopped_early, self.on_undecided = stopped_early, on_undecided
        self.side_by_side = same.paired
        self.length: PartDelta | None = None  # the answers' length, once a test weighed it

    def base(self, number: str) -> float | None:
        value: float | None = getattr(self.base_numbers, number)
        return value

    def lacks(self, number: str) -> bool:
        return self.base(number) is None

    def holds(self, number: str) -> bool:
        return not self.lacks(number)

    def no_data(self, number: str, head: float | None, *, tested: bool) -> NumberDelta:
        if number in STREAM_COMPARED and not any(
            s.timings.first_token is not None for s in self.base_samples
        ):
            # The base did not stream (another format or request): there is no first token
            # or time per token to compare with, which is no failure of the base's calls.
            note = "not tested: the base's answers were not streamed"
            return NumberDelta(number=number, base=None, head=head, note=note)
        if head is not None and tested and number in CALL_KINDS:
            # A comparison with no data on one side is not a comparison: undecided, and the
            # undecided policy says whether that fails the run.
            missing = no_base_data(number, self.base_samples, self.side_by_side)
            return self._delta(number, head, Regression.UNDECIDED, None, missing=missing)
        return NumberDelta(
            number=number, base=self.base(number), head=head, note="no data on one side"
        )

    def too_few(self, number: str, head: float) -> NumberDelta:
        if number in CALL_KINDS:
            missing = too_few_calls(number, self.samples, self.base_samples)
            return self._delta(number, head, Regression.UNDECIDED, None, missing=missing)
        return NumberDelta(
            number=number,
            base=self.base(number),
            head=head,
            note="too few calls to tell from noise",
        )

    def _look(self, number: str) -> Look:
        """The calls and alphas `number` is tested at: those of the look that decided it."""
        if (
            self.outcomes is not None
            and number in self.outcomes
            and self.looks
            and number in self.looks
        ):
            return self.looks[number]
        return Look(len(self.samples), len(self.base_samples), self.final)

    def test(self, number: str, head: float) -> NumberDelta | None:
        look = self._look(number)
        judged = judge_number(
            number,
            self.samples[: look.head_calls],
            self.base_samples[: look.base_calls],
            self.limit,
            look.alpha,
            concurrency=self.same.concurrency,
            paired=self.side_by_side,
            interval=self.intervals,
        )
        if judged is None:
            return None
        outcome, note = judged.outcome, ""
        if number == "error_rate" and all(s.ok for s in (*self.samples, *self.base_samples)):
            note = "no failure on either side"
        if (
            self.outcomes is not None
            and self.outcomes.get(number) is Regression.REGRESSED
            and outcome is not Regression.REGRESSED
        ):
            # Decided at a look on calls it no longer has (a result file judged again in one
            # look): the look's decision stands, said with the interval of every call.
            outcome = self.outcomes[number]
        if judged.length_outcome is not None and self.length is None:
            self.length = _length_part(self.same, self.final, self.limit)
        return self._delta(number, head, outcome, judged, note=note, look=look)

    def _delta(
        self,
        number: str,
        head: float,
        outcome: Regression,
        judged: Judged | None,
        *,
        note: str = "",
        missing: str = "",
        look: Look | None = None,
    ) -> NumberDelta:
        """The row of a number tested (`judged`), or left undecided for `missing` data; an
        undecided one said as the policy decides it."""
        by_policy = False
        if outcome is Regression.UNDECIDED and not note:
            why = "undecided: nothing to compare with" if missing else "undecided at the cap"
            if self.stopped_early:
                note = "undecided: not needed, the run had already failed"
            elif self.on_undecided == "fail":
                note = f"{why}: counted as a regression by policy"
                by_policy = True
            else:
                note = (
                    f"{why}: not called a regression (on-undecided-regression: pass)"
                    + _smallest_caught(judged, self.limit)
                )
        by_length = judged is not None and judged.by_length and outcome is Regression.REGRESSED
        if by_length and not note:
            note = _longer_note(self.length)
        same_work = judged is not None and judged.same_work
        halved = judged is not None and judged.length_outcome is not None
        tested_at = look or self._look(number)
        regressed_alpha = tested_at.alpha.regressed / (2 if halved else 1)
        return NumberDelta(
            number=number,
            base=self.base(number),
            head=head,
            regressed=outcome is Regression.REGRESSED or by_policy,
            note=note,
            interval=None if judged is None else judged.interval,
            decided=outcome is not Regression.UNDECIDED,
            outcome=outcome.value,
            by_policy=by_policy,
            same_work=same_work,
            interval_levels=None
            if judged is None
            else (1 - regressed_alpha, 1 - tested_at.alpha.within),
            calls=None if judged is None else (tested_at.head_calls, tested_at.base_calls),
            cause=self.cause if halved or same_work else "",
            estimate=None if judged is None else judged.estimate,
            missing=missing or None,
            by_length=by_length,
        )


def _longer_note(length: PartDelta | None) -> str:
    """ "answers 22 % longer (x1.15 to x1.30)": what regressed a row by its answers' length,
    in the words its reason leads with (its own p95 may have fallen: the issue's "warm p95
    1.10 s -> 1.01 s (-8 %)" FAILed a run whose answers were 25 % longer)."""
    if length is None or length.ratio is None:
        return "answers longer beyond the limit"
    low, high = length.interval or (None, None)
    shown = "" if low is None or high is None else f" ({fmt_ratio(low)} to {fmt_ratio(high)})"
    return f"answers {fmt_change(length.ratio - 1).lstrip('+')} longer{shown}"


def _smallest_caught(judged: Judged | None, limit: RegressionLimit) -> str:
    """ "; it would have caught about x1.18 or more": the regression this run's spread could have
    told from noise (the limit, widened by how far the interval's low side lies under the
    estimate), or nothing when there is no estimate or low side to read it from."""
    if judged is None or judged.interval is None or limit.relative is None:
        return ""
    low, ratio = judged.interval[0], judged.ratio
    if low is None or ratio is None or low <= 0 or ratio <= 0:
        return ""
    caught = (1 + limit.relative) * ratio / low
    return f"; at this spread it would have caught about x{caught:.2f} or more"


def _length_part(same: SameWork, alpha: Alphas, limit: RegressionLimit) -> PartDelta | None:
    """The answers' length against the limit on every call, at the last look's alphas (the
    "regressed" side halved: the same work's test takes the other half)."""
    found = same.length_test(Alphas(alpha.regressed / 2, alpha.within))
    if found is None:
        return None
    relative = limit.relative if limit.relative is not None else 0.10
    parts = {p.part: p for p in same.parts(limit)}
    shown = parts.get("length")
    return PartDelta(
        part="length",
        unit="tokens" if same.unit == "tokens" else "bytes",
        base=None if shown is None else shown.base,
        head=None if shown is None else shown.head,
        ratio=found.ratio,
        interval=(found.low, found.high),
        moved="unclear" if shown is None else shown.moved,
        n=found.n,
        paired=found.paired,
        outcome=found.against(1 + relative).value,
    )


def missing_baseline(source: str, status: str, message: str) -> BaselineCheck:
    """A check that could not compare: the reports say so plainly."""
    return BaselineCheck(
        status="missing" if status == "missing" else "no-match",
        source=source,
        test=TEST_NAME,
        message=message,
    )


@dataclass(frozen=True)
class BaselinePlan:
    """A baseline loaded and matched to the targets before anything is measured.

    `runs` is None when no file was found at `source` (a first run, or a cache miss): the
    results then say so plainly instead of passing silently.
    """

    source: str
    limit: RegressionLimit
    runs: Mapping[str, RunResult | None] | None


def baseline_for(plan: BaselinePlan, target: str) -> RunResult | BaselineCheck:
    """The plan's baseline run of `target`, or the check that says why there is none (the
    reports say so plainly: a missing baseline never passes silently)."""
    if plan.runs is None:
        return missing_baseline(
            plan.source, "missing", f"no baseline file at {plan.source} (a first run?)"
        )
    base = plan.runs.get(target)
    if base is None:
        known = ", ".join(sorted(name for name in plan.runs if plan.runs[name] is not None))
        return missing_baseline(
            plan.source,
            "no-match",
            f"{plan.source} holds no run of {target!r}"
            + (f" (its runs: {known})" if known else ""),
        )
    return base
