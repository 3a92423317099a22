"""A load search's figure against a base's: the regression row ("capacity", "goodput" among the
comparison's rows), against an earlier run or a history held to the same concurrent p95 budget.

The limit is `max-regression`'s relative one: the figure regresses below base / (1 + limit).
Each side is what its levels showed: NOT REGRESSED when the head's figure (a level that held)
is at or above that threshold; REGRESSED when a level at or under it broke; otherwise (the
threshold among levels near the budget, inside the search's last step, or past where a cap
stopped it) undecided, and `on-undecided-regression` decides (pass: said beside the verdict).

- calls at once: the base is an earlier run's capacity or the median of a history's; both
  searches are read up to the lower of their two `capacity-max`;
- requests a second: the base is the rate an earlier search held, or the median of the rates a
  history's searches held (a run at `--rate` alone has no figure).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from latency_gate.assess.load.headline import goodput_figure
from latency_gate.config.regression import RegressionLimit
from latency_gate.formatting import fmt_duration, fmt_rate
from latency_gate.models import Capacity, Goodput, NumberDelta

__all__ = ["search_delta", "undecided_delta"]

Policy = Literal["fail", "pass"]


def _one_side(
    number: Literal["capacity", "goodput"], base: float | None, head: float | None
) -> NumberDelta:
    """Not compared: one side did not search (`head` None: this run; else the base)."""
    side = "this run" if head is None else "the base"
    flag = "--capacity" if number == "capacity" else "--goodput"
    return NumberDelta(
        number=number,
        base=base,
        head=head,
        note=f"not compared: {side} did not search the {number} ({flag})",
    )


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


@dataclass(frozen=True)
class _Reading:
    """A search's figure against the base's, as the regression reads it: the head's figure lies
    from `low` to `high` (`high` a level that broke when `high_broke`: the figure is under it;
    else the most it can be; inf: unbounded), and regresses below `threshold`."""

    base: float
    head: float
    threshold: float
    low: float
    high: float
    high_broke: bool
    said: str  # "regresses below ... (the base's ..., less the 10 % limit)"
    broke: str  # what a regressed row adds to `said`
    why: str  # why an undecided row is undecided


def _judged(
    number: Literal["capacity", "goodput"], reading: _Reading, on_undecided: Policy
) -> NumberDelta:
    """NOT REGRESSED when the figure is at or above the threshold; REGRESSED when all it can be
    lies under it; else undecided."""
    base, head, threshold = reading.base, reading.head, reading.threshold
    if reading.low >= threshold:
        return NumberDelta(number=number, base=base, head=head, outcome="not regressed")
    high = reading.high
    if high <= threshold if reading.high_broke else high < threshold:
        return NumberDelta(
            number=number,
            base=base,
            head=head,
            regressed=True,
            outcome="regressed",
            note=reading.said + reading.broke,
        )
    return undecided_delta(number, base, head, f"{reading.said}; {reading.why}", on_undecided)


def search_delta(
    number: Literal["capacity", "goodput"],
    head: Capacity | Goodput | None,
    bases: Sequence[Capacity | Goodput],
    limit: RegressionLimit,
    *,
    history: bool = False,
    on_undecided: Policy = "pass",
) -> NumberDelta | None:
    """The `number` search's figure against the base's (an earlier run's; with `history`, the
    median of its runs'): see the module's docstring. None when neither side searched (a run at
    `--rate` alone has no goodput figure, on either side)."""
    relative = limit.relative if limit.relative is not None else 0.0
    if number == "capacity":
        found = _capacity(
            head if isinstance(head, Capacity) else None,
            [b for b in bases if isinstance(b, Capacity)],
            relative,
            history=history,
        )
    else:
        found = _goodput(
            head if isinstance(head, Goodput) and head.search else None,
            [b for b in bases if isinstance(b, Goodput) and b.search],
            relative,
            history=history,
        )
    return _judged(number, found, on_undecided) if isinstance(found, _Reading) else found


def _capacity(
    head: Capacity | None, bases: Sequence[Capacity], relative: float, *, history: bool
) -> NumberDelta | _Reading | None:
    """Calls at once: both searches read up to the lower of their capacity-max."""
    if head is None and not bases:
        return None
    if head is None or not bases:
        base = None if not bases else float(statistics.median([b.found for b in bases]))
        return _one_side("capacity", base, None if head is None else float(head.found))
    reach = min(head.maximum, *(b.maximum for b in bases))
    base_found = float(statistics.median([min(b.found, reach) for b in bases]))
    why = "" if history else _comparable(head, bases[0])
    if not why and any(not math.isclose(b.limit, head.limit) for b in bases):
        why = "not compared: some of the history's runs held their levels to another budget"
    head_found = min(head.found, reach)
    if why:
        return NumberDelta(
            number="capacity", base=float(base_found), head=float(head.found), note=why
        )
    threshold = base_found / (1.0 + relative)
    if not head.complete:
        # "At least" that many: it cannot show a drop, nor rule one out.
        high, why = math.inf, f"this run's search did not end ({head.stopped}): at least its figure"
    elif head.upper is not None:
        # Levels near the budget: the capacity is somewhere from the figure to `upper`.
        high = min(head.upper, reach)
        why = (
            f"this run's capacity is between {head.found} and {head.upper} (levels near the budget)"
        )
    else:
        high = head_found
    said = (
        f"regresses below {threshold:.4g} calls at once (the base's {base_found:g} less the "
        f"{relative * 100:.0f} % limit)"
    )
    return _Reading(
        base_found, float(head.found), threshold, head_found, high, False, said, "", why
    )


def _goodput(
    head: Goodput | None, bases: Sequence[Goodput], relative: float, *, history: bool
) -> NumberDelta | _Reading | None:
    """Requests a second: the figure lies under the rate that broke (or the near levels'
    `upper`)."""
    if head is None and not bases:
        return None
    base_found = statistics.median([b.found for b in bases]) if bases else None
    if head is None or base_found is None:
        return _one_side("goodput", base_found, None if head is None else head.found)
    if any(not math.isclose(b.limit, head.limit) for b in bases):
        whose = "some of the history's runs held their" if history else "the base held its"
        return NumberDelta(
            number="goodput",
            base=base_found,
            head=head.found,
            note=f"not compared: {whose} levels to another budget than this run's "
            f"{fmt_duration(head.limit)}",
        )
    threshold = base_found / (1.0 + relative)
    held = "the median of the rates the history's runs held" if history else "the rate it held"
    said = (
        f"regresses below {fmt_rate(threshold)} (the base's {fmt_rate(base_found)}, {held}, "
        f"less the {relative * 100:g} % limit)"
    )
    top = head.upper if head.upper is not None else head.breaking
    why = (
        f"this run's goodput is {goodput_figure(head)}"
        if head.complete
        else f"this run's search did not end ({head.stopped}): at least {fmt_rate(head.found)}"
    )
    broke = "" if top is None else f"; {fmt_rate(top)} broke"
    high = math.inf if top is None else top
    return _Reading(base_found, head.found, threshold, head.found, high, True, said, broke, why)


def undecided_delta(
    number: Literal["capacity", "goodput"],
    base: float,
    head: float,
    note: str,
    on_undecided: Policy,
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
