"""Seeded simulations of the capacity search: how often its figure is the truth, and its cost.

    python bench/capacitysim.py --write      # the tables of docs/statistics.md, "Capacity"
    python bench/capacitysim.py --runs 200   # quicker and coarser, prints only

Every run goes through the shipped search (latency_gate/assess/capacity.py): `CapacitySearch`
picks each level and `judge_level` decides it burst by burst, as `CapacityRun` does in a real
run; only the endpoint is simulated. Level c0 (the run's concurrency, 10) is judged as the run's
own concurrent check is: one burst, then two more per look while undecided, up to 9 looks.

Endpoints have n slots and a service time s (1 s; only budget / s matters), each call scaled by
a lognormal factor exp(N(0, 0.1)) (moderate noise):

- queued: call i of a burst of c (i = 1..c) ends at ceil(i / n) x s: later calls wait for a
  slot (a server that queues what it cannot run);
- batched: every call of a burst takes ceil(c / n) x s: the slots slow each other down (an LLM
  server batching its slots).

The budget is (k + 1/2) s. The truth is the largest c whose true p95 over the calls of a burst
of c is within the budget: with the share of those calls over the budget,
share(c) = (1/c) sum_i P(round_i x s x exp(N(0, 0.1)) > budget), the largest c with
share(c) <= 5 %, computed exactly (share grows with c in both models). Runs are seeded by
(model, n, k, run): the same code gives the same figures.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist, fmean

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from statsim import pct, progress, table_row, write_tables  # noqa: E402

from latency_gate.assess.capacity import CapacitySearch  # noqa: E402
from latency_gate.assess.capacity_levels import (  # noqa: E402
    PERCENTILE_TEST,
    LevelCalls,
    LevelLimits,
    judge_level,
)
from latency_gate.assess.checks import worst_errors  # noqa: E402
from latency_gate.config import plan  # noqa: E402
from latency_gate.config.plan import (  # noqa: E402
    DEFAULT_CAPACITY_MAX,
    LOOK_WARM_CALLS,
    MAX_LOOKS,
    level_bursts,
    search_worst_calls,
)

SIGMA = 0.1
SERVICE = 1.0
START = 10  # the default --concurrency
SLOTS = (1, 2, 4, 8)
ROUNDS = (1, 2, 4)  # k: the budget is (k + 1/2) service times
MODELS = ("queued", "batched")
DEFAULT_RUNS = 1000
SHARE = 0.05  # a p95 within its budget: at most 5 % of calls over it


@dataclass(frozen=True)
class Endpoint:
    """n slots, a service time, a model of what a burst of c calls does."""

    model: str
    slots: int
    service: float = SERVICE

    def rounds(self, concurrency: int) -> list[int]:
        """Each call's service times in a burst of `concurrency`."""
        if self.model == "queued":
            return [math.ceil(i / self.slots) for i in range(1, concurrency + 1)]
        return [math.ceil(concurrency / self.slots)] * concurrency

    def burst(self, concurrency: int, rng: random.Random) -> list[float]:
        return [
            r * self.service * math.exp(rng.gauss(0.0, SIGMA)) for r in self.rounds(concurrency)
        ]

    def share_over(self, concurrency: int, budget: float) -> float:
        """The exact share of a burst's calls over `budget`."""
        normal = NormalDist()
        return fmean(
            1.0 - normal.cdf(math.log(budget / (r * self.service)) / SIGMA)
            for r in self.rounds(concurrency)
        )

    def truth(self, budget: float, maximum: int) -> int:
        """The largest concurrency (at most `maximum`) whose true p95 holds the budget."""
        found = 0
        for concurrency in range(1, maximum + 1):
            if self.share_over(concurrency, budget) > SHARE:
                break
            found = concurrency
        return found


@dataclass(frozen=True)
class Found:
    """One simulated search: the capacity found, the calls and levels it took (level c0's calls
    are the run's own, not counted)."""

    capacity: int
    calls: int
    levels: int


def run_looks() -> list[int]:
    """The calls behind the run's concurrent check at each look: one burst, then
    ceil(20 / c0) bursts a look."""
    per_look = math.ceil(LOOK_WARM_CALLS / START) * START
    return [START + per_look * look for look in range(MAX_LOOKS)]


def judge_start(endpoint: Endpoint, limits: LevelLimits, rng: random.Random) -> bool:
    """Level c0 as the run's concurrent check judges it: looks until decided, then policy."""
    looks = run_looks()
    calls = LevelCalls()
    seen: list[int] = []
    for position, target in enumerate(looks):
        while calls.calls < target:
            calls += LevelCalls(latencies=tuple(endpoint.burst(START, rng)), calls=START)
        seen.append(calls.calls)
        judged = judge_level(calls, limits, looks=seen, last=position == len(looks) - 1)
        if judged.held is not None:
            return judged.held
    raise AssertionError("the last look always decides")


def judge_once(
    endpoint: Endpoint, level: int, limits: LevelLimits, rng: random.Random
) -> tuple[bool, int]:
    """One level burst by burst, as CapacityRun judges it: (held, calls)."""
    gathered = LevelCalls()
    looks: list[int] = []
    while True:
        gathered += LevelCalls(latencies=tuple(endpoint.burst(level, rng)), calls=level)
        looks.append(gathered.calls)
        judged = judge_level(gathered, limits, looks=looks, last=len(looks) >= level_bursts(level))
        if judged.held is not None:
            return judged.held, gathered.calls


def search_once(
    endpoint: Endpoint, budget: float, rng: random.Random, maximum: int = DEFAULT_CAPACITY_MAX
) -> Found:
    """One run's search from the run's concurrency, as CapacityRun drives it."""
    limits = LevelLimits(concurrent_p95=budget)
    search = CapacitySearch(start=START, maximum=maximum)
    search.record(START, judge_start(endpoint, limits, rng))
    calls = levels = 0
    while (level := search.next_level()) is not None:
        held, spent = judge_once(endpoint, level, limits, rng)
        levels += 1
        calls += spent
        search.record(level, held)
    return Found(search.found, calls, levels)


def sweep_once(endpoint: Endpoint, budget: float, rng: random.Random) -> int:
    """The calls a sweep takes (1, 2, 3 ... at once, each judged alike, until one breaks): what
    a search that does not halve the gap would spend."""
    limits = LevelLimits(concurrent_p95=budget)
    calls = 0
    for level in range(1, DEFAULT_CAPACITY_MAX + 1):
        held, spent = judge_once(endpoint, level, limits, rng)
        calls += spent
        if not held:
            break
    return calls


@dataclass(frozen=True)
class Cell:
    """One row: a model, n slots, budget (k + 1/2) s, over `runs` runs."""

    model: str
    slots: int
    rounds: int
    truth: int
    share_at_truth: float
    share_above: float
    right: float
    above: float
    below: float
    calls: float
    levels: float
    sweep: float


def cell(model: str, slots: int, rounds: int, runs: int, *, sweep: bool = True) -> Cell:
    endpoint = Endpoint(model, slots)
    budget = (rounds + 0.5) * SERVICE
    truth = endpoint.truth(budget, DEFAULT_CAPACITY_MAX)
    found = [
        search_once(endpoint, budget, random.Random(f"capacity/{model}/{slots}/{rounds}/{run}"))
        for run in range(runs)
    ]
    swept = (
        [
            sweep_once(endpoint, budget, random.Random(f"sweep/{model}/{slots}/{rounds}/{run}"))
            for run in range(min(runs, 200))
        ]
        if sweep
        else [0]
    )
    return Cell(
        model=model,
        slots=slots,
        rounds=rounds,
        truth=truth,
        share_at_truth=endpoint.share_over(truth, budget) if truth else 0.0,
        share_above=endpoint.share_over(truth + 1, budget),
        right=fmean(f.capacity == truth for f in found),
        above=fmean(f.capacity > truth for f in found),
        below=fmean(f.capacity < truth for f in found),
        calls=fmean(f.calls for f in found),
        levels=fmean(f.levels for f in found),
        sweep=fmean(swept),
    )


def table_accuracy(runs: int) -> tuple[str, list[Cell]]:
    lines = [
        table_row(
            "model",
            "slots n",
            "budget",
            "truth",
            "over the budget at truth / truth + 1",
            "found = truth",
            "found > truth",
            "found < truth",
            "calls",
            "levels",
        ),
        table_row(*["---"] * 3, *["--:"] * 7),
    ]
    cells = []
    for model in MODELS:
        for slots in SLOTS:
            for rounds in ROUNDS:
                progress(f"accuracy: {model}, {slots} slots, budget {rounds + 0.5:g} s")
                found = cell(model, slots, rounds, runs)
                cells.append(found)
                lines.append(
                    table_row(
                        model,
                        str(slots),
                        f"{rounds + 0.5:g} s",
                        str(found.truth),
                        f"{pct(found.share_at_truth)} / {pct(found.share_above)}",
                        pct(found.right),
                        pct(found.above),
                        pct(found.below),
                        f"{found.calls:.0f}",
                        f"{found.levels:.1f}",
                    )
                )
    return "\n".join(lines), cells


def table_cost(cells: Sequence[Cell]) -> str:
    """Calls against the truth: the search's cost grows with the log of the capacity, a
    sweep's (1, 2, 3 ... at once) with the capacity itself."""
    lines = [
        table_row(
            "truth",
            "cells",
            "levels",
            "log2(truth + 1)",
            "calls",
            "a sweep from 1 would take",
        ),
        table_row(*["--:"] * 6),
    ]
    by_truth: dict[int, list[Cell]] = {}
    for found in cells:
        by_truth.setdefault(found.truth, []).append(found)
    for truth in sorted(by_truth):
        group = by_truth[truth]
        calls = fmean(c.calls for c in group)
        lines.append(
            table_row(
                str(truth),
                str(len(group)),
                f"{fmean(c.levels for c in group):.1f}",
                f"{math.log2(truth + 1):.1f}",
                f"{calls:.0f}",
                f"{fmean(c.sweep for c in group):.0f}",
            )
        )
    return "\n".join(lines)


def table_levels() -> str:
    """Each level's own error rates at its cap (exact, checks.worst_errors), with `estimate`."""
    lines = [
        table_row(
            "calls at once",
            "bursts at most",
            "calls at most",
            "holds with 12 % of calls over (at most)",
            "breaks with 1.98 % over (at most)",
        ),
        table_row(*["--:"] * 5),
    ]
    for level in (1, 2, 4, 8, 16, 32, 64):
        bursts = level_bursts(level)
        looks = [level * (b + 1) for b in range(bursts)]
        wrong_pass, wrong_fail = worst_errors(
            PERCENTILE_TEST, looks, on_undecided="estimate", q=95.0
        )
        lines.append(
            table_row(str(level), str(bursts), str(looks[-1]), pct(wrong_pass), pct(wrong_fail))
        )
    return "\n".join(lines)


CAPS = ((60, 8), (80, 16), (100, 16))


def table_caps(runs: int) -> str:
    """What the level cap buys: every cell of the accuracy table under three caps."""
    lines = [
        table_row(
            "level cap",
            "found = truth",
            "found > truth",
            "found < truth",
            "mean calls",
            "worst case from 10 to 64",
        ),
        table_row("---", *["--:"] * 5),
    ]
    kept = (plan.LEVEL_CALLS, plan.LEVEL_BURSTS)
    try:
        for calls, bursts in CAPS:
            plan.LEVEL_CALLS, plan.LEVEL_BURSTS = calls, bursts
            progress(f"caps: {bursts} bursts, {calls} calls")
            cells = [
                cell(m, n, k, runs, sweep=False) for m in MODELS for n in SLOTS for k in ROUNDS
            ]
            shipped = " (shipped)" if (calls, bursts) == kept else ""
            lines.append(
                table_row(
                    f"{bursts} bursts, {calls} calls{shipped}",
                    pct(fmean(c.right for c in cells)),
                    pct(fmean(c.above for c in cells)),
                    pct(fmean(c.below for c in cells)),
                    f"{fmean(c.calls for c in cells):.0f}",
                    f"{search_worst_calls(START, DEFAULT_CAPACITY_MAX):,}",
                )
            )
    finally:
        plan.LEVEL_CALLS, plan.LEVEL_BURSTS = kept
    return "\n".join(lines)


def clear(found: Cell) -> bool:
    """Neither the truth nor the level above it lies in the test's indifference zone: the truth
    has at most the healthy share of calls over the budget, the level above at least the
    failing share."""
    return found.share_at_truth <= PERCENTILE_TEST.p0 and found.share_above >= PERCENTILE_TEST.p1


def summary(cells: Sequence[Cell]) -> str:
    def met(group: Sequence[Cell]) -> str:
        right = sum(c.right >= 0.95 for c in group)
        safe = sum(c.above <= 0.02 for c in group)
        return (
            f"found = truth in at least 95 % of runs in {right} of {len(group)} cells, "
            f"found > truth in at most 2 % in {safe}"
        )

    zone = [c for c in cells if not clear(c)]
    outside = [c for c in cells if clear(c)]
    return (
        f"Cells whose truth and next level lie outside the test's indifference zone (at most "
        f"{pct(PERCENTILE_TEST.p0)} of the truth's calls over the budget, at least "
        f"{pct(PERCENTILE_TEST.p1)} of the next level's): {met(outside)}. Cells with one of the "
        f"two inside it: {met(zone)}. Over all cells, found = truth in "
        f"{pct(fmean(c.right for c in cells))} of runs, above it in "
        f"{pct(fmean(c.above for c in cells))}, below it in {pct(fmean(c.below for c in cells))}."
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="simulated runs a cell")
    parser.add_argument("--write", action="store_true", help="update docs/statistics.md")
    args = parser.parse_args(argv)
    accuracy, cells = table_accuracy(args.runs)
    tables = {
        "levels": table_levels(),
        "accuracy": f"{accuracy}\n\n{summary(cells)} ({args.runs:,} runs a cell.)",
        "cost": table_cost(cells),
        "caps": table_caps(max(100, args.runs // 2)),
    }
    for name, table in tables.items():
        print(f"## {name}\n\n{table}\n")
    if args.write:
        write_tables(ROOT / "docs" / "statistics.md", tables, marker="capsim")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
