"""A load search's figure in one sentence, and the levels it rests on: the capacity ("holds
concurrent p95 ≤ 3.00 s up to 12 calls at once; breaks at 13"), the level at `--rate` and the
goodput ("holds p95 ≤ 3.00 s up to 4.2/s"), each an interval when levels near the budget could
not be told apart; the two side by side (Little's law). Each level in words is said.py's.
"""

from __future__ import annotations

from collections.abc import Sequence

from latency_gate.assess.load.open_level import near_between
from latency_gate.assess.load.said import broke_because, broke_rests_on, held_rests_on
from latency_gate.formatting import fmt_duration, fmt_percent, fmt_rate, fmt_value_beside, plural
from latency_gate.models import Capacity, CapacityLevel, Goodput, RateLevel

__all__ = [
    "capacity_headline",
    "deciding_capacity_levels",
    "deciding_levels",
    "goodput_figure",
    "goodput_headline",
    "littles_law",
    "near_levels",
    "near_span",
    "rate_headline",
]


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


def deciding_capacity_levels(capacity: Capacity) -> list[CapacityLevel]:
    """The levels the figure rests on: the highest that held, the near ones above it, and the
    lowest that broke."""
    held = [lv for lv in capacity.levels if lv.held and lv.concurrency == capacity.found]
    broke = [
        lv
        for lv in capacity.levels
        if not lv.held and not lv.near and lv.concurrency == capacity.breaking
    ]
    return held[:1] + _near(capacity) + broke[:1]


def _budget(goodput: Goodput) -> str:
    return f"p95 ≤ {fmt_duration(goodput.limit)}"


def rate_headline(goodput: Goodput) -> str:
    """The level at `--rate` in one sentence: "holds p95 ≤ 3.00 s at 5/s (p95 1.20 s from due,
    Poisson arrivals)"."""
    level = next((lv for lv in goodput.levels if lv.rate == goodput.asked), None)
    rate = fmt_rate(goodput.asked)
    if level is None:
        return f"was not measured at {rate}: {goodput.stopped or 'the run ended first'}"
    if level.client_behind:
        return (
            f"not measured at {rate}: the client fell behind (send lag p95 "
            f"{fmt_duration(level.send_lag_p95)}), not the endpoint"
        )
    p95 = fmt_value_beside(level.p95, goodput.limit, "concurrent_p95")
    if level.near:
        return (
            f"is near {_budget(goodput)} at {rate}: its calls could not tell (p95 {p95} from "
            f"due, {goodput.arrivals} arrivals)"
        )
    if not level.held and level.broke_on == ("error_rate",):
        budget = fmt_percent(goodput.error_limit or 0.0)
        return (
            f"breaks its {budget} error budget at {rate}: {level.errors:,} of "
            f"{level.judged:,} judged calls failed (p95 {p95} from due, {goodput.arrivals} "
            "arrivals)"
        )
    word = "holds" if level.held else "breaks"
    return f"{word} {_budget(goodput)} at {rate} (p95 {p95} from due, {goodput.arrivals} arrivals)"


def near_levels(goodput: Goodput) -> list[RateLevel]:
    """The levels near the budget above the figure and below the lowest rate that broke (all
    above the figure when none broke): their calls could not tell."""
    return near_between(goodput.levels, goodput.found, goodput.breaking)


def near_span(rates: Sequence[float]) -> str:
    """ "2.8/s", "2.8/s and 3/s", or "2.8/s to 3.6/s" (three or more): the rates near the
    budget, as the reports and the search's stop sentence name them."""
    names = [fmt_rate(rate) for rate in rates]
    if len(names) <= 2:
        return " and ".join(names)
    return f"{names[0]} to {names[-1]}"


def _breaking(goodput: Goodput) -> RateLevel | None:
    return next(
        (
            lv
            for lv in goodput.levels
            if not lv.held and not lv.near and not lv.client_behind and lv.rate == goodput.breaking
        ),
        None,
    )


def _interval_headline(goodput: Goodput, near: list[RateLevel], tokens: str) -> str:
    """The goodput when levels above it were near the budget: from the rate that held (its
    test's bound) to the lowest that broke (its test's bound), or "at least" the rate held when
    none broke; the near levels between showed nothing either way."""
    budget = _budget(goodput)
    held = next((lv for lv in goodput.levels if lv.held and lv.rate == goodput.found), None)
    breaking = _breaking(goodput)
    were = "was" if len(near) == 1 else "were"
    their = "its" if len(near) == 1 else "their"
    span = near_span([lv.rate for lv in near])
    near_said = f"{span} {were} near the budget ({their} calls could not tell)"
    held_said = (
        f"{fmt_rate(goodput.found)} held{tokens} ({held_rests_on(held, goodput)})"
        if goodput.found
        else "no rate held"
    )
    if breaking is None:
        head = (
            f"holds {budget} up to at least {fmt_rate(goodput.found)}"
            if goodput.found
            else f"was not shown to hold {budget} at any rate"
        )
        said = f"{held_said}; {near_said}; no rate tried broke it"
        return f"{head} ({goodput.arrivals} arrivals): {said}"
    broke_said = f"{fmt_rate(breaking.rate)} broke ({broke_rests_on(breaking, goodput)})"
    head = (
        f"holds {budget} up to a rate between {fmt_rate(goodput.found)} and "
        f"{fmt_rate(breaking.rate)}"
        if goodput.found
        else f"holds {budget} only under {fmt_rate(breaking.rate)}, if at all"
    )
    return f"{head} ({goodput.arrivals} arrivals): {held_said}; {near_said}; {broke_said}"


def goodput_headline(goodput: Goodput) -> str:
    """The goodput in one sentence: "holds p95 ≤ 3.00 s up to 4.2/s (Poisson arrivals); breaks
    at 4.6/s (p95 3.40 s)", or when levels above it were near the budget, "holds p95 ≤ 3.00 s
    up to a rate between 4.2/s and 9.2/s (Poisson arrivals): 4.2/s held (rules out a p95 over
    3.00 s; wrong at most 2.5 %); 4.6/s was near the budget (its calls could not tell); 9.2/s
    broke (p95 6.10 s; rules out a p95 within 3.00 s; wrong at most 1.0 %)"."""
    budget = _budget(goodput)
    breaking = _breaking(goodput)
    broke = (
        ""
        if breaking is None
        else f"; breaks at {fmt_rate(goodput.breaking)} ({broke_because(breaking, goodput)})"
    )
    tokens = (
        f", {goodput.tokens_per_s:,.0f} output tokens/s" if goodput.tokens_per_s is not None else ""
    )
    if not goodput.complete:
        held = (
            f"holds {budget} up to at least {fmt_rate(goodput.found)}{tokens}"
            if goodput.found
            else f"was not shown to hold {budget} at any rate"
        )
        return f"{held} ({goodput.stopped or 'the search did not end'}){broke}"
    near = near_levels(goodput)
    if near:
        return _interval_headline(goodput, near, tokens)
    if not goodput.found:
        return f"does not hold {budget} even at {fmt_rate(goodput.breaking)}{broke}"
    if goodput.breaking is None:
        return f"holds {budget} up to {fmt_rate(goodput.found)}{tokens}, the most searched"
    found = fmt_rate(goodput.found)
    return f"holds {budget} up to {found} ({goodput.arrivals} arrivals){tokens}{broke}"


def deciding_levels(goodput: Goodput) -> list[RateLevel]:
    """The levels the figure rests on: the highest that held, the near ones above it, and the
    lowest that broke."""
    held = [lv for lv in goodput.levels if lv.held and lv.rate == goodput.found]
    breaking = _breaking(goodput)
    return held[:1] + near_levels(goodput) + ([] if breaking is None else [breaking])


def goodput_figure(goodput: Goodput) -> str:
    """The goodput as the levels left it, each end with what it rests on: "between 2.6/s
    (held) and 3.3/s (broke)", "at least 2.6/s (held; none broke)", "2.6/s (held; 2.8/s
    broke)" when the search's last step told them apart."""
    found = fmt_rate(goodput.found)
    if goodput.breaking is None:
        return f"at least {found} (held; none broke)" if goodput.found else "no rate held or broke"
    breaking = fmt_rate(goodput.breaking)
    if not goodput.found:
        return f"under {breaking} (broke; no rate held)"
    if goodput.upper is not None or not goodput.complete:
        return f"between {found} (held) and {breaking} (broke)"
    return f"{found} (held; {breaking} broke)"


def littles_law(goodput: Goodput, capacity: Capacity) -> str:
    """The two capacities side by side, for an endpoint that ran both: calls in flight at the
    rate held (Little's law: rate x mean latency) against the calls at once that held."""
    level = next((lv for lv in goodput.levels if lv.held and lv.rate == goodput.found), None)
    if level is None or level.mean_latency is None or not goodput.found or not capacity.found:
        return ""
    in_flight = goodput.found * level.mean_latency
    sustained = capacity.found / level.mean_latency
    return (
        f"Calls at once and requests a second, side by side: at {fmt_rate(goodput.found)} this "
        f"endpoint had {in_flight:.1f} calls in flight on average (Little's law: "
        f"{fmt_rate(goodput.found)} x {fmt_duration(level.mean_latency)} mean latency from "
        f"due), while {plural(capacity.found, 'call')} started together held the budget. "
        f"{capacity.found} at once is not {fmt_rate(sustained)} sustained ({capacity.found} / "
        f"{fmt_duration(level.mean_latency)}): a burst ends before the next begins, arrivals at "
        "a rate do not wait. Use the capacity for users who press send together (a chat room, "
        "a batch job's workers, a CI run's parallel jobs); use the goodput to plan traffic from "
        "independent users, in requests a second."
    )
