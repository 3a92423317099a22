"""The first token and the time per token as regression-tested numbers (issue 41, item 4):
simulated A/B runs of two streamed LLM endpoints through the shipped gate (bench/llmsim.py's
run_llm_ab, budgets at 5 x each kind's true p95 as table k, so that the comparison drives the
run), docs/statistics.md "The first token and the time per token, tested".

    python bench/stream_regressions.py --runs 100 [--workers 2] [--change time] [--shape rec]

Shapes: the recorded llama.cpp shape (median 38 tokens, sigma 0.85, cut at 96) and natural
lengths (median 40, sigma 0.6, max_tokens 1024); prompts at temperature 0 (the arms' lengths
drawn alike, rho 1) and sampled (rho 0). Changes (the head): the same; each token 20 % slower;
the first token (the prefill) 30 % later. Targets: an unchanged endpoint flagged in at most 2 %
of runs per number; time per token +20 % caught in at least 90 %; first token +30 % in at
least 90 %.

Each run is seeded by its cell's labels and its number, so a row's figures do not depend on
which others are run. Printed: one Markdown row per cell.
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

SHAPES = dict(llmsim.SHAPES[:2])  # the recorded shape, natural sigma 0.6
# The recorded shape with the first token's spread measured on the real llama.cpp server
# (bench/data/llama_tokens.json: 0.114 over 400 warm calls; llmsim's 0.15 was assumed).
SHAPES["recorded, first token's spread as measured (0.114)"] = replace(
    SHAPES["recorded: cut at 96 tokens"], first_sigma=0.114
)
SHAPES["natural sigma 0.6, first token's spread as measured (0.114)"] = replace(
    SHAPES["natural, sigma 0.6"], first_sigma=0.114
)
RHOS = {1.0: "temperature 0 (rho 1)", 0.0: "sampled (rho 0)"}
CHANGES: dict[str, Callable[[llmsim.Llm], llmsim.Llm]] = {
    "unchanged": lambda e: e,
    "time per token +20 %": lambda e: replace(e, per=e.per * 1.20),
    "first token +30 %": lambda e: replace(e, first=e.first * 1.30),
}
STREAM = ("ttft_warm_p95", "tpot_p95")
WHOLE = ("warm_p95", "concurrent_p95")


def one_run(job: tuple[str, float, str, int]) -> dict[str, float]:
    """One seeded A/B run of `job`'s shape, prompts and change: what its comparison said."""
    shape, rho, change, i = job
    base = SHAPES[shape]
    out: Outcome = llmsim.run_llm_ab(
        CHANGES[change](base),
        base,
        random.Random(f"stream-regressions/{shape}/{rho:g}/{change}/{i}"),
        rho=rho,
        budget=llmsim._budget(base),
    )
    rows = {} if out.baseline is None else {d.number: d for d in out.baseline.deltas}

    def flagged(number: str) -> bool:
        return number in rows and rows[number].regressed

    def undecided(number: str) -> bool:
        return number in rows and rows[number].outcome == "undecided"

    return {
        "ttft": flagged("ttft_warm_p95"),
        "tpot": flagged("tpot_p95"),
        "whole": any(flagged(n) for n in WHOLE),
        "failed": not out.verdict.passed,
        "ttft_undecided": undecided("ttft_warm_p95"),
        "tpot_undecided": undecided("tpot_p95"),
        "calls": out.calls,
    }


KEYS = ("ttft", "tpot", "whole", "failed", "ttft_undecided", "tpot_undecided")
HEADER = (
    "| shape | prompts | head against base | warm first-token p95 flagged "
    "| time per token p95 flagged | a whole-call p95 flagged | run FAILed "
    "| first token undecided | time per token undecided | calls per arm | runs |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def tally(found: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each key's share of the runs, and the mean calls of an arm."""
    runs = len(found)
    shares = {k: sum(r[k] for r in found) / runs for k in KEYS}
    return {**shares, "calls": sum(r["calls"] for r in found) / runs}


def rows(runs: int, cells: Sequence[tuple[str, float, str]], workers: int) -> list[str]:
    def said(cell: tuple[Any, ...], found: list[dict[str, float]]) -> list[str]:
        shape, rho, change = cell
        shares = tally(found)
        return [
            shape,
            RHOS[rho],
            change,
            *(llmsim.share_cell(shares[k], runs) for k in KEYS),
            f"{shares['calls']:.0f}",
            str(runs),
        ]

    return llmsim.pooled_rows(one_run, cells, runs, workers, said)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="The stream numbers' figures, as rows.")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--change", action="append", help="a change label's start")
    parser.add_argument("--shape", action="append", help="a shape label's start")
    parser.add_argument("--rho", type=float, action="append", help="1 or 0 (default both)")
    args = parser.parse_args()
    chosen = [
        (shape, rho, change)
        for shape in SHAPES
        for rho in (args.rho or RHOS)
        for change in CHANGES
        if llmsim.chosen_by_start(change, args.change) and llmsim.chosen_by_start(shape, args.shape)
    ]
    print(HEADER, flush=True)
    for line in rows(args.runs, chosen, args.workers):
        print(line, flush=True)
