"""A load search's figure as rows of the verdict: each row gated by its minimum (reported without
one), decided by what the levels showed, and undecided where they could not tell, `on-undecided`
then deciding (passed, said so, unless it is fail). The regression against a base is
regression.py's; the sentences said.py's and headline.py's.

Calls at once, "capacity": PASS when the capacity found is at least `min-capacity`, FAIL when
even the highest level it can be (below the lowest that broke) is under it; when `min-capacity`
falls among levels near the budget, which the calls could not tell apart, it is undecided. What
it rests on: the level that held and the one that broke, each with what its tests ruled out and
how often such a level is decided wrongly, and the levels near the budget between them.

Requests a second:

- "rate_p95" (`--rate R`): the p95 from due of the level at R against the budget under load,
  PASS when the level held, FAIL when it broke. A level near the budget (its calls could not
  tell) is undecided and `on-undecided` decides it (estimate: its p95 against the budget). A
  level the client could not send is undecided: nothing was learnt of the endpoint, so it fails
  only with `on-undecided fail`.
- "goodput" (`--goodput`): the highest rate that held, a floor gated by `--min-rate` (reported
  without one). One rule, what the levels showed: PASS when a rate at or above the minimum held
  (its test rules out a p95 over the budget); FAIL when a rate at or under it broke (its test
  rules out a p95 within it); otherwise undecided, and it passes, said so, unless
  `on-undecided` is fail (the capacity's `--min-capacity` the same). Undecided covers a minimum
  among levels near the budget (the goodput between the rate held and the lowest that broke, or
  "at least" the rate held when none broke), one inside the search's last step (between the
  rate held and the rate broken), one above every rate tried when none broke, and a search
  stopped (by a cap or the client) before a level at or above the minimum was decided.
"""

from __future__ import annotations

from collections import Counter
from http import HTTPStatus
from typing import Literal

from latency_gate.assess.load.headline import (
    deciding_capacity_levels,
    deciding_levels,
    goodput_figure,
    near_levels,
    near_span,
)
from latency_gate.assess.load.said import level_clause, level_said
from latency_gate.formatting import fmt_duration, fmt_percent, fmt_rate, plural
from latency_gate.models import Capacity, Check, Goodput, RateLevel, Sample

__all__ = ["capacity_check", "goodput_checks", "highest_possible"]


def _by_policy(policy: str, nothing: str) -> tuple[bool, str]:
    """Whether an undecided row fails (only with on-undecided: fail) and how that is said;
    `nothing`: why any other policy cannot fail it ("nothing measured of the endpoint")."""
    fails = policy == "fail"
    if fails:
        return True, "failed by policy (on-undecided: fail)"
    return False, f"not failed (on-undecided: {policy}: {nothing} to go by)"


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _not_searched(number: Literal["capacity", "goodput"], limit: float | None) -> Check:
    """A search asked for that the run ended before: no data, a failure when gated."""
    return Check(
        number=number,
        value=None,
        limit=limit,
        passed=None if limit is None else False,
        note="no data",
        meaning=f"the {number} was not searched: the run ended before its looks did",
    )


def _figure_row(
    figure: Capacity | Goodput,
    limit: float | None,
    *,
    passed: bool | None,
    note: str,
    meaning: str,
    rests: str = "",
    decided: bool = True,
) -> Check:
    """A search's figure as a row of the verdict (`capacity` or `goodput`), gated by `limit`
    (`--min-capacity`, `--min-rate`) or reported without it: its sentence followed by what the
    figure rests on; undecided rows (`decided` False) were passed or failed by policy."""
    if rests:
        meaning += f". {_capitalised(rests)}"
    return Check(
        number="capacity" if isinstance(figure, Capacity) else "goodput",
        value=float(figure.found),
        limit=None if limit is None else float(limit),
        passed=passed,
        note=note,
        n=figure.calls,
        meaning=meaning,
        decided=decided,
        by_policy=not decided,
    )


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
        return _not_searched("capacity", float(min_capacity))
    rests = "; ".join(level_clause(lv, capacity) for lv in deciding_capacity_levels(capacity))
    note = "" if capacity.complete else f"at least {capacity.found}: {capacity.stopped}"
    if min_capacity is None:
        return _figure_row(capacity, None, passed=None, note=note, meaning=rests)
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
        return _figure_row(
            capacity,
            min_capacity,
            passed=passed,
            note=note or f"undecided: between {capacity.found} and {top}",
            meaning=meaning,
            rests=rests,
            decided=False,
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
    return _figure_row(
        capacity, min_capacity, passed=passed, note=note, meaning=meaning, rests=rests
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
    fails, how = _by_policy(
        capacity.on_undecided, f"no level at or above {min_capacity} was measured"
    )
    stopped = capacity.stopped or "the search did not end"
    said = (
        f"undecided: at least {capacity.found} at once, and no level of {min_capacity} (the "
        f"minimum) or more was decided ({stopped}); {how}"
    )
    return _figure_row(
        capacity,
        min_capacity,
        passed=not fails,
        note=said if not note else f"{note}; {said}",
        meaning=said,
        rests=rests,
        decided=False,
    )


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
    fails, how = _by_policy(goodput.on_undecided, "nothing measured of the endpoint")
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
    if level.judged == 0:
        # Cut short (a cap, the capacity search): no call of it was judged, so its p95 from due
        # is of no call the tests read, and nothing was learnt of the endpoint at the rate.
        said = (
            f"at {fmt_rate(asked)} all {plural(level.calls, 'call')} fell in the level's "
            f"warm-up (its first {fmt_duration(goodput.warmup)} of arrivals, made and not "
            "judged): none was judged"
        )
        check = _undecided(goodput, "rate_p95", None, goodput.limit, said)
        return check.model_copy(update={"breach": f"p95 at the rate not judged: {said}"})
    if level.near:
        return _near_rate(goodput, level, asked)
    broke_on_errors = not level.held and "error_rate" in level.broke_on
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
        breach=_failed_calls(level, goodput) if broke_on_errors else "",
    )


def _failed_calls(level: RateLevel, goodput: Goodput) -> str:
    """A level that broke on its error rate, said as its failures: "the calls at 60/s failed:
    19 of 23 (429 Too Many Requests), over the 1.0 % error budget" (its p95, of the calls that
    succeeded, may be well within the budget)."""
    judged = sorted(
        (s for s in level.samples if s.due is not None and s.due >= goodput.warmup),
        key=lambda s: s.due or 0.0,
    )[: level.judged]
    kinds = Counter(_failure_name(s) for s in judged if not s.ok)
    named = ", ".join(
        f"{name}" if len(kinds) == 1 else f"{count:,} {name}"
        for name, count in kinds.most_common(3)
    )
    more = f" and {len(kinds) - 3} more kinds" if len(kinds) > 3 else ""
    why = f" ({named}{more})" if named else ""
    budget = fmt_percent(goodput.error_limit or 0.0)
    return (
        f"the calls at {fmt_rate(level.rate)} failed: {level.errors:,} of {level.judged:,}"
        f"{why}, over the {budget} error budget"
    )


def _failure_name(sample: Sample) -> str:
    """ "429 Too Many Requests" for a status, else the kind of failure ("connection_reset")."""
    if sample.status is not None and sample.status >= 400:
        try:
            return f"{sample.status} {HTTPStatus(sample.status).phrase}"
        except ValueError:
            return f"HTTP {sample.status}"
    return str(sample.error or "failed")


def _near_rate(goodput: Goodput, level: RateLevel, asked: float) -> Check:
    """The level at `--rate` near the budget: its calls could not tell whether its p95 is within
    it; `on-undecided` decides (estimate: its p95 from due against the budget)."""
    policy = goodput.on_undecided
    within = level.p95 is not None and level.p95 <= goodput.limit
    passed = policy == "pass" or (policy == "estimate" and within)
    if policy == "estimate":
        side = "within" if within else "over"
        how = (
            f"{'passed' if passed else 'failed'} by its p95, {side} the budget "
            "(on-undecided: estimate)"
        )
    else:
        how = f"{'passed' if passed else 'failed'} by policy (on-undecided: {policy})"
    return Check(
        number="rate_p95",
        value=level.p95,
        limit=goodput.limit,
        passed=passed,
        note=f"at {fmt_rate(asked)}, from due; undecided: near the budget",
        decided=False,
        by_policy=True,
        n=level.judged,
        meaning=f"{'PASS' if passed else 'FAIL'}: undecided, {how}. {level_said(level, goodput)}",
    )


def _goodput_check(goodput: Goodput | None, min_rate: float | None) -> Check:
    if goodput is None:
        return _not_searched("goodput", min_rate)
    rests = "; ".join(level_said(lv, goodput) for lv in deciding_levels(goodput))
    note = "" if goodput.complete else f"at least {fmt_rate(goodput.found)}: {goodput.stopped}"
    if min_rate is None:
        return _figure_row(goodput, None, passed=None, note=note, meaning=rests)
    passed = goodput.found >= min_rate
    if not passed and (goodput.breaking is None or goodput.breaking > min_rate):
        return _not_shown(goodput, min_rate, rests, note)
    figure = goodput_figure(goodput)
    if passed:
        meaning = (
            f"PASS: {figure}; {fmt_rate(goodput.found)} held, at least the "
            f"{fmt_rate(min_rate)} asked"
        )
    else:
        meaning = (
            f"FAIL: {figure}; {fmt_rate(goodput.breaking)} broke, at or under the "
            f"{fmt_rate(min_rate)} asked"
        )
    return _figure_row(goodput, min_rate, passed=passed, note=note, meaning=meaning, rests=rests)


def _not_shown(goodput: Goodput, min_rate: float, rests: str, note: str) -> Check:
    """`--min-rate` neither held (no rate at or above it held) nor broken (no rate at or under
    it broke): levels near the budget between, the search's last step, or a search that
    stopped or reached its highest rate. Not decided on what the calls did not show: it passes,
    said as undecided, unless on-undecided is fail (the capacity's `--min-capacity` the same)."""
    policy = goodput.on_undecided
    passed = policy != "fail"
    word = "PASS" if passed else "FAIL"
    asked = fmt_rate(min_rate)
    near = near_levels(goodput)
    if not goodput.complete:
        why = f"no rate of {asked} or more was decided ({goodput.stopped})"
    elif near:
        why = (
            f"{near_span([lv.rate for lv in near])} near the budget between (their calls could "
            f"not tell), no rate at or under {asked} broke"
        )
    elif goodput.breaking is None:
        why = f"every rate tried held, the highest under {asked}, and none broke"
    else:
        why = f"the {asked} asked lies between the rate held and the rate broken"
    meaning = (
        f"{word}: undecided, the goodput is {goodput_figure(goodput)} and {why}; "
        f"{'passed' if passed else 'failed'} by policy (on-undecided: {policy})"
    )
    note = note or f"undecided: {goodput_figure(goodput)}"
    return _figure_row(
        goodput,
        min_rate,
        passed=passed,
        note=note,
        meaning=meaning,
        rests=rests,
        decided=False,
    )
