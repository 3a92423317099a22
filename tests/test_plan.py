"""What the checks need in calls, held against max-calls before the first call (config/plan/),
and what a run says when its cap was sized to fit or falls short of the checks' needs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from latency_gate import cli
from latency_gate.config import Budget, build_target
from latency_gate.config.plan.feasible import plan_warnings
from latency_gate.config.plan.needs import (
    DEFAULT_MAX_CALLS,
    calls_needed,
    effective_max_calls,
    fit_first_look,
)
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.errors import ConfigError


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    with serve_in_thread(EndpointSpec(latency=0.005)) as (demo,):
        yield demo


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli.main, list(args), prog_name="latency-gate")


def test_default_needs() -> None:
    """Default budget, 20 warm calls, bursts of 10: a perfect endpoint has every check decided
    after 131 calls (the error budget passes after 127 clean calls); the latency checks can take
    351 calls over 9 looks; the error budget's figures hold within 500."""
    needs = calls_needed(Budget(), warm_calls=20, concurrency=10)
    assert (needs.minimum, needs.latency, needs.error, needs.design) == (131, 351, 500, 500)
    assert needs.why == "the error budget 0.01 passes after 127 calls without a failure"


def test_latency_needs_without_an_error_budget() -> None:
    """With the error budget off, a perfect endpoint needs 40 warm calls (33 clean pass a p95)
    and 50 concurrent ones: 91 calls."""
    needs = calls_needed(Budget(max_error_rate=None), warm_calls=20, concurrency=10)
    assert (needs.minimum, needs.why) == (91, "the latency checks")


def _target(**raw: str) -> object:
    return build_target({"url": "http://example.com/", **raw})


def test_auto_cap_fits_the_checks() -> None:
    """No max-calls: 500 with the defaults; sized up for many warm calls or a small error
    budget, and said so."""
    assert effective_max_calls(build_target({"url": "http://example.com/"})) == DEFAULT_MAX_CALLS
    many = build_target({"url": "http://example.com/", "warm-calls": "300"})
    assert effective_max_calls(many) == 1 + 300 + 160 + 10 + 160
    assert plan_warnings(many) == [
        "max-calls sized to 631 to fit the checks (the calls of 9 looks)"
    ]
    tiny = build_target({"url": "http://example.com/", "max-error-rate": "0.001"})
    assert effective_max_calls(tiny) == 1291
    assert plan_warnings(tiny)[0] == (
        "max-calls sized to 1,291 to fit the checks (the error budget 0.001 passes after "
        "1,286 calls without a failure)"
    )
    assert "under the 5,000 calls the checks can need" in plan_warnings(tiny)[1]


@pytest.mark.parametrize("cap", ["31", "60", "75", "80", "130"])
def test_a_cap_no_run_can_decide_is_refused_under_the_fail_policy(cap: str) -> None:
    """With on-undecided fail, a max-calls under what a perfect endpoint needs would fail every
    run by policy: refused before any call, naming max-calls and the figure it needs."""
    with pytest.raises(ConfigError) as caught:
        build_target({"url": "http://example.com/", "max-calls": cap, "on-undecided": "fail"})
    assert caught.value.problems[0].name == "max-calls"
    assert f"{int(cap):,} calls cannot decide every check even for a perfect endpoint" in str(
        caught.value
    )
    assert "Raise it to at least 131" in str(caught.value)


def test_warm_calls_that_leave_no_room_are_refused_under_the_fail_policy() -> None:
    """290 warm calls under a cap of 300 leave the burst 9 calls (fitted to the cap, which is
    never spent past; it was 10, past the cap, and the figure 341): refused, with the figure."""
    with pytest.raises(ConfigError, match="at least 327"):
        build_target(
            {
                "url": "http://example.com/",
                "warm-calls": "290",
                "max-calls": "300",
                "on-undecided": "fail",
            }
        )


def test_a_small_cap_is_kept_but_warned_under_the_default_policy() -> None:
    """The default policy decides an undecided check by its value, so a small cap cannot fail a
    perfect endpoint: kept, and the report says its error rates are over the stated ones."""
    target = build_target({"url": "http://example.com/", "max-calls": "60"})
    assert effective_max_calls(target) == 60
    assert plan_warnings(target) == [
        "max-calls 60 is under the 500 calls the checks can need: a check near its budget may "
        "be decided there by its value, with error rates over the stated ones (each check's "
        "line says the ones of this run)"
    ]


@pytest.mark.parametrize("budget", ["1e-10", "0.000001"])
def test_an_error_budget_no_run_can_decide_is_refused(budget: str) -> None:
    """1e-10 needs 1.3e10 clean calls to pass: refused (it ended in exit 3 before), naming the
    input and the smallest budget a run can decide."""
    with pytest.raises(ConfigError) as caught:
        build_target({"url": "http://example.com/", "max-error-rate": budget})
    assert caught.value.problems[0].name == "max-error-rate"
    assert "cannot be decided" in str(caught.value)
    assert "Use at least 2e-05, 0 for no failure allowed, or off" in str(caught.value)


def test_cli_refuses_an_undecidable_cap_before_any_call(server: DemoServer) -> None:
    """Through the CLI: exit 2, one message naming --max-calls, and no request made."""
    before = len(server.records)
    done = invoke("probe", server.url, "--max-calls", "60", "--on-undecided", "fail")
    assert done.exit_code == 2, done.output
    assert "--max-calls" in done.output
    assert "Raise it to at least 131" in done.output
    assert len(server.records) == before


@pytest.mark.slow
def test_cli_says_when_the_cap_was_sized(server: DemoServer) -> None:
    """An error budget of 0.002 needs 642 clean calls; the run says the cap was sized for it."""
    done = invoke(
        "probe",
        server.url,
        "--max-error-rate",
        "0.002",
        "--max-warm-p95",
        "off",
        "--max-concurrent-p95",
        "off",
        "--no-floor",
    )
    assert "warning: max-calls sized to 651 to fit the checks" in done.output


def _calls_spent(tmp_path: Path, server: DemoServer, *args: str) -> int:
    """The calls a probe of the demo endpoint spent, read from its JSON result."""
    out = tmp_path / f"run{len(list(tmp_path.iterdir()))}.json"
    done = invoke("probe", server.url, "--no-floor", "--json", str(out), *args)
    assert done.exit_code == 0, done.output
    return len(json.loads(out.read_text())["samples"])


def test_a_smaller_first_look_spends_no_more_than_the_defaults(
    tmp_path: Path, server: DemoServer
) -> None:
    """--warm-calls 5 --concurrency 5 spent 151 calls where the defaults spend 131 (look 3 took
    bursts for the error rate's need as if its 20 warm calls did not count): no more now."""
    default = _calls_spent(tmp_path, server)
    smaller = _calls_spent(tmp_path, server, "--warm-calls", "5", "--concurrency", "5")
    assert default == 131
    assert smaller <= default


@pytest.mark.parametrize(
    ("cap", "warm", "concurrency", "fitted"),
    [
        (10, None, None, (6, 3)),
        (4, None, None, (1, 2)),
        (30, None, None, (20, 9)),
        (31, None, None, (20, 10)),
        (10, None, 5, (4, 5)),
        (4, 2, 1, (2, 1)),
    ],
)
def test_a_cap_under_the_first_look_fits_the_counts_not_given(
    cap: int, warm: int | None, concurrency: int | None, fitted: tuple[int, int]
) -> None:
    """A max-calls under 1 + 20 + 10 makes the first look smaller: the burst a third of the
    calls after the cold one, down to one warm call and a burst of 2; counts given are kept."""
    assert fit_first_look(cap, warm, concurrency) == fitted


def test_max_calls_10_spends_at_most_10_and_says_the_first_look_was_fitted(
    server: DemoServer,
) -> None:
    """--max-calls 10 spent 31 calls (the whole first look, a warning): now 10 at most, the
    first look 1 + 6 + 3, said so."""
    before = len(server.records)
    done = invoke("probe", server.url, "--max-calls", "10", "--no-floor")
    assert done.exit_code == 0, done.output
    assert len(server.records) - before == 10
    assert (
        "warning: max-calls 10 is under the 31 calls of the default first look, fitted to it: "
        "1 cold call, 6 warm calls and a burst of 3, and its checks rest on 10 calls at most"
    ) in done.output


@pytest.mark.parametrize(
    ("args", "least"),
    [
        (("--max-calls", "3"), "it takes at least 4, a cold call, 1 warm call and a burst of 2."),
        (
            ("--max-calls", "10", "--warm-calls", "20"),
            "it takes at least 23, a cold call, 20 warm calls and a burst of 2 (--warm-calls as "
            "given). Give at least 23, or lower --warm-calls",
        ),
    ],
)
def test_a_cap_no_first_look_fits_exits_2_before_any_call(
    server: DemoServer, args: tuple[str, ...], least: str
) -> None:
    """A max-calls under the least first look (or under the counts given) is refused before
    any call: exit 2, naming --max-calls and the least it takes."""
    before = len(server.records)
    done = invoke("probe", server.url, *args)
    assert done.exit_code == 2, done.output
    assert "--max-calls" in done.output
    assert least in done.output
    assert len(server.records) == before
