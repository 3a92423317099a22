"""Regressions at the same work, and what changed: an LLM call's latency is mostly its answer's
length, so head and base are compared on the same work and the length on its own.

For a whole-call percentile (warm p50/p95, concurrent p95) of a run whose answers have a length
(assess/numbers/work.py: output tokens, or a body's bytes), two tests decide together:

- **the same work**: the percentile of each call's latency over what its length predicts (a
  line of that kind's calls whose slopes are fitted within each arm, an intercept per arm, so
  that a head slower on every call stays slower whatever its answers' length; a burst's calls
  also on their burst's mean length), by the exact permutation test of
  assess/compare/regression.py at the limit. Its noise is the endpoint's speed alone, not the
  spread of the answers' lengths. Where the arms' lengths do not overlap, or longer answers
  are not slower within the arms, the calls are compared as they are (`at_same_work`);
- **the answers' length**: the geometric mean of the pairs' length ratios (the head's i-th call
  and the base's i-th got the same prompt: measure/engine.py), by Student's t, paired; unpaired
  (Welch) against an earlier run, whose prompts were others.

A number regressed when either test shows it beyond the limit (each at half the number's alpha,
so that the two together keep it); it did not when both show it within; else it is undecided.
Longer answers are a slowdown a user feels: a whole-call number still regresses on them, and the
report names the length as the cause.

What changed (`parts`): the answers' length, the first token and the time per token (warm
calls: the model's own speed, not the queue's) each as a ratio head / base with an interval,
named as moved only when the interval lies wholly beyond a margin of half the limit. That names
"answers 48 % longer; time per token and first token unchanged".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from latency_gate.assess.compare.regression import (
    Alphas,
    PercentileRegression,
    Regression,
    percentile_regression,
)
from latency_gate.assess.maths.student_t import t_quantile
from latency_gate.assess.numbers.work import (
    Work,
    adjusted,
    comparable,
    first_token,
    length,
    length_unit,
    pairs,
    per_token,
    work_of,
)
from latency_gate.config.regression import RegressionLimit
from latency_gate.formatting import fmt_duration
from latency_gate.models import CallPhase, PartDelta, Sample

__all__ = [
    "NAME_ALPHA",
    "RatioTest",
    "SameWork",
    "combine",
    "ratio_test",
    "what_changed",
]

# One-sided error of naming a part as moved (each side), tested once at the end of the run.
NAME_ALPHA = 0.01
# A part is named as moved only beyond this share of the limit (half of it): the time per token
# of a longer answer grows a little with its context, which is not what changed.
NAME_MARGIN_SHARE = 0.5
_PHASES = {"warm_p50": CallPhase.WARM, "warm_p95": CallPhase.WARM}


@dataclass(frozen=True)
class RatioTest:
    """The geometric mean ratio head / base of a per-call value and its interval, each side at
    its own one-sided error (None sides: too few calls)."""

    ratio: float
    low: float | None
    high: float | None
    n: int
    paired: bool

    def against(self, limit: float) -> Regression:
        """Regressed when the interval lies above `limit` (a ratio), not regressed when it lies
        at or under it, undecided otherwise."""
        if self.low is not None and self.low > limit:
            return Regression.REGRESSED
        if self.high is not None and self.high <= limit:
            return Regression.NOT_REGRESSED
        return Regression.UNDECIDED


def _mean_sd(values: Sequence[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def ratio_test(
    head: Sequence[float],
    base: Sequence[float],
    paired: Sequence[tuple[float, float]] | None,
    *,
    low_alpha: float,
    high_alpha: float,
) -> RatioTest | None:
    """Head / base of a positive per-call value, in log space: the mean of the pairs' log ratios
    by Student's t when `paired` is given (at least 2 pairs), else the difference of the two
    means of logs by Welch's t. The low side at one-sided `low_alpha`, the high at `high_alpha`.
    None with fewer than 2 values a side."""
    if paired is not None and len(paired) >= 2:
        logs = [math.log(h / b) for h, b in paired if h > 0 and b > 0]
        if len(logs) < 2:
            return None
        centre, sd = _mean_sd(logs)
        error, df, n, is_paired = sd / math.sqrt(len(logs)), len(logs) - 1.0, len(logs), True
    else:
        head_logs = [math.log(v) for v in head if v > 0]
        base_logs = [math.log(v) for v in base if v > 0]
        if len(head_logs) < 2 or len(base_logs) < 2:
            return None
        (m_h, s_h), (m_b, s_b) = _mean_sd(head_logs), _mean_sd(base_logs)
        v_h, v_b = s_h**2 / len(head_logs), s_b**2 / len(base_logs)
        centre, error = m_h - m_b, math.sqrt(v_h + v_b)
        denominator = v_h**2 / (len(head_logs) - 1) + v_b**2 / (len(base_logs) - 1)
        df = (v_h + v_b) ** 2 / denominator if denominator > 0 else len(head_logs) + len(base_logs)
        n, is_paired = min(len(head_logs), len(base_logs)), False
    if error == 0:
        return RatioTest(math.exp(centre), math.exp(centre), math.exp(centre), n, is_paired)
    low = centre - t_quantile(1 - low_alpha, df) * error
    high = centre + t_quantile(1 - high_alpha, df) * error
    return RatioTest(math.exp(centre), math.exp(low), math.exp(high), n, is_paired)


def combine(speed: Regression, length: Regression | None) -> Regression:
    """A whole-call number's outcome from its test at the same work and the length's."""
    if length is None:
        return speed
    if Regression.REGRESSED in (speed, length):
        return Regression.REGRESSED
    if speed is Regression.NOT_REGRESSED and length is Regression.NOT_REGRESSED:
        return Regression.NOT_REGRESSED
    return Regression.UNDECIDED


@dataclass(frozen=True)
class _Part:
    name: str
    unit: str
    value: Callable[[Sample], float | None]
    phases: tuple[CallPhase, ...]


class SameWork:
    """Head's calls against base's, at the same work: the length unit both arms share, the
    calls of each kind with their covariates, and the tests.

    `paired`: the arms got the same prompts call by call (an A/B run), so the pairs' ratios are
    tested; False against an earlier run."""

    def __init__(
        self,
        head: Sequence[Sample],
        base: Sequence[Sample],
        *,
        concurrency: int,
        paired: bool,
    ) -> None:
        self.head, self.base, self.concurrency, self.paired = head, base, concurrency, paired
        head_unit, base_unit = length_unit(head), length_unit(base)
        self.unit = head_unit if head_unit == base_unit else None

    @property
    def applies(self) -> bool:
        """The arms have a length to compare the latency at (tokens, or bytes that vary)."""
        return self.unit is not None

    def lengths_vary(self, number: str) -> bool:
        """Whether the calls of `number`'s kind differ in length within an arm: with every
        answer of an arm the same length (a fixed length, or every answer cut at its cap) the
        line through both arms is fitted on the arms' difference alone, which then reads any
        change of speed as the length's (a run of 64 against 80 tokens gave x0.03 to x21)."""
        phase = _PHASES.get(number, CallPhase.CONCURRENT)
        return any(
            len({c[0] for c in self._work(arm, phase).covariates}) > 1
            for arm in (self.head, self.base)
        )

    def at_same_work(self, number: str) -> bool:
        """Whether `number`'s calls are compared at the same work: their lengths vary within an
        arm (`lengths_vary`), the arms' lengths overlap and longer answers are slower within
        the arms (assess/numbers/work.py, `comparable`). Else the calls are compared as they
        are: a line through arms of lengths apart is an extrapolation, and one that is not
        positive would read a slower head's calls as its shorter answers'."""
        if not self.lengths_vary(number):
            return False
        phase = _PHASES.get(number, CallPhase.CONCURRENT)
        return comparable(self._work(self.head, phase), self._work(self.base, phase))

    def _work(self, samples: Sequence[Sample], phase: CallPhase) -> Work:
        return work_of(samples, phase, self.unit, self.concurrency)

    def regression(
        self,
        number: str,
        q: float,
        limit: RegressionLimit,
        alpha: Alphas,
        *,
        interval: bool = False,
        head_calls: int | None = None,
        base_calls: int | None = None,
    ) -> PercentileRegression | None:
        """The test at the same work of a whole-call percentile (`number`: warm_p50, warm_p95
        or concurrent_p95) on the first `head_calls` and `base_calls` calls (all when None),
        at `alpha` (the caller halves the regressed side: the length's test takes the other
        half)."""
        phase = _PHASES.get(number, CallPhase.CONCURRENT)
        head = self.head[:head_calls] if head_calls is not None else self.head
        base = self.base[:base_calls] if base_calls is not None else self.base
        head_work, base_work = self._work(head, phase), self._work(base, phase)
        if len(head_work.latencies) < 2 or len(base_work.latencies) < 2:
            return None

        def transform(brought: list[float]) -> tuple[list[float], list[float]]:
            head_r, base_r, _ = adjusted(Work(brought, head_work.covariates), base_work)
            return head_r, base_r

        return percentile_regression(
            head_work.latencies,
            base_work.latencies,
            q,
            max_relative=limit.relative,
            max_absolute=limit.absolute,
            alpha=alpha.regressed,
            alpha_within=alpha.within,
            interval=interval,
            relative_transform=transform,
            absolute_transform=transform,
        )

    def length_test(
        self,
        alpha: Alphas,
        *,
        head_calls: int | None = None,
        base_calls: int | None = None,
    ) -> RatioTest | None:
        """The answers' length, head / base, over the warm and burst calls (pairs of the same
        prompt in an A/B run), the low side at alpha.regressed and the high at alpha.within."""
        head = self.head[:head_calls] if head_calls is not None else self.head
        base = self.base[:base_calls] if base_calls is not None else self.base
        return self._ratio(
            head,
            base,
            lambda s: length(s, self.unit) if s.ok else None,
            (CallPhase.WARM, CallPhase.CONCURRENT),
            low_alpha=alpha.regressed,
            high_alpha=alpha.within,
        )

    def _ratio(
        self,
        head: Sequence[Sample],
        base: Sequence[Sample],
        value: Callable[[Sample], float | None],
        phases: tuple[CallPhase, ...],
        *,
        low_alpha: float,
        high_alpha: float,
    ) -> RatioTest | None:
        head_in = [s for s in head if s.phase in phases]
        base_in = [s for s in base if s.phase in phases]
        head_values = [v for s in head_in if (v := value(s)) is not None]
        base_values = [v for s in base_in if (v := value(s)) is not None]
        paired = pairs(head_in, base_in, value) if self.paired else None
        return ratio_test(
            head_values, base_values, paired, low_alpha=low_alpha, high_alpha=high_alpha
        )

    @cached_property
    def _parts(self) -> tuple[_Part, ...]:
        unit = self.unit or ""
        shown = "tokens" if unit == "tokens" else "bytes"
        out = [
            _Part(
                "length",
                shown,
                lambda s: length(s, self.unit) if s.ok else None,
                (CallPhase.WARM, CallPhase.CONCURRENT),
            )
        ]
        if unit == "tokens":
            out += [
                _Part("first_token", "s", first_token, (CallPhase.WARM,)),
                _Part("per_token", "s", per_token, (CallPhase.WARM,)),
            ]
        return tuple(out)

    def parts(self, limit: RegressionLimit) -> tuple[PartDelta, ...]:
        """What changed between the arms: each part's geometric means, head / base and its
        interval (at NAME_ALPHA a side), and whether it moved beyond the margin (half the
        relative limit, or of 10 % with an absolute limit alone)."""
        relative = limit.relative if limit.relative is not None else 0.10
        margin = 1 + NAME_MARGIN_SHARE * relative
        out = []
        for part in self._parts:
            head_values = [
                v for s in self.head if s.phase in part.phases and (v := part.value(s)) is not None
            ]
            base_values = [
                v for s in self.base if s.phase in part.phases and (v := part.value(s)) is not None
            ]
            if not head_values or not base_values:
                continue
            found = self._ratio(
                self.head,
                self.base,
                part.value,
                part.phases,
                low_alpha=NAME_ALPHA,
                high_alpha=NAME_ALPHA,
            )
            moved = "unclear"
            if found is not None:
                moved = _moved(part.name, found, margin)
            out.append(
                PartDelta(
                    part=part.name,
                    unit=part.unit,
                    base=_geometric_mean(base_values),
                    head=_geometric_mean(head_values),
                    ratio=None if found is None else found.ratio,
                    interval=None if found is None else (found.low, found.high),
                    moved=moved,
                    n=0 if found is None else found.n,
                    paired=bool(found and found.paired),
                )
            )
        return tuple(out)


def _geometric_mean(values: Sequence[float]) -> float | None:
    """The geometric mean of the positive values (the ones the ratio test reads; None without
    one): what the part's ratio is a quotient of, so the two figures shown beside it divide to
    it.
    The medians did not: a real llama.cpp A/B of two system prompts said "answers 33 % longer
    (tokens p50 38 to 33)", the pairs' ratios longer where the head's median was shorter."""
    positive = [v for v in values if v > 0]
    return statistics.geometric_mean(positive) if positive else None


def _moved(part: str, found: RatioTest, margin: float) -> str:
    """ "longer"/"shorter" (the length), "slower"/"faster" (a time), "unchanged" when the
    interval lies within the margin both ways, else "unclear"."""
    up, down = ("longer", "shorter") if part == "length" else ("slower", "faster")
    if found.low is not None and found.low > margin:
        return up
    if found.high is not None and found.high < 1 / margin:
        return down
    if (
        found.low is not None
        and found.high is not None
        and found.low >= 1 / margin
        and found.high <= margin
    ):
        return "unchanged"
    return "unclear"


_NAMES = {"length": "answers", "first_token": "first token", "per_token": "time per token"}
_ORDER = ("length", "per_token", "first_token")
_STILL = {"length": "length", "first_token": "first token", "per_token": "time per token"}


def _time(seconds: float) -> str:
    """A part's time: to 0.1 ms under 100 ms (a time per token is a few ms)."""
    return f"{seconds * 1000:.1f} ms" if seconds < 0.1 else fmt_duration(seconds)


def _shown(part: PartDelta) -> str:
    """A part's two geometric means: "36 to 53 tokens", "8.3 ms to 9.1 ms"."""
    if part.base is None or part.head is None:
        return ""
    if part.part == "length":
        return f"{part.base:,.0f} to {part.head:,.0f} {part.unit}"
    return f"{_time(part.base)} to {_time(part.head)}"


def what_changed(parts: Sequence[PartDelta]) -> str:
    """What moved between base and head, in words: "answers 48 % longer (36 to 53 tokens);
    time per token and first token unchanged". Empty without parts."""
    if not parts:
        return ""
    moved, unchanged, unclear = [], [], []
    for part in sorted(parts, key=lambda p: _ORDER.index(p.part)):
        name = _NAMES[part.part]
        if part.moved == "unchanged":
            unchanged.append(_STILL[part.part])
        elif part.moved == "unclear" or part.ratio is None:
            unclear.append(_STILL[part.part])
        else:
            change = abs(part.ratio - 1) * 100
            shown = _shown(part)
            moved.append(f"{name} {change:.0f} % {part.moved}" + (f" ({shown})" if shown else ""))
    said = []
    if moved:
        said.append("; ".join(moved))
    if unchanged:
        said.append(f"{_joined(unchanged)} unchanged")
    if unclear:
        said.append(f"{_joined(unclear)}: the calls cannot tell")
    if not moved:
        said.insert(0, "no part of a call moved on its own")
    return "; ".join(said)


def _joined(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
