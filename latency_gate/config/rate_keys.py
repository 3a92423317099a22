"""The settings of calls at a rate, as the builder (build.py) takes them: their input names,
the parser of each (config/parsing.py's), and what one implies of another (a minimum rate is a
search to make)."""

from __future__ import annotations

from typing import Any

from latency_gate.config.draft import Draft
from latency_gate.config.parsing import (
    parse_arrivals,
    parse_bool,
    parse_goodput_time,
    parse_min_rate,
    parse_rate,
    parse_rate_for,
)

__all__ = ["RATE_KEYS", "settle_rates", "take_rates"]

RATE_KEYS = ("rate", "arrivals", "rate-for", "goodput", "min-rate", "goodput-time")


def take_rates(draft: Draft) -> None:
    """Parse each rate setting into `draft`."""
    draft.take("rate", lambda s: None if s.strip() == "" else parse_rate(s))
    draft.take("arrivals", parse_arrivals)
    draft.take("rate-for", parse_rate_for, "rate_for")
    draft.take("goodput", parse_bool)
    draft.take("min-rate", parse_min_rate)
    draft.take("goodput-time", parse_goodput_time)


def settle_rates(fields: dict[str, Any]) -> None:
    """`rate_for` split into calls or seconds; a minimum rate implies the search."""
    if "rate_for" in fields:
        fields["rate_calls"], fields["rate_seconds"] = fields.pop("rate_for")
    if fields.get("min_rate") is not None:
        fields["goodput"] = True  # a minimum to hold is a search to make
