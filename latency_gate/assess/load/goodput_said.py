"""Calls at a rate in sentences: each level (held, broke, or near the budget), the headline of a
run at a rate and of the goodput search (a figure, or an interval when levels near the budget
could not be told apart), the levels the figure rests on, and the two capacities side by side
(Little's law). The verdict's rows (goodput_verdict.py) and the reports use them."""

from __future__ import annotations

from collections.abc import Sequence

from latency_gate.assess.load.goodput_levels import near_between
from latency_gate.config.plan.hypotheses import ERROR_ALPHA, LEVEL_ALPHA, LEVEL_BETA, LEVEL_SHARE
from latency_gate.formatting import fmt_duration, fmt_percent, fmt_rate, fmt_value_beside, plural
from latency_gate.models import Capacity, Goodput, RateLevel

__all__ = [
    "broke_rests_on",
    "deciding_levels",
    "goodput_headline",
    "held_rests_on",
    "level_said",
    "littles_law",
    "near_levels",
    "near_span",
    "rate_headline",
]


def _broke_because(level: RateLevel, goodput: Goodput) -> str:
    parts = [
        f"p95 {fmt_value_beside(level.p95, goodput.limit, 'concurrent_p95')}"
        if level.p95 is not None
        else "no call succeeded"
    ]
    if "ttft_p95" in level.broke_on and level.ttft_p95 is not None:
        parts.append(f"first-token p95 {fmt_duration(level.ttft_p95)}")
    if "error_rate" in level.broke_on:
        parts.append(f"{level.errors} of {plural(level.judged, 'call')} failed")
    return "; ".join(parts)


def _budget(goodput: Goodput) -> str:
    return f"p95 ≤ {fmt_duration(goodput.limit)}"


def level_said(level: RateLevel, goodput: Goodput) -> str:
    """One level in a sentence: "4/s held after 96 judged calls of 130, by the test (rules out
    a p95 over 3.00 s: 5.0 % or more of its calls over it; such a level holds at most 2.5 % of
    the time)", or "4.4/s was near the budget ...: its calls could not tell"."""
    after = f"after {plural(level.judged, 'judged call')} of {level.calls:,}"
    rate = fmt_rate(level.rate)
    if level.decided_by == "client":
        lag = fmt_duration(level.send_lag_p95)
        return (
            f"{rate}: the client fell behind (send lag p95 {lag}) and the endpoint's own "
            "latencies held the budget: it says nothing of the endpoint"
        )
    how = {
        "test": "by the test",
        "level cap": "undecided at its end",
        "max-calls": "undecided when a cap stopped it",
    }.get(level.decided_by, level.decided_by)
    limit = fmt_duration(goodput.limit)
    share = fmt_percent(LEVEL_SHARE)
    if level.near:
        p95 = "" if level.p95 is None else f"; p95 {fmt_duration(level.p95)} from due"
        return (
            f"{rate} was near the budget {after}, {how}: its calls could not tell (they rule "
            f"out neither a p95 over {limit} nor one within it{p95})"
        )
    chance = level.wrong_at_most
    if level.held:
        chance = LEVEL_BETA if chance is None else chance
        return (
            f"{rate} held {after}, {how} (rules out a p95 over {limit}: {share} or more of its "
            f"calls over it; such a level holds at most {fmt_percent(chance)} of the time)"
        )
    if level.broke_on == ("error_rate",):
        chance = ERROR_ALPHA if chance is None else chance
        ruled = (
            f"rules out a failure rate of {fmt_percent((goodput.error_limit or 0.0) / 2)} or less"
        )
    else:
        chance = LEVEL_ALPHA if chance is None else chance
        ruled = f"rules out a p95 within {limit}: {share} or fewer of its calls over it"
    return (
        f"{rate} broke {after}, {how} ({_broke_because(level, goodput)}; {ruled}; such a level "
        f"breaks at most {fmt_percent(chance)} of the time)"
    )


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


def held_rests_on(level: RateLevel | None, goodput: Goodput) -> str:
    """What the lower end rests on: "rules out a p95 over 1.00 s; wrong at most 2.5 %"."""
    chance = LEVEL_BETA if level is None or level.wrong_at_most is None else level.wrong_at_most
    return (
        f"rules out a p95 over {fmt_duration(goodput.limit)}; wrong at most {fmt_percent(chance)}"
    )


def broke_rests_on(level: RateLevel, goodput: Goodput) -> str:
    """What the upper end rests on: "p95 1.40 s; rules out a p95 within 1.00 s; wrong at most
    5.0 %" (or the failure rate, when errors broke it)."""
    if level.broke_on == ("error_rate",):
        chance = ERROR_ALPHA if level.wrong_at_most is None else level.wrong_at_most
        ruled = (
            f"rules out a failure rate of {fmt_percent((goodput.error_limit or 0.0) / 2)} or less"
        )
    else:
        chance = LEVEL_ALPHA if level.wrong_at_most is None else level.wrong_at_most
        ruled = f"rules out a p95 within {fmt_duration(goodput.limit)}"
    return f"{_broke_because(level, goodput)}; {ruled}; wrong at most {fmt_percent(chance)}"


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
        else f"; breaks at {fmt_rate(goodput.breaking)} ({_broke_because(breaking, goodput)})"
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
