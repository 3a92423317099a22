"""--max-time (action input `max-time`): no new call starts after it, counted from the cold
call; what is undecided then follows on-undecided and is said so; the run ends within its time
plus one call's timeout, with a verdict and a result file. And the cost said up front."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from latency_gate.action import main as action_main
from latency_gate.cli import main
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.measure.deadline import Deadline

# 50 ms a call: a default run (131 calls) would take about 3 s.
ENDPOINT = EndpointSpec(name="api", latency=0.05, stream_format="raw", tokens=1)


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    with serve_in_thread(ENDPOINT) as (demo,):
        yield demo


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), prog_name="latency-gate")


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_no_call_starts_once_the_time_is_up() -> None:
    """Before the time is up a call may start; at it, none, and that is remembered."""
    clock = FakeClock()
    deadline = Deadline(6.0, clock=clock)
    deadline.start()
    clock.now += 5.9
    assert deadline.allows()
    assert not deadline.passed
    clock.now += 0.1
    assert not deadline.allows()
    assert deadline.passed


def test_the_first_looks_warm_calls_leave_its_burst_time_to_start() -> None:
    """At 0.4 s a call (the slowest so far 0.5 s), a warm call may start at 4.9 s (it and the
    burst fit in 1.0 s more); at 5.1 s, not: one running late would leave the burst no start."""
    clock = FakeClock()
    deadline = Deadline(6.0, clock=clock)
    deadline.start()
    clock.now += 0.5  # the cold call, the slowest
    for _ in range(11):  # warm calls of 0.4 s, the last one asked at 4.5 s
        assert deadline.allows_before_burst()
        clock.now += 0.4
    assert deadline.allows_before_burst()  # at 4.9 s
    clock.now += 0.2  # a call cut short: asked again at 5.1 s
    assert not deadline.allows_before_burst()
    assert deadline.passed


def test_no_limit_allows_every_call() -> None:
    """Without --max-time every call may start, whenever."""
    clock = FakeClock()
    deadline = Deadline(None, clock=clock)
    deadline.start()
    clock.now += 1e9
    assert deadline.allows()
    assert deadline.allows_before_burst()
    assert not deadline.passed


def test_max_time_stops_the_calls_and_says_so(server: DemoServer, tmp_path: Path) -> None:
    """--max-time 1s at 50 ms a call: no call reaches the server more than 1 s after the cold
    call, the checks still undecided pass by their value (said), the result file says why
    sampling stopped, and the first line said the bound."""
    out = tmp_path / "r.json"
    before = len(server.records)
    done = invoke(
        "probe", server.url, "--no-floor", "--max-time", "1s", "--json", str(out), "--timeout", "5s"
    )
    assert done.exit_code == 0, done.output
    received = [r.received_ns for r in server.records[before:]]
    assert (max(received) - min(received)) / 1e9 <= 1.0 + 0.2  # a burst's calls land together
    assert len(received) < 131
    data = json.loads(out.read_text())
    assert len(data["samples"]) == len(received)
    assert data["sampling"]["stopped"].startswith("the --max-time of 1.00 s ran out; undecided:")
    assert data["config"]["max_time"] == 1.0
    assert (
        "warning: the --max-time of 1.00 s ran out: no call started after it, and the checks it "
        "left undecided were decided by on-undecided (estimate)"
    ) in done.output
    assert "undecided when sampling stopped: passed by its value" in done.output
    assert done.output.startswith(
        "endpoint: at most 500 calls; a clean PASS takes 131 (the error budget 0.01 passes "
        "after 127 calls without a failure); no call starts after 1.00 s from the first "
        "(--max-time), plus one call's timeout to end\n"
    )


def test_a_run_within_its_time_is_not_said_to_be_cut(server: DemoServer, tmp_path: Path) -> None:
    """--max-time 60s at 50 ms a call: the run ends by itself, as without it, nothing said."""
    out = tmp_path / "r.json"
    done = invoke("probe", server.url, "--no-floor", "--max-time", "60s", "--json", str(out))
    assert done.exit_code == 0, done.output
    data = json.loads(out.read_text())
    assert len(data["samples"]) == 131
    assert data["sampling"]["stopped"] == "every gated check is decided"
    assert "--max-time of" not in done.output


@pytest.mark.parametrize("value", ["soon", "0", "-3s"])
def test_a_bad_max_time_is_exit_2_naming_it(server: DemoServer, value: str) -> None:
    """A max-time that is not a duration above zero: exit 2 naming --max-time, no call."""
    before = len(server.records)
    done = invoke("probe", server.url, "--max-time", value)
    assert done.exit_code == 2, done.output
    assert "--max-time" in done.output
    assert len(server.records) == before


def test_the_action_takes_max_time(server: DemoServer, tmp_path: Path) -> None:
    """The action's `max-time` input: the same stop, said in the log and the summary."""
    for name in ("summary.md", "output"):
        (tmp_path / name).touch()
    out = io.StringIO()
    code = action_main(
        {
            "INPUT_URL": server.url,
            "INPUT_MAX-TIME": "1s",
            "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
            "GITHUB_OUTPUT": str(tmp_path / "output"),
            "GITHUB_WORKSPACE": str(tmp_path),
        },
        out=out,
    )
    assert code == 0, out.getvalue()
    log = out.getvalue()
    assert "no call starts after 1.00 s from the first (--max-time)" in log
    assert "the --max-time of 1.00 s ran out" in log
    assert "the --max-time of 1.00 s ran out" in (tmp_path / "summary.md").read_text()


@pytest.mark.slow
def test_max_time_6s_at_400_ms_a_call_ends_within_10_s(tmp_path: Path) -> None:
    """The issue's case: --max-time 6s against an endpoint of 400 ms a call ends within about
    10 s (6 s, plus the call under way, the floor and the start), with a verdict and a result
    file; a default run there would take 131 calls, some 25 s."""
    out = tmp_path / "r.json"
    with serve_in_thread(EndpointSpec(name="slow", latency=0.4, stream_format="raw")) as (slow,):
        began = time.monotonic()
        done = invoke("probe", slow.url, "--max-time", "6s", "--json", str(out))
        took = time.monotonic() - began
    assert done.exit_code == 0, done.output
    assert took <= 10.0
    assert "PASS: every gated number within budget" in done.output
    data = json.loads(out.read_text())
    assert data["verdict"]["passed"] is True
    assert len(data["samples"]) < 31


def test_a_time_shorter_than_the_cold_call_leaves_only_it(tmp_path: Path) -> None:
    """--max-time 0.1s at 300 ms a call: the cold call alone (not the two warm calls that tell
    an endpoint that is not there), a FAIL for the checks with no call ("no data"), said, and
    a result file."""
    out = tmp_path / "r.json"
    with serve_in_thread(EndpointSpec(name="slow", latency=0.3, stream_format="raw")) as (slow,):
        done = invoke("probe", slow.url, "--no-floor", "--max-time", "0.1s", "--json", str(out))
        assert len(slow.records) == 1
    assert done.exit_code == 1, done.output
    data = json.loads(out.read_text())
    assert [s["phase"] for s in data["samples"]] == ["cold"]
    assert "warning: the --max-time of 100 ms ran out: no call started after it" in done.output
    assert "no warm call succeeded" in done.output


@pytest.mark.slow
def test_a_capacity_search_the_time_cuts_says_so(tmp_path: Path) -> None:
    """--capacity with --max-time 3s at 0.3 s or more a call: the first look (1 + 2 + a burst of
    34, which decides the concurrent p95) ends within the time, the search (levels 34 and 64,
    several bursts each) does not: it stops where it was, not complete, its reason the time's."""
    out = tmp_path / "r.json"
    with serve_in_thread(EndpointSpec(name="api", latency=0.3, stream_format="raw")) as (api,):
        done = invoke(
            "probe",
            api.url,
            *("--no-floor", "--warm-calls", "2", "--concurrency", "34", "--capacity"),
            *("--max-error-rate", "off", "--max-warm-p95", "off", "--max-time", "3s"),
            *("--json", str(out)),
        )
    assert done.exit_code in (0, 1), done.output
    capacity = json.loads(out.read_text())["capacity"]
    assert capacity["complete"] is False
    assert capacity["stopped"] == "the --max-time of 3.00 s ran out"
