"""What the answers cost (--price, --baseline-price): each arm's cost per answer and per 1,000
calls, and in an A/B run the head's against the base's. Reported, never gated: the verdict is
the latency's. How each figure is worked out: latency_gate/assess/compare/cost.py."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from latency_gate.models.numbers import Bounds
from latency_gate.sample import Frozen as _Frozen

__all__ = ["ArmCost", "Cost", "CostRatio"]


class ArmCost(_Frozen):
    """One arm's answers priced: the mean over its successful calls with a token count."""

    price_input: float = Field(description="dollars per million input (prompt) tokens")
    price_output: float = Field(description="dollars per million output (answer) tokens")
    answers: int = Field(description="successful calls priced (their output tokens known)")
    unpriced: int = Field(
        default=0, description="successful calls with no token count (left out of the mean)"
    )
    output_tokens: float | None = Field(description="mean output tokens an answer")
    output_from: Literal["usage", "deltas", "both"] | None = Field(
        description="where the output tokens came from: the answers' usage, the stream's "
        "deltas counted (no usage reported), or both"
    )
    input_tokens: float | None = Field(
        description="mean input tokens an answer, from usage; None: not counted (the server "
        "did not report them for every priced answer, and the input cost is left out)"
    )
    input_reported: int = Field(description="priced answers whose usage reported input tokens")
    per_answer: float | None = Field(description="dollars an answer: the mean")
    per_answer_interval: Bounds | None = Field(
        default=None, description="95 % interval of the mean (Student's t); None: one answer"
    )
    per_1000_calls: float | None = Field(description="dollars per 1,000 answers")
    per_1000_calls_interval: Bounds | None = None


class CostRatio(_Frozen):
    """The head's cost per answer over the base's, with its interval and why it moved."""

    ratio: float
    interval: Bounds | None = Field(
        description="95 % interval of the ratio of the mean costs: the delta method on its "
        "log, Student's t with Welch's degrees of freedom; None: a side has one answer"
    )
    output_ratio: float | None = Field(
        default=None, description="the ratio of the output cost alone (the answers' tokens)"
    )
    output_interval: Bounds | None = None
    input_counted: bool = Field(
        description="the input cost is in both sides (False: output cost alone, since an arm "
        "had no input count)"
    )
    reason: str = Field(description="what moved the cost, in words: length, prompt, price")


class Cost(_Frozen):
    """The cost of a run's answers: the head's, and the base's of an A/B run with the ratio."""

    head: ArmCost
    base: ArmCost | None = None
    base_priced_at: Literal["baseline-price", "price"] | None = Field(
        default=None,
        description="the base's price: its own (--baseline-price) or the head's (--price)",
    )
    ratio: CostRatio | None = None
