"""Seeded simulations of the goodput search: how often its figure is within 10 % of the truth,
how often it is an interval ("between": up to the lowest rate that broke, above levels near the
budget) or open ("at least": near levels, none broken), whether what it says covers the truth,
and what it costs.

    python bench/goodputsim.py --write             # the tables of docs/statistics.md, "Goodput"
    python bench/goodputsim.py --runs 100          # quicker and coarser, prints only
    python bench/goodputsim.py --out FILE.json     # every cell's figures, for the record

Every run goes through the shipped code: `RateSearch` (latency_gate/assess/load/per_second.py) picks
each rate, `start_rate` the first one from a simulated run's burst of 10, `due_times`
(measure/arrivals.py) draws the Poisson arrivals, and `OpenLevel` (assess/load/open_level.py) judges
each level with the levels' test (`judge_level`, levels.LEVEL_TEST: held, broke, or near the budget;
`--level-test calls` counts the calls over the budget one by one), looked at when the engine would
look (each arrival and each call's end; a look is a no-op until the judged prefix has 10 more
calls), and closed as the engine closes it once its calls have ended; `rate_bracket` turns the
levels into the figure and its interval, as `RateRun` does. Only the endpoint is simulated.

Endpoints have n slots served first come, first served, and lognormal service times (median
1 s, sigma 0.3 or 0.6); a call waits for a free slot. Each level starts from an idle endpoint
(the engine waits for a level's calls to end before the next). The budget is twice the service
time's own p95 (the endpoint may double its unloaded p95 under load). The truth is the rate
whose long-run p95 of latency from arrival equals the budget: found by bisection on the rate,
each rate simulated for TRUTH_CALLS Poisson arrivals (the first 5 % dropped) with the same
random numbers. Runs are seeded by (n, sigma, run): the same code gives the same figures.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import fmean

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from statsim import pct, progress, table_row, write_tables  # noqa: E402

from latency_gate.assess.load import levels  # noqa: E402
from latency_gate.assess.load.levels import LevelLimits  # noqa: E402
from latency_gate.assess.load.open_level import OpenLevel, near_rates, rate_bracket  # noqa: E402
from latency_gate.assess.load.per_second import RateSearch, start_rate  # noqa: E402
from latency_gate.config import build_target  # noqa: E402
from latency_gate.config.plan.levels import LevelLength, level_length  # noqa: E402
from latency_gate.config.plan.search import LevelOutcome  # noqa: E402
from latency_gate.measure.arrivals import LevelAsk, due_times  # noqa: E402
from latency_gate.models import CallPhase, CallTimings, RateLevel, Sample  # noqa: E402

SLOTS = (1, 4, 16)
SIGMAS = (0.3, 0.6)
P95_Z = 1.6448536269514722
BUDGET_TIMES_P95 = 2.0
TRUTH_CALLS = 600_000
DEFAULT_RUNS = 500
BURST = 10  # the run's own burst (the default --concurrency), for the start rate


def budget_of(sigma: float) -> float:
    return BUDGET_TIMES_P95 * math.exp(P95_Z * sigma)


def queue(
    dues: Sequence[float], slots: int, sigma: float, rng: random.Random, scale: float = 1.0
) -> list[float]:
    """Each call's latency from its arrival at `dues` (sorted), first come first served on
    `slots` slots, service times lognormal (median `scale`, `sigma`), from an idle endpoint."""
    free = [0.0] * slots
    latencies = []
    for due in dues:
        service = scale * math.exp(rng.gauss(0.0, sigma))
        start = max(due, heapq.heappop(free))
        heapq.heappush(free, start + service)
        latencies.append(start + service - due)
    return latencies


def long_run_p95(rate: float, slots: int, sigma: float, calls: int) -> float:
    rng = random.Random(f"truth/{slots}/{sigma}")
    dues, due = [], 0.0
    for _ in range(calls):
        due += rng.expovariate(rate)
        dues.append(due)
    latencies = sorted(queue(dues, slots, sigma, rng)[calls // 20 :])
    return latencies[math.ceil(0.95 * len(latencies)) - 1]


def truth(slots: int, sigma: float, budget: float, calls: int = TRUTH_CALLS) -> float:
    """The rate whose long-run p95 is the budget (bisection in log space to 0.1 %)."""
    low, high = 1e-3, slots / math.exp(sigma * sigma / 2)  # the slots' saturation
    while high / low > 1.001:
        middle = math.sqrt(low * high)
        if long_run_p95(middle, slots, sigma, calls) <= budget:
            low = middle
        else:
            high = middle
    return math.sqrt(low * high)


def share_over(rate: float, slots: int, sigma: float, budget: float, calls: int) -> float:
    """The long-run share of calls over the budget at `rate` (1.0 above saturation)."""
    if rate >= slots / math.exp(sigma * sigma / 2):
        return 1.0
    rng = random.Random(f"share/{slots}/{sigma}")
    dues, due = [], 0.0
    for _ in range(calls):
        due += rng.expovariate(rate)
        dues.append(due)
    latencies = queue(dues, slots, sigma, rng)[calls // 20 :]
    return sum(lat > budget for lat in latencies) / len(latencies)


class _Clock:
    now = 0.0


class _Arrival:
    """A simulated call: its sample is there once it has ended (by the clock)."""

    __slots__ = ("_sample", "due", "end")

    def __init__(self, due: float, latency: float, index: int) -> None:
        self.due = due
        self.end = due + latency
        self._sample = Sample.model_construct(
            phase=CallPhase.RATE,
            index=index,
            started_at=due,
            ok=True,
            latency=latency,
            timings=CallTimings(),
            send_lag=0.0,
            due=due,
        )

    @property
    def sample(self) -> Sample | None:
        return self._sample if self.end <= _Clock.now else None


@dataclass(frozen=True)
class Level:
    held: bool
    near: bool
    calls: int
    seconds: float
    record: RateLevel

    @property
    def outcome(self) -> LevelOutcome:
        return "held" if self.held else "near" if self.near else "broke"


def one_level(
    rate: float,
    *,
    slots: int,
    sigma: float,
    limits: LevelLimits,
    length: LevelLength,
    rng: random.Random,
    scale: float = 1.0,
) -> Level:
    """One level as the engine runs it and OpenLevel judges it."""
    ask = LevelAsk(rate, length.calls_at(rate), length.seconds_at(rate))
    dues = due_times(ask, rng)
    latencies = queue(dues, slots, sigma, rng, scale)
    arrivals = [_Arrival(d, lat, i) for i, (d, lat) in enumerate(zip(dues, latencies, strict=True))]
    level = OpenLevel(rate, limits, length.warmup, length.hold, lag_limit=math.inf)
    budget = limits.concurrent_p95
    events = sorted([*dues, *(a.end for a in arrivals)])
    # When a call becomes known to the prefix: its end, or once it has waited past the budget.
    known = [a.due + min(a.end - a.due, budget + 1e-9) for a in arrivals]
    judged = [i for i, a in enumerate(arrivals) if a.due >= length.warmup]
    reach: list[float] = []
    most = -math.inf
    for i in judged:
        most = max(most, known[i])
        reach.append(most)
    decided_at = math.inf
    seen = 0
    while seen + 10 <= len(reach):
        wanted = reach[seen + 10 - 1]
        at = _first_at_least(events, wanted)
        if at is None:
            break
        _Clock.now = at
        if level.look(arrivals, at):
            decided_at = at
            break
        seen = level.looks[-1] if level.looks else seen
    made = [a for a in arrivals if a.due <= decided_at]
    _Clock.now = math.inf
    seconds = max(a.end for a in made) if made else 0.0
    record = level.close(made, seconds)
    return Level(record.held, record.near, len(made), seconds, record)


def _first_at_least(events: Sequence[float], value: float) -> float | None:
    low, high = 0, len(events)
    while low < high:
        middle = (low + high) // 2
        if events[middle] < value:
            low = middle + 1
        else:
            high = middle
    return events[low] if low < len(events) else None


@dataclass(frozen=True)
class Found:
    rate: float
    upper: float | None
    broke: float | None  # the lowest rate that broke
    open: bool  # levels above the figure were near and none broke: "at least" the figure
    calls: int
    seconds: float
    levels: int
    start: float


_TARGET = build_target({"url": "http://127.0.0.1:1/", "goodput": "true"})


def start_of(slots: int, sigma: float, rng: random.Random, scale: float = 1.0) -> float:
    """The shipped start rate from a simulated run's burst of 10 calls at once."""
    latencies = queue([0.0] * BURST, slots, sigma, rng, scale)
    samples = [
        Sample.model_construct(
            phase=CallPhase.CONCURRENT, index=i, started_at=0.0, ok=True, latency=lat
        )
        for i, lat in enumerate(latencies)
    ]
    return start_rate(_TARGET, samples)


def search_once(slots: int, sigma: float, budget: float, length: LevelLength, run: int) -> Found:
    rng = random.Random(f"goodput/{slots}/{sigma}/{run}")
    limits = LevelLimits(concurrent_p95=budget)
    start = start_of(slots, sigma, rng)
    return searched(start, slots=slots, sigma=sigma, limits=limits, length=length, rng=rng)


def searched(
    start: float,
    *,
    slots: int,
    sigma: float,
    limits: LevelLimits,
    length: LevelLength,
    rng: random.Random,
    scale: float = 1.0,
) -> Found:
    """One search from `start`, its levels simulated (service times `scale` times the
    endpoint's); the figure and its interval as `RateRun.goodput` reads them (`rate_bracket`)."""
    search = RateSearch(start)
    calls, seconds = 0, 0.0
    tried: list[RateLevel] = []
    while (rate := search.next_rate()) is not None:
        level = one_level(
            rate, slots=slots, sigma=sigma, limits=limits, length=length, rng=rng, scale=scale
        )
        search.record(rate, level.outcome)
        calls += level.calls
        seconds += level.seconds
        tried.append(level.record)
    found, broke, upper = rate_bracket(tried)
    open_ = upper is None and bool(near_rates(tried, found, broke))
    return Found(found, upper, broke, open_, calls, seconds, len(tried), start)


def length_for(budget: float) -> LevelLength:
    target = _TARGET.model_copy(
        update={"budget": _TARGET.budget.model_copy(update={"max_concurrent_p95": budget})}
    )
    return level_length(target)


@dataclass(frozen=True)
class Cell:
    slots: int
    sigma: float
    budget: float
    truth: float
    utilisation: float
    share_low: float
    share_high: float
    within: float
    above: float
    below: float
    between: float
    at_least: float
    covered: float
    width: float | None
    calls: float
    calls_p90: float
    seconds: float
    levels: float
    log_range: float
    runs: int


def cell(slots: int, sigma: float, runs: int) -> Cell:
    budget = budget_of(sigma)
    started = time.monotonic()
    true_rate = truth(slots, sigma, budget)
    length = length_for(budget)
    found = [search_once(slots, sigma, budget, length, run) for run in range(runs)]
    ratio = [f.rate / true_rate for f in found]
    calls = sorted(f.calls for f in found)
    widths = [f.upper / f.rate for f in found if f.upper is not None and f.rate > 0]
    progress(
        f"  {slots} slots, sigma {sigma}: truth {true_rate:.3f}/s, "
        f"{time.monotonic() - started:.0f} s"
    )
    return Cell(
        slots=slots,
        sigma=sigma,
        budget=budget,
        truth=true_rate,
        utilisation=true_rate * math.exp(sigma * sigma / 2) / slots,
        share_low=share_over(0.9 * true_rate, slots, sigma, budget, TRUTH_CALLS // 3),
        share_high=share_over(1.1 * true_rate, slots, sigma, budget, TRUTH_CALLS // 3),
        within=fmean(abs(r - 1) <= 0.1 for r in ratio),
        above=fmean(r > 1.1 for r in ratio),
        below=fmean(r < 0.9 for r in ratio),
        between=fmean(f.upper is not None for f in found),
        at_least=fmean(f.open for f in found),
        covered=fmean(covers(f, true_rate) for f in found),
        width=fmean(widths) if widths else None,
        calls=fmean(calls),
        calls_p90=calls[math.ceil(0.9 * len(calls)) - 1],
        seconds=fmean(f.seconds for f in found),
        levels=fmean(f.levels for f in found),
        log_range=fmean(abs(math.log2(true_rate / f.start)) for f in found),
        runs=runs,
    )


def covers(found: Found, true_rate: float) -> bool:
    """Whether what the run says holds the truth: the truth at or above the rate held less
    10 % (found <= 1.1 x truth) and, when the run says an upper end (the lowest rate that
    broke, above levels near the budget), at or below it; with no upper end and levels near
    ("at least" the figure) the first alone; told apart (no level near), the figure within
    10 % of the truth."""
    if found.upper is not None:
        return found.rate <= 1.1 * true_rate and true_rate <= found.upper
    if found.open:
        return found.rate <= 1.1 * true_rate
    return abs(found.rate / true_rate - 1) <= 0.1


def table_accuracy(cells: Sequence[Cell]) -> str:
    lines = [
        table_row(
            "slots n",
            "sigma",
            "budget",
            "truth",
            "load at truth",
            "over the budget at 0.9 / 1.1 x truth",
            "within 10 %",
            "above by > 10 %",
            "below by > 10 %",
            '"between"',
            '"at least"',
            "truth covered",
            "upper / found",
            "calls (mean / 90th pct)",
            "seconds",
            "levels",
        ),
        table_row(*["--:"] * 16),
    ]
    for c in cells:
        lines.append(
            table_row(
                str(c.slots),
                f"{c.sigma:g}",
                f"{c.budget:.2f} s",
                f"{c.truth:.3g}/s",
                f"{c.utilisation * 100:.0f} %",
                f"{pct(c.share_low)} / {pct(c.share_high)}",
                pct(c.within),
                pct(c.above),
                pct(c.below),
                pct(c.between),
                pct(c.at_least),
                pct(c.covered),
                "—" if c.width is None else f"{c.width:.2f}",
                f"{c.calls:,.0f} / {c.calls_p90:,.0f}",
                f"{c.seconds:,.0f}",
                f"{c.levels:.1f}",
            )
        )
    return "\n".join(lines)


def table_range(runs: int) -> str:
    """Calls against how far the start is from the truth: levels grow with its log."""
    slots, sigma = 4, 0.3
    budget = budget_of(sigma)
    true_rate = truth(slots, sigma, budget)
    length = length_for(budget)
    limits = LevelLimits(concurrent_p95=budget)
    lines = [
        table_row(
            "start / truth",
            "log2 of it",
            "levels",
            "calls",
            "within 10 %",
            '"between"',
            '"at least"',
            "truth covered",
        ),
        table_row(*["--:"] * 8),
    ]
    for power in (-5, -3, -1, 0, 1, 3, 5):
        found: list[Found] = []
        for run in range(runs):
            rng = random.Random(f"range/{power}/{run}")
            start = float(f"{true_rate * 2**power * rng.uniform(0.9, 1.1):.3g}")
            found.append(
                searched(start, slots=slots, sigma=sigma, limits=limits, length=length, rng=rng)
            )
        lines.append(
            table_row(
                f"{2.0**power:g}",
                f"{power:+d}",
                f"{fmean(f.levels for f in found):.1f}",
                f"{fmean(f.calls for f in found):,.0f}",
                pct(fmean(abs(f.rate / true_rate - 1) <= 0.1 for f in found)),
                pct(fmean(f.upper is not None for f in found)),
                pct(fmean(f.open for f in found)),
                pct(fmean(covers(f, true_rate) for f in found)),
            )
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="simulated runs a cell")
    parser.add_argument("--write", action="store_true", help="update docs/statistics.md")
    parser.add_argument("--out", help="write every cell's figures to this JSON file")
    parser.add_argument("--cells", help="n:sigma,... (default: every cell)")
    parser.add_argument(
        "--level-test",
        choices=("clumps", "calls"),
        default="clumps",
        help="the levels' test: the shipped one (clumps), or calls counted one by one",
    )
    args = parser.parse_args(argv)
    if args.level_test == "calls":
        levels.LEVEL_TEST = levels.level_decision
    wanted = [(n, s) for n in SLOTS for s in SIGMAS]
    if args.cells:
        wanted = [(int(a), float(b)) for a, b in (c.split(":") for c in args.cells.split(","))]
    cells = []
    for slots, sigma in wanted:
        progress(f"accuracy: {slots} slots, sigma {sigma}")
        cells.append(cell(slots, sigma, args.runs))
    tables = {
        "accuracy": f"{table_accuracy(cells)}\n\n({args.runs:,} runs a cell.)",
    }
    if not args.cells:
        progress("range")
        ranged = max(50, args.runs // 5)
        tables["range"] = f"{table_range(ranged)}\n\n(4 slots, sigma 0.3; {ranged:,} runs a row.)"
    for name, table in tables.items():
        print(f"## {name}\n\n{table}\n")
    if args.out:
        Path(args.out).write_text(json.dumps([asdict(c) for c in cells], indent=1) + "\n")
    if args.write:
        write_tables(ROOT / "docs" / "statistics.md", tables, marker="goodputsim")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
