"""Simulated LLM endpoints for A/B runs of the shipped gate: answers of a length, a first token
and a time per token, slots that queue a burst (issue 26, docs/statistics.md table k).

    python bench/statsim.py --only llm-ab --runs 300

An arm's call answers with n tokens; its first token comes after a prefill (lognormal around
`first`), each token after it takes `per` seconds (lognormal per call), so that latency = first
token + (n - 1) x per: the project's llama.cpp recording fits 55 ms + 8.25 ms a token with 6 %
left over (bench/data/llama_shape.json: 300 warm calls, correlation 0.993). A burst goes to
`slots` slots in turn, first come first served, at `batched` x the per-token time (slots share
the machine): a call that waits for a slot has the wait in its first token, as on llama.cpp.

Lengths: lognormal around `median` tokens with spread `sigma`, cut at `cap` (max_tokens). The
recorded shape (median 38, 15 % of answers cut at 96) fits sigma 0.85 under a cap of 96; a high
max_tokens (1024) with sigma 0.6 or 1.0 is the natural shape. The head's i-th call of a kind and
the base's got the same prompt: their lengths share a draw with correlation `rho` (1: a model at
temperature 0 answers both alike; 0: sampling makes the two answers' lengths independent).

Each run goes through the shipped Gate look by look, and judge_samples judges it as assess_run
does, exactly as bench/gatesim.py's run_ab (whose order of calls and drift it keeps).
"""

from __future__ import annotations

import functools
import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from multiprocessing import Pool
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gatesim import Clock, Drift, Outcome, Settings, _plan, thue_morse  # noqa: E402

from latency_gate.assess.budget.gate import Gate  # noqa: E402
from latency_gate.assess.numbers import stats  # noqa: E402
from latency_gate.assess.result import judge_samples  # noqa: E402
from latency_gate.config import Budget  # noqa: E402
from latency_gate.models import CallPhase, CallTimings, ErrorKind, Sample  # noqa: E402


@dataclass(frozen=True)
class Llm:
    """One arm's endpoint: its answers' lengths, its speed, its slots, its failures."""

    median: float = 40.0
    sigma: float = 0.6
    cap: int = 1024
    first: float = 0.047
    first_sigma: float = 0.15
    per: float = 0.00825
    per_sigma: float = 0.07
    slots: int = 2
    batched: float = 1.3
    longer: float = 1.0  # answers x this, before the cap
    fail_rate: float = 0.005
    whole_sigma: float | None = None  # a non-LLM endpoint: lognormal whole calls, no length
    whole_median: float = 0.3

    def length(self, shared: float, rng: random.Random, rho: float) -> int:
        own = rho * shared + math.sqrt(max(0.0, 1 - rho * rho)) * rng.gauss(0.0, 1.0)
        return max(1, min(self.cap, round(self.median * self.longer * math.exp(self.sigma * own))))


@dataclass
class _Arm:
    llm: Llm
    samples: list[Sample]
    counts: dict[CallPhase, int]

    def add(
        self,
        phase: CallPhase,
        latency: float | None,
        tokens: int | None,
        first: float | None,
    ) -> None:
        index = self.counts.get(phase, 0)
        self.counts[phase] = index + 1
        if latency is None:
            self.samples.append(_FAILED.model_copy(update={"phase": phase, "index": index}))
            return
        timings = (
            _NO_TIMINGS
            if first is None
            else _TIMINGS.model_copy(update={"first_token": first, "first_event": first})
        )
        update = {"phase": phase, "index": index, "latency": latency, "tokens": tokens}
        self.samples.append(_OK.model_copy(update=update | {"timings": timings}))


# Templates copied for each call: model_construct costs ten times a copy.
_NO_TIMINGS = CallTimings.model_construct()
_TIMINGS = CallTimings.model_construct(first_token=0.0, first_event=0.0)
_OK = Sample.model_construct(
    phase=CallPhase.WARM, index=0, started_at=0.0, ok=True, latency=0.0, status=200, tokens=None
)
_FAILED = Sample.model_construct(
    phase=CallPhase.WARM,
    index=0,
    started_at=0.0,
    ok=False,
    latency=None,
    error=ErrorKind.HTTP_5XX,
    status=503,
)


@dataclass
class _Prompts:
    """The shared draw of each prompt by (kind, index): both arms' i-th call of a kind get it."""

    rng: random.Random
    drawn: dict[tuple[CallPhase, int], float]

    def shared(self, phase: CallPhase, index: int) -> float:
        key = (phase, index)
        if key not in self.drawn:
            self.drawn[key] = self.rng.gauss(0.0, 1.0)
        return self.drawn[key]


def _warm(arm: _Arm, rng: random.Random, prompts: _Prompts, rho: float, clock: Clock) -> None:
    llm = arm.llm
    index = arm.counts.get(CallPhase.WARM, 0)
    factor = clock.next()
    failed = rng.random() < llm.fail_rate
    if llm.whole_sigma is not None:
        latency = llm.whole_median * math.exp(llm.whole_sigma * rng.gauss(0.0, 1.0)) * factor
        arm.add(CallPhase.WARM, None if failed else latency, None, None)
        return
    n = llm.length(prompts.shared(CallPhase.WARM, index), rng, rho)
    first = llm.first * math.exp(llm.first_sigma * rng.gauss(0.0, 1.0)) * factor
    per = llm.per * math.exp(llm.per_sigma * rng.gauss(0.0, 1.0)) * factor
    latency = first + (n - 1) * per
    arm.add(CallPhase.WARM, None if failed else latency, n, first)


def _burst(
    arm: _Arm, rng: random.Random, prompts: _Prompts, rho: float, *, clock: Clock, size: int
) -> None:
    """A burst of `size` calls on the arm's slots, first come first served (the arrival order
    drawn at random), each call's first token including its wait for a slot."""
    llm = arm.llm
    start = arm.counts.get(CallPhase.CONCURRENT, 0)
    if llm.whole_sigma is not None:
        for _ in range(size):
            factor = clock.next()
            failed = rng.random() < llm.fail_rate
            latency = llm.whole_median * math.exp(llm.whole_sigma * rng.gauss(0.0, 1.0)) * factor
            arm.add(CallPhase.CONCURRENT, None if failed else latency, None, None)
        return
    calls = []
    for i in range(size):
        factor = clock.next()
        n = llm.length(prompts.shared(CallPhase.CONCURRENT, start + i), rng, rho)
        prefill = llm.first * math.exp(llm.first_sigma * rng.gauss(0.0, 1.0)) * factor
        per = llm.per * llm.batched * math.exp(llm.per_sigma * rng.gauss(0.0, 1.0)) * factor
        calls.append((n, prefill, per, rng.random() < llm.fail_rate))
    order = list(range(size))
    rng.shuffle(order)
    free = [0.0] * llm.slots
    done: dict[int, tuple[float, float]] = {}
    for i in order:
        n, prefill, per, _ = calls[i]
        slot = min(range(llm.slots), key=free.__getitem__)
        began = free[slot]
        free[slot] = began + prefill + (n - 1) * per
        done[i] = (free[slot], began + prefill)
    for i, (n, _, _, failed) in enumerate(calls):
        latency, first = done[i]
        arm.add(CallPhase.CONCURRENT, None if failed else latency, n, first)


# The drift, shared by both arms: one factor exp(N(0, 0.2)) a run.
SHARED_DRIFT = Drift(tau=0.2)
DEFAULT_SETTINGS = Settings()


def run_llm_ab(
    head: Llm,
    base: Llm,
    rng: random.Random,
    *,
    rho: float,
    budget: Budget,
    drift: Drift = SHARED_DRIFT,
    settings: Settings = DEFAULT_SETTINGS,
) -> Outcome:
    """One A/B run of two simulated LLM endpoints through the shipped gate: cold calls, warm
    calls in the Thue-Morse order, bursts alike, every look extending both arms."""
    settings = replace(settings, budget=budget)
    gate = Gate(budget=budget, plan=_plan(settings), base=None, limit=settings.limit)
    clock = Clock(drift, drift.run_factor(rng))
    prompts = _Prompts(rng, {})
    arms = (_Arm(head, [], {}), _Arm(base, [], {}))
    warm_done = bursts_done = 0

    def cold() -> None:
        for arm in arms:  # a cold call is a warm call on a new connection, here
            llm = arm.llm
            latency = llm.whole_median if llm.whole_sigma is not None else llm.first * 2
            arm.add(CallPhase.COLD, latency * clock.next(), None, None)

    def warm(count: int) -> None:
        nonlocal warm_done
        for _ in range(count * 2):
            _warm(arms[thue_morse(warm_done)], rng, prompts, rho, clock)
            warm_done += 1

    def bursts(count: int) -> None:
        nonlocal bursts_done
        for _ in range(count * 2):
            arm = arms[thue_morse(bursts_done)]
            _burst(arm, rng, prompts, rho, clock=clock, size=settings.concurrency)
            bursts_done += 1

    cold()
    warm(settings.warm_calls)
    bursts(1)
    first_look = stats.numbers(arms[0].samples)
    while not (step := gate.look(arms[0].samples, arms[1].samples)).stop:
        warm(step.warm_calls)
        bursts(step.bursts)
    numbers = stats.numbers(arms[0].samples)
    checks, check, verdict = judge_samples(
        gate,
        arms[0].samples,
        numbers,
        target="sim",
        baseline=None,
        base_arm=("the base arm", tuple(arms[1].samples)),
        intervals=False,
    )
    return Outcome(
        checks={c.number: c for c in checks},
        baseline=check,
        verdict=verdict,
        samples=tuple(arms[0].samples),
        numbers=numbers,
        looks=gate.looks,
        first_look=first_look,
    )


@functools.lru_cache(maxsize=32)
def true_p95s(llm: Llm, concurrency: int = 10, draws: int = 20_000) -> tuple[float, float]:
    """The endpoint's true warm and concurrent p95 (Monte Carlo, fixed seed, no drift)."""
    rng = random.Random(f"true-p95/{llm}")
    arm = _Arm(replace(llm, fail_rate=0.0), [], {})
    prompts = _Prompts(rng, {})
    clock = Clock()
    for _ in range(draws):
        _warm(arm, rng, prompts, 0.0, clock)
    for _ in range(draws // concurrency):
        _burst(arm, rng, prompts, 0.0, clock=clock, size=concurrency)
    warm = sorted(s.latency or 0.0 for s in arm.samples if s.phase is CallPhase.WARM)
    conc = sorted(s.latency or 0.0 for s in arm.samples if s.phase is CallPhase.CONCURRENT)
    return warm[int(0.95 * len(warm))], conc[int(0.95 * len(conc))]


# --- the table ---------------------------------------------------------------------------------

SHAPES: list[tuple[str, Llm]] = [
    ("recorded: cut at 96 tokens", Llm(median=38.0, sigma=0.85, cap=96)),
    ("natural, sigma 0.6", Llm(sigma=0.6)),
    ("natural, sigma 1.0", Llm(sigma=1.0)),
]
WHOLE = ("lognormal whole calls, sigma 0.25 (no length)", Llm(whole_sigma=0.25))
CHANGES: list[tuple[str, Callable[[Llm], Llm]]] = [
    ("unchanged", lambda e: e),
    ("time per token +10 %", lambda e: replace(e, per=e.per * 1.10)),
    ("first token +20 %", lambda e: replace(e, first=e.first * 1.20)),
    (
        "every call +25 %",
        lambda e: replace(
            e, first=e.first * 1.25, per=e.per * 1.25, whole_median=e.whole_median * 1.25
        ),
    ),
    ("answers 25 % longer", lambda e: replace(e, longer=1.25)),
]
RHOS = ((1.0, "temperature 0 (rho 1)"), (0.0, "sampled (rho 0)"))


def _budget(llm: Llm) -> Budget:
    """The default budget's checks, far enough (the p95 at 0.2x) to decide early, as table h."""
    warm, concurrent = true_p95s(llm)
    return Budget(max_warm_p95=warm / 0.2, max_concurrent_p95=concurrent / 0.2)


@dataclass(frozen=True)
class Row:
    flagged_warm: float
    flagged_concurrent: float
    flagged_any: float
    undecided_latency: float
    undecided_errors: float
    warned: float
    named: dict[str, float]
    calls: float


def _moved(out: Outcome, part: str) -> bool:
    if out.baseline is None:
        return False
    return any(p.part == part and p.moved in ("longer", "slower") for p in out.baseline.parts)


def _undecided(out: Outcome, numbers: Sequence[str]) -> bool:
    if out.baseline is None:
        return False
    return any(
        d.number in numbers and d.outcome == "undecided" and not d.regressed
        for d in out.baseline.deltas
    )


def warned(out: Outcome) -> bool:
    """The run's verdict warns of an undecided regression (its estimate over the limit)."""
    return any("regression undecided" in item for item in out.verdict.undecided)


def tally(outs: Sequence[Outcome]) -> Row:
    runs = len(outs)

    def share(test: Callable[[Outcome], bool]) -> float:
        return sum(test(o) for o in outs) / runs

    return Row(
        share(lambda o: o.regressed("warm_p95")),
        share(lambda o: o.regressed("concurrent_p95")),
        share(lambda o: any(o.regressed(n) for n in ("warm_p95", "concurrent_p95", "error_rate"))),
        share(lambda o: _undecided(o, ("warm_p95", "concurrent_p95"))),
        share(lambda o: _undecided(o, ("error_rate",))),
        share(warned),
        {
            p: share(functools.partial(_moved, part=p))
            for p in ("length", "per_token", "first_token")
        },
        sum(o.calls for o in outs) / runs,
    )


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %"


HEADER = (
    "| shape | prompts | head against base | warm p95 flagged | concurrent p95 flagged "
    "| any number flagged | undecided: latency | undecided: error rate | warned "
    "| named: length | named: time per token | named: first token | calls per arm | runs |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def share_cell(share: float, runs: int) -> str:
    """A share with its Monte Carlo error: one binomial standard error, or at 0 % and 100 % the
    95 % bound of the rule of three (3 / runs)."""
    if share == 0:
        return f"0.0 % (≤ {min(100.0, 300 / runs):.1f})"
    if share == 1:
        return f"100.0 % (≥ {max(0.0, 100 - 300 / runs):.1f})"
    error = math.sqrt(share * (1 - share) / runs)
    return f"{share * 100:.1f} % (± {error * 100:.1f})"


R = TypeVar("R")


def pooled_rows(
    one_run: Callable[[tuple[Any, ...]], R],
    cells: Sequence[tuple[Any, ...]],
    runs: int,
    workers: int,
    said: Callable[[tuple[Any, ...], list[R]], Sequence[str]],
) -> list[str]:
    """A Markdown table row per cell: `runs` seeded runs of it (`one_run((*cell, i))`) on
    `workers` processes, put in words by `said(cell, found)`; each row printed to stderr as it
    is made (a table takes minutes)."""
    out = []
    with Pool(workers) as pool:
        for cell in cells:
            found = pool.map(one_run, [(*cell, i) for i in range(runs)], chunksize=4)
            out.append("| " + " | ".join(said(cell, found)) + " |")
            print(out[-1], file=sys.stderr, flush=True)
    return out


def chosen_by_start(label: str, starts: Sequence[str] | None) -> bool:
    """Whether a cell's label was asked for: any label when none were, else one of `starts`."""
    return not starts or any(label.startswith(s) for s in starts)


def cells(rhos: Sequence[float] = (1.0, 0.0)) -> list[tuple[str, Llm, float, str]]:
    """(shape label, base endpoint, rho, prompts label) of every cell, the whole calls last."""
    out = [(label, llm, rho, said) for label, llm in SHAPES for rho, said in RHOS if rho in rhos]
    return [*out, (WHOLE[0], WHOLE[1], 0.0, "—")]


def rows(
    runs: int,
    chosen: Sequence[tuple[str, Llm, float, str]],
    progress: Callable[[str], None] = lambda _: None,
    changes: Sequence[str] | None = None,
) -> list[str]:
    """A table row per cell and change, each of `runs` seeded runs (seeded by the cell's labels,
    so a cell's figures do not depend on which others are run)."""
    out = []
    for label, base, rho, said in chosen:
        budget = _budget(base)
        kept = CHANGES if base.whole_sigma is None else [CHANGES[0], CHANGES[3]]
        if changes is not None:
            kept = [c for c in kept if any(c[0].startswith(start) for start in changes)]
        for change_label, change in kept:
            head = change(base)
            outs = [
                run_llm_ab(
                    head,
                    base,
                    random.Random(f"llm-ab/{label}/{rho:g}/{change_label}/{i}"),
                    rho=rho,
                    budget=budget,
                )
                for i in range(runs)
            ]
            row = tally(outs)
            named = (
                ("—", "—", "—")
                if base.whole_sigma is not None
                else tuple(_pct(row.named[p]) for p in ("length", "per_token", "first_token"))
            )
            cells_ = (
                label,
                said,
                change_label,
                _pct(row.flagged_warm),
                _pct(row.flagged_concurrent),
                _pct(row.flagged_any),
                _pct(row.undecided_latency),
                _pct(row.undecided_errors),
                _pct(row.warned),
                *named,
                f"{row.calls:.0f}",
                str(runs),
            )
            out.append("| " + " | ".join(cells_) + " |")
            progress(f"llm-ab {out[-1]}")
    return out


def table(runs: int, progress: Callable[[str], None] = lambda _: None) -> str:
    """docs/statistics.md table (k): every cell."""
    return "\n".join([HEADER, *rows(runs, cells(), progress)])


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Some cells of table (k), printed as rows.")
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rho", type=float, action="append", help="1 or 0 (default both)")
    parser.add_argument("--shape", action="append", help="a shape label's start")
    parser.add_argument("--whole", action="store_true", help="only the whole-call cells")
    parser.add_argument("--change", action="append", help="a change label's start")
    args = parser.parse_args()
    chosen = cells(tuple(args.rho) if args.rho else (1.0, 0.0))
    chosen = chosen[-1:] if args.whole else chosen[:-1]
    if args.shape:
        chosen = [c for c in chosen if any(c[0].startswith(s) for s in args.shape)]
    print(HEADER, flush=True)
    said = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    for line in rows(args.runs, chosen, said, args.change):
        print(line, flush=True)
