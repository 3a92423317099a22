"""Targets side by side: which is the cheapest that passes, and what the dearer ones buy.

The targets come in the order of the targets file, cheapest first (the file says so; cost notes
are free text and never parsed). "Buys" is measured at p95: warm p95, and concurrent p95 when
both runs have it, as the cheapest passing target's value minus the dearer one's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from latency_gate.formatting import fmt_duration
from latency_gate.models import RunResult

__all__ = ["Comparison", "compare_targets"]

# Differences under a millisecond are reported as none: below what a p95 of 20 calls can tell.
_SAME = 0.001
_P95S = (("warm_p95", "warm p95"), ("concurrent_p95", "concurrent p95"))


@dataclass(frozen=True)
class Comparison:
    """What a reader needs to pick a target. Names and costs are untrusted: escape them."""

    cheapest: str | None  # the cheapest target that passes, None when none does
    cheapest_cost: str | None
    failing_cheaper: tuple[str, ...]  # cheaper targets that fail, in order
    buys: tuple[tuple[str, str | None, str], ...]  # (dearer target, its cost, what it buys)

    @property
    def headline(self) -> str:
        if self.cheapest is None:
            return "No target passes the budget, so there is no cheapest passing one."
        return f"Cheapest target that passes: {self.cheapest}"


def _cost(result: RunResult) -> str | None:
    cost = result.config.get("cost")
    return str(cost) if cost else None


def _buys(cheap: RunResult, dear: RunResult) -> str:
    """ "0.40 s at warm p95 and 2.9 s at concurrent p95", or how it is slower."""
    gains: list[str] = []
    losses: list[str] = []
    measured = False
    for number, label in _P95S:
        base = getattr(cheap.numbers, number)
        other = getattr(dear.numbers, number)
        if base is None or other is None:
            continue
        measured = True
        if base - other >= _SAME:
            gains.append(f"{fmt_duration(base - other)} at {label}")
        elif other - base >= _SAME:
            losses.append(f"{fmt_duration(other - base)} slower at {label}")
    if not measured:
        return "nothing measurable (no p95 on one side)"
    if not gains and not losses:
        return "nothing at p95: the same within a millisecond"
    if not gains:
        return "nothing at p95: it is " + " and ".join(losses)
    text = " and ".join(gains)
    if losses:
        text += ", but is " + " and ".join(losses)
    return text


def compare_targets(results: Sequence[RunResult]) -> Comparison | None:
    """The comparison of several distinct targets in cheapest-first order; None for one target
    or for runs of the same target (a merged matrix of runners has nothing to price)."""
    names = [result.target for result in results]
    if len(results) < 2 or len(set(names)) != len(names):
        return None
    cheapest_index = next((i for i, r in enumerate(results) if r.verdict.passed), None)
    if cheapest_index is None:
        return Comparison(None, None, tuple(r.display_name for r in results), ())
    cheap = results[cheapest_index]
    return Comparison(
        cheapest=cheap.display_name,
        cheapest_cost=_cost(cheap),
        failing_cheaper=tuple(r.display_name for r in results[:cheapest_index]),
        buys=tuple(
            (
                dear.display_name,
                _cost(dear),
                _buys(cheap, dear) + ("" if dear.verdict.passed else "; it is over budget"),
            )
            for dear in results[cheapest_index + 1 :]
        ),
    )
