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

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from latency_gate.config import NOT_COMPARED, Target, parse_duration
from latency_gate.errors import ConfigError, InputProblem
from latency_gate.models import (
    SCHEMA_VERSION,
    BaselineCheck,
    CallPhase,
    NumberDelta,
    RunResult,
    Sample,
    Verdict,
)
from latency_gate.significance import fisher_greater, mann_whitney_greater, min_p_value

__all__ = [
    "ALPHA",
    "DEFAULT_LIMIT",
    "TEST_NAME",
    "BaselinePlan",
    "RegressionLimit",
    "apply_baseline",
    "apply_plan",
    "compare",
    "config_differences",
    "dump_runs",
    "load_runs",
    "match_baseline",
    "missing_baseline",
    "parse_max_regression",
    "parse_runs",
    "plan_baseline",
]

ALPHA = 0.01
TEST_NAME = (
    "one-sided Mann-Whitney U on the calls' latencies (Fisher's exact test for the error rate), "
    f"alpha = {ALPHA}"
)


# --- the JSON files: one run, or several ----------------------------------------------------


def dump_runs(results: Sequence[RunResult]) -> str:
    """The JSON result document: one run as a RunResult; several as
    {"schema_version": 1, "runs": [RunResult, ...]}."""
    if len(results) == 1:
        return results[0].model_dump_json(indent=2) + "\n"
    runs = ",\n".join(r.model_dump_json(indent=2) for r in results)
    return f'{{\n"schema_version": {SCHEMA_VERSION},\n"runs": [\n{runs}\n]\n}}\n'


def parse_runs(text: str, source: str) -> list[RunResult]:
    """Runs from a JSON result document of either shape (a bare list is accepted too).

    Raises ConfigError naming `source` when the text is not such a document.
    """
    try:
        data: Any = json.loads(text)
    except ValueError as exc:
        raise ConfigError.single(source, f"not a JSON result file: {exc}") from None
    if isinstance(data, dict) and "runs" in data:
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ConfigError.single(
                source, f"schema_version {version!r} is not {SCHEMA_VERSION}, the one this reads"
            )
        items = data["runs"]
    else:
        items = data if isinstance(data, list) else [data]
    if not isinstance(items, list) or not items:
        raise ConfigError.single(source, "holds no runs")
    runs = []
    for index, item in enumerate(items):
        try:
            runs.append(RunResult.model_validate(item))
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"]) or "document"
            prefix = f"run {index}: " if len(items) > 1 else ""
            raise ConfigError.single(
                source,
                f"not a latency-gate result ({prefix}{where}: {first['msg']}; "
                f"{exc.error_count()} problem(s))",
            ) from None
    return runs


def load_runs(path: Path, option: str) -> list[RunResult]:
    """`parse_runs` of a file; a file that cannot be read is a ConfigError naming `option`."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError.single(option, f"cannot read {str(path)!r}: {reason}") from None
    return parse_runs(text, f"{option} {path}")


# --- limits ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegressionLimit:
    """How much worse a number may get. Both limits, when given, must be exceeded."""

    relative: float | None = None
    absolute: float | None = None

    def exceeded(self, number: str, base: float, head: float) -> bool:
        if head <= base:
            return False
        if self.relative is not None and base > 0 and head <= base * (1 + self.relative):
            return False
        # A duration says nothing about a rate: only the relative limit applies there.
        return not (
            self.absolute is not None
            and not number.endswith("rate")
            and head - base <= self.absolute
        )

    def describe(self) -> str:
        parts = []
        if self.relative is not None:
            parts.append(f"{self.relative * 100:g} %")
        if self.absolute is not None:
            parts.append(f"{self.absolute * 1000:g} ms")
        return " and ".join(parts) or "any amount"


DEFAULT_LIMIT = RegressionLimit(relative=0.10)
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*$")


def parse_max_regression(text: str) -> RegressionLimit:
    """`20%`, `200ms`, or both separated by a comma; ValueError says what was expected."""
    relative: float | None = None
    absolute: float | None = None
    parts = [part for part in text.split(",") if part.strip()]
    if not parts or len(parts) > 2:
        raise ValueError(f"expected 20%, 200ms or 20%,200ms; got {text!r}")
    for part in parts:
        match = _PERCENT.match(part)
        if match:
            if relative is not None:
                raise ValueError(f"two relative limits in {text!r}")
            relative = float(match[1]) / 100
            continue
        try:
            seconds = parse_duration(part)
        except ValueError:
            raise ValueError(
                f"expected a share such as 20% or a duration such as 200ms, got {part.strip()!r}"
            ) from None
        if absolute is not None:
            raise ValueError(f"two absolute limits in {text!r}")
        absolute = seconds
    return RegressionLimit(relative=relative, absolute=absolute)


# --- comparing runs -------------------------------------------------------------------------


def _latencies(samples: Sequence[Sample], phase: CallPhase) -> list[float]:
    return [s.latency for s in samples if s.phase is phase and s.ok and s.latency is not None]


def _first_tokens(samples: Sequence[Sample]) -> list[float]:
    return [
        s.timings.first_token
        for s in samples
        if s.ok and s.phase is not CallPhase.COLD and s.timings.first_token is not None
    ]


_NUMBERS: tuple[tuple[str, Callable[[Sequence[Sample]], list[float]] | None], ...] = (
    ("cold_start", None),
    ("warm_p50", lambda s: _latencies(s, CallPhase.WARM)),
    ("warm_p95", lambda s: _latencies(s, CallPhase.WARM)),
    ("concurrent_p95", lambda s: _latencies(s, CallPhase.CONCURRENT)),
    ("ttft_p95", _first_tokens),
    ("error_rate", None),
)


def config_differences(
    head: Mapping[str, object], base: Mapping[str, object]
) -> list[tuple[str, object, object]]:
    """(setting, base value, head value) for each compared setting that differs."""
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


def compare(head: RunResult, base: RunResult, limit: RegressionLimit, source: str) -> BaselineCheck:
    """Every number of `head` against `base`: values, delta, the test's p and the outcome."""
    deltas = []
    for number, pick in _NUMBERS:
        base_value = getattr(base.numbers, number)
        head_value = getattr(head.numbers, number)
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
                sum(not s.ok for s in head.samples),
                len(head.samples),
                sum(not s.ok for s in base.samples),
                len(base.samples),
            )
        elif pick is not None:
            head_values, base_values = pick(head.samples), pick(base.samples)
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


def _regression_reason(delta: NumberDelta) -> str:
    from latency_gate.formatting import fmt_value  # noqa: PLC0415 - keeps this module light

    label = delta.number.replace("_", " ")
    change = f" ({delta.relative * 100:+.0f} %)" if delta.relative is not None else ""
    p_value = f", p = {delta.p_value:.2g}" if delta.p_value is not None else ""
    return (
        f"regression: {label} {fmt_value(delta.base, delta.number)} → "
        f"{fmt_value(delta.head, delta.number)}{change}, beyond noise{p_value}"
    )


def apply_baseline(result: RunResult, check: BaselineCheck) -> RunResult:
    """The result with its baseline check attached; a regression turns the verdict to FAIL."""
    reasons = tuple(_regression_reason(d) for d in check.regressions)
    verdict = result.verdict
    if reasons:
        verdict = Verdict(passed=False, checks=verdict.checks, reasons=(*verdict.reasons, *reasons))
    return result.model_copy(update={"baseline": check, "verdict": verdict})


# --- the plan a probe follows: load and check before measuring, attach after --------------


@dataclass(frozen=True)
class BaselinePlan:
    """A baseline loaded and matched to the targets before anything is measured.

    `runs` is None when no file was found at `source` (a first run, or a cache miss): the
    results then say so plainly instead of passing silently.
    """

    source: str
    limit: RegressionLimit
    runs: Mapping[str, RunResult | None] | None


def plan_baseline(
    targets: Sequence[Target], path: Path, limit: RegressionLimit, option: str = "--baseline"
) -> BaselinePlan:
    """Load the baseline at `path` and match it to `targets`; ConfigError on a bad file or a
    baseline of another configuration. A missing file is not an error (see BaselinePlan)."""
    if not path.exists():
        return BaselinePlan(str(path), limit, None)
    runs = load_runs(path, option)
    return BaselinePlan(str(path), limit, match_baseline(targets, runs, option))


def apply_plan(plan: BaselinePlan, result: RunResult) -> RunResult:
    """The result with its comparison against the plan's baseline (or the reason there is none)."""
    if plan.runs is None:
        check = missing_baseline(
            plan.source, "missing", f"no baseline file at {plan.source} (a first run?)"
        )
    elif (base := plan.runs.get(result.target)) is None:
        known = ", ".join(sorted(name for name in plan.runs if plan.runs[name] is not None))
        check = missing_baseline(
            plan.source,
            "no-match",
            f"{plan.source} holds no run of {result.target!r}"
            + (f" (its runs: {known})" if known else ""),
        )
    else:
        check = compare(result, base, plan.limit, plan.source)
    return apply_baseline(result, check)
