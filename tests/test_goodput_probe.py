"""Calls at a rate end to end against loopback endpoints: arrivals that do not wait for the calls
before them, each call's kernel stamps and send lag, the calls kept apart from the run's, the
goodput search on a one-slot server, the result file read back and judged again, a client that
cannot send at the rate named as such, and bad input at the command line."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Mapping, Sequence

import pytest
from click.testing import CliRunner
from demo_process import demo_process

from latency_gate.assess.load.open_level import CLIENT_FLOOR_TIMES, near_rates
from latency_gate.cli import main as cli_main
from latency_gate.config import build_target
from latency_gate.demo import DemoServer, EndpointSpec, RequestRecord
from latency_gate.measure.engine import Progress, ProgressCallback
from latency_gate.models import CallPhase, RunResult, StampSource
from latency_gate.report.progress import ProgressLog
from latency_gate.report.terminal import render_terminal
from latency_gate.results.json_file import dump_runs, parse_runs
from latency_gate.run import probe

# One at a time, 50 ms each: it completes about 18 calls a second.
ONE_SLOT = EndpointSpec(
    latency=0.05, parallelism=1, tokens=1, token_interval=0, stream_format="raw"
)
SHORT = {
    "warm-calls": "3",
    "concurrency": "2",
    "timeout": "5s",
    "max-warm-p95": "off",
    "max-error-rate": "off",
    "max-concurrent-p95": "250ms",
}


async def _probe(url: str, **raw: str) -> RunResult:
    return await _probed(url, raw)


async def _probed(
    url: str, raw: Mapping[str, str], progress: ProgressCallback | None = None
) -> RunResult:
    settings: dict[str, str | list[str] | None] = {"url": url, **SHORT, **raw}
    return await probe(build_target(settings), measure_floor=True, progress=progress)


def _most_at_once(records: Sequence[RequestRecord]) -> int:
    events = sorted(
        [(r.received_ns, 1) for r in records] + [(r.done_ns or r.received_ns, -1) for r in records]
    )
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


@pytest.mark.slow
async def test_calls_arrive_at_the_rate_whether_or_not_the_last_has_ended() -> None:
    """At a constant 30/s to a server that completes 18 a second, the calls keep coming: the
    server holds several at once, each call is due 1/30 s after the one before, carries its
    kernel stamps and its send lag, and is kept apart from the run's calls; the level breaks
    the 250 ms budget as the queue grows, and the row fails the run."""
    async with DemoServer(ONE_SLOT) as server:
        result = await _probe(server.url, rate="30/s", arrivals="constant", **{"rate-for": "60"})
        records = list(server.records)
    goodput = result.goodput
    assert goodput is not None
    (level,) = goodput.levels
    assert len(records) == len(result.samples) + level.calls
    assert all(s.phase is not CallPhase.RATE for s in result.samples)
    calls = level.samples
    assert [s.phase for s in calls] == [CallPhase.RATE] * len(calls)
    dues = [s.due for s in calls]
    assert all(d is not None for d in dues)
    gaps = [b - a for a, b in itertools.pairwise(dues) if a is not None and b is not None]
    assert all(abs(gap - 1 / 30) < 1e-9 for gap in gaps)
    assert all(s.send_lag is not None and 0 <= s.send_lag < 1.0 for s in calls)
    assert {s.stamp_source for s in calls if s.ok} == {StampSource.KERNEL}
    assert _most_at_once(records) >= 3  # open-loop: they did not wait for each other
    assert not level.held
    row = next(c for c in result.verdict.checks if c.number == "rate_p95")
    assert row.passed is False
    assert not result.verdict.passed


@pytest.mark.slow
@pytest.mark.alone  # the client must send its rate on time: beside four workers it did not
async def test_the_goodput_search_on_a_one_slot_server() -> None:
    """A 50 ms one-slot server against a 250 ms budget: the search ends with a rate that held
    within 10 % of the lowest that was near the budget or broke, under what the server
    completes a second (up to the lowest rate that broke when levels were near, or "at least"
    the rate held when none broke), and the result file read back judges every level again to
    the same figure and interval."""
    async with DemoServer(ONE_SLOT) as server:
        result = await _probe(server.url, goodput="true", **{"min-rate": "4/s"})
    goodput = result.goodput
    assert goodput is not None
    assert goodput.complete, goodput.stopped
    ceiling = min(lv.rate for lv in goodput.levels if not lv.held)
    assert ceiling / goodput.found <= 1.1
    assert 5.0 <= goodput.found <= 20.0
    above = near_rates(goodput.levels, goodput.found, goodput.breaking)
    assert goodput.upper == (goodput.breaking if above else None)
    row = next(c for c in result.verdict.checks if c.number == "goodput")
    assert (row.passed, row.limit) == (True, 4.0)
    (back,) = parse_runs(dump_runs([result]), "the file")
    assert back.goodput is not None
    assert (back.goodput.found, back.goodput.upper) == (goodput.found, goodput.upper)
    assert [(lv.held, lv.near) for lv in back.goodput.levels] == [
        (lv.held, lv.near) for lv in goodput.levels
    ]
    text = render_terminal([result])
    said = (
        f"up to a rate between {goodput.found:g}/s and {goodput.upper:g}/s"
        if goodput.upper is not None
        else f"up to at least {goodput.found:g}/s"
        if above
        else f"up to {goodput.found:g}/s"
    )
    assert f"goodput: holds p95 ≤ 250 ms {said}" in text


async def _with_a_busy_loop(url: str, **raw: str) -> RunResult:
    """The probe with its event loop held 80 ms in every 100 ms from the end of the gate's floor
    on, as a client process busy with other work holds it: the calls go out late whatever the
    machine's speed (300 calls a second alone was kept up with on a fast machine).

    The floor is measured first, on a free loop, as the gate measures it before its own calls:
    its loopback server answers in the probe's own loop, so a burst that met a held loop came
    out at 81 ms (1 of 10 runs here), the lag limit (10 floors) at 812 ms, and a level sent
    372 ms late at p95 was no longer the client's (stop 46's CI, below)."""
    stop = asyncio.Event()
    floor_done = asyncio.Event()

    def after_floor(step: Progress) -> None:
        if step.stage != "floor":
            floor_done.set()

    async def hog() -> None:
        await floor_done.wait()
        while not stop.is_set():
            time.sleep(0.08)  # blocks the loop on purpose
            await asyncio.sleep(0.02)

    task = asyncio.create_task(hog())
    try:
        return await _probed(url, raw, after_floor)
    finally:
        stop.set()
        floor_done.set()
        await task


@pytest.mark.slow
@pytest.mark.alone  # other tests' load would slow its floor and its 2 ms server
def test_a_client_that_cannot_keep_up_is_named_not_the_endpoint() -> None:
    """A client whose loop is busy sends its calls late: against a 2 ms server in another process
    the level is the client's (not counted against the endpoint), the rate row is undecided and
    does not fail the run, and the report says so.

    It runs in tests/run-all.sh's second pass, by itself. It failed twice from a cause found at
    stop 47: stop 35's fresh-clone run (send lag p95 243 ms, not named) and stop 46's CI (372 ms).
    The loop was held from the start, through the gate's floor, whose loopback server answers in
    that same loop: a floor burst that met a held loop made the floor 81 ms (1 of 10 runs here)
    and the lag limit, ten floors, 812 ms, over the lag. The gate was right by its rule (a lag
    within ten floors is not told from the clock's own error); the test had measured the floor
    of a busy client. The loop is now held from the floor's end, and the test says its premise
    (the lag over ten floors) before what follows from it: 30 runs of 30 named the client here
    quiet, 15 of 15 beside `stress-ng --cpu 2` (floors 0.4-1.0 ms, lags 333-632 ms)."""
    with demo_process(0.002) as url:
        result = asyncio.run(
            _with_a_busy_loop(
                url, rate="300/s", **{"rate-for": "400", "max-concurrent-p95": "50ms"}
            )
        )
    goodput = result.goodput
    assert goodput is not None
    (level,) = goodput.levels
    assert level.send_lag_p95 is not None
    assert result.floor is not None
    # The premise: the lag is over what the gate resolves (ten floors, tenths of a second here).
    assert level.send_lag_p95 > CLIENT_FLOOR_TIMES * result.floor.concurrent_p95, result.floor
    assert level.send_lag_p95 > 0.01  # hundreds of ms here; the endpoint answers in 2 ms
    assert level.client_behind
    row = next(c for c in result.verdict.checks if c.number == "rate_p95")
    assert (row.passed, row.decided) == (True, False)
    assert "the client fell behind" in row.note
    assert "not measured at 300/s: the client fell behind" in render_terminal([result])


@pytest.mark.slow
async def test_a_log_line_says_each_level_as_it_begins() -> None:
    """A log gets a line per level with its rate, not "done" (nor one line for all levels);
    levels of 8 s, so that the search is short (the auto length is 123 budgets)."""
    lines: list[str] = []

    class Stream:
        def write(self, text: str) -> None:
            lines.append(text.rstrip("\n"))

        def flush(self) -> None:
            return None

    printer = ProgressLog(Stream()).printer("one")  # type: ignore[arg-type]
    async with DemoServer(ONE_SLOT) as server:
        target = build_target(
            {"url": server.url, **SHORT, "goodput": "true", "rate": "40/s", "rate-for": "8s"}
        )
        await probe(target, measure_floor=False, progress=printer)
    levels = [line for line in lines if " calls at " in line]
    assert levels[:2] == ["one: calls at 40/s, at most 320", "one: calls at 20/s, at most 160"]
    assert lines[-1].startswith("one: done")


def test_a_bad_rate_at_the_command_line_is_exit_2() -> None:
    """`--rate fast` is refused before any call, naming --rate."""
    outcome = CliRunner().invoke(
        cli_main, ["probe", "http://127.0.0.1:9/", "--rate", "fast", "--no-floor"]
    )
    assert outcome.exit_code == 2
    assert "--rate" in outcome.output
    assert "expected a rate such as 5/s" in outcome.output
