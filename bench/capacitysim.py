"""Seeded simulations of the capacity search: how often its figure is the truth, above it, or
said as an interval that holds the truth, and what it costs.

    python bench/capacitysim.py --write      # the tables of docs/statistics.md, "Capacity"
    python bench/capacitysim.py --runs 50    # quicker and coarser, prints only

Every run goes through the shipped search: `CapacityRun` (latency_gate/assess/load/at_once.py) picks
each level, judges it burst by burst with `judge_level` (levels.LEVEL_TEST; `--level-test calls`
counts the calls over the budget one by one, the test before issue 40) and says the capacity,
exactly as in a real run; only the endpoint is simulated. Level c0 (the run's concurrency, 10)
starts from the run's own concurrent calls: one burst, then two more a look while the run's
concurrent check (the gate's own p95 test) is undecided, up to 9 looks, as the engine takes them.

Endpoints have n slots and a service time s (1 s), each call scaled by a lognormal factor
exp(N(0, sigma)), sigma 0.3 (a steady service) or 0.6 (answers of varied length):

- queued: call i of a burst of c (i = 1..c) ends at ceil(i / n) x s: later calls wait for a
  slot (a server that queues what it cannot run);
- batched: every call of a burst takes ceil(c / n) x s: the slots slow each other down (an LLM
  server batching its slots).

The budget is (k + 1/2) x s x exp(1.645 sigma), k = 1 or 2: k + 1/2 rounds of a call at its
own p95. The truth is the largest c whose true p95 over the calls of a burst of c is within the
budget: with the share of those calls over the budget, share(c) = (1/c) sum_i P(round_i x s x
exp(N(0, sigma)) > budget), the largest c with share(c) <= 5 %, computed exactly (share grows
with c in both models). Runs are seeded by (model, n, sigma, k, run): the same code gives the
same figures.
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

from latency_gate.assess.budget.checks import percentile_sprt  # noqa: E402
from latency_gate.assess.budget.clumps import Clumps  # noqa: E402
from latency_gate.assess.load import levels as load_levels  # noqa: E402
from latency_gate.assess.load.at_once import CapacityRun, RunLevel  # noqa: E402
from latency_gate.assess.load.levels import (  # noqa: E402
    BREAK_TEST,
    HOLD_TEST,
    LevelCalls,
    LevelLimits,
)
from latency_gate.assess.load.verdict import capacity_check  # noqa: E402
from latency_gate.assess.maths.sequential import Decision  # noqa: E402
from latency_gate.config.plan import levels  # noqa: E402
from latency_gate.config.plan.needs import LOOK_WARM_CALLS, MAX_LOOKS  # noqa: E402
from latency_gate.config.plan.search import DEFAULT_CAPACITY_MAX, search_worst_calls  # noqa: E402
from latency_gate.models import CallPhase, Capacity, Sample  # noqa: E402

SERVICE = 1.0
START = 10  # the default --concurrency
SLOTS = (1, 3, 8, 16)
SIGMAS = (0.3, 0.6)
ROUNDS = (1, 2)  # k: the budget is (k + 1/2) calls at their own p95
MODELS = ("queued", "batched")
DEFAULT_RUNS = 300
SHARE = 0.05  # a p95 within its budget: at most 5 % of calls over it
Z95 = 1.6448536269514722


@dataclass(frozen=True)
class Endpoint:
    """n slots, a service time and its spread, a model of what a burst of c calls does."""

    model: str
    slots: int
    sigma: float
    service: float = SERVICE

    def rounds(self, concurrency: int) -> list[int]:
        """Each call's service times in a burst of `concurrency`."""
        if self.model == "queued":
            return [math.ceil(i / self.slots) for i in range(1, concurrency + 1)]
        return [math.ceil(concurrency / self.slots)] * concurrency

    def burst(self, concurrency: int, rng: random.Random) -> list[float]:
        return [
            r * self.service * math.exp(rng.gauss(0.0, self.sigma))
            for r in self.rounds(concurrency)
        ]

    def share_over(self, concurrency: int, budget: float) -> float:
        """The exact share of a burst's calls over `budget`."""
        normal = NormalDist()
        return fmean(
            1.0 - normal.cdf(math.log(budget / (r * self.service)) / self.sigma)
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


def budget_of(sigma: float, rounds: int) -> float:
    return (rounds + 0.5) * SERVICE * math.exp(Z95 * sigma)


def _samples(latencies: Sequence[float]) -> list[Sample]:
    return [
        Sample.model_construct(
            phase=CallPhase.CONCURRENT, index=i, started_at=0.0, ok=True, latency=v
        )
        for i, v in enumerate(latencies)
    ]


def run_level(endpoint: Endpoint, budget: float, rng: random.Random) -> RunLevel:
    """Level c0 as the run leaves it: its concurrent calls, one burst, then ceil(20 / c0)
    bursts a look while the run's concurrent check is undecided, up to 9 looks."""
    test = percentile_sprt(95)
    per_look = math.ceil(LOOK_WARM_CALLS / START)
    values: list[float] = []
    looks: list[int] = []
    for look in range(MAX_LOOKS):
        for _ in range(1 if look == 0 else per_look):
            values += endpoint.burst(START, rng)
        looks.append(len(values))
        if test.decide(sum(v > budget for v in values), len(values)) is not Decision.UNDECIDED:
            break
    calls = LevelCalls(latencies=tuple(values), clumps=Clumps(len(values)))
    return RunLevel(START, calls, tuple(looks))


def search_once(
    endpoint: Endpoint, budget: float, rng: random.Random, maximum: int = DEFAULT_CAPACITY_MAX
) -> Capacity:
    """One run's search, driven as the engine drives CapacityRun."""
    limits = LevelLimits(concurrent_p95=budget)
    search = CapacityRun(
        limits, maximum=maximum, room=10**9, start=run_level(endpoint, budget, rng)
    )
    while (level := search.next_burst()) is not None:
        search.add_burst(_samples(endpoint.burst(level, rng)), float(level))
    return search.capacity()


@dataclass(frozen=True)
class Cell:
    """One row: a model, n slots, sigma, budget k, over `runs` runs."""

    model: str
    slots: int
    sigma: float
    rounds: int
    truth: int
    share_at_truth: float
    share_above: float
    right: float  # the figure is the truth and no interval is said
    above: float  # the figure (the interval's low end) is above the truth
    below: float  # the figure is below the truth, no interval holding it
    interval: float  # an interval was said
    covered: float  # the truth lies in the interval said (or is the figure)
    width: float  # mean upper - found over the runs with an interval
    calls: float
    levels: float
    min_truth_failed: float  # --min-capacity at the truth: FAILed
    min_above_passed: float  # --min-capacity at truth + 1: PASSed (decided by the test)
    min_undecided: float  # either minimum left undecided (passed, said so)


def cell(model: str, slots: int, sigma: float, rounds: int, runs: int) -> Cell:
    endpoint = Endpoint(model, slots, sigma)
    budget = budget_of(sigma, rounds)
    truth = endpoint.truth(budget, DEFAULT_CAPACITY_MAX)
    found = [
        search_once(
            endpoint, budget, random.Random(f"capacity/{model}/{slots}/{sigma}/{rounds}/{run}")
        )
        for run in range(runs)
    ]
    upper = [c.upper if c.upper is not None else c.found for c in found]
    with_interval = [c for c in found if c.upper is not None]
    at_truth = [capacity_check(c, max(1, truth)) for c in found]
    above = [capacity_check(c, truth + 1) for c in found]
    return Cell(
        model=model,
        slots=slots,
        sigma=sigma,
        rounds=rounds,
        truth=truth,
        share_at_truth=endpoint.share_over(truth, budget) if truth else 0.0,
        share_above=endpoint.share_over(truth + 1, budget),
        right=fmean(c.found == truth and c.upper is None for c in found),
        above=fmean(c.found > truth for c in found),
        below=fmean(u < truth for u in upper),
        interval=fmean(c.upper is not None for c in found),
        covered=fmean(c.found <= truth <= u for c, u in zip(found, upper, strict=True)),
        width=fmean(c.upper - c.found for c in with_interval if c.upper is not None)
        if with_interval
        else 0.0,
        calls=fmean(c.calls for c in found),
        levels=fmean(sum(lv.decided_by != "the run" for lv in c.levels) for c in found),
        min_truth_failed=fmean(c is not None and c.passed is False for c in at_truth),
        min_above_passed=fmean(c is not None and c.passed is True and c.decided for c in above),
        min_undecided=fmean(
            any(c is not None and not c.decided for c in pair)
            for pair in zip(at_truth, above, strict=True)
        ),
    )


def grid() -> list[tuple[str, int, float, int]]:
    return [(m, n, s, k) for m in MODELS for n in SLOTS for s in SIGMAS for k in ROUNDS]


def table_accuracy(runs: int) -> tuple[str, list[Cell]]:
    lines = [
        table_row(
            "model",
            "slots n",
            "sigma",
            "budget",
            "truth",
            "over the budget at truth / truth + 1",
            "figure = truth, told apart",
            "figure > truth",
            "interval said",
            "truth in the figure or interval",
            "interval width",
            "calls",
            "levels",
        ),
        table_row(*["---"] * 4, *["--:"] * 9),
    ]
    cells = []
    for model, slots, sigma, rounds in grid():
        progress(f"accuracy: {model}, {slots} slots, sigma {sigma}, k {rounds}")
        found = cell(model, slots, sigma, rounds, runs)
        cells.append(found)
        lines.append(
            table_row(
                model,
                str(slots),
                f"{sigma:g}",
                f"{budget_of(sigma, rounds):.2f} s",
                str(found.truth),
                f"{pct(found.share_at_truth)} / {pct(found.share_above)}",
                pct(found.right),
                pct(found.above),
                pct(found.interval),
                pct(found.covered),
                f"{found.width:.1f}",
                f"{found.calls:.0f}",
                f"{found.levels:.1f}",
            )
        )
        progress(lines[-1])
    return "\n".join(lines), cells


def table_minimum(cells: Sequence[Cell]) -> str:
    """--min-capacity at the truth and one above it."""
    lines = [
        table_row(
            "model",
            "slots n",
            "sigma",
            "truth",
            "--min-capacity truth: FAIL",
            "--min-capacity truth + 1: PASS by the levels",
            "either undecided (passed, said so)",
        ),
        table_row(*["---"] * 3, *["--:"] * 4),
    ]
    for c in cells:
        lines.append(
            table_row(
                c.model,
                str(c.slots),
                f"{c.sigma:g}",
                str(c.truth),
                pct(c.min_truth_failed),
                pct(c.min_above_passed),
                pct(c.min_undecided),
            )
        )
    return "\n".join(lines)


def table_cost(cells: Sequence[Cell]) -> str:
    """Calls against the truth."""
    lines = [
        table_row("truth", "cells", "levels", "log2(truth + 1)", "calls"),
        table_row(*["--:"] * 5),
    ]
    by_truth: dict[int, list[Cell]] = {}
    for found in cells:
        by_truth.setdefault(found.truth, []).append(found)
    for truth in sorted(by_truth):
        group = by_truth[truth]
        lines.append(
            table_row(
                str(truth),
                str(len(group)),
                f"{fmean(c.levels for c in group):.1f}",
                f"{math.log2(truth + 1):.1f}",
                f"{fmean(c.calls for c in group):.0f}",
            )
        )
    return "\n".join(lines)


def table_levels() -> str:
    """What one level's tests need: the calls that hold a level with 0, 1 and 2 of them over
    the budget, the calls over the budget that break it, and their bounds."""
    lines = [
        table_row(
            "level decision",
            "rules out",
            "wrong at most",
            "calls it takes",
        ),
        table_row("---", "---", "--:", "---"),
    ]
    held = []
    for over in (0, 1, 2):
        n = next((n for n in range(1, 2000) if HOLD_TEST.decide(over, n) is Decision.PASS), None)
        held.append(f"{n} with {over} over")
    broke = []
    for n in (5, 20, 50):
        k = BREAK_TEST.min_events_to_fail(n)
        broke.append(f"{k} over of {n}")
    broke[-1] += " (apart: in a row they are one clump)"
    lines.append(
        table_row(
            "held",
            f"a p95 over the budget ({pct(HOLD_TEST.p1)} or more over)",
            pct(HOLD_TEST.beta),
            ", ".join(held),
        )
    )
    lines.append(
        table_row(
            "broke",
            f"a p95 within the budget ({pct(BREAK_TEST.p0)} or fewer over)",
            pct(BREAK_TEST.alpha),
            ", ".join(broke),
        )
    )
    lines.append(
        table_row(
            "near the budget",
            "neither: the p95 is too near the budget for the calls",
            "—",
            f"undecided after {levels.LEVEL_CALLS} calls",
        )
    )
    return "\n".join(lines)


CAPS = (100, 130, 200)


def table_caps(runs: int) -> str:
    """What the level cap buys: every cell of the accuracy grid under three caps."""
    lines = [
        table_row(
            "level cap",
            "figure = truth, told apart",
            "figure > truth (worst cell)",
            "interval said",
            "truth in the figure or interval",
            "mean calls",
            "worst case from 10 to 64",
        ),
        table_row("---", *["--:"] * 6),
    ]
    kept = levels.LEVEL_CALLS
    try:
        for calls in CAPS:
            levels.LEVEL_CALLS = calls
            from latency_gate.assess.load import at_once

            at_once.LEVEL_CALLS = calls  # type: ignore[attr-defined]
            progress(f"caps: {calls} calls")
            cells = [cell(m, n, s, k, runs) for m, n, s, k in grid()]
            shipped = " (shipped)" if calls == kept else ""
            lines.append(
                table_row(
                    f"{calls} calls{shipped}",
                    pct(fmean(c.right for c in cells)),
                    f"{pct(fmean(c.above for c in cells))} ({pct(max(c.above for c in cells))})",
                    pct(fmean(c.interval for c in cells)),
                    pct(fmean(c.covered for c in cells)),
                    f"{fmean(c.calls for c in cells):.0f}",
                    f"{search_worst_calls(START, DEFAULT_CAPACITY_MAX):,}",
                )
            )
    finally:
        levels.LEVEL_CALLS = kept
        from latency_gate.assess.load import at_once

        at_once.LEVEL_CALLS = kept  # type: ignore[attr-defined]
    return "\n".join(lines)


def summary(cells: Sequence[Cell], runs: int) -> str:
    worst = max(cells, key=lambda c: c.above)
    return (
        f"Over all {len(cells)} cells: the figure is above the truth in "
        f"{pct(fmean(c.above for c in cells))} of runs (at most {pct(worst.above)}, in the "
        f"{worst.model} {worst.slots}-slot sigma {worst.sigma:g} cell; the target is 5 % in "
        f"every cell: met in {sum(c.above <= 0.05 for c in cells)} of {len(cells)}); the truth "
        f"is in the figure or the interval said in {pct(fmean(c.covered for c in cells))}; an "
        f"interval is said in {pct(fmean(c.interval for c in cells))}. ({runs:,} runs a cell.)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="simulated runs a cell")
    parser.add_argument("--write", action="store_true", help="update docs/statistics.md")
    parser.add_argument("--no-caps", action="store_true", help="skip the level-cap table")
    parser.add_argument(
        "--level-test",
        choices=("clumps", "calls"),
        default="clumps",
        help="the levels' test: the shipped one (clumps), or calls counted one by one",
    )
    args = parser.parse_args(argv)
    if args.level_test == "calls":
        load_levels.LEVEL_TEST = load_levels.level_decision
    accuracy, cells = table_accuracy(args.runs)
    tables = {
        "levels": table_levels(),
        "accuracy": f"{accuracy}\n\n{summary(cells, args.runs)}",
        "minimum": table_minimum(cells),
        "cost": table_cost(cells),
    }
    if not args.no_caps:
        tables["caps"] = table_caps(max(50, args.runs // 3))
    for name, table in tables.items():
        print(f"## {name}\n\n{table}\n")
    if args.write:
        write_tables(ROOT / "docs" / "statistics.md", tables, marker="capsim")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
