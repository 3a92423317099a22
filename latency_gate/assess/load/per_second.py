"""Requests a second: the load search's strategy for the highest request rate whose p95 from due
holds the budget under load (the goodput at the budget).

After the run's looks (and the capacity search), calls arrive open-loop at a rate
(measure/arrivals.py), one level at a time, each judged on its own calls (open_level.py) by the
levels' test (levels.py): it holds, breaks, or is near the budget (its calls could not tell).

- `--rate R` alone: one level at R, a row of the verdict ("rate": held, broke, or near the
  budget and then `on-undecided`).
- `--goodput`: a search from the start rate (`--rate` when given, else the run's own burst's
  throughput, `concurrency` / concurrent p95): doubled while levels hold, halved while they
  break or are near (at most RATE_STEPS times either way), then bisected at the geometric middle
  of the highest rate that held and the lowest that was near or broke, until that one is within
  RATE_PRECISION of the one that held. The goodput is the highest rate that held; when levels
  above it were near the budget (their calls could not tell), it is an interval from `found`
  (held: its test rules out a p95 over the budget) to `upper`, the lowest rate that broke (its
  test rules out a p95 within it): a near level showed nothing, so only a broken rate bounds
  the goodput from above, and with none broken it is "at least `found`". `--min-rate` gates it
  (verdict.py).

`RateSearch` is the search alone (search.LoadSearch: levels in, the next rate out); `RateRun`
drives the levels for
the engine's hook (wired in latency_gate/run.py) under what `max-calls` and `goodput-time` leave:
when a level no longer fits, or the client could not send at a rate, the search stops there and
the goodput is "at least" the highest rate that held.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from latency_gate.assess.budget.sampling import on_undecided_policy
from latency_gate.assess.load.headline import near_span
from latency_gate.assess.load.levels import LevelLimits
from latency_gate.assess.load.open_level import (
    CLIENT_BUDGET_SHARE,
    CLIENT_FLOOR_TIMES,
    Arrived,
    OpenLevel,
    near_rates,
    rate_bracket,
)
from latency_gate.assess.load.search import LoadRun, LoadSearch, outcome_of
from latency_gate.config import Target
from latency_gate.config.plan.hypotheses import hold_calls
from latency_gate.config.plan.needs import rate_room
from latency_gate.config.plan.search import (
    RATE_PRECISION,
    RATE_STEPS,
    GoodputPlan,
    LevelOutcome,
    goodput_plan,
)
from latency_gate.formatting import fmt_rate
from latency_gate.models import CallPhase, Goodput, RateLevel, Sample

__all__ = ["RateAsk", "RateRun", "RateSearch", "start_rate", "start_rates"]


def _round(rate: float) -> float:
    """Three significant digits: rates a report can say as they were tried."""
    return float(f"{rate:.3g}")


def _round_up(rate: float) -> float:
    """Three significant digits, never under `rate`."""
    rounded = _round(rate)
    if rounded >= rate:
        return rounded
    digits = 2 - math.floor(math.log10(rate))
    scale = 10.0**digits
    return math.ceil(rate * scale) / scale


@dataclass
class RateSearch(LoadSearch[float]):
    """Which rate to try next, from the rates tried so far (`record`)."""

    start: float
    steps: int = RATE_STEPS
    precision: float = RATE_PRECISION
    held: float | None = None  # the highest rate that held
    broke: float | None = None  # the lowest rate that broke
    near: float | None = None  # the lowest rate near the budget
    tried: list[tuple[float, LevelOutcome]] = field(default_factory=list)

    def record(self, level: float, outcome: LevelOutcome) -> None:
        super().record(level, outcome)
        rate = level
        if outcome == "held":
            self.held = rate if self.held is None else max(self.held, rate)
        elif outcome == "near":
            self.near = rate if self.near is None else min(self.near, rate)
        else:
            self.broke = rate if self.broke is None else min(self.broke, rate)

    @property
    def ceiling(self) -> float | None:
        """The lowest rate that was near the budget or broke: the search stays under it."""
        above = [r for r in (self.near, self.broke) if r is not None]
        return min(above) if above else None

    @property
    def highest(self) -> float:
        return _round(self.start * 2**self.steps)

    @property
    def lowest(self) -> float:
        return _round(self.start / 2**self.steps)

    def next_rate(self) -> float | None:
        """`next_level`, in the rate's words."""
        return self.next_level()

    def next_level(self) -> float | None:
        """The rate to try next, or None when the search is over."""
        if not self.tried:
            return self.start
        ceiling = self.ceiling
        if ceiling is None:
            held = self.held or self.start
            if held * self.precision >= self.highest:  # the next step would be within precision
                return None
            return min(_round(2 * held), self.highest)
        if self.held is None:
            if ceiling <= self.lowest * self.precision:
                return None
            return max(_round(ceiling / 2), self.lowest)
        if ceiling / self.held <= self.precision:
            return None
        middle = _round(math.sqrt(self.held * ceiling))
        return None if middle in (self.held, ceiling) else middle

    @property
    def found(self) -> float:
        """The goodput: the highest rate that held (0 when none did)."""
        return self.held or 0.0


@dataclass(frozen=True)
class RateAsk:
    """The next level: its rate, most calls and seconds of arrivals (the engine's LevelAsk)."""

    rate: float
    calls: int
    seconds: float
    arrivals: str


@dataclass
class RateRun(LoadRun[RateLevel, OpenLevel]):
    """The levels of one run, driven by the engine's hook: `next_level` closes the level that
    ended and says the next; `look` judges the one in progress; `goodput()` is the result."""

    plan: GoodputPlan
    search: RateSearch
    searching: bool
    arrivals: str = "poisson"
    asked: float | None = None
    room: int | None = None  # calls left under max-calls (None: not capped)
    time_left: float | None = None  # seconds left under goodput-time (None: not capped)
    floor: float | None = None
    client_limit: float | None = None
    restarted_at: float | None = None  # where the search went on after a first level too short

    @property
    def lag_limit(self) -> float:
        """How late the client may send before a level it broke is said to be the client's."""
        return max(
            CLIENT_FLOOR_TIMES * (self.floor or 0.0),
            CLIENT_BUDGET_SHARE * self.limits.concurrent_p95,
        )

    def next_level(self, arrivals: Sequence[Arrived], seconds: float, cut: str) -> RateAsk | None:
        if self.current is not None:
            self._close(arrivals, seconds, cut)
        if self.stopped:
            return None
        rate = (
            self.search.next_level()
            if self.searching
            else (None if self.levels else self.search.start)
        )
        if rate is None:
            self.stopped = self._finished()
            return None
        length = self.plan.length
        if self.searching and self.levels and not length.holds_at(rate):
            self._stop_unholdable(rate)
            return None
        calls = length.calls_at(rate)
        if self.room is not None and calls > self.room - self.calls:
            self._stop_for_cap(f"max-calls left {max(0, self.room - self.calls):,} calls", rate)
            return None
        seconds = length.seconds_at(rate)
        if self.time_left is not None and seconds + length.drain > self.time_left - self.seconds:
            left = max(0.0, self.time_left - self.seconds)
            self._stop_for_cap(f"goodput-time left {left:.0f} s", rate)
            return None
        self.current = OpenLevel(rate, self.limits, length.warmup, length.hold, self.lag_limit)
        return RateAsk(rate, calls, seconds, self.arrivals)

    def look(self, arrivals: Sequence[Arrived], now: float) -> bool:
        return self.current is not None and self.current.look(arrivals, now)

    def _close(self, arrivals: Sequence[Arrived], seconds: float, cut: str) -> None:
        level = self.current
        self.current = None
        if level is None or not arrivals:
            return
        record = level.close(arrivals, seconds)
        self.levels.append(record)
        self.calls += record.calls
        self.seconds += seconds
        if cut:  # the client could not hold the calls the rate put in flight
            record = record.model_copy(
                update={"held": False, "client_behind": True, "decided_by": "client"}
            )
            self.levels[-1] = record
            self.client_limit = record.rate
            self.stopped = (
                f"at {fmt_rate(record.rate)} {cut} (a connection each): the client holds no "
                "more, so the search stops there"
            )
            return
        if record.client_behind:
            self.client_limit = record.rate
            lag = record.send_lag_p95 or 0.0
            self.stopped = (
                f"the client could not send {fmt_rate(record.rate)}: its calls went out "
                f"{lag * 1000:.0f} ms late at p95 (send lag, the gate's floor "
                f"{(self.floor or 0.0) * 1000:.1f} ms), and the endpoint's own latencies held "
                "the budget: a faster client, or several, is needed above this rate"
            )
            return
        if self.searching and self._restart(record):
            return
        self.search.record(record.rate, outcome_of(record))

    def _restart(self, record: RateLevel) -> bool:
        """Whether the search goes on from a higher start after its first level, `record`: one
        too short to hold (too few calls after its warm-up, levels fitted to goodput-time or
        max-calls) that did not break says nothing of where the goodput is, and the search
        goes on from the lowest rate whose level can hold (halving under it went down to a
        level with no call judged, which broke it: a goodput of 0 against a fast endpoint)."""
        length = self.plan.length
        if len(self.levels) != 1 or record.held or not record.near or length.holds_at(record.rate):
            return False
        lowest, highest = length.holding_rates()
        if not record.rate < lowest <= highest:
            return False
        self.restarted_at = _round_up(lowest)
        self.search = RateSearch(self.restarted_at, self.search.steps, self.search.precision)
        return True

    def _stop_unholdable(self, rate: float) -> None:
        """The next level, at `rate`, could not hold: the search stops, cut by its cap (below
        the rates a level can hold at, it could only end near the budget or break)."""
        length = self.plan.length
        lowest, highest = length.holding_rates()
        self.cut_by_cap = True
        self.stopped = (
            f"a level at {fmt_rate(rate)} would judge about {length.judged_at(rate):.0f} calls "
            f"after its warm-up, under the {hold_calls()} a level needs to hold "
            f"({self.plan.fitted or 'its length'}): levels can "
            + (
                f"hold only from {fmt_rate(lowest)} to {fmt_rate(highest)}"
                if lowest <= highest
                else "hold at no rate"
            )
            + ", so the search stops there"
        )

    def _stop_for_cap(self, why: str, rate: float) -> None:
        self.cut_by_cap = True
        self.stopped = f"{why}, not enough for the next level, {fmt_rate(rate)}"

    def _finished(self) -> str:
        search = self.search
        if not self.searching:
            return ""
        found, broke, upper = rate_bracket(self.levels)
        near = near_rates(self.levels, found, broke)
        if near:
            span = near_span(near)
            held = f"{fmt_rate(found)} held" if found else "no rate held"
            if upper is None:
                return (
                    f"{held}, {span} near the budget and no rate tried broke it: at least "
                    f"{fmt_rate(found)}"
                )
            return (
                f"{held}, {span} near the budget and {fmt_rate(upper)} broke: between "
                f"{fmt_rate(found)} and {fmt_rate(upper)}"
            )
        if search.ceiling is None:
            return f"every rate held up to {fmt_rate(search.held)}, the most searched"
        if search.held is None:
            return f"even {fmt_rate(search.broke)} broke the budget, the least searched"
        return f"{fmt_rate(search.held)} held and {fmt_rate(search.broke)} broke"

    def goodput(self) -> Goodput:
        """The result: the levels in the order tried, the rate held and what it cost."""
        found, broke, upper = rate_bracket(self.levels)
        breaking = next((lv for lv in self.levels if broke is not None and lv.rate == broke), None)
        held = next((lv for lv in self.levels if lv.held and lv.rate == found), None)
        tokens = None
        if held is not None and held.tokens is not None:
            tokens = found * held.tokens
        incomplete = self.client_limit is not None or (
            self.left_open(self.search) if self.searching else self.cut_by_cap
        )
        length = self.plan.length
        return Goodput(
            search=self.searching,
            asked=self.asked,
            found=found,
            upper=upper,
            breaking=None if breaking is None else breaking.rate,
            breaking_p95=None if breaking is None else breaking.p95,
            tokens_per_s=tokens,
            complete=not incomplete,
            stopped_by_cap=self.cut_by_cap,
            client_limit=self.client_limit,
            limit=self.limits.concurrent_p95,
            ttft_limit=self.limits.ttft_p95,
            error_limit=self.limits.error_rate,
            on_undecided=on_undecided_policy(self.limits.on_undecided),
            arrivals="constant" if self.arrivals == "constant" else "poisson",
            start=self.search.start if self.restarted_at is None else self.levels[0].rate,
            restarted_at=self.restarted_at,
            precision=self.search.precision,
            level_seconds=None if math.isinf(length.seconds) else length.seconds,
            level_calls=length.calls,
            level_judged=length.judged,
            warmup=length.warmup,
            hold=length.hold,
            floor=self.floor,
            calls=self.calls,
            seconds=self.seconds,
            stopped=self.stopped,
            levels=tuple(self.levels),
        )


def start_rate(target: Target, samples: Sequence[Sample]) -> float:
    """The first rate: `--rate`, else the run's own burst's throughput (concurrency calls at once
    over their p95: about what the endpoint completes a second when busy), else one call a
    warm p50, else 1/s."""
    if target.rate is not None:
        return target.rate
    concurrent = sorted(
        s.latency for s in samples if s.phase is CallPhase.CONCURRENT and s.ok and s.latency
    )
    if concurrent:
        p95 = concurrent[min(len(concurrent) - 1, math.ceil(0.95 * len(concurrent)) - 1)]
        return _round(min(target.concurrency, len(concurrent)) / p95)
    warm = sorted(s.latency for s in samples if s.phase is CallPhase.WARM and s.ok and s.latency)
    return _round(1.0 / warm[len(warm) // 2]) if warm else 1.0


def start_rates(
    target: Target,
    samples: Sequence[Sample],
    *,
    max_calls: int,
    spent: int = 0,
    floor: float | None = None,
) -> RateRun:
    """The levels of `target`'s run after its looks (`samples`, the run's calls) and its
    capacity search (`spent` calls), under what `max_calls` leaves; `floor`: the gate's own
    p95 under load, what the client's send lag is held to."""
    limits = LevelLimits.of(  # calls at a rate without one are refused by goodput_problems
        target.budget,
        target.on_undecided,
        why="calls at a rate need a budget under load, max-concurrent-p95",
    )
    plan = goodput_plan(target, rate_room(target, max_calls))
    if plan is None:
        raise ValueError("no calls at a rate were asked for")
    start = start_rate(target, samples)
    return RateRun(
        limits,
        plan,
        RateSearch(start),
        searching=target.goodput,
        arrivals=target.arrivals,
        asked=target.rate,
        room=None if target.max_calls is None else max(0, max_calls - len(samples) - spent),
        time_left=target.goodput_time,
        floor=floor,
    )
