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
from typing import Literal

from latency_gate.assess.load.headline import goodput_figure
from latency_gate.config.regression import RegressionLimit
from latency_gate.formatting import fmt_duration, fmt_rate
from latency_gate.models import Capacity, Goodput, NumberDelta

__all__ = ["capacity_delta", "goodput_delta", "undecided_delta"]


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


def goodput_delta(
    head: Goodput | None,
    bases: Sequence[Goodput],
    limit: RegressionLimit,
    *,
    history: bool = False,
    on_undecided: Literal["fail", "pass"] = "pass",
) -> NumberDelta | None:
    """The goodput against the base's (an earlier run's search; with `history`, the median of
    the rates its runs' searches held): see the module's docstring. None when neither side
    searched; `bases` holds searches only (a run at `--rate` alone has no figure)."""
    head = head if head is not None and head.search else None
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
    relative = limit.relative if limit.relative is not None else 0.0
    threshold = base_found / (1.0 + relative)
    held = "the median of the rates the history's runs held" if history else "the rate it held"
    said = (
        f"regresses below {fmt_rate(threshold)} (the base's {fmt_rate(base_found)}, {held}, "
        f"less the {relative * 100:g} % limit)"
    )
    top = head.upper if head.upper is not None else head.breaking
    if head.found >= threshold:
        return NumberDelta(
            number="goodput", base=base_found, head=head.found, outcome="not regressed"
        )
    if top is not None and top <= threshold:
        return NumberDelta(
            number="goodput",
            base=base_found,
            head=head.found,
            regressed=True,
            outcome="regressed",
            note=f"{said}; {fmt_rate(top)} broke",
        )
    why = (
        f"this run's goodput is {goodput_figure(head)}"
        if head.complete
        else f"this run's search did not end ({head.stopped}): at least {fmt_rate(head.found)}"
    )
    return undecided_delta("goodput", base_found, head.found, f"{said}; {why}", on_undecided)
