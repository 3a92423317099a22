"""The capacity found, held to `--min-capacity` and against a base: a check row, a regression
row, and the sentences the reports say it in.

- The check ("capacity"): PASS when the capacity found is at least `min-capacity` (reported, not
  gated, without one), FAIL when even the highest level it can be (below the lowest that broke)
  is under it; when `min-capacity` falls among levels near the budget, which the calls could
  not tell apart, it is undecided and passes, said so (fails with `on-undecided: fail`). What
  it rests on: the level that held and the one that broke, each with what its tests ruled out
  and how often such a level is decided wrongly (LEVEL_BETA and LEVEL_ALPHA of
  config/plan.py), and the levels near the budget between them.
- The regression: against an earlier run (or a history, its runs' median capacity) held to the
  same concurrent p95 budget, a capacity lower than the base's by more than the relative limit
  of `max-regression` (head < base / (1 + limit)) regressed. Both searches are read up to the
  lower of their two `capacity-max`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from latency_gate.assess.compare.baseline import BaselinePlan
from latency_gate.assess.compare.history import HistoryPlan, earlier_runs
from latency_gate.config.plan.hypotheses import ERROR_ALPHA, LEVEL_ALPHA, LEVEL_BETA, LEVEL_SHARE
from latency_gate.config.regression import RegressionLimit
from latency_gate.formatting import fmt_duration, fmt_percent, fmt_value_beside, plural
from latency_gate.models import Capacity, CapacityLevel, Check, NumberDelta

__all__ = [
    "base_capacities",
    "capacity_check",
    "capacity_delta",
    "capacity_headline",
    "level_clause",
    "level_meaning",
]

_NAMES = {"concurrent_p95": "p95", "ttft_p95": "first-token p95", "error_rate": "error rate"}


def broke_because(level: CapacityLevel, capacity: Capacity) -> str:
    """Why a level broke, in a few words: "p95 3.40 s", "p95 1.20 s; 4 of 52 calls failed"."""
    p95 = fmt_value_beside(level.p95, capacity.limit, "concurrent_p95")
    parts = [f"p95 {p95}" if level.p95 is not None else "no call succeeded"]
    if "ttft_p95" in level.broke_on and level.ttft_p95 is not None:
        parts.append(f"first-token p95 {fmt_duration(level.ttft_p95)}")
    if "error_rate" in level.broke_on:
        parts.append(f"{level.errors} of {plural(level.calls, 'call')} failed")
    return "; ".join(parts)


def _near(capacity: Capacity) -> list[CapacityLevel]:
    """The levels near the budget between the figure and the upper end of its interval."""
    if capacity.upper is None:
        return []
    return sorted(
        (
            lv
            for lv in capacity.levels
            if lv.near and capacity.found < lv.concurrency <= capacity.upper
        ),
        key=lambda lv: lv.concurrency,
    )


def _listed(levels: Sequence[CapacityLevel]) -> str:
    names = [str(lv.concurrency) for lv in levels]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def capacity_headline(capacity: Capacity) -> str:
    """The capacity in one sentence, what every report says first:
    "holds concurrent p95 ≤ 3.00 s up to 12 calls at once; breaks at 13 (p95 3.40 s)", or
    when levels near the figure could not be told apart, "holds ... between 12 and 16 calls at
    once: 12 held, 14 and 16 were near the budget, 17 broke (p95 3.60 s)"."""
    budget = f"concurrent p95 ≤ {fmt_duration(capacity.limit)}"
    breaking = next(
        (
            lv
            for lv in capacity.levels
            if not lv.held and not lv.near and lv.concurrency == capacity.breaking
        ),
        None,
    )
    broke = "" if breaking is None else f" ({broke_because(breaking, capacity)})"
    if not capacity.complete:
        why = capacity.stopped or "the search did not end"
        held = (
            f"holds {budget} up to at least {plural(capacity.found, 'call')} at once"
            if capacity.found
            else f"was not shown to hold {budget} at any concurrency"
        )
        text = f"{held} ({why})"
        if breaking is not None:
            text += f"; broke at {breaking.concurrency}{broke}"
        return text
    near = _near(capacity)
    if near and capacity.upper is not None:
        were = "was" if len(near) == 1 else "were"
        held = f"{capacity.found} held" if capacity.found else "no level held"
        text = (
            f"holds {budget} between {capacity.found} and {plural(capacity.upper, 'call')} at "
            f"once: {held}, {_listed(near)} {were} near the budget (the calls could not tell)"
        )
        if breaking is not None:
            text += f", {breaking.concurrency} broke{broke}"
        else:
            text += f", none broke up to capacity-max {capacity.maximum}"
        return text
    if capacity.found == 0:
        return f"does not hold {budget} even one call at a time{broke}"
    if capacity.reached_max:
        return (
            f"holds {budget} up to {plural(capacity.found, 'call')} at once, the most searched "
            f"(capacity-max {capacity.maximum})"
        )
    return (
        f"holds {budget} up to {plural(capacity.found, 'call')} at once; "
        f"breaks at {capacity.breaking}{broke}"
    )


def level_meaning(level: CapacityLevel, capacity: Capacity) -> str:
    """What one level's outcome ruled out, with how often such a level is decided so wrongly:
    "12 held after 90 calls, by the test: rules out a p95 over 3.00 s (5.0 % or more of its
    calls over it; such a level holds at most 2.5 % of the time)"."""
    limit = fmt_duration(capacity.limit)
    after = plural(level.calls, "call")
    if level.decided_by == "test":
        how = f"after {after}, by the test"
    elif level.decided_by == "the run":
        how = f"after {after}, the run's own concurrent calls"
    else:
        where = "its last burst" if level.decided_by == "level cap" else "max-calls"
        how = f"after {after}, undecided at {where}"
    share = fmt_percent(LEVEL_SHARE)
    if level.near:
        return (
            f"{level.concurrency} was near the budget {how}: its calls rule out neither a p95 "
            f"over {limit} nor one within it (p95 {fmt_duration(level.p95)})"
            if level.p95 is not None
            else f"{level.concurrency} was near the budget {how}"
        )
    chance = level.wrong_at_most
    if level.held:
        ruled = f"rules out a p95 over {limit} ({share} or more of its calls over it"
        if chance is None:
            chance = LEVEL_BETA
        tail = f"such a level holds at most {fmt_percent(chance)} of the time"
        return f"{level.concurrency} held {how}: {ruled}; {tail})"
    if level.broke_on == ("error_rate",):
        budget = capacity.error_limit or 0.0
        ruled = f"rules out a failure rate of {fmt_percent(budget / 2)} or less"
        chance = ERROR_ALPHA if chance is None else chance
        tail = f"such a level breaks at most {fmt_percent(chance)} of the time"
        return f"{level.concurrency} broke {how}: {ruled} ({tail})"
    ruled = f"rules out a p95 within {limit} ({share} or fewer of its calls over it"
    chance = LEVEL_ALPHA if chance is None else chance
    tail = f"such a level breaks at most {fmt_percent(chance)} of the time"
    return f"{level.concurrency} broke {how}: {ruled}; {tail})"


def level_clause(level: CapacityLevel, capacity: Capacity) -> str:
    """`level_meaning` in few words, for the check's sentence: "26 held after 90 calls by the
    test (rules out a p95 over 3.00 s, wrong at most 2.5 % of the time)"."""
    after = f"after {plural(level.calls, 'call')}"
    limit = fmt_duration(capacity.limit)
    how = {
        "test": "by the test",
        "the run": "by the run's concurrent calls",
        "level cap": "at its last burst",
        "max-calls": "when max-calls stopped it",
    }[level.decided_by]
    if level.near:
        return f"{level.concurrency} near the budget {after} {how} (neither side ruled out)"
    chance = level.wrong_at_most
    if level.held:
        ruled = f"rules out a p95 over {limit}"
        chance = LEVEL_BETA if chance is None else chance
    elif level.broke_on == ("error_rate",):
        ruled = f"rules out ≤ {fmt_percent((capacity.error_limit or 0.0) / 2)} failing"
        chance = ERROR_ALPHA if chance is None else chance
    else:
        ruled = f"rules out a p95 within {limit}"
        chance = LEVEL_ALPHA if chance is None else chance
    word = "held" if level.held else "broke"
    return (
        f"{level.concurrency} {word} {after} {how} ({ruled}, wrong at most "
        f"{fmt_percent(chance)} of the time)"
    )


def _deciding(capacity: Capacity) -> list[CapacityLevel]:
    """The levels the figure rests on: the highest that held, the near ones above it, and the
    lowest that broke."""
    held = [lv for lv in capacity.levels if lv.held and lv.concurrency == capacity.found]
    broke = [
        lv
        for lv in capacity.levels
        if not lv.held and not lv.near and lv.concurrency == capacity.breaking
    ]
    return held[:1] + _near(capacity) + broke[:1]


def highest_possible(capacity: Capacity) -> int:
    """The highest the capacity can be: the upper end of its interval, below the lowest level
    that broke, or the figure itself when the levels were told apart (capacity-max when no
    level broke)."""
    if capacity.upper is not None:
        return capacity.upper
    if capacity.breaking is not None:
        return capacity.breaking - 1
    return max(capacity.found, capacity.maximum)


def capacity_check(capacity: Capacity | None, min_capacity: int | None) -> Check | None:
    """The capacity as a row of the verdict: gated by `min_capacity`, reported without it.
    None when the capacity was not asked for (no search and no minimum)."""
    if capacity is None:
        if min_capacity is None:
            return None
        return Check(
            number="capacity",
            value=None,
            limit=float(min_capacity),
            passed=False,
            note="no data",
            meaning="the capacity was not searched: the run ended before its looks did",
        )
    found = float(capacity.found)
    rests = "; ".join(level_clause(lv, capacity) for lv in _deciding(capacity))
    note = "" if capacity.complete else f"at least {capacity.found}: {capacity.stopped}"
    if min_capacity is None:
        return Check(
            number="capacity",
            value=found,
            limit=None,
            passed=None,
            note=note,
            n=capacity.calls,
            meaning=rests,
        )
    top = highest_possible(capacity)
    between = capacity.complete and capacity.found < min_capacity <= top
    if between:
        # The levels near the budget could not tell whether min-capacity holds: not decided on
        # a figure the search could not separate. It passes, said as undecided, unless
        # on-undecided is fail.
        policy = capacity.on_undecided
        passed = policy != "fail"
        word = "PASS" if passed else "FAIL"
        meaning = (
            f"{word}: undecided, the capacity is between {capacity.found} and {top} at once and "
            f"the {min_capacity} asked lies between (levels near the budget, which the calls "
            f"could not tell apart); {'passed' if passed else 'failed'} by policy "
            f"(on-undecided: {policy})"
        )
        if rests:
            meaning += f". {_capitalised(rests)}"
        return Check(
            number="capacity",
            value=found,
            limit=float(min_capacity),
            passed=passed,
            note=note or f"undecided: between {capacity.found} and {top}",
            n=capacity.calls,
            meaning=meaning,
            decided=False,
            by_policy=True,
        )
    passed = capacity.found >= min_capacity
    at_least = "at least " if not capacity.complete else ""
    if not passed and not _shown_under(capacity, min_capacity):
        return _floor_undecided(capacity, min_capacity, rests, note)
    word = "PASS" if passed else "FAIL"
    side = "at least" if passed else "under"
    at_least = "at least " if not capacity.complete else ""
    figure = (
        f"{capacity.found} at once"
        if capacity.upper is None or not passed
        else f"between {capacity.found} and {capacity.upper} at once"
    )
    if not passed and capacity.upper is not None:
        figure = f"at most {top} at once"
    meaning = f"{word}: {at_least}{figure}, {side} the {min_capacity} asked"
    if rests:
        meaning += f". {_capitalised(rests)}"
    return Check(
        number="capacity",
        value=found,
        limit=float(min_capacity),
        passed=passed,
        note=note,
        n=capacity.calls,
        meaning=meaning,
    )


def _shown_under(capacity: Capacity, min_capacity: int) -> bool:
    """Whether the search shows the capacity under `min_capacity`: it ended there, or a level
    at or under the minimum broke (levels break from some concurrency on)."""
    return capacity.complete or (
        capacity.breaking is not None and capacity.breaking <= min_capacity
    )


def _floor_undecided(capacity: Capacity, min_capacity: int, rests: str, note: str) -> Check:
    """A search that max-calls stopped before any level at or above the minimum was decided:
    the floor is undecided (nothing measured says the capacity is under it), and on-undecided
    decides. `estimate` has no value to go by above the levels tried, so it does not fail the
    run: the row and the verdict say it was undecided."""
    fails = capacity.on_undecided == "fail"
    how = (
        "failed by policy (on-undecided: fail)"
        if fails
        else (
            f"not failed (on-undecided: {capacity.on_undecided}: no level at or above "
            f"{min_capacity} was measured to go by)"
        )
    )
    stopped = capacity.stopped or "the search did not end"
    said = (
        f"undecided: at least {capacity.found} at once, and no level of {min_capacity} (the "
        f"minimum) or more was decided ({stopped}); {how}"
    )
    meaning = said + (f". {_capitalised(rests)}" if rests else "")
    return Check(
        number="capacity",
        value=float(capacity.found),
        limit=float(min_capacity),
        passed=not fails,
        note=said if not note else f"{note}; {said}",
        decided=False,
        by_policy=True,
        n=capacity.calls,
        meaning=meaning,
    )


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _comparable(head: Capacity, base: Capacity) -> str:
    """Why two capacities cannot be compared, or ""."""
    if not math.isclose(head.limit, base.limit):
        return (
            f"not compared: the base's levels were held to {fmt_duration(base.limit)}, this "
            f"run's to {fmt_duration(head.limit)}"
        )
    if not base.complete and not head.complete:
        return "not compared: neither search ended (max-calls stopped both)"
    return ""


def capacity_delta(
    head: Capacity | None,
    bases: Sequence[Capacity],
    limit: RegressionLimit,
    *,
    history: bool = False,
    on_undecided: Literal["fail", "pass"] = "pass",
) -> NumberDelta | None:
    """The capacity against the base's (an earlier run's; with `history`, the median of its
    runs' capacities): regressed when head < base / (1 + relative limit), both read up to the
    lower of their capacity-max; undecided where this run's levels do not say on which side of
    that threshold its capacity lies (`on_undecided`, on-undecided-regression, then decides).
    None when neither side searched."""
    if head is None and not bases:
        return None
    relative = limit.relative if limit.relative is not None else 0.0
    if head is None or not bases:
        side = "this run" if head is None else "the base"
        return NumberDelta(
            number="capacity",
            base=None if not bases else float(_median([b.found for b in bases])),
            head=None if head is None else float(head.found),
            note=f"not compared: {side} did not search the capacity (--capacity)",
        )
    reach = min(head.maximum, *(b.maximum for b in bases))
    base_found = _median([min(b.found, reach) for b in bases])
    why = "" if history else _comparable(head, bases[0])
    if not why and any(not math.isclose(b.limit, head.limit) for b in bases):
        why = "not compared: some of the history's runs held their levels to another budget"
    head_found = min(head.found, reach)
    if why:
        return NumberDelta(
            number="capacity", base=float(base_found), head=float(head.found), note=why
        )
    threshold = base_found / (1.0 + relative)
    note = (
        f"regresses below {threshold:.4g} calls at once (the base's {base_found:g} less the "
        f"{relative * 100:.0f} % limit)"
    )
    why_undecided = ""
    if not head.complete and head_found < threshold:
        # "At least" that many: it cannot show a drop, nor rule one out.
        why_undecided = f"this run's search did not end ({head.stopped}): at least its figure"
    elif head.upper is not None and head_found < threshold <= min(head.upper, reach):
        # Levels near the budget: the capacity is somewhere from the figure to `upper`.
        why_undecided = (
            f"this run's capacity is between {head.found} and {head.upper} (levels near the budget)"
        )
    if why_undecided:
        return undecided_delta(
            "capacity",
            float(base_found),
            float(head.found),
            f"{note}; {why_undecided}",
            on_undecided,
        )
    regressed = head_found < threshold
    return NumberDelta(
        number="capacity",
        base=float(base_found),
        head=float(head.found),
        regressed=regressed,
        outcome="regressed" if regressed else "not regressed",
        note=note if regressed else "",
    )


def _median(values: Sequence[int]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[middle])
    return (ordered[middle - 1] + ordered[middle]) / 2


def base_capacities(
    target: str, baseline: BaselinePlan | None, history: HistoryPlan | None
) -> tuple[list[Capacity], bool] | None:
    """The capacities a run's capacity is compared with, and whether they are a history's
    (several runs): those of `earlier_runs` that searched one. None when there is no base run
    at all."""
    earlier = earlier_runs(target, baseline, history)
    if earlier is None:
        return None
    runs, several = earlier
    return [run.capacity for run in runs if run.capacity is not None], several


def undecided_delta(
    number: Literal["capacity", "goodput"],
    base: float,
    head: float,
    note: str,
    on_undecided: Literal["fail", "pass"],
) -> NumberDelta:
    """A search's figure whose levels do not say on which side of the regression's threshold it
    lies: undecided, and a regression by policy with on-undecided-regression: fail (said in the
    note, as the percentiles' rows say it)."""
    fails = on_undecided == "fail"
    policy = "; counted as a regression by policy (on-undecided-regression: fail)"
    return NumberDelta(
        number=number,
        base=base,
        head=head,
        decided=False,
        outcome="undecided",
        regressed=fails,
        by_policy=fails,
        note=note + (policy if fails else ""),
    )
