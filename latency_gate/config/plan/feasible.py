"""Whether a run can decide what it is asked, held against its caps before the first call: the
settings no run could decide (refused, as bad input) and what the reports say of the cap (sized
up to fit the checks and the searches, or under what they can need).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Protocol

from latency_gate.config.plan.hypotheses import clean_calls_to_pass_errors, hold_calls
from latency_gate.config.plan.levels import RATE_WARMUP, LevelLength, Rated
from latency_gate.config.plan.needs import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_CALLS,
    DEFAULT_WARM_CALLS,
    LARGEST_CAP,
    MAX_LOOKS,
    Planned,
    effective_max_calls,
    needs_of,
    rate_room,
)
from latency_gate.config.plan.search import goodput_plan, search_least_calls, search_levels
from latency_gate.formatting import fmt_rate, plural

__all__ = ["Checked", "goodput_problems", "plan_problems", "plan_warnings", "rate_warnings"]


class Checked(Planned, Rated, Protocol):
    """What the plan's problems and warnings read of a target (config.Target) besides: the
    capacity's floor, and whether its first look was fitted to max-calls."""

    @property
    def min_capacity(self) -> int | None: ...
    @property
    def first_look_fitted(self) -> bool: ...


def plan_problems(target: Checked) -> list[tuple[str, str]]:
    """(input, message) for each setting no run can decide: an error budget whose test needs more
    calls than any CI run makes, and, with on-undecided fail, a max-calls under what a perfect
    endpoint needs (every run would fail by policy)."""
    needs = needs_of(target)
    problems: list[tuple[str, str]] = []
    rate = target.budget.max_error_rate
    if needs.minimum > LARGEST_CAP and rate is not None and rate > 0:
        smallest = _smallest_decidable_budget()
        problems.append(
            (
                "max-error-rate",
                f"a budget of {rate:g} cannot be decided: {needs.why}, more than the "
                f"{LARGEST_CAP:,} calls a run may make. Use at least {smallest:g}, 0 for no "
                "failure allowed, or off",
            )
        )
    elif (
        target.max_calls is not None
        and target.max_calls < needs.minimum
        and target.on_undecided == "fail"
    ):
        problems.append(
            (
                "max-calls",
                f"{target.max_calls:,} calls cannot decide every check even for a perfect "
                f"endpoint ({needs.why}; it needs {needs.minimum:,} calls), so with "
                "on-undecided fail every run would fail. Raise it to at least "
                f"{needs.minimum:,}, leave it out (it is then sized to fit), or choose "
                "on-undecided estimate",
            )
        )
    floor = target.min_capacity
    if floor is not None and target.max_calls is not None and floor <= target.capacity_max:
        search, level = search_least_calls(target.concurrency, floor, target.capacity_max)
        least = needs.minimum + search
        if target.max_calls < least:
            problems.append(
                (
                    "max-calls",
                    f"{target.max_calls:,} calls cannot reach the {floor} calls at once that "
                    f"min-capacity asks for, even for a perfect endpoint: the checks take "
                    f"{needs.minimum:,} ({needs.why}) and the search {search:,} more to hold "
                    f"{level} at once, so no run could decide it. Raise it to at least "
                    f"{least:,}, or leave it out (it is then sized to fit)",
                )
            )
    return problems


def plan_warnings(target: Checked) -> list[str]:
    """What the reports must say about the cap: sized up to fit the checks, or under what they
    can need (error rates near a budget then over the stated ones)."""
    needs = needs_of(target)
    cap = effective_max_calls(target)
    warnings: list[str] = []
    default_look = 1 + DEFAULT_WARM_CALLS + DEFAULT_CONCURRENCY
    if target.max_calls is not None and target.first_look_fitted:
        warm = target.warm_calls
        warnings.append(
            f"max-calls {target.max_calls:,} is under the {default_look} calls of the default "
            f"first look, fitted to it: 1 cold call, {warm:,} warm call{'s' if warm != 1 else ''} "
            f"and a burst of {target.concurrency:,}, and its checks rest on {target.max_calls:,} "
            "calls at most"
        )
    if target.max_calls is None and (needs.capacity or needs.goodput):
        checks = cap - needs.capacity - needs.goodput
        parts = [f"{checks:,} for the checks"]
        if needs.capacity:
            parts.append(f"up to {needs.capacity:,} for the capacity search")
        if needs.goodput:
            parts.append(f"up to {needs.goodput:,} for the calls at a rate")
        listed = ", ".join(parts[:-1]) + " and " + parts[-1]
        warnings.append(f"max-calls sized to {cap:,}: {listed}")
    elif target.max_calls is None and cap > DEFAULT_MAX_CALLS:
        what = needs.why if cap == needs.minimum else f"the calls of {MAX_LOOKS} looks"
        warnings.append(f"max-calls sized to {cap:,} to fit the checks ({what})")
    checks = needs.design - needs.capacity - needs.goodput
    if needs.capacity and cap < needs.design - needs.goodput:
        warnings.append(
            f"max-calls {cap:,} may stop the capacity search before it ends (after the checks' "
            f"{checks:,} calls it can take up to {needs.capacity:,}): its figure is then the "
            "highest level that held, said as 'at least'"
        )
    warnings += rate_warnings(target, cap - checks - needs.capacity)
    if cap < checks:
        how = {
            "fail": "fail there, undecided",
            "pass": "pass there, undecided",
        }.get(target.on_undecided, "be decided there by its value")
        warnings.append(
            f"max-calls {cap:,} is under the {checks:,} calls the checks can need: a "
            f"check near its budget may {how}, with error rates over the stated ones (each "
            "check's line says the ones of this run)"
        )
    return warnings


def _smallest_decidable_budget() -> float:
    """The smallest error budget whose test passes within LARGEST_CAP calls, rounded up to one
    significant digit."""
    budget = 1e-6
    while True:
        clean = clean_calls_to_pass_errors(budget)
        if clean is not None and clean <= LARGEST_CAP:
            break
        budget *= 1.01
    exponent = math.floor(math.log10(budget))
    return float(math.ceil(budget / 10**exponent) * 10**exponent)


def rate_warnings(target: Checked, room: int) -> list[str]:
    """What the reports say before the calls at a rate: their worst case, and what fitted the
    levels to max-calls or goodput-time."""
    if target.rate is None and not target.goodput:
        return []
    fit = None if target.max_calls is None else max(room, 0)
    plan = goodput_plan(target, fit)
    if plan is None:
        return []
    what = "the goodput search" if plan.levels > 1 else "the run at a rate"
    length = plan.length
    said = (
        f"{what} can take up to {plan.worst_calls:,} calls and {_minutes(plan.worst_seconds)} "
        f"({plan.levels} level{'s' if plan.levels > 1 else ''} of at most {length.calls:,} calls"
        f" and {_minutes(length.seconds)} of arrivals, the first {_minutes(length.warmup)} of "
        "them not judged)"
    )
    slowest = length.slowest
    if slowest is not None:
        said += (
            f"; at rates under {fmt_rate(slowest)} a level lasts until about {length.judged} "
            "calls are due after its warm-up (the tests need about 90 to hold), longer than that"
        )
    if plan.fitted:
        said += f"; levels fitted to the caps: {plan.fitted}"
    return [said]


def _minutes(seconds: float) -> str:
    if math.isinf(seconds):
        return "no time limit"
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def goodput_problems(target: Checked) -> list[tuple[str, str]]:
    """(input, message) for rate settings no run can honour."""
    problems: list[tuple[str, str]] = []
    asked = target.rate is not None or target.goodput
    if asked and target.budget.max_concurrent_p95 is None:
        problems.append(
            (
                "rate" if target.rate is not None else "goodput",
                "a level at a rate is held to the budget under load, max-concurrent-p95, and it "
                "is off: give it a budget",
            )
        )
        return problems
    plan = goodput_plan(target)
    if plan is not None and target.rate is not None and not target.goodput:
        problems += _level_problems(target, target.rate, plan.length)
    if plan is None or target.goodput_time is None:
        return problems
    if plan.length.seconds - plan.length.warmup <= 0:
        least = search_levels() * (target.timeout + 1.0)
        problems.append(
            (
                "goodput-time",
                f"{target.goodput_time:g} s leaves no time for arrivals: each of the search's "
                f"{plan.levels} levels may take the --timeout ({target.timeout:g} s) to end its "
                f"calls. Give at least {least:.0f}s, or leave it out (auto)",
            )
        )
    return problems


CI_JOB_SECONDS = 6 * 3600.0  # GitHub stops a job at 6 hours


def _level_problems(target: Checked, rate: float, length: LevelLength) -> list[tuple[str, str]]:
    """The level at `--rate` that no run could judge: no call due after its warm-up (a
    `--rate-for` too short, or what `--max-calls` leaves), or, at a rate too low, a level
    longer than a CI job runs. It would otherwise make its calls and judge none of them."""
    need = math.ceil((1 + math.sqrt(1 + hold_calls())) ** 2)  # judged calls a hold needs
    least_calls = math.ceil(rate * length.warmup) + need
    least_seconds = length.warmup + need / rate
    warmup = (
        f"its warm-up of {length.warmup:g} s (the first {RATE_WARMUP:g} budgets of arrivals: "
        "made, not judged)"
    )
    span = length.seconds_at(rate)
    if math.isinf(span):
        span = length.calls / rate
    if max(span, least_seconds if length.judged_at(rate) < 1 else 0.0) > CI_JOB_SECONDS:
        judged = max(length.judged, need)
        lowest = judged / (CI_JOB_SECONDS - length.warmup)
        return [
            (
                "rate",
                f"at {fmt_rate(rate)} a level lasts until about {judged} calls are due after "
                f"{warmup}: {max(span, least_seconds) / 3600:,.0f} h, longer than a CI job runs "
                f"(GitHub stops one at 6 h). Give a rate of at least {fmt_rate(lowest * 1.01)}",
            )
        ]
    least = (
        f"at least {least_calls:,} calls (or {least_seconds:.0f}s), enough for the {need} judged "
        "calls a level needs to hold"
    )
    if length.judged_at(rate) < 1:
        given = (
            plural(target.rate_calls, "call")
            if target.rate_calls is not None
            else f"{length.seconds_at(rate):g} s of arrivals"
        )
        return [
            (
                "rate-for",
                f"a level of {given} at {fmt_rate(rate)} has no call due after {warmup}, so it "
                f"would judge none. Give {least}, or leave it out (auto)",
            )
        ]
    fitted = target.max_calls
    if fitted is not None:
        room = rate_room(target, fitted)
        if room is not None and replace(length, calls=min(length.calls, room)).judged_at(rate) < 1:
            more = least_calls - min(length.calls, room)
            return [
                (
                    "max-calls",
                    f"{fitted:,} calls leave {room:,} to the level at {fmt_rate(rate)}, none of "
                    f"them due after {warmup}, so it would judge none. Raise it to at least "
                    f"{fitted + more:,}, or leave it out (it is then sized to fit)",
                )
            ]
    return []
