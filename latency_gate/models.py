"""Result models: what one run measured, as written to the JSON result file.

`RunResult` is the schema-versioned document a later run can load as a baseline. Every duration
is in seconds (floats); every offset inside a call is measured from that call's `t0`, the moment
its first byte went to the network (or its connection attempt began, for a call that connected).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION: Literal[1] = 1


class CallPhase(StrEnum):
    """Which part of a run a call belongs to."""

    COLD = "cold"
    WARM = "warm"
    CONCURRENT = "concurrent"


class ErrorKind(StrEnum):
    """Why a call failed. Every failed call has exactly one."""

    HTTP_4XX = "http_4xx"
    HTTP_429 = "http_429"
    HTTP_5XX = "http_5xx"
    REDIRECT = "redirect"
    CONNECT_TIMEOUT = "connect_timeout"
    READ_TIMEOUT = "read_timeout"
    WRITE_TIMEOUT = "write_timeout"
    TOTAL_TIMEOUT = "total_timeout"
    CONNECTION_REFUSED = "connection_refused"
    CONNECTION_RESET = "connection_reset"
    CONNECTION_CLOSED = "connection_closed"
    DNS = "dns"
    TLS = "tls"
    PROTOCOL = "protocol"
    STREAM_ERROR = "stream_error"
    STREAM_CUT = "stream_cut"
    EMPTY_ANSWER = "empty_answer"
    MALFORMED = "malformed"
    INTERRUPTED = "interrupted"
    OTHER = "other"


class StampSource(StrEnum):
    """Where a call's timestamps came from, best first (docs/design.md, "Clock")."""

    KERNEL = "kernel"  # SO_TIMESTAMPNS receive stamps on the raw socket
    READ_RETURN = "read-return"  # time.time_ns() when the socket read returned


class _Frozen(BaseModel):
    # defer_build: each model's validator is built when first used, not at import; the first
    # request then goes out ~20 ms sooner (docs/benchmarks.md, "Start-up").
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class CallTimings(_Frozen):
    """Phase boundaries of one call, seconds from the call's t0; None when the phase did not happen.

    `dns`, `connect` and `tls` are durations (only on a call that opened a connection);
    the rest are offsets from t0, in the order the bytes arrive.
    """

    dns: float | None = None
    connect: float | None = None
    tls: float | None = None
    request_sent: float | None = None
    headers: float | None = None
    first_byte: float | None = None
    first_event: float | None = Field(
        default=None,
        description="the first delta a user could see: reasoning or answer text (streams only)",
    )
    first_token: float | None = Field(default=None, description="the first answer delta")
    second_token: float | None = Field(
        default=None, description="the second visible delta (reasoning or answer), streams only"
    )
    last_token: float | None = None
    last_byte: float | None = None


class TokenGaps(_Frozen):
    """Gaps between the visible deltas (reasoning or answer) of one streamed call, in seconds.

    Deltas that came in the same socket read are 0 apart. `count` and `max` cover every gap;
    `p50` and `p95` the first `kept` of them (a capped list, so memory stays bounded).
    """

    count: int = Field(ge=1)
    kept: int = Field(ge=1)
    p50: float
    p95: float
    max: float
    max_at: float = Field(description="seconds from t0 to the end of the longest gap")
    mean: float = Field(description="(last - first visible delta) / gaps: aiperf's per-call ITL")


class Sample(_Frozen):
    """One HTTP call as the probe saw it."""

    phase: CallPhase
    index: int = Field(ge=0, description="position within its phase, from 0")
    started_at: float = Field(description="wall-clock start, seconds since the epoch")
    ok: bool
    latency: float | None = Field(
        default=None, description="seconds from t0 to the last byte of the answer"
    )
    status: int | None = None
    error: ErrorKind | None = None
    error_detail: str | None = Field(
        default=None, description="short, redacted description; untrusted text"
    )
    retry_after: str | None = None
    timings: CallTimings = CallTimings()
    bytes_received: int = 0
    tokens: int | None = None
    tokens_source: Literal["usage", "deltas"] | None = None
    token_events: int = Field(default=0, description="content deltas seen in a stream")
    token_reads: int = Field(
        default=0, description="socket reads that delivered at least one content delta"
    )
    reasoning_events: int = Field(default=0, description="reasoning (thinking) deltas seen")
    token_gaps: TokenGaps | None = None
    output_tokens_per_s: float | None = Field(
        default=None,
        description="tokens after the first / seconds from first to last visible delta",
    )
    http_version: str | None = Field(
        default=None, description="the HTTP version of the answer, as HTTP/1.1 or HTTP/2"
    )
    prompt_varied: bool = Field(
        default=False, description="this call's prompt was made unique (--vary-prompt)"
    )
    new_connection: bool = False
    retries: int = Field(
        default=0, description="retries on a fresh connection after a stale pooled one"
    )
    stamp_source: StampSource = StampSource.READ_RETURN


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


class Verdict(_Frozen):
    """PASS or FAIL for a run, no gray zone."""

    passed: bool
    checks: tuple[Check, ...]
    reasons: tuple[str, ...] = ()
    undecided: tuple[str, ...] = Field(
        default=(),
        description="what the calls could not decide and did not fail the run (an undecided "
        "regression): said wherever the verdict is said",
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
        default=None, description="95 % interval of head / base (the ratio of the two numbers)"
    )
    decided: bool = True
    outcome: Literal["regressed", "not regressed", "undecided"] | None = None
    by_policy: bool = Field(
        default=False, description="undecided at the cap, and counted as a regression by policy"
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

    @property
    def delta(self) -> float | None:
        return None if self.base is None or self.head is None else self.head - self.base

    @property
    def relative(self) -> float | None:
        if self.base is None or self.head is None or self.base <= 0:
            return None
        return self.head / self.base - 1


class HistoryRun(_Frozen):
    """One earlier run of a history, as the comparison and the trend chart use it."""

    started_at: float
    numbers: Numbers
    calls: int
    failed: int


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

    @property
    def regressions(self) -> tuple[NumberDelta, ...]:
        return tuple(d for d in self.deltas if d.regressed)


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

    @property
    def display_name(self) -> str:
        """The target's name, with the run's label when it has one: "paid (eu-west)"."""
        return self.target if self.label is None else f"{self.target} ({self.label})"
