"""The same-work test when the arms' answers differ in length (issue 41, item 3): simulated A/B
runs of two LLM endpoints through the shipped gate (bench/llmsim.py's run_llm_ab), the head's
answers of another length distribution than the base's, docs/statistics.md table (o).

    python bench/same_work_lengths.py --runs 200 [--workers 2] [--change shorter]

Base: lengths lognormal around 40 tokens, of spread sigma 0.6 (natural, as table k) or 0.25
(narrow: the arms' lengths overlap less), under max_tokens 1024, 47 ms first token and 8.25 ms
a token, as table (k). The head's i-th call of a kind and the base's i-th share no draw of
their length (rho 0: two models answer one prompt at their own lengths). Changes (the head):

- the same: the head is the base (a false alarm is any latency row or the run flagged);
- shorter and slower: answers half as long, and every call 1.5 x (or 2 x) as slow at the same
  length (first token and time per token both); and the issue's shape, answers 86 % shorter
  and every call so much slower at the same length that the whole calls are twice the base's:
  must FAIL;
- longer and faster: answers twice as long, every call 0.8 x at the same length: the latency at
  the same work is better (its own test must not regress it), the run fails by the length alone,
  named as the cause.

Each run is seeded by its change's label and its number, so a row's figures do not depend on
which others are run. Printed: one Markdown row per change.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import llmsim
from gatesim import Outcome

SHAPES = {
    "natural, sigma 0.6": llmsim.Llm(sigma=0.6),
    "narrow, sigma 0.25": llmsim.Llm(sigma=0.25),
}
RHO = 0.0
LATENCY = ("warm_p95", "concurrent_p95")


def _slower(llm: llmsim.Llm, factor: float) -> llmsim.Llm:
    return replace(llm, first=llm.first * factor, per=llm.per * factor)


# A whole call of the base at its median length, and the head's factor at the same length that
# makes its whole call at 14 % of the length twice the base's (the issue's repro: 210 ms with
# 10-20 tokens against 105 ms with 100-110).
_WHOLE = 0.047 + 39 * 0.00825
_ISSUE = 2 * _WHOLE / (0.047 + (round(40 * 0.14) - 1) * 0.00825)
CHANGES: dict[str, Callable[[llmsim.Llm], llmsim.Llm]] = {
    "the same": lambda e: e,
    "answers 50 % shorter, every call x1.5 at the same length": lambda e: replace(
        _slower(e, 1.5), longer=0.5
    ),
    "answers 50 % shorter, every call x2 at the same length": lambda e: replace(
        _slower(e, 2.0), longer=0.5
    ),
    f"answers 86 % shorter, every call x{_ISSUE:.1f} at the same length (whole calls x2)": (
        lambda e: replace(_slower(e, _ISSUE), longer=0.14)
    ),
    "answers twice as long, every call x0.8 at the same length": lambda e: replace(
        _slower(e, 0.8), longer=2.0
    ),
}


def one_run(job: tuple[str, str, int]) -> dict[str, bool]:
    """One seeded A/B run of `job`'s shape and change: what its report said."""
    shape, change, i = job
    base = SHAPES[shape]
    head = CHANGES[change](base)
    out: Outcome = llmsim.run_llm_ab(
        head,
        base,
        random.Random(f"same-work-lengths/{shape}/{change}/{i}"),
        rho=RHO,
        budget=llmsim._budget(base),
    )
    check = out.baseline
    deltas = [] if check is None else [d for d in check.deltas if d.number in LATENCY]
    parts = {} if check is None else {p.part: p.moved for p in check.parts}
    return {
        "failed": not out.verdict.passed,
        "latency_flagged": any(d.regressed for d in deltas),
        "latency_own": any(d.regressed and not d.by_length for d in deltas),
        "by_length": any(d.regressed and d.by_length for d in deltas),
        "at_same_work": any(d.same_work for d in deltas),
        "length_named": parts.get("length") in ("longer", "shorter"),
    }


KEYS = (
    "failed",
    "latency_flagged",
    "latency_own",
    "by_length",
    "at_same_work",
    "length_named",
)
HEADER = (
    "| base's lengths | head against base | runs FAILed | a latency row flagged "
    "| flagged by the latency's own test | flagged by the length alone "
    "| tested at the same work | length named | runs |\n|---|---|---|---|---|---|---|---|---|"
)


def rows(runs: int, cells: Sequence[tuple[str, str]], workers: int) -> list[str]:
    def said(cell: tuple[Any, ...], found: list[dict[str, bool]]) -> list[str]:
        shares = [sum(r[k] for r in found) / runs for k in KEYS]
        return [*cell, *(llmsim.share_cell(s, runs) for s in shares), str(runs)]

    return llmsim.pooled_rows(one_run, cells, runs, workers, said)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="docs/statistics.md table (o), as rows.")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--change", action="append", help="a change label's start")
    parser.add_argument("--shape", action="append", help="a shape label's start")
    args = parser.parse_args()
    chosen = [
        (shape, change)
        for shape in SHAPES
        for change in CHANGES
        if llmsim.chosen_by_start(change, args.change) and llmsim.chosen_by_start(shape, args.shape)
    ]
    print(HEADER, flush=True)
    for line in rows(args.runs, chosen, args.workers):
        print(line, flush=True)
