"""What a result file holds, checked when it is read back (`merge`, `--baseline`, a history
folder): a file is data that anyone could have edited, and what the reports show of it must be
something a run could have measured.

The calls (the run's, an A/B run's base arm, each capacity level's) are checked call by call;
the parts that are not derived again from the calls (assess/rejudge.py) are checked against the
ranges a run can produce: the evidence of a history (its runs' dates and numbers, its size), the
numbers of a comparison, the capacity search's levels and counts, the sampling's counts, the
floor. Each problem is a ValueError saying where and why; json_file.parse_runs names the file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from latency_gate.config.parsing import LARGEST_RATE, MAX_DURATION
from latency_gate.models import (
    BaselineCheck,
    Capacity,
    Goodput,
    History,
    Numbers,
    RunResult,
    Sample,
    Sampling,
)

__all__ = ["LAST_DATE", "check_run"]

# Times in a result file are seconds since 1970 up to the year 9999, where dates end.
LAST_DATE = 253_402_300_799.0
# The most calls a count of a file may claim: a run makes at most 100,000 (max-calls), and a
# capacity search at most as many again.
MAX_CALLS = 200_000
MAX_LEVEL = 10_000  # --capacity-max
MAX_ORIGINS = 1000  # a history's runs at most
_RATES = frozenset({"error_rate"})
# The numbers that are durations; a number added later (a count of tokens, say) need only not
# be negative.
_DURATIONS = frozenset(
    {
        "cold_start",
        "warm_p50",
        "warm_p95",
        "concurrent_p95",
        "ttft_p95",
        "ttft_warm_p95",
        "ttft_concurrent_p95",
        "itl_p95",
        "longest_stall",
        "bound",
        "threshold",
        "seconds",
        "sequential_p50",
        # calls at a rate (goodput)
        "warmup",
        "hold",
        "level_seconds",
        "limit",
        "ttft_limit",
        "floor",
        "breaking_p95",
        "p95",
        "mean_latency",
        "send_lag_p95",
        "send_lag_max",
    }
)
# A number's name is shown (as "warm p95"): only the shape of our own names.
_NUMBER_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
# An origin a comparison names: a scheme and a host, nothing else.
_ORIGIN = re.compile(r"[a-z][a-z0-9+.-]{0,20}://[^\s/?#@`<>|\\]{1,300}")
# A commit names a run in a trend chart: a SHA, as GITHUB_SHA gives it.
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def check_run(run: RunResult, *, baseline: bool) -> None:
    """ValueError saying why the run's data cannot be judged or shown: calls that contradict
    themselves, a duration out of range, a time that is no date; a history, a comparison, a
    capacity search or counts no run could have produced; as a `baseline`, no calls."""
    for name, when in (("started_at", run.started_at), ("finished_at", run.finished_at)):
        _date(name, when)
    if baseline and not run.samples:
        raise ValueError("it holds no calls, so there is nothing to compare with")
    _calls("call", run.samples)
    _calls("base call", run.base_samples)
    _commit("commit", run.commit)
    if run.ready_after is not None and not 0 <= run.ready_after <= MAX_DURATION:
        raise ValueError(f"ready_after {run.ready_after:g} s is not a duration of a run")
    if run.floor is not None:
        _durations("floor", run.floor.model_dump(exclude={"concurrency", "stamp_source"}))
    if run.sampling is not None:
        _sampling(run.sampling, len(run.samples))
    if run.baseline is not None:
        _comparison(run.baseline, run.started_at)
    if run.capacity is not None:
        _capacity(run.capacity, run.config)
    _rate_settings(run.config)
    if run.goodput is not None:
        _goodput(run.goodput)


def sample_problem(sample: Sample) -> str | None:
    """Why one call is not a call a probe could have made, if so."""
    if sample.ok and (sample.latency is None or sample.error is not None):
        return "marked ok, but it has no latency or has an error"
    if not sample.ok and sample.error is None:
        return "marked failed, but it names no error"
    if not 0 <= sample.started_at <= LAST_DATE:
        return f"started_at {sample.started_at:g} is not a time (seconds since 1970)"
    durations = {"latency": sample.latency, **sample.timings.model_dump()}
    if sample.token_gaps is not None:
        durations |= {f"token_gaps.{k}": v for k, v in sample.token_gaps.model_dump().items()}
        durations.pop("token_gaps.count")
        durations.pop("token_gaps.kept")
    for name, value in durations.items():
        if value is not None and not 0 <= value <= MAX_DURATION:
            return (
                f"{name} {value:g} s is not a duration of a call (from 0 to 24 hours, the "
                "longest --timeout)"
            )
    # A call at a rate: when it was due in its level, and how late the client sent it.
    for name, value in (("due", sample.due), ("send_lag", sample.send_lag)):
        if value is not None and not 0 <= value <= MAX_DURATION:
            return f"{name} {value:g} s is not a duration (from 0 to 24 hours)"
    if sample.output_tokens_per_s is not None and sample.output_tokens_per_s < 0:
        return f"output_tokens_per_s {sample.output_tokens_per_s:g} is negative"
    if sample.tokens is not None and sample.tokens < 0:
        return f"tokens {sample.tokens} is not a count of tokens"
    return None


def _date(name: str, when: float) -> None:
    if not 0 <= when <= LAST_DATE:
        raise ValueError(f"{name} {when:g} is not a time (seconds since 1970)")


def _calls(kind: str, samples: Iterable[Sample]) -> None:
    for sample in samples:
        if (problem := sample_problem(sample)) is not None:
            raise ValueError(f"{kind} {sample.phase.value} #{sample.index}: {problem}")


def _durations(where: str, values: Mapping[str, object]) -> None:
    """Each value a duration (0 to 24 h), a share (0 to 1) for a rate, else not negative; or
    None."""
    for name, value in values.items():
        if isinstance(value, int | float) and (problem := _value_problem(name, value)):
            raise ValueError(f"{where}.{name} {value:g}{problem}")


def _value_problem(number: str, value: float) -> str:
    if number in _RATES:
        return "" if 0 <= value <= 1 else " is not a share from 0 to 1"
    if number in _DURATIONS:
        return "" if 0 <= value <= MAX_DURATION else " s is not a duration (from 0 to 24 hours)"
    return "" if value >= 0 else " is negative"


def _commit(where: str, commit: str | None) -> None:
    if commit is not None and not _COMMIT.fullmatch(commit):
        raise ValueError(f"{where} {commit[:80]!r} is not a commit's SHA (40 hex digits)")


def _count(where: str, value: int, low: int = 0, high: int = MAX_CALLS) -> None:
    if not low <= value <= high:
        raise ValueError(f"{where} {value} is not a count from {low:,} to {high:,}")


def _numbers(where: str, numbers: Numbers) -> None:
    _durations(where, numbers.model_dump())


def _sampling(sampling: Sampling, calls: int) -> None:
    _count("sampling.looks", sampling.looks, 0, MAX_CALLS)
    _count("sampling.max_calls", sampling.max_calls, 1)
    _count("sampling.first_look_calls", sampling.first_look_calls)
    if sampling.first_look_calls + sampling.extra_calls != calls:
        raise ValueError(
            f"sampling says {sampling.first_look_calls} + {sampling.extra_calls} calls, but the "
            f"file holds {calls}"
        )
    if sampling.first_look is not None:
        _numbers("sampling.first_look", sampling.first_look)


def _comparison(check: BaselineCheck, started_at: float) -> None:
    """The numbers of a comparison, and a history's evidence: what the reports show of it as
    written (the base's calls are not in the file, so it cannot be derived again)."""
    for index, delta in enumerate(check.deltas):
        where = f"baseline.deltas[{index}]"
        if not _NUMBER_NAME.fullmatch(delta.number):
            raise ValueError(f"{where}.number {delta.number[:40]!r} is not a number's name")
        for side in ("base", "head"):
            value = getattr(delta, side)
            if value is not None and (problem := _value_problem(delta.number, value)):
                raise ValueError(f"{where}.{side} {value:g}{problem}")
        _durations(where, {"bound": delta.bound, "threshold": delta.threshold})
        if delta.p_value is not None and not 0 <= delta.p_value <= 1:
            raise ValueError(f"{where}.p_value {delta.p_value:g} is not a probability")
        if delta.interval is not None and any(v is not None and v < 0 for v in delta.interval):
            raise ValueError(f"{where}.interval holds a negative ratio")
    if len(check.base_origins) > MAX_ORIGINS:
        raise ValueError(f"baseline names {len(check.base_origins)} origins, more than its runs")
    for origin in (*check.base_origins, *((check.head_origin,) if check.head_origin else ())):
        if not _ORIGIN.fullmatch(origin):
            raise ValueError(f"baseline origin {origin[:80]!r} is not an origin")
    if check.history is not None:
        _history(check.history, started_at)


def _history(history: History, started_at: float) -> None:
    """The earlier runs of a history as a run could have read them: dated before the run (by at
    most the clock slack a history folder allows), oldest first, each number one a run could
    measure; no more of them than the size, which is a size `--history-size` takes."""
    # Loaded here, when a file is read: judging is not needed before a run's first request.
    from latency_gate.assess.compare.history import (  # noqa: PLC0415 (start-up)
        FUTURE_SLACK,
        MAX_RUNS,
        MIN_RUNS,
    )

    _count("baseline.history.size", history.size, MIN_RUNS, MAX_RUNS)
    runs = history.runs
    if len(runs) > history.size:
        raise ValueError(
            f"baseline.history holds {len(runs)} runs, more than its size {history.size}"
        )
    fewest, most = {"prediction": (MIN_RUNS, MAX_RUNS), "newest": (1, MIN_RUNS - 1)}.get(
        history.judged, (0, 0)
    )
    if not fewest <= len(runs) <= most:
        raise ValueError(
            f"baseline.history was judged {history.judged!r} with {len(runs)} runs, which that "
            "judgement does not take"
        )
    if history.alpha is not None and not 0 < history.alpha < 0.5:
        raise ValueError(f"baseline.history.alpha {history.alpha:g} is not from 0 to 0.5")
    _count("baseline.history.other_settings", history.other_settings)
    previous = 0.0
    for index, run in enumerate(runs):
        where = f"baseline.history.runs[{index}]"
        _date(f"{where}.started_at", run.started_at)
        if run.started_at < previous:
            raise ValueError(f"{where} is older than the run before it (oldest first)")
        if run.started_at > started_at + FUTURE_SLACK:
            raise ValueError(f"{where} started after the run it was compared with")
        previous = run.started_at
        _commit(f"{where}.commit", run.commit)
        _numbers(f"{where}.numbers", run.numbers)
        _count(f"{where}.calls", run.calls)
        _count(f"{where}.failed", run.failed, 0, run.calls)


def _rate_settings(config: Mapping[str, object]) -> None:
    """The run's `rate` and `min_rate` as the options took them: a rate, or absent. The rows of
    the calls at a rate are judged again from them (assess/load/replay.py): any other value
    would be read as no rate asked, and the verdict would follow the edit."""
    for key in ("rate", "min_rate"):
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(  # noqa: TRY004 - a file's data: parse_runs names the file
                f"config.{key} {str(value)[:80]!r} is not a rate (requests a second, above 0 "
                f"and at most {LARGEST_RATE:,.0f})"
            )
        _rate(f"config.{key}", value)


def _rate(where: str, value: float, *, zero: bool = False) -> None:
    """A rate a run can ask for; 0 too when `zero` (the goodput found when no level held)."""
    if not (0 < value <= LARGEST_RATE or (zero and value == 0)):
        raise ValueError(
            f"{where} {value:g} is not a rate (requests a second, above 0 and at most "
            f"{LARGEST_RATE:,.0f})"
        )


def _goodput(goodput: Goodput) -> None:
    """The settings of the calls at a rate, which judge its levels again (its warm-up and hold,
    read as a level's phases), as a run could have written them; each level's counts within its
    calls, and its calls checked, `due` and `send_lag` with them."""
    _durations(
        "goodput",
        {
            name: getattr(goodput, name)
            for name in ("warmup", "hold", "seconds", "level_seconds", "limit", "ttft_limit")
        }
        | {"floor": goodput.floor, "breaking_p95": goodput.breaking_p95},
    )
    if goodput.error_limit is not None and not 0 <= goodput.error_limit <= 1:
        raise ValueError(f"goodput.error_limit {goodput.error_limit:g} is not a share from 0 to 1")
    for name in ("asked", "start", "breaking", "upper", "client_limit", "restarted_at"):
        if (value := getattr(goodput, name)) is not None:
            _rate(f"goodput.{name}", value)
    _rate("goodput.found", goodput.found, zero=True)
    if not 0 <= goodput.precision <= LARGEST_RATE:
        raise ValueError(f"goodput.precision {goodput.precision:g} is not a step between rates")
    if goodput.tokens_per_s is not None and goodput.tokens_per_s < 0:
        raise ValueError(f"goodput.tokens_per_s {goodput.tokens_per_s:g} is negative")
    _count("goodput.calls", goodput.calls)
    _count("goodput.level_calls", goodput.level_calls)
    _count("goodput.level_judged", goodput.level_judged)
    for level in goodput.levels:
        where = f"goodput level {level.rate:g}/s"
        _rate("goodput level", level.rate)
        _count(f"{where}: calls", level.calls)
        _count(f"{where}: judged", level.judged, 0, level.calls)
        _count(f"{where}: errors", level.errors, 0, level.judged)
        _durations(
            where,
            {
                "p95": level.p95,
                "ttft_p95": level.ttft_p95,
                "mean_latency": level.mean_latency,
                "seconds": level.seconds,
                "send_lag_p95": level.send_lag_p95,
                "send_lag_max": level.send_lag_max,
            },
        )
        for name, value in (("offered", level.offered), ("tokens", level.tokens)):
            if value is not None and value < 0:
                raise ValueError(f"{where}: {name} {value:g} is negative")
        _calls(f"{where}: call", level.samples)


def _capacity(capacity: Capacity, config: Mapping[str, object]) -> None:
    """The search's settings as the run's own, each level's calls checked, each level tried
    once within the search's range."""
    maximum = config.get("capacity_max", capacity.maximum)
    if capacity.maximum != maximum:
        raise ValueError(
            f"capacity.maximum {capacity.maximum} is not the run's capacity_max {maximum!r}"
        )
    _count("capacity.maximum", capacity.maximum, 1, MAX_LEVEL)
    concurrency = config.get("concurrency", capacity.start)
    if capacity.start != concurrency:
        raise ValueError(
            f"capacity.start {capacity.start} is not the run's concurrency {concurrency!r}"
        )
    _durations("capacity", {"seconds": capacity.seconds})
    seen: set[int] = set()
    for level in capacity.levels:
        where = f"capacity level {level.concurrency}"
        _count("capacity level", level.concurrency, 1, max(capacity.maximum, capacity.start))
        if level.concurrency in seen:
            raise ValueError(f"{where} is there twice")
        seen.add(level.concurrency)
        _durations(where, {"seconds": level.seconds})
        _calls(f"{where}: call", level.samples)
