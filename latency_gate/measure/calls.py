"""One timed call: its phase timings from the socket stamps, and its failure named once.

Every call gets its own `CallStamps` in a context variable, filled at the socket by the network
backend of latency_gate.measure.transport (the kernel's receive timestamp where it can); this
module only reads them (docs/design.md, "The clock"). A transport failure is named by
failures.py, from httpx's exception tree, and any secret of the target a server echoes back is
scrubbed from the detail here.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Literal

import httpx

from latency_gate.config import Target, redact_url
from latency_gate.config.secrets import scrub_secrets, url_userinfo
from latency_gate.measure import transport
from latency_gate.measure.culprit import name_the_part
from latency_gate.measure.failures import classify, hop_failure, proxy_refusal
from latency_gate.measure.streams import StreamParser
from latency_gate.measure.token_timing import GapRecorder
from latency_gate.models import CallPhase, CallTimings, ErrorKind, Sample, TokenGaps

# An error body is read for its first bytes only, to name the failure.
_ERROR_BODY_LIMIT = 2048
_DETAIL_LIMIT = 200


async def call(
    client: httpx.AsyncClient,
    target: Target,
    phase: CallPhase,
    index: int,
    *,
    body: bytes | None = None,
    due_ns: int | None = None,
) -> Sample:
    """One timed call. A stale kept-alive connection is retried once on a new connection.

    The whole call, a retry included, lives within one `target.timeout`. `body` replaces the
    target's body for this call (a varied prompt). `due_ns` (wall clock, as the stamps): when a
    call at a rate was due; its sample then says how late it went out (`send_lag`).
    """
    started_at = time.time()
    deadline = asyncio.get_running_loop().time() + target.timeout
    stamps = transport.begin_call()
    first = await _attempt(client, target, stamps, deadline, body)
    if not _stale_connection_failure(first, stamps):
        sample = first.sample(phase, index, started_at, stamps, stamps, retries=0, target=target)
        return _lagged(sample, stamps, first, due_ns)
    # The server closed a kept-alive connection while it was idle (llama.cpp does this after
    # every streamed answer) and failed before any byte of the answer: a browser retries once on
    # a new connection, and the user waits for both attempts, so t0 stays the first attempt's.
    retry_stamps = transport.begin_call()
    second = await _attempt(client, target, retry_stamps, deadline, body)
    sample = second.sample(phase, index, started_at, stamps, retry_stamps, retries=1, target=target)
    return _lagged(sample, stamps, first, due_ns)


def _lagged(
    sample: Sample, stamps: transport.CallStamps, attempt: _Attempt, due_ns: int | None
) -> Sample:
    """A call at a rate with its send lag: its t0 less when it was due (never below 0)."""
    if due_ns is None:
        return sample
    t0 = stamps.start_ns or attempt.began_ns
    return sample.model_copy(update={"send_lag": max(t0 - due_ns, 0) / 1e9})


def _stale_connection_failure(attempt: _Attempt, stamps: transport.CallStamps) -> bool:
    """A failure before any byte of the answer on a connection that had answered before.

    A connection opened ahead of the burst that never answered anything is not stale: a server
    that drops such a request has failed the call, and it counts in the error rate.
    """
    return (
        attempt.error in {ErrorKind.CONNECTION_CLOSED, ErrorKind.CONNECTION_RESET}
        and attempt.status is None
        and stamps.bytes_read == 0
        and not stamps.new_connection
        and stamps.reused_answered
    )


@dataclass
class _Attempt:
    status: int | None = None
    error: ErrorKind | None = None
    detail: str | None = None
    retry_after: str | None = None
    headers_ns: int | None = None
    first_byte_ns: int | None = None
    first_event_ns: int | None = None
    first_token_ns: int | None = None
    last_token_ns: int | None = None
    visible: GapRecorder = field(default_factory=GapRecorder)
    http_version: str | None = None
    reasoning_events: int = 0
    last_byte_ns: int | None = None
    bytes_received: int = 0
    tokens: int | None = None
    tokens_source: Literal["usage", "deltas"] | None = None
    usage_ignored: int | None = None
    input_tokens: int | None = None
    token_events: int = 0
    token_reads: int = 0
    began_ns: int = field(default_factory=transport.now_ns)
    from_proxy: bool = False  # the answer was the proxy's own (a 407, a refused CONNECT)

    def sample(
        self,
        phase: CallPhase,
        index: int,
        started_at: float,
        first_stamps: transport.CallStamps,
        stamps: transport.CallStamps,
        *,
        retries: int,
        target: Target,
    ) -> Sample:
        t0 = first_stamps.start_ns or self.began_ns

        def since(ns: int | None) -> float | None:
            return None if ns is None else max(ns - t0, 0) / 1e9

        def span(start: int | None, end: int | None) -> float | None:
            return None if start is None or end is None else max(end - start, 0) / 1e9

        ok = self.error is None
        timings = CallTimings(
            dns=span(stamps.dns_start_ns, stamps.dns_end_ns),
            connect=span(stamps.connect_start_ns, stamps.connect_end_ns),
            tls=span(stamps.tls_start_ns, stamps.tls_end_ns),
            request_sent=since(stamps.last_write_ns),
            headers=since(self.headers_ns),
            first_byte=since(self.first_byte_ns),
            first_event=since(self.first_event_ns),
            first_token=since(self._first_token_ns()),
            second_token=since(self.visible.second_ns),
            last_token=since(self.last_token_ns),
            last_byte=since(self.last_byte_ns),
        )
        return Sample(
            phase=phase,
            index=index,
            started_at=started_at,
            ok=ok,
            latency=since(self.last_byte_ns) if ok else None,
            status=self.status,
            error=self.error,
            error_detail=_scrub(
                name_the_part(
                    self.error,
                    self.detail,
                    target=target,
                    status=self.status,
                    from_proxy=self.from_proxy,
                ),
                target,
            ),
            retry_after=_scrub(self.retry_after, target),
            timings=timings,
            bytes_received=self.bytes_received,
            tokens=self.tokens,
            tokens_source=self.tokens_source,
            usage_ignored=self.usage_ignored,
            input_tokens=self.input_tokens,
            token_events=self.token_events,
            token_reads=self.token_reads,
            reasoning_events=self.reasoning_events,
            http_version=self.http_version,
            token_gaps=self._gaps(t0),
            output_tokens_per_s=self._rate(),
            new_connection=stamps.new_connection,
            retries=retries,
            stamp_source=stamps.source,
        )

    def _first_token_ns(self) -> int | None:
        """The first answer delta; for an answer that held only reasoning (a reasoning model
        cut by its token limit, or whose thinking was all redacted), the first reasoning delta:
        that answer is what the user saw arrive, so its first token is there."""
        if self.first_token_ns is not None or self.error is not None or self.token_events:
            return self.first_token_ns
        return self.first_event_ns if self.reasoning_events else None

    def _gaps(self, t0: int) -> TokenGaps | None:
        summary = self.visible.summary()
        if summary is None:
            return None
        return TokenGaps(
            count=summary.count,
            kept=summary.kept,
            p50=summary.p50_ns / 1e9,
            p95=summary.p95_ns / 1e9,
            max=summary.max_ns / 1e9,
            max_at=max(summary.max_end_ns - t0, 0) / 1e9,
            mean=summary.mean_ns / 1e9,
        )

    def _rate(self) -> float | None:
        """Output tokens/s after the first: the usage count when given, else visible deltas."""
        seen = self.visible
        if seen.first_ns is None or seen.last_ns is None or seen.last_ns <= seen.first_ns:
            return None
        tokens = self.tokens if self.tokens_source == "usage" and self.tokens else seen.deltas
        return (tokens - 1) / ((seen.last_ns - seen.first_ns) / 1e9) if tokens > 1 else None


async def _attempt(
    client: httpx.AsyncClient,
    target: Target,
    stamps: transport.CallStamps,
    deadline: float,
    body: bytes | None = None,
) -> _Attempt:
    attempt = _Attempt()
    try:
        async with asyncio.timeout_at(deadline):
            await _exchange(client, target, stamps, attempt, body)
    except TimeoutError:
        attempt.error, attempt.detail = _timed_out(attempt, stamps, target.timeout)
    except httpx.ProxyError as exc:
        # The proxy refused to open the tunnel (CONNECT): its answer, not the endpoint's.
        attempt.from_proxy = True
        attempt.error, attempt.detail = proxy_refusal(str(exc))
    except httpx.HTTPError as exc:
        attempt.error, attempt.detail = classify(exc)
        if (hop := hop_failure(exc, target)) is not None and attempt.error in _NOT_REACHED:
            attempt.detail = f"{hop}: {attempt.detail}"
    return attempt


# Failures of a call that never reached whom it was sent to.
_NOT_REACHED = frozenset(
    {
        ErrorKind.CONNECTION_REFUSED,
        ErrorKind.CONNECT_TIMEOUT,
        ErrorKind.DNS,
        ErrorKind.TLS,
        ErrorKind.OTHER,
    }
)


def _timed_out(
    attempt: _Attempt, stamps: transport.CallStamps, timeout: float
) -> tuple[ErrorKind, str]:
    """Name a call the --timeout ended by where it stood, as httpx's own timeouts would.

    The per-call deadline and httpx's connect and read timeouts are the same length, and the
    per-call one starts first, so it is the one that fires: without this a server that never
    accepts and one that accepts and never answers would both read "total timeout".
    """
    if stamps.connect_start_ns is not None and stamps.connect_end_ns is None:
        return ErrorKind.CONNECT_TIMEOUT, f"timed out while connecting ({timeout:g} s)"
    if stamps.tls_start_ns is not None and stamps.tls_end_ns is None:
        return ErrorKind.CONNECT_TIMEOUT, f"timed out in the TLS handshake ({timeout:g} s)"
    if attempt.status is None and stamps.bytes_read == 0:
        return ErrorKind.READ_TIMEOUT, f"no answer within the {timeout:g} s timeout"
    return ErrorKind.TOTAL_TIMEOUT, f"no complete answer within the {timeout:g} s timeout"


async def _exchange(
    client: httpx.AsyncClient,
    target: Target,
    stamps: transport.CallStamps,
    attempt: _Attempt,
    body: bytes | None = None,
) -> None:
    async with client.stream(
        target.method,
        target.url,
        headers=target.request_headers(),
        content=target.request_body() if body is None else body,
    ) as response:
        attempt.status = response.status_code
        attempt.http_version = response.http_version
        attempt.headers_ns = stamps.last_read_ns or transport.now_ns()
        if response.status_code >= 300:
            await _read_failure(response, attempt, stamps, _proxy_with_credentials(target))
            return
        parser = StreamParser(target.format, content_type=response.headers.get("content-type"))
        complete = True
        try:
            async for chunk in response.aiter_bytes():
                read_ns = stamps.last_read_ns or transport.now_ns()
                if attempt.first_byte_ns is None and chunk:
                    attempt.first_byte_ns = read_ns
                attempt.bytes_received += len(chunk)
                fed = parser.feed(chunk)
                if fed.first_event:
                    attempt.first_event_ns = read_ns
                if fed.visible and parser.streaming:
                    attempt.visible.add(read_ns, fed.visible)
                    attempt.reasoning_events += fed.reasoning
                if fed.first_token:
                    attempt.first_token_ns = read_ns
                if fed.tokens:
                    attempt.last_token_ns = read_ns
                    attempt.token_events += fed.tokens
                    attempt.token_reads += 1
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            # The answer had begun: a connection that ends now has cut the body short.
            complete = False
            attempt.detail = f"the connection closed in the middle of the body: {exc}"
        except httpx.DecodingError as exc:
            attempt.error, attempt.detail = ErrorKind.MALFORMED, f"undecodable body: {exc}"
            return
        attempt.last_byte_ns = stamps.last_read_ns or transport.now_ns()
        outcome = parser.finish(body_complete=complete)
        if not complete:
            attempt.error = ErrorKind.STREAM_CUT
            return
        attempt.tokens = outcome.tokens
        attempt.tokens_source = outcome.tokens_source
        attempt.usage_ignored = outcome.usage_ignored
        attempt.input_tokens = outcome.input_tokens
        if not outcome.ok:
            attempt.error = outcome.error or ErrorKind.OTHER
            attempt.detail = outcome.detail


def _proxy_with_credentials(target: Target) -> bool:
    """Whether the calls go through a proxy that is given credentials."""
    return target.proxy is not None and url_userinfo(target.proxy) is not None


async def _read_failure(
    response: httpx.Response,
    attempt: _Attempt,
    stamps: transport.CallStamps,
    proxy_credentials: bool = False,
) -> None:
    status = response.status_code
    if status < 400:
        attempt.error = ErrorKind.REDIRECT
        location = response.headers.get("location", "")
        attempt.detail = (
            f"HTTP {status} redirect to {redact_url(location) if location else 'nowhere'}"
            " not followed (use --follow-redirects)"
        )
        return
    attempt.error = (
        ErrorKind.HTTP_429
        if status == 429
        else ErrorKind.HTTP_5XX
        if status >= 500
        else ErrorKind.HTTP_4XX
    )
    attempt.retry_after = response.headers.get("retry-after")
    # Only a proxy asks for proxy credentials: such an answer never came from the endpoint.
    # tinyproxy answers wrong proxy credentials with a 401 and WWW-Authenticate instead; an
    # answer a proxy relays carries its Via header, and that one carries none.
    attempt.from_proxy = (
        status == 407
        or "proxy-authenticate" in response.headers
        or (status == 401 and proxy_credentials and "via" not in response.headers)
    )
    head = b""
    with contextlib.suppress(httpx.HTTPError, TimeoutError):
        async for chunk in response.aiter_bytes():
            attempt.bytes_received += len(chunk)
            if len(head) < _ERROR_BODY_LIMIT:
                head += chunk[: _ERROR_BODY_LIMIT - len(head)]
            else:
                break
    attempt.last_byte_ns = stamps.last_read_ns
    text = " ".join(head.decode("utf-8", "replace").split())
    attempt.detail = f"HTTP {status}" + (f": {text}" if text else "")


def _scrub(detail: str | None, target: Target) -> str | None:
    """Keep a detail short and free of the target's secrets in every form a server may echo
    them back (as sent, base64 as in Basic auth, percent-encoded)."""
    if detail is None:
        return None
    detail = scrub_secrets(detail, target.secret_forms())
    if len(detail) > _DETAIL_LIMIT:
        detail = detail[: _DETAIL_LIMIT - 1] + "…"
    return detail
