"""What the answers cost, per arm and head against base: reported beside the latency, never a
gate.

An answer costs `input tokens x input price + output tokens x output price` (prices in dollars
per million tokens). Its output tokens are the call's `tokens`: the usage count when the server
reported one, else the stream's deltas counted (said: `output_from`). Its input tokens are the
usage's `prompt_tokens` / `input_tokens`, and only that: when the server did not report them
for every priced answer of an arm, the arm's input cost is left out and the report says so,
rather than estimated from the request's characters (no tokenizer here would count as the
model's does, and a guessed number would read as a measured one). A successful call with no
token count at all (a whole answer without usage) is left out of the mean and counted.

Per arm: the mean cost per answer with its 95 % Student's t interval, and per 1,000 calls
(1,000 x the mean). Head against base (an A/B run): the ratio of the two means, a bill's ratio,
with a 95 % interval by the delta method on its log, var(log(m_h / m_b)) ~= s_h^2 / (n_h m_h^2)
+ s_b^2 / (n_b m_b^2), and Student's t with Welch's degrees of freedom; the input cost is in
the ratio only when both arms counted it. The reason names what moved: the answers' length, the
prompts' length, the price.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from latency_gate.assess.maths.student_t import t_quantile
from latency_gate.config.price import Price
from latency_gate.config.target import Target
from latency_gate.models import ArmCost, Bounds, Cost, CostRatio, Sample

__all__ = ["LEVEL", "arm_cost", "cost_of", "cost_ratio"]

LEVEL = 0.95
# Changes under 1 % in length are said as none.
_SAME = 0.01


@dataclass(frozen=True)
class _Priced:
    """An arm's priced answers: their tokens, and whether the input is counted."""

    output: tuple[int, ...]
    input: tuple[int, ...] | None
    price: Price

    def costs(self, *, with_input: bool) -> list[float]:
        inputs = self.input if with_input and self.input is not None else (0,) * len(self.output)
        return [
            (i * self.price.input + o * self.price.output) / 1e6
            for i, o in zip(inputs, self.output, strict=True)
        ]


def _priced(samples: Sequence[Sample], price: Price) -> tuple[_Priced, int, set[str], int]:
    """The priced answers (successful, with a token count), the unpriced ones' count, the
    sources of the output counts, and how many answers reported their input tokens."""
    answered = [s for s in samples if s.ok and s.tokens is not None]
    unpriced = sum(1 for s in samples if s.ok and s.tokens is None)
    sources: set[str] = {s.tokens_source for s in answered if s.tokens_source is not None}
    reported = sum(1 for s in answered if s.input_tokens is not None)
    inputs = (
        tuple(s.input_tokens or 0 for s in answered)
        if answered and reported == len(answered)
        else None
    )
    output = tuple(s.tokens or 0 for s in answered)
    return _Priced(output, inputs, price), unpriced, sources, reported


def _mean_interval(values: Sequence[float]) -> tuple[float | None, Bounds | None]:
    """The mean and its LEVEL Student's t interval (None for fewer than 2 values)."""
    if not values:
        return None, None
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, None
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(0.5 + LEVEL / 2, n - 1) * sd / math.sqrt(n)
    return mean, (max(mean - half, 0.0), mean + half)


def _source(sources: set[str]) -> Literal["usage", "deltas", "both"] | None:
    if len(sources) > 1:
        return "both"
    if sources == {"usage"}:
        return "usage"
    return "deltas" if sources == {"deltas"} else None


def arm_cost(samples: Sequence[Sample], price: Price) -> ArmCost:
    """One arm's answers priced at `price`."""
    priced, unpriced, sources, reported = _priced(samples, price)
    costs = priced.costs(with_input=True)
    mean, interval = _mean_interval(costs)
    n = len(priced.output)
    return ArmCost(
        price_input=price.input,
        price_output=price.output,
        answers=n,
        unpriced=unpriced,
        output_tokens=math.fsum(priced.output) / n if n else None,
        output_from=_source(sources),
        input_tokens=None if priced.input is None else math.fsum(priced.input) / n,
        input_reported=reported,
        per_answer=mean,
        per_answer_interval=interval,
        per_1000_calls=None if mean is None else mean * 1000,
        per_1000_calls_interval=None
        if interval is None or interval[0] is None or interval[1] is None
        else (interval[0] * 1000, interval[1] * 1000),
    )


def cost_ratio(
    head: Sequence[Sample], head_price: Price, base: Sequence[Sample], base_price: Price
) -> CostRatio | None:
    """The head's mean cost per answer over the base's, with its LEVEL interval and reason;
    None when a side has no priced answer or the base's answers cost nothing."""
    h, _, _, _ = _priced(head, head_price)
    b, _, _, _ = _priced(base, base_price)
    with_input = h.input is not None and b.input is not None
    whole = _ratio(h.costs(with_input=with_input), b.costs(with_input=with_input))
    output = _ratio(h.costs(with_input=False), b.costs(with_input=False))
    if whole is None:
        return None
    return CostRatio(
        ratio=whole[0],
        interval=whole[1],
        output_ratio=None if output is None else output[0],
        output_interval=None if output is None else output[1],
        input_counted=with_input,
        reason=_reason(h, b, with_input=with_input),
    )


def _ratio(head: Sequence[float], base: Sequence[float]) -> tuple[float, Bounds | None] | None:
    """The ratio of the means and its interval; None when a side is empty or costs nothing."""
    if not head or not base:
        return None
    m_h, m_b = math.fsum(head) / len(head), math.fsum(base) / len(base)
    if m_b <= 0 or m_h <= 0:
        return None
    return m_h / m_b, _ratio_interval(head, m_h, base, m_b, m_h / m_b)


def _ratio_interval(
    head: Sequence[float], m_h: float, base: Sequence[float], m_b: float, ratio: float
) -> Bounds | None:
    n_h, n_b = len(head), len(base)
    if n_h < 2 or n_b < 2:
        return None
    a = math.fsum((v - m_h) ** 2 for v in head) / (n_h - 1) / (n_h * m_h * m_h)
    b = math.fsum((v - m_b) ** 2 for v in base) / (n_b - 1) / (n_b * m_b * m_b)
    se = math.sqrt(a + b)
    if se == 0:
        return (ratio, ratio)
    df = (a + b) ** 2 / (a * a / (n_h - 1) + b * b / (n_b - 1))
    half = t_quantile(0.5 + LEVEL / 2, df) * se
    return (ratio * math.exp(-half), ratio * math.exp(half))


def _change(head: float, base: float, noun: str) -> str | None:
    """ "answers 60 % longer", "prompts 20 % shorter"; None when under 1 % apart."""
    if base <= 0 or abs(head / base - 1) < _SAME:
        return None
    change = head / base - 1
    return f"{noun} {abs(change) * 100:.0f} % {'longer' if change > 0 else 'shorter'}"


def _mean(values: Sequence[int]) -> float:
    return math.fsum(values) / len(values)


def _reason(head: _Priced, base: _Priced, *, with_input: bool) -> str:
    """ "answers 60 % longer at the same price"."""
    parts: list[str] = []
    if (said := _change(_mean(head.output), _mean(base.output), "answers")) is not None:
        parts.append(said)
    if with_input and head.input and base.input:
        said = _change(_mean(head.input), _mean(base.input), "prompts")
        if said is not None:
            parts.append(said)
    changed = " and ".join(parts) or "answers of the same length"
    if head.price == base.price:
        text = f"{changed} at the same price"
    else:
        text = f"{changed} at {head.price} against {base.price}"
    if not with_input:
        text += " (output tokens alone: an arm's input tokens were not reported)"
    return text


def cost_of(target: Target, head: Sequence[Sample], base: Sequence[Sample] = ()) -> Cost | None:
    """The cost of a run's answers at the target's prices; None when it has no price. An A/B
    run's base (`base`, its calls) is priced at `baseline_price`, else at the head's."""
    if target.price is None:
        return None
    if target.baseline_url is None:
        return Cost(head=arm_cost(head, target.price))
    base_price = target.baseline_price or target.price
    return Cost(
        head=arm_cost(head, target.price),
        base=arm_cost(base, base_price),
        base_priced_at="baseline-price" if target.baseline_price is not None else "price",
        ratio=cost_ratio(head, target.price, base, base_price),
    )
