"""The async httpx engine: cold, warm and concurrent calls, each with its phase timings.

How it stamps time is decided in docs/design.md ("Clock"): every call gets its own `CallStamps`
in a context variable, filled by latency_gate.clock's network backend at the socket (the kernel's
receive timestamp where it can); this module only reads them. Concurrent calls each get a small
client of their own (one connection each), opened before the burst, because one big pool costs
12-14 ms of CPU per request and stamps late.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

import httpcore
import httpx

from latency_gate import __version__, clock, stats
from latency_gate.budget import evaluate
from latency_gate.config import Target, redact_url
from latency_gate.echo import EchoServer
from latency_gate.findings import find
from latency_gate.models import (
    CallPhase,
    CallTimings,
    ErrorKind,
    Floor,
    RunResult,
    Sample,
    StampSource,
)
from latency_gate.streams import StreamParser

Stage = Literal["floor", "idle", "cold", "warm", "concurrent", "done"]

# An error body is read for its first bytes only, to name the failure.
_ERROR_BODY_LIMIT = 2048
_DETAIL_LIMIT = 200


@dataclass(frozen=True)
class Progress:
    """Where a run is, for a progress line. `done` of `total` calls in `stage`."""

    stage: Stage
    done: int = 0
    total: int = 0
    seconds: float = 0.0


ProgressCallback = Callable[[Progress], None]


def _ignore(_: Progress) -> None:
    return None


@dataclass
class _Run:
    target: Target
    progress: ProgressCallback
    kernel_stamps: bool
    samples: list[Sample] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def ssl_context_for(target: Target) -> ssl.SSLContext:
    """The TLS settings the target asked for: default trust, a CA bundle, or none (insecure)."""
    if target.insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    if target.ca_bundle is not None:
        return clock.make_ssl_context(target.ca_bundle)
    if urlsplit(target.url).scheme == "http" and not target.follow_redirects:
        # Never used for plain http; loading the CA bundle would cost ~40 ms of start-up.
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return clock.make_ssl_context(True)


async def probe(
    target: Target,
    *,
    progress: ProgressCallback | None = None,
    measure_floor: bool = True,
    kernel_stamps: bool = True,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> RunResult:
    """Probe one target: floor, idle wait, cold call, warm calls, concurrent burst; then numbers.

    Never raises for endpoint trouble: every failure is a sample with its ErrorKind. When the
    task running this is cancelled (SIGINT, SIGTERM), the calls finished so far are returned in a
    result marked interrupted.
    """
    run = _Run(target=target, progress=progress or _ignore, kernel_stamps=kernel_stamps)
    started = time.time()
    floor: Floor | None = None
    interrupted = False
    try:
        if measure_floor:
            run.progress(Progress("floor"))
            floor = await measure_floor_against_echo(
                concurrency=min(target.concurrency, 10), kernel_stamps=kernel_stamps
            )
        await _probe_phases(run, sleep)
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()
        interrupted = True
        run.warnings.append("the run was interrupted; the numbers cover the calls finished")
    run.progress(Progress("done", len(run.samples), len(run.samples)))
    return build_result(
        target,
        run.samples,
        started_at=started,
        finished_at=time.time(),
        floor=floor,
        interrupted=interrupted,
        warnings=run.warnings,
        stamp_source=_overall_source(run.samples, kernel_stamps),
    )


def build_result(
    target: Target,
    samples: Sequence[Sample],
    *,
    started_at: float,
    finished_at: float,
    floor: Floor | None = None,
    interrupted: bool = False,
    warnings: Sequence[str] = (),
    stamp_source: StampSource = StampSource.READ_RETURN,
) -> RunResult:
    """Numbers, phase statistics and verdict from samples: the pure end of a run."""
    numbers = stats.numbers(samples)
    successful = sum(s.ok for s in samples)
    verdict = evaluate(numbers, target.budget, successful_calls=successful)
    if interrupted:
        verdict = verdict.model_copy(
            update={"passed": False, "reasons": (*verdict.reasons, "the run was interrupted")}
        )
    all_warnings = list(warnings)
    if target.insecure:
        all_warnings.append("TLS certificate checks were turned off (--insecure)")
    return RunResult(
        findings=find(samples, numbers, streaming=target.stream),
        tool_version=__version__,
        target=target.name,
        config=target.redacted(),
        started_at=started_at,
        finished_at=finished_at,
        stamp_source=stamp_source,
        floor=floor,
        samples=tuple(samples),
        numbers=numbers,
        phases=stats.phase_stats(samples),
        excluded_from_latency=len(samples) - successful,
        verdict=verdict,
        interrupted=interrupted,
        warnings=tuple(all_warnings),
    )


def _overall_source(samples: Sequence[Sample], kernel_stamps: bool) -> StampSource:
    sources = {s.stamp_source for s in samples if s.ok}
    if sources == {StampSource.KERNEL}:
        return StampSource.KERNEL
    if not sources and kernel_stamps:
        return clock.StampingBackend(kernel_stamps=True).source
    return StampSource.READ_RETURN


async def _probe_phases(run: _Run, sleep: Callable[[float], Awaitable[None]]) -> None:
    target = run.target
    if target.idle > 0:
        run.progress(Progress("idle", 0, 1, target.idle))
        await sleep(target.idle)
    context = ssl_context_for(target)

    run.progress(Progress("cold", 0, 1))
    async with _client(target, context, run.kernel_stamps) as (client, _):
        run.samples.append(await call(client, target, CallPhase.COLD, 0))
        run.progress(Progress("cold", 1, 1))
        # Warm calls reuse the cold call's client: its connection is the one kept alive.
        for index in range(target.warm_calls):
            run.progress(Progress("warm", index, target.warm_calls))
            run.samples.append(await call(client, target, CallPhase.WARM, index))
        run.progress(Progress("warm", target.warm_calls, target.warm_calls))

    run.progress(Progress("concurrent", 0, target.concurrency))
    run.samples += await burst(target, context, run.kernel_stamps)
    run.progress(Progress("concurrent", target.concurrency, target.concurrency))


@contextlib.asynccontextmanager
async def _client(
    target: Target, context: ssl.SSLContext, kernel_stamps: bool
) -> AsyncIterator[tuple[httpx.AsyncClient, clock.StampingBackend]]:
    backend = clock.StampingBackend(kernel_stamps=kernel_stamps)
    transport = clock.build_transport(backend, verify=context, max_connections=1)
    timeout = httpx.Timeout(target.timeout, connect=min(target.timeout, 10.0))
    async with httpx.AsyncClient(
        transport=transport,
        timeout=timeout,
        follow_redirects=target.follow_redirects,
        trust_env=False,
    ) as client:
        try:
            yield client, backend
        finally:
            await backend.aclose()


async def burst(target: Target, context: ssl.SSLContext, kernel_stamps: bool) -> list[Sample]:
    """C calls at once, one small client each; connections opened first unless asked not to."""
    backend = clock.StampingBackend(kernel_stamps=kernel_stamps)
    timeout = httpx.Timeout(target.timeout, connect=min(target.timeout, 10.0))
    clients = [
        httpx.AsyncClient(
            transport=clock.build_transport(backend, verify=context, max_connections=1),
            timeout=timeout,
            follow_redirects=target.follow_redirects,
            trust_env=False,
        )
        for _ in range(target.concurrency)
    ]
    try:
        if not target.fresh_connections:
            parts = urlsplit(target.url)
            https = parts.scheme == "https"
            with contextlib.suppress(OSError, httpcore.NetworkError, httpcore.TimeoutException):
                # A failed pre-connect is not a measurement: the calls will meet the same
                # trouble on their own connections and report it.
                await backend.preconnect(
                    parts.hostname or "",
                    parts.port or (443 if https else 80),
                    target.concurrency,
                    ssl_context=context if https else None,
                    server_hostname=parts.hostname if https else None,
                    timeout=min(target.timeout, 10.0),
                )
        go = asyncio.Event()

        async def one(client: httpx.AsyncClient, index: int) -> Sample:
            await go.wait()
            return await call(client, target, CallPhase.CONCURRENT, index)

        tasks = [asyncio.create_task(one(c, i)) for i, c in enumerate(clients)]
        await asyncio.sleep(0)  # every task reaches go.wait() before the burst starts
        gc_was_enabled = gc.isenabled()
        gc.disable()  # a collection inside the burst would delay every stamp taken in Python
        try:
            go.set()
            return list(await asyncio.gather(*tasks))
        finally:
            if gc_was_enabled:
                gc.enable()
    finally:
        for client in clients:
            await client.aclose()
        await backend.aclose()


async def call(client: httpx.AsyncClient, target: Target, phase: CallPhase, index: int) -> Sample:
    """One timed call. A stale pooled connection is retried once on a new connection."""
    started_at = time.time()
    stamps = clock.begin_call()
    first = await _attempt(client, target, stamps)
    if not _stale_connection_failure(first, stamps):
        return first.sample(phase, index, started_at, stamps, stamps, retries=0, target=target)
    # The server closed a kept-alive connection while it was idle (llama.cpp does this after
    # every streamed answer) and failed before any byte of the answer: a browser retries once on
    # a new connection, and the user waits for both attempts, so t0 stays the first attempt's.
    retry_stamps = clock.begin_call()
    second = await _attempt(client, target, retry_stamps)
    return second.sample(phase, index, started_at, stamps, retry_stamps, retries=1, target=target)


def _stale_connection_failure(attempt: _Attempt, stamps: clock.CallStamps) -> bool:
    return (
        attempt.error in {ErrorKind.CONNECTION_CLOSED, ErrorKind.CONNECTION_RESET}
        and attempt.status is None
        and stamps.bytes_read == 0
        and not stamps.new_connection
    )


@dataclass
class _Attempt:
    status: int | None = None
    error: ErrorKind | None = None
    detail: str | None = None
    retry_after: str | None = None
    headers_ns: int | None = None
    first_byte_ns: int | None = None
    first_token_ns: int | None = None
    last_token_ns: int | None = None
    last_byte_ns: int | None = None
    bytes_received: int = 0
    tokens: int | None = None
    tokens_source: Literal["usage", "deltas"] | None = None
    token_events: int = 0
    token_reads: int = 0
    began_ns: int = field(default_factory=clock.now_ns)

    def sample(
        self,
        phase: CallPhase,
        index: int,
        started_at: float,
        first_stamps: clock.CallStamps,
        stamps: clock.CallStamps,
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
            first_token=since(self.first_token_ns),
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
            error_detail=_scrub(self.detail, target),
            retry_after=self.retry_after,
            timings=timings,
            bytes_received=self.bytes_received,
            tokens=self.tokens,
            tokens_source=self.tokens_source,
            token_events=self.token_events,
            token_reads=self.token_reads,
            new_connection=stamps.new_connection,
            retries=retries,
            stamp_source=stamps.source,
        )


async def _attempt(client: httpx.AsyncClient, target: Target, stamps: clock.CallStamps) -> _Attempt:
    attempt = _Attempt()
    try:
        async with asyncio.timeout(target.timeout):
            await _exchange(client, target, stamps, attempt)
    except TimeoutError:
        attempt.error, attempt.detail = _timed_out(attempt, stamps, target.timeout)
    except httpx.HTTPError as exc:
        attempt.error, attempt.detail = classify(exc)
    return attempt


def _timed_out(
    attempt: _Attempt, stamps: clock.CallStamps, timeout: float
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
    stamps: clock.CallStamps,
    attempt: _Attempt,
) -> None:
    async with client.stream(
        target.method,
        target.url,
        headers=target.request_headers(),
        content=target.request_body(),
    ) as response:
        attempt.status = response.status_code
        attempt.headers_ns = stamps.last_read_ns or clock.now_ns()
        if response.status_code >= 300:
            await _read_failure(response, attempt, stamps)
            return
        parser = StreamParser(target.format, content_type=response.headers.get("content-type"))
        complete = True
        try:
            async for chunk in response.aiter_bytes():
                read_ns = stamps.last_read_ns or clock.now_ns()
                if attempt.first_byte_ns is None and chunk:
                    attempt.first_byte_ns = read_ns
                attempt.bytes_received += len(chunk)
                fed = parser.feed(chunk)
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
        attempt.last_byte_ns = stamps.last_read_ns or clock.now_ns()
        outcome = parser.finish(body_complete=complete)
        if not complete:
            attempt.error = ErrorKind.STREAM_CUT
            return
        attempt.tokens = outcome.tokens
        attempt.tokens_source = outcome.tokens_source
        if not outcome.ok:
            attempt.error = outcome.error or ErrorKind.OTHER
            attempt.detail = outcome.detail


async def _read_failure(
    response: httpx.Response, attempt: _Attempt, stamps: clock.CallStamps
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


def classify(exc: httpx.HTTPError) -> tuple[ErrorKind, str]:
    """Name a transport failure once, from httpx's exception tree and its cause."""
    message = str(exc) or type(exc).__name__
    lowered = message.lower()
    if isinstance(exc, httpx.ConnectTimeout):
        return ErrorKind.CONNECT_TIMEOUT, "timed out while connecting"
    if isinstance(exc, httpx.ReadTimeout):
        return ErrorKind.READ_TIMEOUT, "timed out waiting for the answer"
    if isinstance(exc, httpx.WriteTimeout):
        return ErrorKind.WRITE_TIMEOUT, "timed out sending the request"
    if isinstance(exc, httpx.TimeoutException):
        return ErrorKind.TOTAL_TIMEOUT, message
    if isinstance(exc, httpx.ConnectError):
        if "ssl" in lowered or "certificate" in lowered or "tls" in lowered:
            return ErrorKind.TLS, f"TLS failed: {message}"
        if "refused" in lowered or "errno 111" in lowered:  # 111: ECONNREFUSED on Linux
            return ErrorKind.CONNECTION_REFUSED, "connection refused"
        if "name or service" in lowered or "nodename" in lowered or "getaddrinfo" in lowered:
            return ErrorKind.DNS, f"name lookup failed: {message}"
        return ErrorKind.CONNECTION_REFUSED, f"could not connect: {message}"
    if isinstance(exc, httpx.RemoteProtocolError):
        if "without sending" in lowered or "disconnected" in lowered or "incomplete" in lowered:
            return ErrorKind.CONNECTION_CLOSED, message
        return ErrorKind.PROTOCOL, message
    if isinstance(exc, httpx.ReadError | httpx.WriteError):
        if "reset" in lowered or "errno 104" in lowered:
            return ErrorKind.CONNECTION_RESET, "connection reset by the server"
        return ErrorKind.CONNECTION_CLOSED, message or "the connection closed"
    if isinstance(exc, httpx.DecodingError):
        return ErrorKind.MALFORMED, message
    if isinstance(exc, httpx.TooManyRedirects):
        return ErrorKind.REDIRECT, message
    return ErrorKind.OTHER, f"{type(exc).__name__}: {message}"


def _scrub(detail: str | None, target: Target) -> str | None:
    """Keep a detail short and free of the target's secrets (servers echo headers back)."""
    if detail is None:
        return None
    for secret in target.secrets():
        detail = detail.replace(secret, "***")
    if len(detail) > _DETAIL_LIMIT:
        detail = detail[: _DETAIL_LIMIT - 1] + "…"
    return detail


async def measure_floor_against_echo(*, concurrency: int, kernel_stamps: bool) -> Floor:
    """The gate's own floor: latency of a loopback server that answers at once.

    Takes a few milliseconds. Tells readers what the numbers can resolve on this machine.
    """
    async with EchoServer() as server:
        target = Target(
            name="floor", url=server.url, warm_calls=5, concurrency=concurrency, timeout=5.0
        )
        context = ssl_context_for(target)
        async with _client(target, context, kernel_stamps) as (client, backend):
            sequential = [
                await call(client, target, CallPhase.WARM, i) for i in range(target.warm_calls)
            ]
        concurrent = await burst(target, context, kernel_stamps)
    seq = stats.latencies(sequential[1:], CallPhase.WARM)
    conc = stats.latencies(concurrent, CallPhase.CONCURRENT)
    return Floor(
        sequential_p50=stats.percentile(seq, 50) or 0.0,
        concurrent_p95=stats.percentile(conc, 95) or 0.0,
        concurrency=concurrency,
        stamp_source=backend.source,
    )
