"""Regressions against a baseline: an earlier run's JSON, compared number by number.

A number regresses only when both hold:

1. it is worse by more than every limit given (`--max-regression 20%`, `200ms` or `20%,200ms`;
   `10%` when none is given): head > base x (1 + relative) and head - base > absolute;
2. the difference is beyond noise: a one-sided Mann-Whitney U test on the two runs' samples of
   that number's phase (warm calls for warm p50/p95, the burst for concurrent p95, first-token
   times for first-token p95) gives p < ALPHA; for the error rate, a one-sided Fisher exact test
   on the failed and successful call counts.

Cold start is one call on each side: no test can tell one call from noise, so it is shown and
never called a regression. The figures behind ALPHA (false alarms and misses on simulated
lognormal latencies) are in tests/test_baseline.py and docs/workflows.md.

Both tests are pure functions in significance.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from latency_gate.assess.significance import fisher_greater, mann_whitney_greater, min_p_value
from latency_gate.assess.stats import first_tokens, latencies
from latency_gate.config import NOT_COMPARED, Target
from latency_gate.config.regression import RegressionLimit
from latency_gate.config.target import comparable_settings
from latency_gate.errors import ConfigError, InputProblem
from latency_gate.models import BaselineCheck, CallPhase, NumberDelta, Numbers, RunResult, Sample

__all__ = [
    "ALPHA",
    "TEST_NAME",
    "BaselinePlan",
    "baseline_check",
    "compare",
    "config_differences",
    "match_baseline",
    "missing_baseline",
]

ALPHA = 0.01
TEST_NAME = (
    "one-sided Mann-Whitney U on the calls' latencies (Fisher's exact test for the error rate), "
    f"alpha = {ALPHA}"
)


_NUMBERS: tuple[tuple[str, Callable[[Sequence[Sample]], list[float]] | None], ...] = (
    ("cold_start", None),
    ("warm_p50", lambda s: latencies(s, CallPhase.WARM)),
    ("warm_p95", lambda s: latencies(s, CallPhase.WARM)),
    ("concurrent_p95", lambda s: latencies(s, CallPhase.CONCURRENT)),
    ("ttft_p95", first_tokens),
    ("error_rate", None),
)


def config_differences(
    head: Mapping[str, object], base: Mapping[str, object]
) -> list[tuple[str, object, object]]:
    """(setting, base value, head value) for each compared setting that differs."""
    if isinstance(base.get("url"), str):  # older result files masked query values as %2A%2A%2A
        base = {**base, "url": str(base["url"]).replace("=%2A%2A%2A", "=***")}
    head, base = comparable_settings(head), comparable_settings(base)
    keys = [k for k in dict.fromkeys([*base, *head]) if k not in NOT_COMPARED]
    return [(k, base.get(k), head.get(k)) for k in keys if base.get(k) != head.get(k)]


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
    base: RunResult,
    limit: RegressionLimit,
    source: str,
) -> BaselineCheck:
    """Every number of a run (its `samples` and `numbers`) against `base`: values, delta, the
    test's p and the outcome."""
    deltas = []
    for number, pick in _NUMBERS:
        base_value = getattr(base.numbers, number)
        head_value = getattr(numbers, number)
        if number == "ttft_p95" and base_value is None and head_value is None:
            continue
        p_value: float | None = None
        note = ""
        if base_value is None or head_value is None:
            note = "no data on one side"
        elif number == "cold_start":
            note = "one call each: cannot be told from noise, not gated"
        elif number == "error_rate":
            p_value = fisher_greater(
                sum(not s.ok for s in samples),
                len(samples),
                sum(not s.ok for s in base.samples),
                len(base.samples),
            )
        elif pick is not None:
            head_values, base_values = pick(samples), pick(base.samples)
            p_value = mann_whitney_greater(head_values, base_values)
            if min_p_value(len(head_values), len(base_values)) >= ALPHA:
                note = "too few calls to tell from noise"
        worse = (
            base_value is not None
            and head_value is not None
            and limit.exceeded(number, base_value, head_value)
        )
        beyond_noise = p_value is not None and p_value < ALPHA
        if worse and not beyond_noise and not note:
            note = "worse, but within noise"
        elif beyond_noise and not worse and head_value is not None and base_value is not None:
            note = "slower beyond noise, but within the limit" if head_value > base_value else ""
        deltas.append(
            NumberDelta(
                number=number,
                base=base_value,
                head=head_value,
                p_value=p_value,
                regressed=worse and beyond_noise,
                note=note,
            )
        )
    return BaselineCheck(
        status="compared",
        source=source,
        test=TEST_NAME,
        max_relative=limit.relative,
        max_absolute=limit.absolute,
        deltas=tuple(deltas),
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


def baseline_check(
    plan: BaselinePlan, target: str, samples: Sequence[Sample], numbers: Numbers
) -> BaselineCheck:
    """A run of `target` against the plan's baseline, or the reason there is none."""
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
    return compare(samples, numbers, base, plan.limit, plan.source)
