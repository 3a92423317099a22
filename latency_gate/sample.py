"""One call as the probe saw it: `Sample`, its timings and token gaps, why it failed and where
its stamps came from.

Every duration is in seconds (floats); every offset inside a call is measured from that call's
`t0`, the moment its first byte went to the network (or its connection attempt began, for a
call that connected). `latency_gate.models` re-exports every name here: the result models are
built on these.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CallPhase", "CallTimings", "ErrorKind", "Frozen", "Sample", "StampSource", "TokenGaps"]


class CallPhase(StrEnum):
    """Which part of a run a call belongs to."""

    COLD = "cold"
    WARM = "warm"
    CONCURRENT = "concurrent"
    RATE = "rate"  # arriving at a rate, open-loop (--rate, --goodput): kept apart from the run's


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


class Frozen(BaseModel):
    # defer_build: each model's validator is built when first used, not at import; the first
    # request then goes out ~20 ms sooner (docs/benchmarks.md, "Start-up").
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class CallTimings(Frozen):
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


class TokenGaps(Frozen):
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


# A token count an answer's usage reported: never negative, and strict, so that a file's `true`
# is not read as 1 token (JSON's true is no count).
UsageCount = Annotated[int | None, Field(ge=0, strict=True)]


class Sample(Frozen):
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
    # strict: a file's `true` is not read as 1 token (JSON's true is no count).
    tokens: int | None = Field(default=None, strict=True)
    tokens_source: Literal["usage", "deltas"] | None = None
    usage_ignored: UsageCount = Field(
        default=None,
        description="the answer's usage count when it disagreed with the stream (fewer tokens "
        "than the deltas seen, or more than the bytes received) and was not trusted",
    )
    input_tokens: UsageCount = Field(
        default=None,
        description="the prompt's tokens as the answer's usage reported them (prompt_tokens, "
        "input_tokens); None: not reported",
    )
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
    due: float | None = Field(
        default=None,
        description="a call at a rate: seconds from its level's start to when it was due",
    )
    send_lag: float | None = Field(
        default=None,
        description="a call at a rate: seconds from when it was due to its t0 (the client's "
        "own lag); its latency from when it was due is send_lag + latency. A call of a burst: "
        "seconds from the burst's start to its t0",
    )
