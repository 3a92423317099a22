"""What a demo endpoint does: its `EndpointSpec`, the `Fault`s it injects, the records it keeps.

Timeline of one answer (seconds, relative to the request's last byte):
    cold start wait (first request, or after `cold_after` idle)
    -> queue wait for a `parallelism` slot (FIFO)
    -> `latency` (x lognormal jitter): service time before the response starts
    -> streams: headers and the role/start events, `first_token_delay`, then one content delta
       every `token_interval`, then the finish, usage and end-marker events;
       non-streams: the whole document at once after `first_token_delay + tokens * token_interval`
       (the generation a streamed answer would have shown).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

StreamFormat = Literal["openai-chat", "openai-responses", "anthropic", "raw"]
FaultKind = Literal[
    "status",
    "reset",
    "cut",
    "hang",
    "close_before_response",
    "slow_drip",
    "malformed_sse",
    "invalid_utf8",
    "redirect",
    "error_event",
    "bad_gzip",
]

PATHS: dict[str, str] = {
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "raw": "/",
}
REDIRECT_TARGET = "/elsewhere"  # never redirected itself, so following a redirect terminates
INVALID_UTF8 = b"\xff\xfe\xfd"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Fault(_Frozen):
    """One injected misbehaviour, applied to request numbers n (from 0) where n % every == offset.

    - status: answer `status` with `retry_after` as Retry-After and `body` served raw (default:
      an error document in the format's own shape).
    - reset: RST (SO_LINGER 0) before any response byte. cut: close mid-body (FIN, body short).
    - hang: read the request and never answer, until the server stops.
    - close_before_response: close at once without answering (a stale kept-alive connection).
    - slow_drip: 200 headers, then one filler byte every 50 ms until 60 s, then close.
    - malformed_sse: a `data:` line that is not JSON mid-stream (a truncated document otherwise).
    - invalid_utf8: bytes that are not UTF-8 inside a content delta (or the document).
    - redirect: 302 to /elsewhere. error_event: a 200 stream with the format's error event
      mid-stream and no end marker (a 200 error document otherwise).
    - bad_gzip: a document labelled Content-Encoding: gzip that is not gzip (streams: as usual).

    hang and close_before_response act as soon as the request is read; every other fault acts
    when the answer would start: after the cold start, the queue and the service latency.
    """

    kind: FaultKind
    every: int = Field(default=1, ge=1)
    offset: int = Field(default=0, ge=0)
    status: int = Field(default=500, ge=300, le=599)
    retry_after: str | None = None
    body: str | None = None

    @model_validator(mode="after")
    def _offset_below_every(self) -> Self:
        if self.offset >= self.every:
            raise ValueError(f"offset {self.offset} never matches with every={self.every}")
        return self

    def applies_to(self, n: int) -> bool:
        return n % self.every == self.offset


class EndpointSpec(_Frozen):
    """How one demo endpoint behaves. Durations in seconds; see the module docstring's timeline."""

    name: str = "demo"
    latency: float = Field(default=0.05, ge=0)
    jitter: float = Field(default=0.0, ge=0)  # lognormal sigma applied to latency; seeded
    seed: int = 1
    cold_start: float = Field(default=0.0, ge=0)
    cold_after: float | None = Field(default=None, gt=0)
    # With TLS: the server waits this long on each new connection before its TLS handshake (a
    # far-away or overloaded TLS terminator), so connection setup costs the client that much.
    handshake_delay: float = Field(default=0.0, ge=0)
    parallelism: int | None = Field(default=None, ge=1)
    stream_format: StreamFormat = "openai-chat"
    tokens: int = Field(default=20, ge=0, le=100_000)
    token_interval: float = Field(default=0.005, ge=0)
    first_token_delay: float = Field(default=0.0, ge=0)
    buffered: bool = False
    hold_headers: bool = False
    usage_chunk: bool = True  # openai-chat usage chunk; usage in response.completed/message_delta
    done_marker: bool = True  # the format's end marker: [DONE], response.completed, message_stop
    keep_alive: bool = True
    close_after_stream: bool = False
    http10: bool = False
    gzip: bool = False  # non-streamed documents go out gzip-compressed (Content-Encoding: gzip)
    faults: tuple[Fault, ...] = ()

    @property
    def path(self) -> str:
        return PATHS[self.stream_format]


@dataclass
class RequestRecord:
    """Server-side truth for one request; times are wall clock `time.time_ns()`.

    `first_byte_sent_ns` is the write of the first response byte (the headers);
    `first_token_sent_ns` the write holding the first content (for a non-stream, the document);
    `done_ns` the last write or the close. `queued` is seconds waited for a parallelism slot.
    `status` is 0 when no response was sent (reset, hang, close before response).
    """

    index: int
    method: str
    path: str
    received_ns: int
    first_byte_sent_ns: int | None = None
    first_token_sent_ns: int | None = None
    done_ns: int | None = None
    queued: float = 0.0
    stream: bool = False
    status: int = 0
    connection: int = 0  # which accepted connection (1, 2, ...) carried it
    body: bytes = field(default=b"", repr=False)  # what the client sent (bounded by MAX_BODY)
