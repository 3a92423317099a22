"""The same work when the arms' answers differ in length (issue 41, item 3): the head's effect is
estimated with the length held equal, so a head slower on every call is a regression whatever
its answers' length, in an A/B run (paired by prompt) and against an earlier run (unpaired).

The line through both arms' calls gave a head twice as slow with answers 86 % shorter a negative
slope and explained the whole slowdown as length (PASS, "what changed: answers 86 % shorter").
The synthetic arms are fed to the assess layer; the two reported runs go through the CLI against
loopback servers whose answers' length and time are scripted per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hostile_kit import handler_in_thread
from result_factory import make_result

from latency_gate import cli
from latency_gate.assess.compare.baseline import compare
from latency_gate.assess.numbers import stats
from latency_gate.assess.numbers.work import Work, comparable, overlap, within_fit
from latency_gate.config.regression import DEFAULT_LIMIT
from latency_gate.models import BaselineCheck, CallPhase, CallTimings, NumberDelta, Sample

CONCURRENCY = 4

# --- synthetic calls --------------------------------------------------------------------------


def _arm(rng: random.Random, lengths: Sequence[int], *, first: float, per: float) -> list[Sample]:
    """Warm calls of these lengths, then burst calls of the same lengths, each latency first +
    (tokens - 1) x per with a little noise on each."""
    out = []
    for phase in (CallPhase.WARM, CallPhase.CONCURRENT):
        for i, n in enumerate(lengths):
            f = first * math.exp(rng.gauss(0, 0.1))
            p = per * math.exp(rng.gauss(0, 0.05))
            out.append(
                Sample(
                    phase=phase,
                    index=i,
                    started_at=0.0,
                    ok=True,
                    latency=f + (n - 1) * p,
                    status=200,
                    tokens=n,
                    tokens_source="usage",
                    timings=CallTimings(first_token=f, first_event=f),
                )
            )
    return out


def _judged(
    head: list[Sample], base: list[Sample], *, paired: bool
) -> tuple[dict[str, NumberDelta], BaselineCheck]:
    check = compare(
        head,
        stats.numbers(head),
        None if paired else make_result("base", samples=base, stream=True),
        DEFAULT_LIMIT,
        "base",
        base_samples=base if paired else None,
        gated={"warm_p95", "concurrent_p95", "error_rate"},
        concurrency=CONCURRENCY,
    )
    return {d.number: d for d in check.deltas}, check


def _lognormal(rng: random.Random, count: int, median: float) -> list[int]:
    return [max(2, round(median * math.exp(rng.gauss(0, 0.6)))) for _ in range(count)]


@pytest.mark.parametrize("paired", [True, False], ids=["ab", "earlier-run"])
def test_a_slower_head_with_far_shorter_answers_regresses(paired: bool) -> None:
    """The issue's shape: every head call about 210 ms with 10-20 tokens, every base call about
    105 ms with 100-110. The lengths do not overlap, so the calls are compared as they are:
    regressed, by the latency (not the length), the shorter answers named beside it."""
    rng = random.Random(41)
    head = _arm(rng, [10 + i % 11 for i in range(40)], first=0.195, per=0.001)
    base = _arm(rng, [100 + i % 11 for i in range(40)], first=0.0, per=0.001)
    found, _check = _judged(head, base, paired=paired)
    for number in ("warm_p95", "concurrent_p95"):
        delta = found[number]
        assert delta.regressed, number
        assert not delta.by_length, number
        assert not delta.same_work, number  # the arms' lengths are apart: whole calls
    assert found["warm_p95"].cause.startswith("answers 8")  # 86 % shorter, as drawn
    assert "shorter" in found["warm_p95"].cause


@pytest.mark.parametrize("paired", [True, False], ids=["ab", "earlier-run"])
def test_a_slower_head_with_shorter_overlapping_answers_regresses_at_the_same_work(
    paired: bool,
) -> None:
    """Answers half as long (lognormal, the arms overlapping) and every call 40 % slower at the
    same length: regressed at the same work, by the latency, with its interval over the limit."""
    rng = random.Random(42)
    head = _arm(rng, _lognormal(rng, 100, 20), first=0.05 * 1.4, per=0.008 * 1.4)
    base = _arm(rng, _lognormal(rng, 100, 40), first=0.05, per=0.008)
    found, _check = _judged(head, base, paired=paired)
    warm = found["warm_p95"]
    assert warm.regressed
    assert warm.same_work
    assert not warm.by_length
    assert warm.interval is not None
    assert warm.interval[0] is not None
    assert warm.interval[0] > 1.1


@pytest.mark.parametrize("paired", [True, False], ids=["ab", "earlier-run"])
def test_a_faster_head_with_longer_answers_is_regressed_by_the_length_alone(
    paired: bool,
) -> None:
    """Answers twice as long and every call 20 % faster at the same length: the latency at the
    same work is not worse (its interval under 1), and the row is regressed by the length,
    named as the cause."""
    rng = random.Random(43)
    head = _arm(rng, _lognormal(rng, 100, 80), first=0.05 * 0.8, per=0.008 * 0.8)
    base = _arm(rng, _lognormal(rng, 100, 40), first=0.05, per=0.008)
    found, check = _judged(head, base, paired=paired)
    warm = found["warm_p95"]
    assert warm.same_work
    assert warm.regressed
    assert warm.by_length
    assert warm.interval is not None
    assert warm.interval[1] is not None
    assert warm.interval[1] < 1.0
    assert warm.cause.startswith("answers ")
    assert check.length is not None
    assert check.length.outcome == "regressed"


def test_the_slope_is_fitted_within_the_arms() -> None:
    """Two arms on lines of 1 ms a token whose levels differ by 100 ms, the slower arm the
    shorter: the line through both arms would fall with the length; the line within the arms
    rises 1 ms a token."""
    head = Work([0.2 + 0.001 * n for n in range(10, 21)], [(float(n),) for n in range(10, 21)])
    base = Work([0.001 * n for n in range(100, 111)], [(float(n),) for n in range(100, 111)])
    lengths = [*head.covariates, *base.covariates]
    predicted = within_fit([*head.latencies, *base.latencies], lengths, [0] * 11 + [1] * 11)
    assert predicted is not None
    slope = (predicted[1] - predicted[0]) / (lengths[1][0] - lengths[0][0])
    assert math.isclose(slope, 0.001, rel_tol=1e-6)
    assert not overlap(head, base)
    assert not comparable(head, base)


def test_no_positive_slope_within_the_arms_is_no_line() -> None:
    """Within the arms longer answers are not slower: no line to hold the latency to."""
    head = Work([0.3 - 0.001 * n for n in range(1, 21)], [(float(n),) for n in range(1, 21)])
    base = Work([0.2 - 0.001 * n for n in range(1, 21)], [(float(n),) for n in range(1, 21)])
    assert overlap(head, base)
    assert not comparable(head, base)
    found = within_fit(
        [*head.latencies, *base.latencies],
        [*head.covariates, *base.covariates],
        [0] * 20 + [1] * 20,
    )
    assert found is None


# --- the reported runs, through the CLI -------------------------------------------------------

Shape = Callable[[int], tuple[float, int]]  # request number -> (seconds, tokens)


@contextlib.contextmanager
def _lengths_server(shape: Shape, *, stream: bool) -> Iterator[str]:
    """A loopback OpenAI-chat endpoint that answers request n with `shape(n)`'s tokens (counted
    in its usage) after about `shape(n)`'s seconds: a document after the wait, or a stream whose
    first delta comes at a tenth of the wait and its last at the end. Yields its URL."""
    count = [0]

    async def answer(writer: asyncio.StreamWriter, seconds: float, tokens: int) -> None:
        usage = {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": 5 + tokens}
        if not stream:
            await asyncio.sleep(seconds)
            body = json.dumps(
                {
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": "x " * tokens}}
                    ],
                    "usage": usage,
                }
            ).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            await writer.drain()
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )

        async def send(event: dict[str, object] | str) -> None:
            text = event if isinstance(event, str) else json.dumps(event)
            data = f"data: {text}\n\n".encode()
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()

        chunks = min(tokens, 5)  # the deltas in a few chunks; usage counts every token
        await asyncio.sleep(seconds / 10)
        for i in range(chunks):
            if i:
                await asyncio.sleep(seconds * 0.9 / max(1, chunks - 1))
            delta = {"content": "x " * (tokens // chunks)}
            await send({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        if chunks == 1:
            await asyncio.sleep(seconds * 0.9)
        await send({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        await send({"choices": [], "usage": usage})
        await send("[DONE]")
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            for _ in range(10_000):  # requests on one connection, bounded
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
                size = next(
                    (
                        int(line.split(":", 1)[1])
                        for line in head.split("\r\n")
                        if line.startswith("content-length:")
                    ),
                    0,
                )
                await reader.readexactly(size)
                seconds, tokens = shape(count[0])
                count[0] += 1
                await answer(writer, seconds, tokens)
        writer.close()

    with handler_in_thread(handle) as port:
        yield f"http://127.0.0.1:{port}/v1/chat/completions"


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(cli.main, list(args), prog_name="latency-gate")


FEW = ("--warm-calls", "12", "--concurrency", "4", "--max-calls", "60", "--no-floor")
# The two shapes: (head, base, stream)
SHORTER_AND_SLOWER: Shape = lambda n: (0.20 + 0.001 * (n % 11), 10 + n % 11)  # noqa: E731
LONGER_AND_FASTER: Shape = lambda n: (0.10 + 0.0005 * (n % 11), 100 + n % 11)  # noqa: E731
ONE_TOKEN_SLOW: Shape = lambda n: (0.30, 1 + n % 2)  # noqa: E731
MANY_TOKENS_FAST: Shape = lambda n: (0.10 + 0.0005 * (n % 21), 200 + n % 21)  # noqa: E731
CASES = {
    "document": (SHORTER_AND_SLOWER, LONGER_AND_FASTER, False),
    "stream": (ONE_TOKEN_SLOW, MANY_TOKENS_FAST, True),
}


def _said_regressed(done: Result) -> None:
    assert done.exit_code == 1, done.output
    assert done.stdout.startswith("FAIL: regression: warm p95 "), done.output
    assert "what changed: answers" in " ".join(done.output.split())
    assert "shorter" in done.output


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_ab_a_slower_head_with_shorter_answers_fails(case: str) -> None:
    """The issue's repros in an A/B run: a head slower on every call whose answers are far
    shorter (210 ms with 10-20 tokens against 105 ms with 100-110; streamed, 300 ms with 1-2
    tokens against 100 ms with 200-220) exits 1 naming the warm p95's regression and the
    shorter answers beside it (it passed, the slowdown read as the length)."""
    head_shape, base_shape, stream = CASES[case]
    streamed = ("--stream",) if stream else ()
    with (
        _lengths_server(head_shape, stream=stream) as head,
        _lengths_server(base_shape, stream=stream) as base,
    ):
        done = _invoke("probe", head, *FEW, *streamed, "--baseline-url", base)
    _said_regressed(done)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_cli_against_an_earlier_run_a_slower_head_with_shorter_answers_fails(
    case: str, tmp_path: Path
) -> None:
    """The same repros against an earlier run's result file (--baseline, unpaired): exit 1,
    the warm p95's regression named."""
    head_shape, base_shape, stream = CASES[case]
    streamed = ("--stream",) if stream else ()
    earlier = tmp_path / "base.json"
    with _lengths_server(base_shape, stream=stream) as base:
        first = _invoke("probe", base, *FEW, *streamed, "--json", str(earlier))
    assert first.exit_code == 0, first.output
    with _lengths_server(head_shape, stream=stream) as head:
        done = _invoke("probe", head, *FEW, *streamed, "--baseline", str(earlier))
    _said_regressed(done)
