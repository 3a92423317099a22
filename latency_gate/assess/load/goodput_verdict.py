"""Calls at a rate as rows of the verdict (the sentences are goodput_said.py's).

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
- The regression ("goodput" among the comparison's rows, `goodput_delta`): against an earlier
  run, or a history (the median of the rates its runs held), searched at the same budget. The
  limit is `max-regression`'s relative one: the goodput regresses below base / (1 + limit).
  Each side is what its levels showed: NOT REGRESSED when this run held a rate at or above that
  threshold (its test rules out a p95 over the budget there); REGRESSED when a rate at or under
  it broke (its test rules out a p95 within the budget there); otherwise (the threshold among
  levels near the budget, inside the search's last step, or past where a cap stopped it)
  undecided, and `on-undecided-regression` decides (pass: said beside the verdict).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from http import HTTPStatus
from typing import Literal

from latency_gate.assess.load.capacity_verdict import undecided_delta
from latency_gate.assess.load.goodput_said import (
    deciding_levels,
    level_said,
    near_levels,
    near_span,
)
from latency_gate.config.regression import RegressionLimit
from latency_gate.formatting import fmt_duration, fmt_percent, fmt_rate, plural
from latency_gate.models import Check, Goodput, NumberDelta, RateLevel, Sample

__all__ = ["goodput_checks", "goodput_delta"]


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
        return Check(
            number="goodput",
            value=None,
            limit=min_rate,
            passed=None if min_rate is None else False,
            note="no data",
            meaning="the goodput was not searched: the run ended before its looks did",
        )
    rests = "; ".join(level_said(lv, goodput) for lv in deciding_levels(goodput))
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
    if not passed and (goodput.breaking is None or goodput.breaking > min_rate):
        return _not_shown(goodput, min_rate, rests, note)
    figure = _figure(goodput)
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
    return _min_rate_row(goodput, min_rate, passed=passed, note=note, meaning=meaning, rests=rests)


def _min_rate_row(
    goodput: Goodput,
    min_rate: float,
    *,
    passed: bool,
    note: str,
    meaning: str,
    rests: str,
    decided: bool = True,
) -> Check:
    """The `goodput` row against `--min-rate`: its sentence followed by what the figure rests
    on; undecided rows (`decided` False) were passed or failed by policy."""
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
        decided=decided,
        by_policy=not decided,
    )


def _figure(goodput: Goodput) -> str:
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
        f"{word}: undecided, the goodput is {_figure(goodput)} and {why}; "
        f"{'passed' if passed else 'failed'} by policy (on-undecided: {policy})"
    )
    note = note or f"undecided: {_figure(goodput)}"
    return _min_rate_row(
        goodput,
        min_rate,
        passed=passed,
        note=note,
        meaning=meaning,
        rests=rests,
        decided=False,
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
        side = "this run" if head is None else "the base"
        return NumberDelta(
            number="goodput",
            base=base_found,
            head=None if head is None else head.found,
            note=f"not compared: {side} did not search the goodput (--goodput)",
        )
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
        f"this run's goodput is {_figure(head)}"
        if head.complete
        else f"this run's search did not end ({head.stopped}): at least {fmt_rate(head.found)}"
    )
    return undecided_delta("goodput", base_found, head.found, f"{said}; {why}", on_undecided)
