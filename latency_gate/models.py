"""Result models: what one run measured, as written to the JSON result file.

`RunResult` is the schema-versioned document a later run can load as a baseline. Every duration
is in seconds (floats); every offset inside a call is measured from that call's `t0`, the moment
its first byte went to the network (or its connection attempt began, for a call that connected).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

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


class PhaseStats(_Frozen):
    """Median and p95 of one phase boundary over the successful calls of one call phase."""

    n: int
    p50: float | None
    p95: float | None


class Numbers(_Frozen):
    """The five numbers (plus first-token p95 for streams). Seconds, and a fraction."""

    cold_start: float | None
    warm_p50: float | None
    warm_p95: float | None
    concurrent_p95: float | None
    error_rate: float
    ttft_p95: float | None = Field(
        default=None,
        description="first-token p95 over warm and concurrent calls together (the old mixed "
        "number, kept for one release: use ttft_warm_p95 and ttft_concurrent_p95)",
    )
    ttft_warm_p95: float | None = None
    ttft_concurrent_p95: float | None = None
    itl_p95: float | None = Field(
        default=None, description="p95 over warm and concurrent calls of each call's mean gap"
    )
    longest_stall: float | None = Field(
        default=None, description="the longest gap between visible deltas of any call"
    )
    tpot_p50: float | None = Field(
        default=None,
        description="median over warm streamed calls of each call's time per output token after "
        "the first: (latency - first visible delta) / (tokens - 1)",
    )
    tpot_p95: float | None = Field(
        default=None, description="p95 of the same per-call time per output token"
    )
    tokens_p50: float | None = Field(
        default=None, description="median output tokens of the warm and concurrent calls"
    )
    tokens_p95: float | None = Field(default=None, description="p95 of the same")


Bounds = tuple[float | None, float | None]


class Check(_Frozen):
    """One number held against its budget. `passed` is None when the number is not gated.

    `decided` is False when the calls made could not tell whether the number is within its
    budget (docs/statistics.md); `passed` is then the --on-undecided policy's, and `by_policy`
    says so. `interval` is the 95 % interval of the number (a side is None where the calls made
    cannot bound it; the whole is None for a single call).
    """

    number: str
    value: float | None
    limit: float | None
    passed: bool | None
    note: str = ""
    interval: Bounds | None = None
    decided: bool = True
    by_policy: bool = False
    n: int | None = Field(default=None, description="calls behind the number")
    meaning: str = Field(
        default="",
        description="what this outcome ruled out, in words, with its error rate for the run's "
        "looks",
    )
    breach: str = Field(
        default="",
        description="what failed it, when that is not its value against the budget (a level at "
        "a rate that broke on its errors, or judged no call); empty: the value said",
    )


class Verdict(_Frozen):
    """PASS or FAIL for a run, no gray zone."""

    passed: bool
    checks: tuple[Check, ...]
    reasons: tuple[str, ...] = ()
    undecided: tuple[str, ...] = Field(
        default=(),
        description="what the calls could not decide and did not fail the run (an undecided "
        "regression), and what is warned of without failing it (a creep of main's runs): said "
        "wherever the verdict is said",
    )

    @property
    def label(self) -> str:
        return "PASS" if self.passed else "FAIL"


class Floor(_Frozen):
    """The gate's own measurement floor, measured against a loopback echo before probing."""

    sequential_p50: float
    concurrent_p95: float
    concurrency: int
    stamp_source: StampSource


class Finding(_Frozen):
    """Something in the samples that explains the numbers, with its evidence."""

    code: str
    title: str
    evidence: str
    hint: str


class NumberDelta(_Frozen):
    """One number of a run against the same number of its baseline run.

    `p_value` is the one-sided test's (None when it could not be run, e.g. one call each);
    `regressed` is True only when the number is worse by more than every given limit and the
    test says the difference is beyond noise.
    """

    number: str
    base: float | None
    head: float | None
    p_value: float | None = None
    regressed: bool = False
    note: str = ""
    interval: Bounds | None = Field(
        default=None,
        description="interval of head / base (the ratio of the two numbers): the outcome's test "
        "inverted, on the same calls, at its one-sided alphas (their levels: interval_levels)",
    )
    decided: bool = True
    outcome: Literal["regressed", "not regressed", "undecided"] | None = None
    by_policy: bool = Field(
        default=False, description="undecided at the cap, and counted as a regression by policy"
    )
    missing: str | None = Field(
        default=None,
        description="why a tested number could not be compared (the base gave no data): it is "
        "undecided then, and the undecided policy decides",
    )
    bound: float | None = Field(
        default=None,
        description="against a history: the upper prediction bound of one run's value (an "
        "unchanged endpoint's next run stays under it but for alpha), the limit not included",
    )
    threshold: float | None = Field(
        default=None,
        description="against a history: the value the head had to exceed to regress (the "
        "bound with the limit on top; with two limits, the higher)",
    )
    same_work: bool = Field(
        default=False,
        description="tested at the same work: `interval` is head / base of each call's latency "
        "over what its answer's length predicts, and the answers' length is tested beside it "
        "(BaselineCheck.parts)",
    )
    interval_levels: tuple[float, float] | None = Field(
        default=None,
        description="the one-sided confidence of each side of `interval`: the decision's own "
        "(regressed when the low side is over the limit, not regressed when the high side is "
        "within it); None: 95 % two-sided",
    )
    calls: tuple[int, int] | None = Field(
        default=None, description="head's and base's calls behind the outcome and its interval"
    )
    cause: str = Field(
        default="", description="what changed, in words: the parts that moved (same work)"
    )
    estimate: float | None = Field(
        default=None,
        description="head / base as the test estimates it (at the same work, the larger of the "
        "latency's ratio at the same work and the answers' length ratio): an undecided "
        "regression whose estimate is over the limit is warned, one within it only shown",
    )
    by_length: bool = Field(
        default=False,
        description="regressed because its answers' length is longer beyond the limit (an "
        "answer's tokens are the wait), while its latency's own test, whose interval `interval` "
        "is, did not call it regressed",
    )

    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.head is None else self.head - self.base

    @property
    def left_undecided(self) -> bool:
        """The calls could not decide it, and it was neither counted as a regression by policy
        nor left because the run had already failed: said beside the verdict."""
        return self.outcome == "undecided" and not self.regressed and "not needed" not in self.note

    @property
    def relative(self) -> float | None:
        if self.base is None or self.head is None or self.base <= 0:
            return None
        return self.head / self.base - 1


class PartDelta(_Frozen):
    """One part of a call's time, or its answer's length, head against base: what changed."""

    part: Literal["length", "first_token", "per_token"]
    unit: str = Field(description="tokens or bytes for the length; s for the times")
    base: float | None = Field(description="base's median")
    head: float | None = Field(description="head's median")
    ratio: float | None = Field(description="head / base: the geometric mean of the ratios")
    interval: Bounds | None = Field(description="of the ratio, 98 % (1 % a side)")
    moved: Literal["longer", "shorter", "slower", "faster", "unchanged", "unclear"]
    n: int = Field(description="calls (or pairs) behind the ratio")
    paired: bool = Field(description="pairs of calls that got the same prompt")
    outcome: Literal["regressed", "not regressed", "undecided"] | None = Field(
        default=None, description="the length against the limit (BaselineCheck.length only)"
    )


class HistoryRun(_Frozen):
    """One earlier run of a history, as the comparison and the trend chart use it."""

    started_at: float
    numbers: Numbers
    calls: int
    failed: int
    commit: str | None = Field(default=None, description="the commit it measured, when known")
    goodput: float | None = Field(
        default=None,
        description="the rate its goodput search held, requests a second (None: it ran none)",
    )


class History(_Frozen):
    """The earlier runs a run was held against (`--history DIR`), oldest first.

    `judged`: "prediction" when the head was held against the spread of `runs` (3 or more);
    "newest" when there were fewer and the newest one served as a single baseline; "none"
    when there was no usable run.
    """

    judged: Literal["prediction", "newest", "none"]
    runs: tuple[HistoryRun, ...] = ()
    size: int = Field(description="the most runs used (--history-size)")
    other_settings: int = Field(
        default=0, description="runs of this target skipped: measured with other settings"
    )
    unreadable: tuple[str, ...] = Field(
        default=(), description="files of the folder skipped: not a readable result file"
    )
    alpha: float | None = Field(
        default=None, description="one-sided error of each number's prediction bound"
    )


class BaselineCheck(_Frozen):
    """How a run compared with its base: an earlier run of the same target (`--baseline`), a
    base endpoint measured beside it in this run (`--baseline-url`, kind "side-by-side"), or the
    earlier runs of a history folder (`--history`, then `history` says which).

    status: "compared" (deltas hold every number), "missing" (no baseline file was found) or
    "no-match" (the file holds no run of this target). The last two never pass silently: the
    reports say so.
    """

    status: Literal["compared", "missing", "no-match"]
    kind: Literal["earlier-run", "side-by-side"] = Field(
        default="earlier-run",
        description="earlier-run: a result file's run; side-by-side: the base endpoint "
        "measured in this run, its calls interleaved with the head's (RunResult.base_samples)",
    )
    source: str = Field(
        description="where the baseline came from, as the user gave it (side-by-side: the base "
        "URL, redacted)"
    )
    test: str = ""
    max_relative: float | None = None
    max_absolute: float | None = None
    deltas: tuple[NumberDelta, ...] = ()
    message: str = ""
    history: History | None = None
    head_origin: str | None = Field(
        default=None,
        description="the origin this run measured, when the runs it was held against measured "
        "another (a pull request's preview against main's runs)",
    )
    base_origins: tuple[str, ...] = Field(
        default=(),
        description="the origins the baseline's or the history's runs measured, where not this "
        "run's: the same request (path, method, body, settings) at another host",
    )
    parts: tuple[PartDelta, ...] = Field(
        default=(),
        description="what changed: the answers' length, the first token and the time per token, "
        "head against base (runs whose answers have a length)",
    )
    length: PartDelta | None = Field(
        default=None,
        description="the answers' length tested against the limit (a whole-call number "
        "regresses on longer answers too): its ratio and interval at the decision's levels",
    )

    @property
    def regressions(self) -> tuple[NumberDelta, ...]:
        return tuple(d for d in self.deltas if d.regressed)

    @property
    def not_compared(self) -> str | None:
        """ "warm p95, for the base gave no data: ...; concurrent p95, for ...": the tested
        numbers the base had no data for, each with why; None when every one was compared."""
        reasons: dict[str, list[str]] = {}
        for delta in self.deltas:
            if delta.missing:
                reasons.setdefault(delta.missing, []).append(delta.number.replace("_", " "))
        if not reasons:
            return None

        def listed(names: list[str]) -> str:
            return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

        return "; ".join(f"{listed(names)}, for {why}" for why, names in reasons.items())

    @property
    def undecided(self) -> tuple[NumberDelta, ...]:
        """The numbers the calls left undecided; those with nothing to compare with are said
        apart (`not_compared`)."""
        return tuple(d for d in self.deltas if d.left_undecided and not d.missing)


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
