"""How much worse a number may get against a baseline: `--max-regression 20%`, `200ms` or both."""

from __future__ import annotations

import re
from dataclasses import dataclass

from latency_gate.config.parsing import parse_duration, shown

__all__ = ["DEFAULT_LIMIT", "RegressionLimit", "parse_max_regression"]


@dataclass(frozen=True)
class RegressionLimit:
    """How much worse a number may get. Both limits, when given, must be exceeded."""

    relative: float | None = None
    absolute: float | None = None

    def describe(self) -> str:
        parts = []
        if self.relative is not None:
            parts.append(f"{self.relative * 100:g} %")
        if self.absolute is not None:
            parts.append(f"{self.absolute * 1000:g} ms")
        return " and ".join(parts) or "any amount"


DEFAULT_LIMIT = RegressionLimit(relative=0.10)
# A hundred times worse than the base: a wider limit tests nothing (and 400 digits of percent
# read as an infinity, which no test takes).
MAX_RELATIVE = 100.0
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*$")


def parse_max_regression(text: str) -> RegressionLimit:
    """`20%`, `200ms`, or both separated by a comma; ValueError says what was expected."""
    relative: float | None = None
    absolute: float | None = None
    parts = [part for part in text.split(",") if part.strip()]
    if not parts or len(parts) > 2:
        raise ValueError(f"expected 20%, 200ms or 20%,200ms; got {text!r}")
    for part in parts:
        match = _PERCENT.match(part)
        if match:
            if relative is not None:
                raise ValueError(f"two relative limits in {text!r}")
            relative = float(match[1]) / 100
            if not relative <= MAX_RELATIVE:
                raise ValueError(
                    f"expected a share of at most {MAX_RELATIVE * 100:,.0f}%, got {shown(part)}"
                )
            continue
        try:
            seconds = parse_duration(part)
        except ValueError:
            raise ValueError(
                f"expected a share such as 20% or a duration such as 200ms, got {part.strip()!r}"
            ) from None
        if absolute is not None:
            raise ValueError(f"two absolute limits in {text!r}")
        absolute = seconds
    return RegressionLimit(relative=relative, absolute=absolute)
