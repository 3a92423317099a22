"""A slow creep of main's runs: the trend of a history, beside the head against its spread.

The history rule (history.py) holds the head against the spread of main's newest K runs. That
is right for a pull request: a head that matches main's recent runs did not regress them. But a
number that grows a little every run (2 % a run: 2.16x after 40 runs) never leaves the spread
of the runs just before it, and is never flagged. That regression lives in the trend of the
runs themselves, so a history of at least MIN_TREND_RUNS runs is also tested for one:

- y_i = ln(value) of the runs, oldest first, at positions i = 0 .. K-1; the least-squares
  slope b (the change per run, in log space) and its standard error;
- a creep when b / se > t(K - 2, 1 - TREND_ALPHA) (one-sided: only a number growing), and the
  fitted change across the window, exp(b (K - 1)) - 1, is more than the regression limit
  (10 % by default): growth that is both clear and as large as a regression.

Under runs whose numbers only scatter (log-normal drift between runs, no trend), the test
flags a number in at most TREND_ALPHA of runs (exact for normal scatter in log space;
docs/statistics.md, table (n), with whole simulated runs). The head is not part of it: the
trend is main's, not the change under test's.

A creep warns, it does not fail: the pull request that meets it did not cause it, and a gate
that fails changes for what came before them is switched off. It is said wherever the verdict
is said (`Verdict.undecided`: a note, and a warning annotation in the action).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from latency_gate.assess.maths.student_t import t_quantile
from latency_gate.formatting import fmt_value

__all__ = ["MIN_TREND_RUNS", "TREND_ALPHA", "Creep", "creep", "creep_note"]

TREND_ALPHA = 0.01
MIN_TREND_RUNS = 5


@dataclass(frozen=True)
class Creep:
    """The trend of one number over a history's runs, oldest first."""

    number: str
    runs: int
    per_run: float  # fitted relative change a run: exp(b) - 1
    across: float  # fitted relative change across the window: exp(b (runs - 1)) - 1
    t: float  # b / se
    threshold: float  # the t it had to exceed
    first: float  # the fitted value at the oldest run, seconds
    last: float  # the fitted value at the newest run, seconds
    flagged: bool


def creep(
    number: str,
    values: Sequence[float],
    *,
    max_relative: float = 0.10,
    alpha: float = TREND_ALPHA,
) -> Creep | None:
    """The trend of `values` (the runs' values, oldest first): None with fewer than
    MIN_TREND_RUNS positive values."""
    ys = [math.log(v) for v in values if v > 0]
    k = len(ys)
    if k < MIN_TREND_RUNS:
        return None
    xs = range(k)
    mean_x = (k - 1) / 2
    mean_y = math.fsum(ys) / k
    sxx = math.fsum((x - mean_x) ** 2 for x in xs)
    slope = math.fsum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sxx
    residual = math.fsum(
        (y - mean_y - slope * (x - mean_x)) ** 2 for x, y in zip(xs, ys, strict=True)
    )
    se = math.sqrt(residual / (k - 2) / sxx)
    threshold = _threshold(alpha, k - 2)
    t = math.inf if se == 0 and slope > 0 else (slope / se if se > 0 else 0.0)
    across = math.expm1(slope * (k - 1))
    return Creep(
        number=number,
        runs=k,
        per_run=math.expm1(slope),
        across=across,
        t=t,
        threshold=threshold,
        first=math.exp(mean_y - slope * mean_x),
        last=math.exp(mean_y + slope * mean_x),
        flagged=t > threshold and across > max_relative,
    )


@functools.lru_cache(maxsize=64)
def _threshold(alpha: float, df: int) -> float:
    return t_quantile(1.0 - alpha, df)


def creep_note(found: Creep) -> str:
    """The warning of a creep: "warm p95 crept up over main's last 10 runs: 1.00 s → 1.20 s
    (+2.0 % a run, +20 % across them); a trend of main's runs, not of this change: warned, not
    failed"."""
    label = found.number.replace("_", " ")
    moved = f"{fmt_value(found.first, found.number)} → {fmt_value(found.last, found.number)}"
    return (
        f"{label} crept up over main's last {found.runs} runs: {moved} "
        f"({found.per_run * 100:+.1f} % a run, {found.across * 100:+.0f} % across them; "
        f"t = {found.t:.1f} against {found.threshold:.1f}, one-sided {TREND_ALPHA:g}); a trend "
        "of main's runs, not of this change: warned, not failed"
    )
