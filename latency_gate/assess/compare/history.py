"""Regressions against a history: the head held against the spread of earlier runs (`--history`).

One earlier run as the base reads everything that moved between two runs (the endpoint's load,
the network path, the runner's VM) as a change of the code. A history of K earlier runs of the
same target and settings shows how much a run's numbers move from run to run, and the head is
judged against that spread, drift between runs included.

The rule, for each gated percentile (warm p95 and concurrent p95, warm p50 when it has a budget,
and a streamed answer's first-token p95 and time per token p95 whatever the budget):

- x_i = ln(value) of the K runs that have a value (K >= 3), m their mean, s their sample
  standard deviation, h = ln(head's value);
- regressed when h - ln(1 + max_relative) > m + t(K - 1, 1 - alpha) * s * sqrt(1 + 1/K), with
  alpha = 0.02 one-sided per number and t Student's quantile: the head is above the upper
  prediction bound of one more run from the same log-normal spread, by more than the limit;
- with an absolute limit (`--max-regression 200ms`) the same in seconds (h and x_i the raw
  values): h - absolute > m + t * s * sqrt(1 + 1/K); with both limits, both must be exceeded;
- otherwise "not regressed". A prediction interval has no "undecided": the history is what it
  is, and the head's value either clears the bound or does not.

The report shows the head's ratio to the history's geometric mean (the arithmetic mean with an
absolute limit alone) and the prediction bound as a ratio of it. The error rate: the head's
failures against the pooled failures and calls of the K runs, by the exact conditional test of
two counts (regression.error_rate_regression) at the same alpha. Cold start is one call a run:
shown, never called a regression.

With fewer than 3 usable runs there is no spread to speak of: the reports say so, and the newest
run serves as a single baseline (baseline.compare, whose looks drive sequential sampling as
`--baseline` does). The history comparison itself is made once, on the run's final calls.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from latency_gate.assess.compare.baseline import BaselinePlan
from latency_gate.assess.compare.reference import (
    LATENCIES,
    STREAMED,
    Reference,
    config_differences,
    held_against,
)
from latency_gate.assess.compare.regression import DEFAULT_RELATIVE, error_rate_regression
from latency_gate.assess.maths.student_t import t_quantile
from latency_gate.config import Target
from latency_gate.config.parsing import MAX_DURATION
from latency_gate.config.regression import RegressionLimit
from latency_gate.formatting import plural
from latency_gate.models import (
    BaselineCheck,
    History,
    HistoryRun,
    NumberDelta,
    Numbers,
    RunResult,
    Sample,
)

__all__ = [
    "DEFAULT_SIZE",
    "FUTURE_SLACK",
    "HISTORY_ALPHA",
    "MAX_RUNS",
    "MIN_RUNS",
    "HistoryPlan",
    "Prediction",
    "TargetHistory",
    "earlier_runs",
    "history_check",
    "history_test_name",
    "match_history",
    "predict",
]

HISTORY_ALPHA = 0.02
MIN_RUNS = 3
DEFAULT_SIZE = 10
MAX_RUNS = 1000  # the most --history-size and --history-keep take
# How far past the reader's clock a run of a history may have started: runners' clocks differ
# by seconds; a run dated later is not taken (it would stay "the newest" until that date).
FUTURE_SLACK = 3600.0
Judged = Literal["prediction", "newest", "none"]


@dataclass(frozen=True)
class Prediction:
    """One number of the head against the spread of the history's values."""

    center: float  # geometric mean (arithmetic with an absolute limit alone), seconds
    bound: float  # upper prediction bound of one run's value, seconds, the limit not included
    threshold: float  # what the head had to exceed to regress, seconds
    head: float
    runs: int  # values behind it
    regressed: bool


def _spread(values: Sequence[float], alpha: float) -> tuple[float, float]:
    """(mean, the prediction margin t(K-1, 1-alpha) * s * sqrt(1 + 1/K)) of `values`."""
    k = len(values)
    mean = math.fsum(values) / k
    s = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (k - 1))
    return mean, t_quantile(1.0 - alpha, k - 1) * s * math.sqrt(1.0 + 1.0 / k)


def _exp(x: float) -> float:
    """e**x, infinite where it would overflow."""
    return math.exp(x) if x < _LOG_MAX else math.inf


_LOG_MAX = math.log(sys.float_info.max)


def predict(
    head: float,
    history: Sequence[float],
    *,
    max_relative: float | None = None,
    max_absolute: float | None = None,
    alpha: float = HISTORY_ALPHA,
) -> Prediction | None:
    """The rule of this module for one number: `head`'s value against the `history` of values.

    With neither limit, max_relative is DEFAULT_RELATIVE (10 %), as for a single baseline.
    Returns None with fewer than MIN_RUNS values (positive ones, when a relative limit asks for
    logs).
    """
    if max_relative is None and max_absolute is None:
        max_relative = DEFAULT_RELATIVE
    thresholds: list[float] = []
    center = bound = math.nan
    if max_relative is not None:
        logs = [math.log(v) for v in history if v > 0]
        if len(logs) < MIN_RUNS:
            return None
        mean, margin = _spread(logs, alpha)
        # In log space until the end: runs of 5e-324 s and 86,399 s put the bound past floats.
        center, bound = _exp(mean), _exp(mean + margin)
        thresholds.append(bound * (1.0 + max_relative))
    if max_absolute is not None:
        if len(history) < MIN_RUNS:
            return None
        mean, margin = _spread(history, alpha)
        if max_relative is None:
            center, bound = mean, mean + margin
        thresholds.append(mean + margin + max_absolute)
    threshold = max(thresholds)
    return Prediction(
        center=center,
        bound=bound,
        threshold=threshold,
        head=head,
        runs=len(history),
        regressed=head > threshold,
    )


@dataclass(frozen=True)
class TargetHistory:
    """A target's usable earlier runs, newest first (at most the plan's size), and how many of
    its runs were skipped for having been measured with other settings."""

    runs: tuple[RunResult, ...] = ()
    other_settings: int = 0


@dataclass(frozen=True)
class HistoryPlan:
    """A history folder read and matched to the targets before anything is measured.

    `targets` is None when there was no folder at `source` (a first run, or a cache miss).
    `unreadable`: "file: why" for each file of the folder that was skipped.
    """

    source: str
    limit: RegressionLimit
    size: int = DEFAULT_SIZE
    targets: Mapping[str, TargetHistory] | None = None
    unreadable: tuple[str, ...] = ()
    alpha: float = HISTORY_ALPHA

    def of(self, target: str) -> TargetHistory:
        return (self.targets or {}).get(target, TargetHistory())

    def as_baseline(self) -> BaselinePlan:
        """The single baselines of the targets with fewer than MIN_RUNS usable runs (their
        newest): what the gate's looks compare with, as `--baseline` would."""
        names = self.targets or {}
        return BaselinePlan(
            self.source,
            self.limit,
            {
                name: history.runs[0] if 0 < len(history.runs) < MIN_RUNS else None
                for name, history in names.items()
            },
        )

    def warnings(self) -> tuple[str, ...]:
        """What the reports say about the folder itself: each file skipped, by name."""
        return tuple(
            f"history: skipped {entry}; a history folder is a cache, the run goes on without it"
            for entry in self.unreadable
        )


def match_history(
    targets: Sequence[Target], runs: Sequence[RunResult], size: int
) -> dict[str, TargetHistory]:
    """Each target's runs of `runs`: the same name and comparable settings (the rule of
    `--baseline`, reference.config_differences), newest first by start, the newest `size`.
    A run of other settings is skipped and counted, not an error."""
    matched: dict[str, TargetHistory] = {}
    for target in targets:
        mine = [run for run in runs if run.target == target.name]
        settings = target.comparable()
        usable = [run for run in mine if not config_differences(settings, run.config)]
        usable.sort(key=lambda run: run.started_at, reverse=True)
        matched[target.name] = TargetHistory(tuple(usable[:size]), len(mine) - len(usable))
    return matched


def earlier_runs(
    target: str, baseline: BaselinePlan | None, history: HistoryPlan | None
) -> tuple[list[RunResult], bool] | None:
    """The earlier runs a search's figure (the capacity, the goodput) is compared with, and
    whether they are a history's (several runs, their median): the history's runs when it has
    MIN_RUNS or more, else its newest (as the rest of the comparison does), else the baseline
    run. None when there is no earlier run at all."""
    if history is not None:
        runs = list(history.of(target).runs)
        if len(runs) >= MIN_RUNS:
            return runs, True
        return (runs[:1], False) if runs else None
    if baseline is None or baseline.runs is None:
        return None
    base = baseline.runs.get(target)
    return None if base is None else ([base], False)


def history_test_name(alpha: float = HISTORY_ALPHA) -> str:
    """The method, as the reports name it."""
    return (
        "a prediction interval of each gated percentile from the runs' spread in log space "
        f"(Student's t, one-sided alpha {alpha:g}); the error rate by the exact conditional test "
        "of two counts against the runs' pooled calls"
    )


def _evidence(plan: HistoryPlan, history: TargetHistory, judged: Judged) -> History:
    return History(
        judged=judged,
        runs=tuple(
            HistoryRun(
                started_at=run.started_at,
                numbers=run.numbers,
                calls=len(run.samples),
                failed=sum(not s.ok for s in run.samples),
                commit=run.commit,
                goodput=run.goodput.found if run.goodput and run.goodput.search else None,
            )
            for run in reversed(history.runs)
        ),
        size=plan.size,
        other_settings=history.other_settings,
        unreadable=plan.unreadable,
        alpha=plan.alpha if judged == "prediction" else None,
    )


def _skipped(plan: HistoryPlan, history: TargetHistory) -> str:
    """ "skipped: 2 runs of other settings, 1 unreadable file", or ""."""
    parts = []
    if history.other_settings:
        runs = history.other_settings
        parts.append(f"{plural(runs, 'run')} of other settings")
    if plan.unreadable:
        files = len(plan.unreadable)
        parts.append(plural(files, "unreadable file"))
    return f"skipped: {', '.join(parts)}" if parts else ""


def history_check(
    plan: HistoryPlan,
    target: str,
    samples: Sequence[Sample],
    numbers: Numbers,
    *,
    gated: Collection[str] | None = None,
    newest: BaselineCheck | None = None,
) -> BaselineCheck:
    """A run of `target` against its history: the prediction rule with MIN_RUNS runs or more;
    with fewer, `newest` (the comparison with the newest run, baseline.compare) said to be
    that; with none, a check that says so. Only the numbers in `gated` are tested (every one
    when None), as for a single baseline."""
    history = plan.of(target)
    k = len(history.runs)
    if k == 0:
        why = (
            f"no history folder at {plan.source} (a first run?)"
            if plan.targets is None
            else f"no usable run of {target!r} in the history at {plan.source}"
            + (f" ({_skipped(plan, history)})" if _skipped(plan, history) else "")
        )
        return BaselineCheck(
            status="missing",
            source=plan.source,
            test=history_test_name(plan.alpha),
            message=why,
            history=_evidence(plan, history, "none"),
        )
    if k < MIN_RUNS:
        said = (
            f"history: {plural(k, 'usable run')}, fewer than {MIN_RUNS}: compared "
            "with the newest one only; drift between runs is not accounted for"
            + (f" ({_skipped(plan, history)})" if _skipped(plan, history) else "")
        )
        base = newest or BaselineCheck(status="no-match", source=plan.source)
        return base.model_copy(
            update={
                "source": f"{plan.source} (its newest run)",
                "message": said,
                "history": _evidence(plan, history, "newest"),
            }
        )
    deltas = held_against(_Runs(plan, history, samples), numbers, gated)
    return BaselineCheck(
        status="compared",
        source=plan.source,
        test=history_test_name(plan.alpha),
        max_relative=plan.limit.relative,
        max_absolute=plan.limit.absolute,
        deltas=deltas,
        message=_skipped(plan, history),
        history=_evidence(plan, history, "prediction"),
    )


class _Runs(Reference):
    """A history's runs as the reference: each number held against the prediction bound of
    their values, the error rate against their pooled calls."""

    one_call = "one call a run"
    # The five first, as the history table reads, then a stream's.
    order = (*LATENCIES, "error_rate", *STREAMED)

    def __init__(
        self, plan: HistoryPlan, history: TargetHistory, samples: Sequence[Sample]
    ) -> None:
        self.plan, self.history, self.samples = plan, history, samples

    def _values(self, number: str) -> list[float]:
        return [v for run in self.history.runs if (v := getattr(run.numbers, number)) is not None]

    def _pooled(self) -> tuple[int, int]:
        """The failed calls and the calls of every run."""
        calls = sum(len(run.samples) for run in self.history.runs)
        failed = sum(not s.ok for run in self.history.runs for s in run.samples)
        return failed, calls

    def holds(self, number: str) -> bool:
        return any(getattr(run.numbers, number) is not None for run in self.history.runs)

    def base(self, number: str) -> float | None:
        center = _center(self._values(number), self.plan.limit)
        if number != "error_rate":
            return center
        failed, calls = self._pooled()
        return failed / calls if calls else center

    def no_data(self, number: str, head: float | None, *, tested: bool) -> NumberDelta:
        return NumberDelta(
            number=number, base=self.base(number), head=head, note="no data in this run"
        )

    def too_few(self, number: str, head: float) -> NumberDelta:
        note = f"fewer than {MIN_RUNS} earlier runs have a value: not tested"
        return NumberDelta(number=number, base=self.base(number), head=head, note=note)

    def test(self, number: str, head: float) -> NumberDelta | None:
        if number == "error_rate":
            return self._error_rate(head)
        plan = self.plan
        found = predict(
            head,
            self._values(number),
            max_relative=plan.limit.relative,
            max_absolute=plan.limit.absolute,
            alpha=plan.alpha,
        )
        if found is None:
            return None
        if not found.threshold <= MAX_DURATION:
            # No call lasts longer: the test could not have called any value a regression.
            note = (
                "not tested: the earlier runs spread so widely that a regression would have to "
                "exceed 24 h, the longest a call can take"
            )
            return NumberDelta(number=number, base=found.center, head=head, note=note)
        return NumberDelta(
            number=number,
            base=found.center,
            head=head,
            regressed=found.regressed,
            outcome="regressed" if found.regressed else "not regressed",
            bound=found.bound,
            threshold=found.threshold,
        )

    def _error_rate(self, head: float) -> NumberDelta:
        failed, calls = self._pooled()
        found = error_rate_regression(
            sum(not s.ok for s in self.samples),
            max(len(self.samples), 1),
            failed,
            max(calls, 1),
            max_relative=self.plan.limit.relative or 0.0,
            alpha=self.plan.alpha,
        )
        return NumberDelta(
            number="error_rate",
            base=self.base("error_rate"),
            head=head,
            regressed=found.outcome.value == "regressed",
            note=found.note,
            interval=(found.ratio_interval.low, found.ratio_interval.high),
            decided=found.outcome.value != "undecided",
            outcome=found.outcome.value,
        )


def _center(values: Sequence[float], limit: RegressionLimit) -> float | None:
    """The history's typical value: the geometric mean (the mean with an absolute limit alone,
    or when a value is not positive)."""
    if not values:
        return None
    if (limit.relative is not None or limit.absolute is None) and min(values) > 0:
        return math.exp(math.fsum(math.log(v) for v in values) / len(values))
    return math.fsum(values) / len(values)
