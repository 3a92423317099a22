"""Calls at a rate as the verdict and the reports say them: the rows, the sentences, and the two
capacities side by side (Little's law).

- "rate_p95" (`--rate R`): the p95 from due of the level at R against the budget under load,
  PASS when the level held. A level the client could not send is undecided: nothing was learnt
  of the endpoint, so it fails only with `on-undecided fail`.
- "goodput" (`--goodput`): the highest rate that held, a floor gated by `--min-rate` (reported
  without one). A search stopped (by a cap or the client) before any level at or above the
  minimum was decided, with no level at or under it broken, is undecided the same way.
"""

from __future__ import annotations

from latency_gate.assess.rate_level_test import PERCENTILE_TEST
from latency_gate.config.rate_plan import fmt_rate
from latency_gate.formatting import fmt_duration, fmt_percent, fmt_value_beside, plural
from latency_gate.models import Capacity, Check, Goodput, RateLevel

__all__ = ["goodput_checks", "goodput_headline", "level_said", "littles_law", "rate_headline"]


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
    """One level in a sentence: "4/s held after 96 judged calls, by the test (rules out 12.0 %
    or more of its calls over 3.00 s; such a level holds at most 3.0 % of the time)"."""
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
        "level cap": f"undecided at its end and decided by {goodput.on_undecided}",
        "max-calls": f"undecided when a cap stopped it, decided by {goodput.on_undecided}",
    }.get(level.decided_by, level.decided_by)
    limit = fmt_duration(goodput.limit)
    chance = level.wrong_at_most
    if level.held:
        chance = PERCENTILE_TEST.beta if chance is None else chance
        return (
            f"{rate} held {after}, {how} (rules out {fmt_percent(PERCENTILE_TEST.p1)} or more of "
            f"its calls over {limit}; such a level holds at most {fmt_percent(chance)} of the "
            "time)"
        )
    chance = PERCENTILE_TEST.alpha if chance is None else chance
    return (
        f"{rate} broke {after}, {how} ({_broke_because(level, goodput)}; rules out "
        f"{fmt_percent(PERCENTILE_TEST.p0)} or fewer of its calls over {limit}; such a level "
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
    word = "holds" if level.held else "breaks"
    return f"{word} {_budget(goodput)} at {rate} (p95 {p95} from due, {goodput.arrivals} arrivals)"


def goodput_headline(goodput: Goodput) -> str:
    """The goodput in one sentence: "holds p95 ≤ 3.00 s up to 4.2/s (Poisson arrivals); breaks
    at 4.6/s (p95 3.40 s)"."""
    budget = _budget(goodput)
    breaking = next(
        (lv for lv in goodput.levels if not lv.held and lv.rate == goodput.breaking), None
    )
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
    if not goodput.found:
        return f"does not hold {budget} even at {fmt_rate(goodput.breaking)}{broke}"
    if goodput.breaking is None:
        return f"holds {budget} up to {fmt_rate(goodput.found)}{tokens}, the most searched"
    found = fmt_rate(goodput.found)
    return f"holds {budget} up to {found} ({goodput.arrivals} arrivals){tokens}{broke}"


def goodput_checks(
    goodput: Goodput | None, *, asked: float | None, min_rate: float | None, searched: bool
) -> list[Check]:
    """The rows of the verdict: the level at `--rate` (gated), the goodput (gated by
    `--min-rate`, reported without it). None of them when neither was asked for."""
    rows: list[Check] = []
    if asked is not None:
        rows.append(_rate_check(goodput, asked))
    if searched or min_rate is not None:
        rows.append(_goodput_check(goodput, min_rate))
    return rows


def _undecided(
    goodput: Goodput, number: str, value: float | None, limit: float | None, said: str
) -> Check:
    fails = goodput.on_undecided == "fail"
    how = (
        "failed by policy (on-undecided: fail)"
        if fails
        else (
            f"not failed (on-undecided: {goodput.on_undecided}: nothing measured of the "
            "endpoint to go by)"
        )
    )
    note = f"undecided: {said}; {how}"
    return Check(
        number=number,
        value=value,
        limit=limit,
        passed=not fails,
        note=note,
        decided=False,
        by_policy=True,
        n=goodput.calls,
        meaning=note,
    )


def _rate_check(goodput: Goodput | None, asked: float) -> Check:
    if goodput is None:
        return Check(
            number="rate_p95",
            value=None,
            limit=None,
            passed=False,
            note="no data",
            meaning=f"the run ended before its calls at {fmt_rate(asked)}",
        )
    level = next((lv for lv in goodput.levels if lv.rate == asked), None)
    if level is None:
        return Check(
            number="rate_p95",
            value=None,
            limit=goodput.limit,
            passed=False,
            note=goodput.stopped or "no data",
            meaning=f"no level at {fmt_rate(asked)} was judged: "
            f"{goodput.stopped or 'the run ended first'}",
        )
    if level.client_behind:
        lag = fmt_duration(level.send_lag_p95)
        said = f"at {fmt_rate(asked)} the client fell behind (send lag p95 {lag}), not the endpoint"
        return _undecided(goodput, "rate_p95", level.p95, goodput.limit, said)
    return Check(
        number="rate_p95",
        value=level.p95,
        limit=goodput.limit,
        passed=level.held,
        note=f"at {fmt_rate(asked)}, from due"
        + ("" if level.decided_by == "test" else f"; {level.decided_by}"),
        decided=level.decided_by == "test",
        by_policy=level.decided_by != "test",
        n=level.judged,
        meaning=level_said(level, goodput),
    )


def _goodput_check(goodput: Goodput | None, min_rate: float | None) -> Check:
    if goodput is None:
        return Check(
            number="goodput",
            value=None,
            limit=min_rate,
            passed=None if min_rate is None else False,
            note="no data",
            meaning="the goodput was not searched: the run ended before its looks did",
        )
    deciding = [
        lv
        for lv in goodput.levels
        if (lv.held and lv.rate == goodput.found) or (not lv.held and lv.rate == goodput.breaking)
    ]
    rests = "; ".join(level_said(lv, goodput) for lv in deciding)
    note = "" if goodput.complete else f"at least {fmt_rate(goodput.found)}: {goodput.stopped}"
    if min_rate is None:
        return Check(
            number="goodput",
            value=goodput.found,
            limit=None,
            passed=None,
            note=note,
            n=goodput.calls,
            meaning=rests,
        )
    passed = goodput.found >= min_rate
    shown_under = goodput.complete or (
        goodput.breaking is not None and goodput.breaking <= min_rate
    )
    if not passed and not shown_under:
        said = (
            f"at least {fmt_rate(goodput.found)}, and no rate of {fmt_rate(min_rate)} (the "
            f"minimum) or more was decided ({goodput.stopped})"
        )
        return _undecided(goodput, "goodput", goodput.found, min_rate, said)
    word, side = ("PASS", "at least") if passed else ("FAIL", "under")
    at_least = "" if goodput.complete else "at least "
    meaning = f"{word}: {at_least}{fmt_rate(goodput.found)}, {side} the {fmt_rate(min_rate)} asked"
    if rests:
        meaning += f". {rests[:1].upper()}{rests[1:]}"
    return Check(
        number="goodput",
        value=goodput.found,
        limit=min_rate,
        passed=passed,
        note=note,
        n=goodput.calls,
        meaning=meaning,
    )


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
