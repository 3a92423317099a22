"""Seeded simulations of the level test on a real first-in-first-out queue: the capacity search
and the goodput search against an endpoint with c slots that queues what it cannot run.

    python bench/queuesim.py                        # 1/3/8 slots, sigma 0.3/0.6/1.0, k 1 and 2
    python bench/queuesim.py --cells 3:0.6:2 --runs 400 --levels 1000   # issue 40's cell
    python bench/queuesim.py --out FILE.json --md FILE.md               # keep the figures

bench/results/queuesim.md holds the runs docs/statistics.md reads, each with its command.

bench/capacitysim.py's "queued" endpoint scales call i of a burst by its own noise: call i
ends at ceil(i / n) x s x exp(N(0, sigma)), every call independent of the others. A real queue
is not so: a burst of c calls arrives at once, the first n start, and each later call starts
when a slot frees, so its latency is the sum of the service times before it on its slot. A
slow call delays every call queued behind it: the calls of one burst over the budget come
together (none, or the last few at once), and the level test counts calls one by one.

Here every burst is that queue: c calls at time 0 in order, n slots, first come first served,
service times lognormal (median SERVICE, `sigma`), from an idle endpoint (the engine waits for a
burst's calls before the next). The search is the shipped `CapacityRun`
(latency_gate/assess/load/at_once.py, levels judged by levels.judge_level), level
c0 (10) from a simulated run's concurrent calls as bench/capacitysim.py takes them. The budget
is (k + 1/2) x SERVICE x exp(1.645 sigma), k = 1 or 2, as in capacitysim.py (the cell of issue
40 is 3 slots, sigma 0.6, k 2: 6.71 s).

The truth: a FIFO queue's call i does not depend on the calls after it, so the first c calls of
a burst of 64 are a burst of c. TRUTH_BURSTS bursts of 64 (seeded) give each position's chance
of a latency over the budget; share(c) is the mean of the first c, the truth the largest c with
share(c) <= 5 % (the p95 over a burst's calls within the budget).

"independent" rows are the control: each call of a burst drawn from its own queue (call i of a
burst is call i of another, independent burst), so the calls have the same marginal latencies
as the queue's and no tie between them: what the level test assumes.

The goodput search on the same queue is bench/goodputsim.py (its endpoint is this queue under
Poisson arrivals); `--goodput` runs its shipped search on this module's slots and sigmas.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import fmean

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from statsim import pct, progress, table_row  # noqa: E402

from latency_gate.assess.budget.checks import percentile_sprt  # noqa: E402
from latency_gate.assess.budget.clumps import Clumps  # noqa: E402
from latency_gate.assess.load.at_once import CapacityRun, RunLevel  # noqa: E402
from latency_gate.assess.load.levels import (  # noqa: E402
    BREAK_TEST,
    HOLD_TEST,
    LevelCalls,
    LevelLimits,
    clumped_decision,
    judge_level,
    level_decision,
)
from latency_gate.assess.maths.sequential import Decision  # noqa: E402
from latency_gate.config.plan.levels import LEVEL_CALLS  # noqa: E402
from latency_gate.config.plan.needs import LOOK_WARM_CALLS, MAX_LOOKS  # noqa: E402
from latency_gate.config.plan.search import DEFAULT_CAPACITY_MAX  # noqa: E402
from latency_gate.models import CallPhase, Capacity, Sample  # noqa: E402

SERVICE = 1.0
START = 10  # the default --concurrency
SLOTS = (1, 3, 8)
SIGMAS = (0.3, 0.6, 1.0)
ROUNDS = (1, 2)
DEFAULT_RUNS = 300
TRUTH_BURSTS = 100_000
SHARE = 0.05
Z95 = 1.6448536269514722
MODELS = ("fifo", "independent")


def budget_of(sigma: float, rounds: int) -> float:
    return (rounds + 0.5) * SERVICE * math.exp(Z95 * sigma)


def fifo_burst(size: int, slots: int, sigma: float, rng: random.Random) -> list[float]:
    """Each call's latency in a burst of `size` calls arriving together at an idle endpoint with
    `slots` slots, first come first served, service times lognormal (median SERVICE)."""
    free = [0.0] * min(slots, size)
    latencies = []
    for _ in range(size):
        start = heapq.heappop(free)
        end = start + SERVICE * math.exp(rng.gauss(0.0, sigma))
        heapq.heappush(free, end)
        latencies.append(end)
    return latencies


def independent_burst(size: int, slots: int, sigma: float, rng: random.Random) -> list[float]:
    """A burst whose call i has the latency of call i of a FIFO burst, drawn afresh for each
    call: the queue's marginal latencies, no tie between the calls."""
    return [fifo_burst(i + 1, slots, sigma, rng)[i] for i in range(size)]


@dataclass(frozen=True)
class Queue:
    model: str
    slots: int
    sigma: float

    def burst(self, size: int, rng: random.Random) -> list[float]:
        make = fifo_burst if self.model == "fifo" else independent_burst
        return make(size, self.slots, self.sigma, rng)


def over_by_position(
    slots: int, sigma: float, budgets: Sequence[float], bursts: int = TRUTH_BURSTS
) -> list[list[float]]:
    """For each budget, each position's chance (1..DEFAULT_CAPACITY_MAX) of a latency over it."""
    rng = random.Random(f"queuesim/truth/{slots}/{sigma}")
    over = [[0] * DEFAULT_CAPACITY_MAX for _ in budgets]
    for _ in range(bursts):
        latencies = fifo_burst(DEFAULT_CAPACITY_MAX, slots, sigma, rng)
        for counts, budget in zip(over, budgets, strict=True):
            for i, latency in enumerate(latencies):
                counts[i] += latency > budget
    return [[o / bursts for o in counts] for counts in over]


def shares(by_position: Sequence[float]) -> list[float]:
    """share(c) for c = 1..len: the mean chance over the first c positions (index c - 1)."""
    out, total = [], 0.0
    for c, p in enumerate(by_position, start=1):
        total += p
        out.append(total / c)
    return out


def truth_of(share: Sequence[float]) -> int:
    found = 0
    for c, s in enumerate(share, start=1):
        if s > SHARE:
            break
        found = c
    return found


def _samples(latencies: Sequence[float]) -> list[Sample]:
    return [
        Sample.model_construct(
            phase=CallPhase.CONCURRENT, index=i, started_at=0.0, ok=True, latency=v
        )
        for i, v in enumerate(latencies)
    ]


def run_level(queue: Queue, budget: float, rng: random.Random) -> RunLevel:
    """Level c0 as the run leaves it (bench/capacitysim.py's `run_level` on this queue)."""
    test = percentile_sprt(95)
    per_look = math.ceil(LOOK_WARM_CALLS / START)
    values: list[float] = []
    looks: list[int] = []
    for look in range(MAX_LOOKS):
        for _ in range(1 if look == 0 else per_look):
            values += queue.burst(START, rng)
        looks.append(len(values))
        if test.decide(sum(v > budget for v in values), len(values)) is not Decision.UNDECIDED:
            break
    calls = LevelCalls(latencies=tuple(values), clumps=Clumps(len(values)))
    return RunLevel(START, calls, tuple(looks))


def search_once(queue: Queue, budget: float, rng: random.Random) -> Capacity:
    """One run's search, driven as the engine drives CapacityRun."""
    search = CapacityRun(
        LevelLimits(concurrent_p95=budget),
        maximum=DEFAULT_CAPACITY_MAX,
        room=10**9,
        start=run_level(queue, budget, rng),
    )
    while (level := search.next_burst()) is not None:
        search.add_burst(_samples(queue.burst(level, rng)), float(level))
    return search.capacity()


@dataclass(frozen=True)
class Cell:
    model: str
    slots: int
    sigma: float
    rounds: int
    budget: float
    truth: int
    share_at_truth: float
    share_above: float
    runs: int
    right: float
    above: int  # runs whose figure (an interval's low end) is above the truth
    interval: float
    covered: int  # runs whose figure is the truth or whose interval holds it
    figures_above: dict[int, int]  # figure -> runs, for the runs above the truth
    held_over: int  # levels that held with share(c) > 5 % (each a false hold)
    broke_within: int  # levels that broke with share(c) <= 5 % (each a false break)
    levels_over: int  # levels tried with share(c) > 5 %
    levels_within: int
    calls: float
    seconds: float

    @property
    def above_share(self) -> float:
        return self.above / self.runs

    @property
    def covered_share(self) -> float:
        return self.covered / self.runs


def mc_error(share: float, runs: int) -> float:
    """Two standard errors of a share over `runs` runs (at least one run's worth)."""
    return max(2 * math.sqrt(share * (1 - share) / runs), 1 / runs)


def cell(
    model: str, slots: int, sigma: float, rounds: int, *, runs: int, share: Sequence[float]
) -> Cell:
    started = time.monotonic()
    queue = Queue(model, slots, sigma)
    budget = budget_of(sigma, rounds)
    truth = truth_of(share)
    found = [
        search_once(queue, budget, random.Random(f"queuesim/{slots}/{sigma}/{rounds}/{run}"))
        for run in range(runs)
    ]
    upper = [c.upper if c.upper is not None else c.found for c in found]
    figures_above: dict[int, int] = {}
    for c in found:
        if c.found > truth:
            figures_above[c.found] = figures_above.get(c.found, 0) + 1
    tried = [
        (lv.concurrency, lv.held, lv.near)
        for c in found
        for lv in c.levels
        if lv.decided_by != "the run"
    ]
    return Cell(
        model=model,
        slots=slots,
        sigma=sigma,
        rounds=rounds,
        budget=budget,
        truth=truth,
        share_at_truth=share[truth - 1] if truth else 0.0,
        share_above=share[truth] if truth < len(share) else 1.0,
        runs=runs,
        right=fmean(c.found == truth and c.upper is None for c in found),
        above=sum(c.found > truth for c in found),
        interval=fmean(c.upper is not None for c in found),
        covered=sum(c.found <= truth <= u for c, u in zip(found, upper, strict=True)),
        figures_above=dict(sorted(figures_above.items())),
        held_over=sum(held for c, held, _ in tried if share[c - 1] > SHARE),
        broke_within=sum(not held and not near for c, held, near in tried if share[c - 1] <= SHARE),
        levels_over=sum(share[c - 1] > SHARE for c, _, _ in tried),
        levels_within=sum(share[c - 1] <= SHARE for c, _, _ in tried),
        calls=fmean(c.calls for c in found),
        seconds=time.monotonic() - started,
    )


TESTS: dict[str, Callable[[Sequence[float], float], Decision]] = {
    "calls": level_decision,  # the capacity's: calls over the budget one by one (shipped)
    "clumps": clumped_decision,  # the goodput's: calls over the budget counted in clumps
}


def judge_alone(
    queue: Queue, concurrency: int, budget: float, rng: random.Random, test: str = "calls"
) -> tuple[str, int]:
    """One level judged alone, burst by burst, as CapacityRun.add_burst judges it: held,
    broke or near, and its calls over the budget."""
    limits = LevelLimits(concurrent_p95=budget)
    calls = LevelCalls()
    looks: list[int] = []
    while True:
        latencies = queue.burst(concurrency, rng)
        calls += LevelCalls(latencies=tuple(latencies), clumps=Clumps(len(latencies)))
        looks.append(calls.calls)
        judged = judge_level(
            calls, limits, looks=looks, last=calls.calls >= LEVEL_CALLS, decide=TESTS[test]
        )
        if judged.near or judged.held is not None:
            said = "near" if judged.near else "held" if judged.held else "broke"
            return said, sum(v > budget for v in calls.latencies)


def clean_bursts(
    model: str, slots: int, sigma: float, budget: float, *, size: int, bursts: int = 20_000
) -> float:
    """The chance that a burst of `size` has no call over `budget` (seeded)."""
    rng = random.Random(f"queuesim/clean/{model}/{slots}/{sigma}/{size}")
    queue = Queue(model, slots, sigma)
    return fmean(all(v <= budget for v in queue.burst(size, rng)) for _ in range(bursts))


@dataclass(frozen=True)
class LevelRow:
    model: str
    test: str
    slots: int
    sigma: float
    rounds: int
    concurrency: int
    share: float
    judged: int
    held: int
    held_clean: int  # held with no call over the budget
    broke: int


def level_rows(
    slots: int,
    sigma: float,
    rounds: int,
    share: Sequence[float],
    *,
    judged: int,
    tests: Sequence[str] = ("calls",),
) -> list[LevelRow]:
    """The truth's level and the next, each judged alone `judged` times: on both models by the
    shipped test, on the queue by the others in `tests`."""
    budget = budget_of(sigma, rounds)
    truth = truth_of(share)
    rows = []
    for concurrency in (truth, truth + 1):
        if not 1 <= concurrency <= len(share):
            continue
        for model, test in [(m, "calls") for m in MODELS] + [
            ("fifo", t) for t in tests if t != "calls"
        ]:
            seed = f"{model}/{slots}/{sigma}/{rounds}/{concurrency}"
            rng = random.Random(f"queuesim/level/{seed}")
            said = [
                judge_alone(Queue(model, slots, sigma), concurrency, budget, rng, test)
                for _ in range(judged)
            ]
            rows.append(
                LevelRow(
                    model,
                    test,
                    slots,
                    sigma,
                    rounds,
                    concurrency,
                    share[concurrency - 1],
                    judged,
                    sum(o == "held" for o, _ in said),
                    sum(o == "held" and not over for o, over in said),
                    sum(o == "broke" for o, _ in said),
                )
            )
    return rows


def table_levels(rows: Sequence[LevelRow]) -> str:
    lines = [
        table_row(
            "calls",
            "test",
            "slots n",
            "sigma",
            "budget",
            "level",
            "over the budget (true share)",
            "held (bound 2.5 % when over 5 %)",
            "of them none over",
            "broke (bound 1 % when within 5 %)",
            "levels",
        ),
        table_row(*["---"] * 5, *["--:"] * 6),
    ]
    for r in rows:
        held, broke = r.held / r.judged, r.broke / r.judged
        over = r.share > SHARE
        lines.append(
            table_row(
                r.model,
                r.test,
                str(r.slots),
                f"{r.sigma:g}",
                f"{budget_of(r.sigma, r.rounds):.2f} s",
                str(r.concurrency),
                pct(r.share),
                f"**{pct(held)}**" if over and held > HOLD_TEST.beta else pct(held),
                pct(r.held_clean / r.judged),
                f"**{pct(broke)}**" if not over and broke > BREAK_TEST.alpha else pct(broke),
                f"{r.judged:,}",
            )
        )
    return "\n".join(lines)


def table(cells: Sequence[Cell]) -> str:
    lines = [
        table_row(
            "calls",
            "slots n",
            "sigma",
            "budget",
            "truth",
            "over the budget at truth / truth + 1",
            "figure > truth (± 2 s.e.)",
            "figures above",
            "truth in the figure or interval",
            "interval said",
            "levels over 5 % held",
            "levels within 5 % broke",
            "calls",
        ),
        table_row(*["---"] * 4, *["--:"] * 9),
    ]
    for c in cells:
        above = ", ".join(f"{f}: {n}" for f, n in c.figures_above.items()) or "—"
        lines.append(
            table_row(
                c.model,
                str(c.slots),
                f"{c.sigma:g}",
                f"{c.budget:.2f} s",
                str(c.truth),
                f"{pct(c.share_at_truth)} / {pct(c.share_above)}",
                f"{pct(c.above_share)} ± {pct(mc_error(c.above_share, c.runs))}",
                above,
                f"{pct(c.covered_share)}",
                pct(c.interval),
                f"{c.held_over} of {c.levels_over}",
                f"{c.broke_within} of {c.levels_within}",
                f"{c.calls:.0f}",
            )
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="simulated runs a cell")
    parser.add_argument("--levels", type=int, default=400, help="judgements of a level alone")
    parser.add_argument("--cells", help="n:sigma:k,... (default: every cell)")
    parser.add_argument(
        "--tests", default="calls", help="level tests judged alone: calls (shipped), clumps"
    )
    parser.add_argument(
        "--clean", action="store_true", help="say how often a burst at truth + 1 is clean"
    )
    parser.add_argument("--models", default=",".join(MODELS), help="fifo,independent")
    parser.add_argument(
        "--truth-bursts", type=int, default=TRUTH_BURSTS, help="bursts behind the truth"
    )
    parser.add_argument("--goodput", type=int, default=0, help="goodput runs a cell (0: none)")
    parser.add_argument("--out", help="write every cell's figures to this JSON file")
    parser.add_argument("--md", help="write the tables to this Markdown file")
    args = parser.parse_args(argv)
    wanted = [(n, s, k) for n in SLOTS for s in SIGMAS for k in ROUNDS]
    if args.cells:
        wanted = [
            (int(a), float(b), int(c)) for a, b, c in (x.split(":") for x in args.cells.split(","))
        ]
    cells: list[Cell] = []
    rows: list[LevelRow] = []
    parts: list[str] = []
    for slots, sigma in dict.fromkeys((n, s) for n, s, _ in wanted):
        ks = [k for n, s, k in wanted if (n, s) == (slots, sigma)]
        by_k = over_by_position(slots, sigma, [budget_of(sigma, k) for k in ks], args.truth_bursts)
        for rounds, by_position in zip(ks, by_k, strict=True):
            share = shares(by_position)
            if args.clean:
                size, budget = truth_of(share) + 1, budget_of(sigma, rounds)
                clean = {m: clean_bursts(m, slots, sigma, budget, size=size) for m in MODELS}
                parts.append(
                    f"A burst of {size} on {slots} slots, sigma {sigma:g}, {budget:.2f} s, "
                    "with no call over the budget (20,000 bursts): "
                    + ", ".join(f"{m} {pct(c)}" for m, c in clean.items())
                    + "; six in a row: "
                    + ", ".join(f"{m} {pct(c**6)}" for m, c in clean.items())
                    + "."
                )
            if args.levels:
                rows += level_rows(
                    slots, sigma, rounds, share, judged=args.levels, tests=args.tests.split(",")
                )
                progress(table_levels(rows[-6:]))
            for model in args.models.split(","):
                if args.runs:
                    cells.append(cell(model, slots, sigma, rounds, runs=args.runs, share=share))
                    progress(table(cells[-1:]).splitlines()[-1] + f" {cells[-1].seconds:.0f} s")
    if rows:
        parts.append(
            f"## one level judged alone\n\n{table_levels(rows)}\n\n"
            f"({args.levels:,} judgements a row, seeded by model, cell and level.)"
        )
    if cells:
        parts.append(
            f"## the capacity search\n\n{table(cells)}\n\n"
            f"({args.runs:,} runs a cell, seeded by slots, sigma, k and run.)"
        )
    goodput = []
    if args.goodput:
        import goodputsim

        for slots, sigma in dict.fromkeys((n, s) for n, s, _ in wanted):
            goodput.append(goodputsim.cell(slots, sigma, args.goodput))
        parts.append(
            f"## the goodput search (bench/goodputsim.py's queue)\n\n"
            f"{goodputsim.table_accuracy(goodput)}\n\n({args.goodput:,} runs a cell.)"
        )
    text = "\n\n".join(parts)
    print(text)
    if args.out:
        record = {
            "levels": [asdict(r) for r in rows],
            "capacity": [asdict(c) for c in cells],
            "goodput": [asdict(g) for g in goodput],
        }
        Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    if args.md:
        Path(args.md).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
