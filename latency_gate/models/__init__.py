"""Result models: what one run measured, as written to the JSON result file.

`RunResult` is the schema-versioned document a later run can load as a baseline. Every duration
is in seconds (floats); every offset inside a call is measured from that call's `t0`, the moment
its first byte went to the network (or its connection attempt began, for a call that connected).

The room answers "what did one run measure, as its JSON result file holds it": the run and its
sampling and its capacity here; one call in sample.py; the numbers, their checks and the
verdict in numbers.py; how the run compared with its base in comparison.py; calls at a rate in
rate_models.py. Every model is importable from here.
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
from latency_gate.models.numbers import (
    Bounds,
    Check,
    Finding,
    Floor,
    Numbers,
    PhaseStats,
    Verdict,
)
from latency_gate.rate_models import Goodput, RateLevel

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
    "BaselineCheck",
    "Bounds",
    "CallPhase",
    "CallTimings",
    "Capacity",
    "CapacityLevel",
    "Check",
    "ErrorKind",
    "Finding",
    "Floor",
    "Goodput",
    "History",
    "HistoryRun",
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


class CapacityLevel(_Frozen):
    """One level of the capacity search: `concurrency` calls started together, in bursts, judged
    on that level's calls alone (docs/statistics.md, "Capacity")."""

    concurrency: int = Field(ge=1)
    calls: int = Field(ge=0)
    bursts: int = Field(ge=0)
    p95: float | None = Field(description="p95 latency of the level's successful calls")
    errors: int = Field(ge=0, description="failed calls of the level")
    ttft_p95: float | None = Field(default=None, description="first-token p95 of the level")
    held: bool = Field(
        description="every budgeted check of the level showed its p95 within the budget"
    )
    near: bool = Field(
        default=False,
        description="not held, not broken: after its calls the p95 was too near the budget to "
        "tell (held is False)",
    )
    decided_by: Literal["the run", "test", "level cap", "max-calls"] = Field(
        description="the run: the run's own concurrent calls decided it (level c0); "
        "test: the sequential tests decided; level cap: undecided at the level's last burst "
        "(near the budget, or its error rate by the nearer share); max-calls: the same when "
        "the cap stopped the search"
    )
    broke_on: tuple[str, ...] = Field(default=(), description="the checks that broke it")
    wrong_at_most: float | None = Field(
        default=None,
        description="how often a level on the wrong side of its budget is decided so, at most: "
        "the test's bound, or the exact rate of the looks taken at the cap",
    )
    seconds: float | None = Field(
        default=None, description="time its bursts took (None for the run's own level)"
    )
    samples: tuple[Sample, ...] = Field(
        default=(),
        description="the level's calls, apart from the run's `samples` (empty for the run's "
        "own level: those are its concurrent calls)",
    )


class Capacity(_Frozen):
    """The most calls at once whose concurrent p95 holds its budget (`--capacity`), and the
    search that found it. Its calls are its levels' own: `RunResult.samples` and the numbers,
    findings and budget checks of the run do not include them."""

    found: int = Field(ge=0, description="the highest level that held (0: not even one call)")
    upper: int | None = Field(
        default=None,
        description="when levels above `found` were near the budget (not told apart from it): "
        "the highest level the capacity can be, below the lowest that broke (capacity-max when "
        "none did); the capacity is between `found` and `upper`. None: told apart",
    )
    complete: bool = Field(description="the search ended by itself (not stopped by max-calls)")
    reached_max: bool = Field(description="found is --capacity-max: the search went no higher")
    stopped_by_cap: bool = Field(
        description="max-calls stopped the search: the capacity is at least `found`"
    )
    breaking: int | None = Field(description="the lowest level that broke the budget")
    breaking_p95: float | None = Field(description="that level's p95 latency")
    limit: float = Field(description="the concurrent p95 budget each level was held to")
    ttft_limit: float | None = None
    error_limit: float | None = None
    on_undecided: Literal["estimate", "fail", "pass"] = "estimate"
    start: int = Field(description="the run's concurrency, the first level (judged by the run)")
    maximum: int = Field(description="--capacity-max")
    calls: int = Field(description="calls the search made (the run's own level not counted)")
    seconds: float = Field(description="time the search's bursts took")
    stopped: str = Field(default="", description="why the search stopped, in words")
    levels: tuple[CapacityLevel, ...] = Field(description="the levels in the order tried")


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

    @property
    def display_name(self) -> str:
        """The target's name, with the run's label when it has one: "paid (eu-west)"."""
        return self.target if self.label is None else f"{self.target} ({self.label})"
