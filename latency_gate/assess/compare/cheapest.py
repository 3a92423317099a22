"""Targets side by side: how each compares at p95 with the one a reader would pick.

A target may say what it costs: measured, its answers priced (`price` in a targets file, or
--price: assess/compare/cost.py), or in a note (`cost`, any unit: "$0.60 / 1M tokens", "0",
"free, on our own GPU"). When every target was priced, the targets are ordered by the cost per
answer measured, and each is shown with it ("$0.0000147 an answer"). Otherwise, when every
target's note holds a price that can be read (the number beside a currency sign, else its
first number; "free" is 0), the targets are ordered by it,
cheapest first, and the comparison is worded from the prices: "paid costs more than local and is
1.20 s faster at warm p95". Otherwise the file's order stands (the README asks for cheapest
first) and the comparison says nothing about price: "preview is 29 ms slower at warm p95 than
staging". Either way every other target is held against the reference: the cheapest target
within budget, or the first one within budget. "Faster" is measured at p95: warm p95, and
concurrent p95 when both runs have it, and said only when the calls show it: the interval of
the ratio of the two p95s (the permutation test inverted, assess/compare/regression.py) lies wholly
below 1 (or above it, for "slower"), and the sentence carries that interval. Two endpoints of
the same behaviour differ by noise alone; "b is 13 ms slower at warm p95" was said of them
(issue 28). The intervals share a 5 % error between the p95s compared (97.5 % each for two,
Bonferroni), so that two endpoints alike are called different in at most 5 % of comparisons
of a pair, not 5 % of each p95 (a pair called "faster at concurrent p95" with x0.79 to x1.00
at 95 % each failed a test of two alike demo endpoints at stop 36).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from latency_gate.assess.compare.regression import ratio_interval
from latency_gate.assess.numbers.stats import latencies
from latency_gate.formatting import fmt_dollars, fmt_duration
from latency_gate.models import CallPhase, RunResult

__all__ = ["Comparison", "Standing", "compare_targets", "in_cost_order", "read_price"]

# Differences under a millisecond are reported as none, whatever the calls show.
_SAME = 0.001
# The share of comparisons of two endpoints alike that may call them different.
_ALPHA = 0.05
_P95S = (
    ("warm_p95", "warm p95", CallPhase.WARM),
    ("concurrent_p95", "concurrent p95", CallPhase.CONCURRENT),
)

_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:[.,]\d+)?"
_CURRENCY = re.compile(
    rf"[$€£¥]\s?(?P<before>{_NUMBER})|(?P<after>{_NUMBER})\s?(?:[$€£¥]|(?:USD|EUR|GBP)\b)",
    re.IGNORECASE,
)
_FIRST = re.compile(rf"(?P<free>\bfree\b)|(?P<number>{_NUMBER})", re.IGNORECASE)
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")

Name = Callable[[str], str]


def _number(text: str) -> float:
    """ "1,200.50" -> 1200.5 (commas between groups of three), "0,60" -> 0.6 (a decimal comma)."""
    if _THOUSANDS.fullmatch(text):
        return float(text.replace(",", ""))
    return float(text.replace(",", "."))


def read_price(cost: str | None) -> float | None:
    """The price a cost note states, to order targets by: the number beside a currency sign
    ("$0.60 / 1M tokens" -> 0.6, "5 EUR" -> 5), else the first of "free" (0) or a number
    ("0" -> 0, "free, on our own GPU" -> 0); None when it states none ("on our own GPU")."""
    if not cost:
        return None
    priced = _CURRENCY.search(cost)
    if priced is not None:
        return _number(priced.group("before") or priced.group("after"))
    first = _FIRST.search(cost)
    if first is None:
        return None
    return 0.0 if first.group("free") else _number(first.group("number"))


def _cost_note(result: RunResult) -> str | None:
    cost = result.config.get("cost")
    return str(cost) if cost else None


def _per_answer(result: RunResult) -> float | None:
    """What an answer cost, measured (--price); None when the run was not priced."""
    return None if result.cost is None else result.cost.head.per_answer


def _measured(results: Sequence[RunResult]) -> bool:
    """Every target priced by its answers (--price, a targets file's `price`): the order and
    the words are the measured cost per answer's, not the notes'."""
    return len(results) >= 2 and all(_per_answer(r) is not None for r in results)


def _cost(result: RunResult, measured: bool = False) -> str | None:
    """The cost shown beside a target: "$0.0000147 an answer" when measured, else its note."""
    if measured and (per_answer := _per_answer(result)) is not None:
        return f"{fmt_dollars(per_answer)} an answer"
    return _cost_note(result)


def _prices(results: Sequence[RunResult]) -> list[float] | None:
    """Every target's cost per answer when each was measured, else every target's price from
    its note; None when one of them states none (or there is one target)."""
    if _measured(results):
        return [_per_answer(r) or 0.0 for r in results]
    prices = [read_price(_cost_note(result)) for result in results]
    if len(results) < 2 or any(price is None for price in prices):
        return None
    return [price for price in prices if price is not None]


def in_cost_order(results: Sequence[RunResult]) -> list[RunResult]:
    """The results cheapest first when every one states a price (ties keep their order);
    otherwise as given."""
    prices = _prices(results)
    if prices is None:
        return list(results)
    order = sorted(range(len(results)), key=lambda i: prices[i])
    return [results[i] for i in order]


@dataclass(frozen=True)
class Standing:
    """One target against the reference. Name and cost are untrusted: escape them."""

    name: str
    cost: str | None  # shown only in a priced comparison
    price: Literal["more", "same"] | None  # than the reference; None when not priced
    faster: tuple[str, ...]  # "1.20 s faster at warm p95 (p95s x0.52 to x0.61, 97.5 %)"
    slower: tuple[str, ...]  # "29 ms slower at concurrent p95 (p95s x1.02 to x1.09, 97.5 %)"
    measured: bool  # both sides have a p95 to compare
    passed: bool


@dataclass(frozen=True)
class Comparison:
    """What a reader needs to pick a target. Names and costs are untrusted: the sentence
    methods take the function that makes each safe (and bold, in Markdown)."""

    priced: bool
    reference: str | None  # the cheapest (priced) or first target within budget; None: none is
    reference_cost: str | None
    cheaper_failing: tuple[tuple[str, str | None], ...]  # priced: cheaper targets over budget
    others: tuple[Standing, ...]

    def headline(self, name: Name = str, cost: Name = str) -> str | None:
        """ "Cheapest within budget: local (free). Cheaper but over budget: spot ($0)." in a
        priced comparison with a target within budget; None otherwise."""
        if not self.priced or self.reference is None:
            return None
        text = f"Cheapest within budget: {name(self.reference)}{_note(self.reference_cost, cost)}."
        if self.cheaper_failing:
            listed = ", ".join(f"{name(n)}{_note(c, cost)}" for n, c in self.cheaper_failing)
            text += f" Cheaper but over budget: {listed}."
        return text

    def sentences(self, name: Name = str, cost: Name = str) -> tuple[str, ...]:
        """A sentence per other target: "paid ($0.60 / 1M tokens) costs more than local and is
        1.20 s faster at warm p95." or "preview is 29 ms slower at warm p95 than staging."."""
        if self.reference is None:
            return ()
        return tuple(self._sentence(other, name, cost) for other in self.others)

    def _sentence(self, other: Standing, name: Name, cost: Name) -> str:
        reference = name(self.reference or "")
        who = name(other.name)
        if self.priced:
            price = "more than" if other.price == "more" else "as much as"
            text = f"{who}{_note(other.cost, cost)} costs {price} {reference}"
            if not other.measured:
                text += "; one of the two has no p95 to compare"
            elif not other.faster and not other.slower:
                text += f" and is no faster at p95: {_NO_DIFFERENCE}"
            else:
                text += f" and is {_difference(other)}"
        elif not other.measured:
            text = f"{who} has no p95 to compare with {reference}'s"
        elif not other.faster and not other.slower:
            text = f"{who} is as fast as {reference} at p95: {_NO_DIFFERENCE}"
        else:
            text = f"{who} is {_difference(other)} than {reference}"
        return text + ("; it is over budget." if not other.passed else ".")


_NO_DIFFERENCE = "no difference the calls can tell"


def _note(text: str | None, cost: Name) -> str:
    return f" ({cost(text)})" if text else ""


def _difference(other: Standing) -> str:
    """ "1.20 s faster at warm p95 but 29 ms slower at concurrent p95"."""
    faster = " and ".join(other.faster)
    slower = " and ".join(other.slower)
    return f"{faster} but {slower}" if faster and slower else faster or slower


def _standing(
    reference: RunResult,
    other: RunResult,
    price: Literal["more", "same"] | None,
    measured: bool = False,
) -> Standing:
    faster: list[str] = []
    slower: list[str] = []
    both = [
        (label, phase, base, value)
        for number, label, phase in _P95S
        if (base := getattr(reference.numbers, number)) is not None
        and (value := getattr(other.numbers, number)) is not None
    ]
    # Each p95 compared is a claim: their intervals share the 5 % (Bonferroni), so that two
    # endpoints alike are called different in at most 5 % of comparisons, not 5 % a number.
    level = 1 - _ALPHA / max(len(both), 1)
    measured = False
    for label, phase, base, value in both:
        bounds = _ratio_bounds(
            tuple(latencies(other.samples, phase)),
            tuple(latencies(reference.samples, phase)),
            level,
        )
        if bounds is None:
            continue
        measured = True
        low, high = bounds
        # no name here: names are escaped
        shown = f"(p95s x{low:.2f} to x{high:.2f}, {level * 100:g} %)"
        if base - value >= _SAME and high < 1:
            faster.append(f"{fmt_duration(base - value)} faster at {label} {shown}")
        elif value - base >= _SAME and low > 1:
            slower.append(f"{fmt_duration(value - base)} slower at {label} {shown}")
    return Standing(
        name=other.display_name,
        cost=_cost(other, measured) if price is not None else None,
        price=price,
        faster=tuple(faster),
        slower=tuple(slower),
        measured=measured,
        passed=other.verdict.passed,
    )


@functools.lru_cache(maxsize=64)
def _ratio_bounds(
    other: tuple[float, ...], reference: tuple[float, ...], level: float
) -> tuple[float, float] | None:
    """The `level` interval of other's p95 / reference's (the permutation test inverted); None
    when either side has fewer than 2 calls, or a side is unbounded. Cached: every report of a
    run asks for the same comparison."""
    if len(other) < 2 or len(reference) < 2 or min(other) <= 0 or min(reference) <= 0:
        return None
    interval = ratio_interval(other, reference, 95, level=level)
    if interval.low is None or interval.high is None:
        return None
    return interval.low, interval.high


def compare_targets(results: Sequence[RunResult]) -> Comparison | None:
    """The comparison of several distinct targets; None for one target or for runs of the same
    target (a merged matrix of runners has nothing to compare)."""
    names = [result.target for result in results]
    if len(results) < 2 or len(set(names)) != len(names):
        return None
    prices = _prices(results)
    if prices is None:
        at = next((i for i, r in enumerate(results) if r.verdict.passed), None)
        if at is None:
            return Comparison(False, None, None, (), ())
        reference = results[at]
        others = tuple(_standing(reference, r, None) for r in results if r is not reference)
        return Comparison(False, reference.display_name, None, (), others)
    priced = sorted(zip(results, prices, strict=True), key=lambda pair: pair[1])
    found = next((pair for pair in priced if pair[0].verdict.passed), None)
    if found is None:
        return Comparison(True, None, None, (), ())
    reference, base = found
    measured = _measured(results)
    return Comparison(
        priced=True,
        reference=reference.display_name,
        reference_cost=_cost(reference, measured),
        cheaper_failing=tuple(
            (r.display_name, _cost(r, measured)) for r, price in priced if price < base
        ),
        others=tuple(
            _standing(reference, r, "same" if price == base else "more", measured)
            for r, price in priced
            if price >= base and r is not reference
        ),
    )
