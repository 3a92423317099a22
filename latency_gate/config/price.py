"""What an answer's tokens cost: `--price IN/OUT` and `--baseline-price IN/OUT` (dollars per
million input and output tokens, "0.15/0.60"), as the builder (build.py) takes them.

A price is not a secret and not a setting of what was measured: a run priced or not measured
the same calls (target.py lists both among the settings a baseline does not compare). The base
of an A/B run is priced at `baseline-price`, or at the head's `price` when it is left out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from latency_gate.config.draft import Draft
from latency_gate.errors import InputProblem

__all__ = ["PRICE_KEYS", "Price", "check_prices", "parse_price", "take_prices"]

PRICE_KEYS = ("price", "baseline-price")

# The settings that make a base to price: any of them given is a base (config/ab.py's, and
# those a base with its own request adds).
_BASE_FIELDS = ("baseline_url", "baseline_model", "baseline_body", "baseline_prompt")


class Price(BaseModel):
    """Dollars per million tokens: the prompt's (`input`) and the answer's (`output`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0, description="dollars per million input (prompt) tokens")
    output: float = Field(ge=0, description="dollars per million output (answer) tokens")

    def __str__(self) -> str:
        return f"${self.input:g}/${self.output:g} per 1M tokens in/out"


_NUMBER = re.compile(r"\$?\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)", re.IGNORECASE)


def parse_price(text: str) -> Price:
    """ "0.15/0.60" (an optional $ before each) -> Price(input=0.15, output=0.6).

    Raises ValueError saying what was expected: two numbers split by "/", neither negative."""
    parts = text.strip().split("/")
    expected = "expected two prices in dollars per million tokens, input/output, such as 0.15/0.60"
    if len(parts) != 2:
        raise ValueError(f"{text.strip()!r}: {expected}")
    values: list[float] = []
    for part in parts:
        match = _NUMBER.fullmatch(part.strip())
        value = float(match.group(1)) if match else math.nan
        if not math.isfinite(value):
            raise ValueError(f"{text.strip()!r}: {expected}")
        if value < 0:
            raise ValueError(f"{text.strip()!r}: a price cannot be negative")
        values.append(value)
    return Price(input=values[0], output=values[1])


def take_prices(draft: Draft) -> None:
    """Parse each price into `draft`; empty: not given."""
    draft.take("price", lambda s: None if s.strip() == "" else parse_price(s))
    draft.take("baseline-price", lambda s: None if s.strip() == "" else parse_price(s))


def check_prices(draft: Draft, raw: Mapping[str, str | list[str] | None]) -> None:
    """A base price given for this target (in `raw`) with no base to price is refused (one
    shared from a targets file's defaults is left unused)."""
    fields, spelled, problems = draft.fields, draft.spelled, draft.problems
    if fields.get("baseline_price") is not None and fields.get("price") is None:
        problems.append(
            InputProblem(spelled("baseline-price"), f"needs {spelled('price')}, the head's price")
        )
        return
    if fields.get("baseline_price") is None or any(
        fields.get(name) is not None for name in _BASE_FIELDS
    ):
        return
    fields.pop("baseline_price")
    if raw.get("baseline-price") in (None, ""):
        return
    problems.append(
        InputProblem(
            spelled("baseline-price"),
            f"needs a base to price: {spelled('baseline-url')}, measured beside the head",
        )
    )
