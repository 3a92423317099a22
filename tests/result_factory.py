"""RunResult fixtures for tests: coherent samples, numbers, phases and verdict from a few arguments.

Numbers, phases and the verdict come from the real `stats` and `budget` modules, so a fixture
always says what the engine would have said about the same samples. Everything is fixed (times,
tool version), so rendered reports are stable enough for golden files.

    make_result()                                   # a healthy target that passes
    make_result("free", passed=False)               # warm calls 3.0-3.95 s: warm p95 over budget
    make_result(samples=samples_for(cold=0.3, warm=[0.1] * 20, concurrent=[0.2] * 10))
    make_result(samples=[*healthy_samples(), failed_sample(CallPhase.WARM, 20, ErrorKind.HTTP_5XX)])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import SecretStr

from latency_gate.assess.result import assess_run
from latency_gate.config import Budget, Format, Header, Target
from latency_gate.measurement import Measurement
from latency_gate.models import (
    CallPhase,
    CallTimings,
    ErrorKind,
    Finding,
    Floor,
    RunResult,
    Sample,
    StampSource,
    Verdict,
)

STARTED_AT = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
TOOL_VERSION = "0.0.0-test"
URL = "http://127.0.0.1:8000/v1/chat/completions"
DEFAULT_FLOOR = Floor(
    sequential_p50=0.0002, concurrent_p95=0.0004, concurrency=10, stamp_source=StampSource.KERNEL
)


def timings(
    latency: float, *, connect: float | None = None, tls: float | None = None, stream: bool = False
) -> CallTimings:
    """Plausible boundaries for a call of `latency` seconds: headers at 60 %, first byte just
    after, first token (streams) at 70 %; connect and TLS only for a call that connected."""
    setup = (connect or 0.0) + (tls or 0.0)
    headers = setup + (latency - setup) * 0.6
    return CallTimings(
        dns=0.0001 if connect is not None else None,
        connect=connect,
        tls=tls,
        request_sent=setup + 0.0002,
        headers=headers,
        first_byte=headers + 0.001,
        first_token=setup + (latency - setup) * 0.7 if stream else None,
        last_token=latency - 0.001 if stream else None,
        last_byte=latency,
    )


def ok_sample(
    phase: CallPhase,
    index: int,
    latency: float,
    *,
    stream: bool = False,
    connect: float | None = None,
    tls: float | None = None,
    retries: int = 0,
) -> Sample:
    """A successful call: status 200, tokens when streaming."""
    return Sample(
        phase=phase,
        index=index,
        started_at=STARTED_AT + 1 + index * 0.5,
        ok=True,
        latency=latency,
        status=200,
        timings=timings(latency, connect=connect, tls=tls, stream=stream),
        bytes_received=512,
        tokens=24 if stream else None,
        tokens_source="usage" if stream else None,
        token_events=24 if stream else 0,
        token_reads=20 if stream else 0,
        new_connection=connect is not None,
        retries=retries,
        stamp_source=StampSource.KERNEL,
    )


def failed_sample(
    phase: CallPhase,
    index: int,
    kind: ErrorKind,
    detail: str | None = None,
    *,
    status: int | None = None,
    latency: float | None = None,
) -> Sample:
    """A failed call of the given kind; `detail` is the (untrusted) text the endpoint gave."""
    return Sample(
        phase=phase,
        index=index,
        started_at=STARTED_AT + 1 + index * 0.5,
        ok=False,
        latency=latency,
        status=status,
        error=kind,
        error_detail=detail,
        timings=CallTimings(request_sent=0.0002, headers=latency) if latency else CallTimings(),
        stamp_source=StampSource.KERNEL,
    )


def samples_for(
    *,
    cold: float | None,
    warm: Iterable[float],
    concurrent: Iterable[float],
    stream: bool = False,
) -> tuple[Sample, ...]:
    """Successful calls with these latencies; the cold call (if any) opens a TLS connection."""
    result: list[Sample] = []
    if cold is not None:
        result.append(ok_sample(CallPhase.COLD, 0, cold, stream=stream, connect=0.012, tls=0.031))
    result += [ok_sample(CallPhase.WARM, i, v, stream=stream) for i, v in enumerate(warm)]
    result += [
        ok_sample(CallPhase.CONCURRENT, i, v, stream=stream) for i, v in enumerate(concurrent)
    ]
    return tuple(result)


def healthy_samples(*, stream: bool = False) -> tuple[Sample, ...]:
    """Cold 420 ms; warm 100-295 ms; concurrent 150-345 ms: well within the default budget,
    and enough calls (131: the error budget passes after 127 clean ones) for every default check
    to decide PASS in one look."""
    return samples_for(
        cold=0.42,
        warm=[0.100 + 0.005 * i for i in range(40)],
        concurrent=[0.150 + 0.005 * (i % 40) for i in range(90)],
        stream=stream,
    )


def slow_samples(*, stream: bool = False) -> tuple[Sample, ...]:
    """Warm 3.00-3.95 s and concurrent 3.2-5.0 s: both p95s over the default 3 s budget."""
    return samples_for(
        cold=4.2,
        warm=[3.0 + 0.05 * i for i in range(20)],
        concurrent=[3.2 + 0.2 * i for i in range(10)],
        stream=stream,
    )


def make_target(
    name: str = "local",
    *,
    url: str = URL,
    stream: bool = False,
    budget: Budget | None = None,
    headers: Sequence[tuple[str, str]] = (("Content-Type", "application/json"),),
) -> Target:
    """The Target whose redacted settings go into the result's config."""
    return Target(
        name=name,
        url=url,
        method="POST",
        headers=tuple(Header(name=k, value=SecretStr(v)) for k, v in headers),
        body=SecretStr('{"messages": []}'),
        api_key=SecretStr("sk-test-secret"),
        format=Format.OPENAI_CHAT,
        stream=stream,
        budget=budget or Budget(),
    )


def make_result(
    name: str = "local",
    *,
    passed: bool | None = None,
    samples: Sequence[Sample] | None = None,
    budget: Budget | None = None,
    stream: bool = False,
    url: str = URL,
    headers: Sequence[tuple[str, str]] = (("Content-Type", "application/json"),),
    findings: Sequence[Finding] = (),
    warnings: Sequence[str] = (),
    interrupted: bool = False,
    floor: Floor | None = DEFAULT_FLOOR,
    stamp_source: StampSource = StampSource.KERNEL,
) -> RunResult:
    """A RunResult as the engine would write it for these samples.

    Without `samples`: healthy ones, or slow ones when `passed=False`. The verdict is the real
    budget's; `passed` given explicitly overrides its overall flag (for a report-only case).
    """
    target = make_target(name, url=url, stream=stream, budget=budget, headers=headers)
    if samples is None:
        samples = slow_samples(stream=stream) if passed is False else healthy_samples(stream=stream)
    judged = assess_run(
        target,
        Measurement(list(samples), started_at=STARTED_AT),
        finished_at=STARTED_AT + 12.3,
        stamp_source=stamp_source,
        floor=floor,
        interrupted=interrupted,
    )
    verdict = judged.verdict
    if passed is not None and passed != verdict.passed:
        verdict = Verdict(passed=passed, checks=verdict.checks, reasons=verdict.reasons)
    return judged.model_copy(
        update={
            "tool_version": TOOL_VERSION,
            "target": name,
            "verdict": verdict,
            "findings": tuple(findings),
            "warnings": tuple(warnings),
        }
    )
