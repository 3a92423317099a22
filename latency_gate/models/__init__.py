"""Result models: what one run measured, as written to the JSON result file.

`RunResult` is the schema-versioned document a later run can load as a baseline. Every duration
is in seconds (floats); every offset inside a call is measured from that call's `t0`, the moment
its first byte went to the network (or its connection attempt began, for a call that connected).

The room answers "what did one run measure, as its JSON result file holds it": the run and its
sampling here; one call in sample.py; the numbers, their checks and the verdict in numbers.py;
how the run compared with its base in comparison.py; how much load it holds (the capacity and
calls at a rate, one `LoadFigure` in two kinds) in load.py. Every model is importable from here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from latency_gate.models.comparison import (
    BaselineCheck,
    History,
    HistoryRun,
    NumberDelta,
    PartDelta,
)
from latency_gate.models.cost import ArmCost, Cost, CostRatio
from latency_gate.models.load import (
    Capacity,
    CapacityLevel,
    Goodput,
    Level,
    LoadFigure,
    RateLevel,
)
from latency_gate.models.numbers import (
    Bounds,
    Check,
    Finding,
    Floor,
    Numbers,
    PhaseStats,
    Verdict,
)

# The call models live in sample.py (one call), these in this module (one run); both are
# importable from here.
from latency_gate.sample import (
    CallPhase,
    CallTimings,
    ErrorKind,
    Sample,
    StampSource,
    TokenGaps,
)
from latency_gate.sample import Frozen as _Frozen

__all__ = [
    "SCHEMA_VERSION",
    "ArmCost",
    "BaselineCheck",
    "Bounds",
    "CallPhase",
    "CallTimings",
    "Capacity",
    "CapacityLevel",
    "Check",
    "Cost",
    "CostRatio",
    "ErrorKind",
    "Finding",
    "Floor",
    "Goodput",
    "History",
    "HistoryRun",
    "Level",
    "LoadFigure",
    "NumberDelta",
    "Numbers",
    "PartDelta",
    "PhaseStats",
    "RateLevel",
    "RunResult",
    "Sample",
    "Sampling",
    "StampSource",
    "TokenGaps",
    "Verdict",
]

SCHEMA_VERSION: Literal[1] = 1


class Sampling(_Frozen):
    """How many calls the run made and why: the first look (the classic 1 + 20 + 10 calls) and
    every look after it, taken while a gated check was undecided (docs/statistics.md)."""

    looks: int = Field(description="looks taken; 1 is the classic run alone")
    first_look_calls: int
    extra_calls: int = Field(description="calls made after the first look")
    max_calls: int
    on_undecided: Literal["estimate", "fail", "pass"]
    on_undecided_regression: Literal["fail", "pass"] = "pass"
    reasons: tuple[str, ...] = Field(
        default=(), description="why each look after the first was taken"
    )
    stopped: str = Field(default="", description="why sampling stopped")
    first_look: Numbers | None = Field(
        default=None, description="the five numbers of the first look alone"
    )


class RunResult(_Frozen):
    """Everything one probe of one target measured. The JSON result file."""

    schema_version: Literal[1] = SCHEMA_VERSION
    tool_version: str
    target: str = Field(description="the target's name")
    config: dict[str, object] = Field(description="the probe settings, secrets redacted")
    started_at: float
    finished_at: float
    stamp_source: StampSource
    floor: Floor | None = None
    samples: tuple[Sample, ...]
    base_samples: tuple[Sample, ...] = Field(
        default=(),
        description="the base endpoint's calls of an A/B run (--baseline-url), measured "
        "interleaved with `samples`; the budget checks and `numbers` are the head's alone",
    )
    numbers: Numbers
    phases: dict[str, dict[str, PhaseStats]] = Field(
        default_factory=dict,
        description="per call phase (cold/warm/concurrent), per boundary: median and p95",
    )
    chain: dict[str, dict[str, PhaseStats]] = Field(
        default_factory=dict,
        description=(
            "where the time went: per call phase, per link of a call (connect, tls, wait, "
            "headers_to_body, first_token, rest, total), median and p95 in seconds"
        ),
    )
    excluded_from_latency: int = Field(
        description="failed calls left out of the latency percentiles"
    )
    percentile_method: str = "linear interpolation between closest ranks (numpy default)"
    verdict: Verdict
    findings: tuple[Finding, ...] = ()
    interrupted: bool = False
    warnings: tuple[str, ...] = ()
    label: str | None = Field(
        default=None, description="where it ran (runner, region), to tell merged runs apart"
    )
    baseline: BaselineCheck | None = None
    sampling: Sampling | None = None
    ready_after: float | None = Field(
        default=None,
        description="seconds --wait-ready polled before the endpoint answered (None: no wait)",
    )
    capacity: Capacity | None = Field(
        default=None, description="the capacity at the budget (--capacity); None: not searched"
    )
    commit: str | None = Field(
        default=None,
        description="the commit measured: GITHUB_SHA in GitHub Actions, None elsewhere; names "
        "the run in the trend of the runs held against it later",
    )
    goodput: Goodput | None = Field(
        default=None,
        description="calls at a rate (--rate) or the goodput search (--goodput); None: neither",
    )
    cost: Cost | None = Field(
        default=None,
        # Left out when None: a result file from before it reads back and writes out the same.
        exclude_if=lambda cost: cost is None,
        description="what the answers cost (--price): per answer and per 1,000 calls, and "
        "head / base in an A/B run; reported, never gated. None: no price given",
    )

    @property
    def display_name(self) -> str:
        """The target's name, with the run's label when it has one: "paid (eu-west)"."""
        return self.target if self.label is None else f"{self.target} ({self.label})"
