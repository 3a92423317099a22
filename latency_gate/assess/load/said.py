"""A judged level in words, whatever its load: why it broke, what its test ruled out and how
often such a level is decided wrongly at most (LEVEL_BETA, LEVEL_ALPHA, ERROR_ALPHA of
config/plan.py). The verdict's rows (verdict.py), the headlines (headline.py) and the reports
use them.

- calls at once: `level_meaning` (a sentence of the report), `level_clause` (a few words of the
  check's sentence), "12 held after 90 calls, by the test: ...";
- requests a second: `level_said`, "4/s held after 96 judged calls of 130, by the test (...)",
  and what each end of an interval rests on (`held_rests_on`, `broke_rests_on`).
"""

from __future__ import annotations

from latency_gate.config.plan.hypotheses import ERROR_ALPHA, LEVEL_ALPHA, LEVEL_BETA, LEVEL_SHARE
from latency_gate.formatting import fmt_duration, fmt_percent, fmt_rate, fmt_value_beside, plural
from latency_gate.models import Capacity, CapacityLevel, Goodput, RateLevel

__all__ = [
    "broke_because",
    "broke_rests_on",
    "held_rests_on",
    "level_clause",
    "level_meaning",
    "level_said",
    "wrong_at_most",
]


def broke_because(level: CapacityLevel | RateLevel, figure: Capacity | Goodput) -> str:
    """Why a level broke, in a few words: "p95 3.40 s", "p95 1.20 s; 4 of 52 calls failed" (of
    the calls its tests read: a level at a rate's judged ones)."""
    p95 = fmt_value_beside(level.p95, figure.limit, "concurrent_p95")
    parts = [f"p95 {p95}" if level.p95 is not None else "no call succeeded"]
    if "ttft_p95" in level.broke_on and level.ttft_p95 is not None:
        parts.append(f"first-token p95 {fmt_duration(level.ttft_p95)}")
    if "error_rate" in level.broke_on:
        read = level.judged if isinstance(level, RateLevel) else level.calls
        parts.append(f"{level.errors} of {plural(read, 'call')} failed")
    return "; ".join(parts)


def wrong_at_most(level: CapacityLevel | RateLevel | None) -> float:
    """How often a level decided so is wrong at most: its deciding test's bound, else the
    bound of the test that decides such a level (held: LEVEL_BETA; broke on its error rate
    alone: ERROR_ALPHA; broke on a p95: LEVEL_ALPHA)."""
    if level is not None and level.wrong_at_most is not None:
        return level.wrong_at_most
    if level is None or level.held:
        return LEVEL_BETA
    return ERROR_ALPHA if level.broke_on == ("error_rate",) else LEVEL_ALPHA


def _failing_ruled_out(figure: Capacity | Goodput) -> str:
    return f"rules out a failure rate of {fmt_percent((figure.error_limit or 0.0) / 2)} or less"


def _broke_ruled_out(level: RateLevel, goodput: Goodput, *, share: str | None = None) -> str:
    """What a level at a rate that broke rules out: a failure rate within the error budget's
    half when errors alone broke it, else a p95 within the budget (with `share`: that share or
    fewer of its calls over it)."""
    if level.broke_on == ("error_rate",):
        return _failing_ruled_out(goodput)
    ruled = f"rules out a p95 within {fmt_duration(goodput.limit)}"
    return ruled if share is None else f"{ruled}: {share} or fewer of its calls over it"


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
    chance = fmt_percent(wrong_at_most(level))
    if level.held:
        ruled = f"rules out a p95 over {limit} ({share} or more of its calls over it"
        tail = f"such a level holds at most {chance} of the time"
        return f"{level.concurrency} held {how}: {ruled}; {tail})"
    tail = f"such a level breaks at most {chance} of the time"
    if level.broke_on == ("error_rate",):
        return f"{level.concurrency} broke {how}: {_failing_ruled_out(capacity)} ({tail})"
    ruled = f"rules out a p95 within {limit} ({share} or fewer of its calls over it"
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
    if level.held:
        ruled = f"rules out a p95 over {limit}"
    elif level.broke_on == ("error_rate",):
        ruled = f"rules out ≤ {fmt_percent((capacity.error_limit or 0.0) / 2)} failing"
    else:
        ruled = f"rules out a p95 within {limit}"
    word = "held" if level.held else "broke"
    return (
        f"{level.concurrency} {word} {after} {how} ({ruled}, wrong at most "
        f"{fmt_percent(wrong_at_most(level))} of the time)"
    )


def level_said(level: RateLevel, goodput: Goodput) -> str:
    """One level at a rate in a sentence: "4/s held after 96 judged calls of 130, by the test
    (rules out a p95 over 3.00 s: 5.0 % or more of its calls over it; such a level holds at
    most 2.5 % of the time)", or "4.4/s was near the budget ...: its calls could not tell"."""
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
    chance = fmt_percent(wrong_at_most(level))
    if level.held:
        return (
            f"{rate} held {after}, {how} (rules out a p95 over {limit}: {share} or more of its "
            f"calls over it; such a level holds at most {chance} of the time)"
        )
    ruled = _broke_ruled_out(level, goodput, share=share)
    return (
        f"{rate} broke {after}, {how} ({broke_because(level, goodput)}; {ruled}; such a level "
        f"breaks at most {chance} of the time)"
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
    return (
        f"{broke_because(level, goodput)}; {_broke_ruled_out(level, goodput)}; wrong at most "
        f"{fmt_percent(wrong_at_most(level))}"
    )
