"""Regressions against a baseline: limits, statistics, simulations, and the CLI end to end.

The simulations fix their seeds, so the figures below are exact for this code; they are the ones
docs/workflows.md quotes. Lognormal latencies with sigma 0.25 (p95 about 1.5 x p50, a warm API
endpoint) are the "realistic" case; the wider cases show where 20 calls stop being enough.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from pydantic import SecretStr
from result_factory import healthy_samples, make_result, make_target, samples_for

from latency_gate import cli
from latency_gate.assess.compare.baseline import BaselinePlan, compare, config_differences
from latency_gate.assess.result import assess_run
from latency_gate.config.regression import DEFAULT_LIMIT, RegressionLimit, parse_max_regression
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.errors import ConfigError
from latency_gate.measurement import Measurement
from latency_gate.models import RunResult, StampSource
from latency_gate.results.json_file import dump_runs, parse_runs
from latency_gate.results.loading import plan_baseline

# --- limits ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "relative", "absolute"),
    [
        ("20%", 0.2, None),
        ("200ms", None, 0.2),
        ("20%,200ms", 0.2, 0.2),
        (" 1.5 s , 5 % ", 0.05, 1.5),
    ],
)
def test_parse_max_regression(text: str, relative: float | None, absolute: float | None) -> None:
    """Relative, absolute and both together, in either order."""
    assert parse_max_regression(text) == RegressionLimit(relative=relative, absolute=absolute)


@pytest.mark.parametrize("text", ["", "fast", "20%,30%", "1s,2s", "1%,2%,3%"])
def test_parse_max_regression_refuses(text: str) -> None:
    """Anything else is a ValueError that says what was expected."""
    with pytest.raises(ValueError, match=r"20%|two|expected"):
        parse_max_regression(text)


# --- comparing results ----------------------------------------------------------------------


def _slow(factor: float) -> RunResult:
    return make_result(
        samples=samples_for(
            cold=0.42 * factor,
            warm=[(0.100 + 0.005 * i) * factor for i in range(40)],
            concurrent=[(0.150 + 0.005 * i) * factor for i in range(40)],
        )
    )


def test_compare_same_run_no_regression() -> None:
    """A run against itself: every number shown, none regressed, verdict unchanged."""
    run = make_result()
    check = compare(run.samples, run.numbers, run, DEFAULT_LIMIT, "base.json")
    assert [d.number for d in check.deltas] == [
        "cold_start",
        "warm_p50",
        "warm_p95",
        "concurrent_p95",
        "error_rate",
    ]
    assert check.regressions == ()
    assert check.deltas[0].note == "one call each: cannot be told from noise, not gated"


def test_compare_twice_slower_regresses() -> None:
    """Twice slower: warm p50, warm p95 and concurrent p95 regress; cold start cannot."""
    head = _slow(2.0)
    check = compare(head.samples, head.numbers, make_result(), DEFAULT_LIMIT, "base.json")
    assert [d.number for d in check.regressions] == ["warm_p50", "warm_p95", "concurrent_p95"]
    result = apply_plan_for(_slow(2.0), make_result())
    assert not result.verdict.passed
    assert result.verdict.reasons[0] == (
        "regression: warm p95 285 ms → 570 ms (+100 %), head / base 1.68 to 2.28 (one-sided "
        "99.9 % and 99.0 %, the test's)"
    )


def test_an_ungated_number_is_shown_not_held_to_a_regression() -> None:
    """Warm p50 has no budget by default: twice slower, it is shown beside its base but not
    tested, and only the gated numbers fail the run (it failed runs on its own before)."""
    result = apply_plan_for(_slow(2.0), make_result())
    assert result.baseline is not None
    p50 = next(d for d in result.baseline.deltas if d.number == "warm_p50")
    assert (p50.regressed, p50.outcome) == (False, None)
    assert p50.note == "not tested: it has no budget (only gated numbers are tested)"
    assert [d.number for d in result.baseline.regressions] == ["warm_p95", "concurrent_p95"]


def apply_plan_for(head: RunResult, base: RunResult) -> RunResult:
    return _judged(head, BaselinePlan("base.json", DEFAULT_LIMIT, {head.target: base}))


def _judged(head: RunResult, plan: BaselinePlan) -> RunResult:
    """`head`'s samples judged again, as a run does, with the plan's baseline."""
    return assess_run(
        make_target(head.target),
        Measurement(list(head.samples), started_at=head.started_at),
        finished_at=head.finished_at,
        stamp_source=StampSource.KERNEL,
        baseline=plan,
    )


def test_compare_within_limit_is_not_a_regression() -> None:
    """5 % slower on every call: beyond noise perhaps, but within the 10 % limit."""
    head = _slow(1.05)
    check = compare(head.samples, head.numbers, make_result(), DEFAULT_LIMIT, "base.json")
    assert check.regressions == ()


def test_missing_baseline_file_is_said(tmp_path: Path) -> None:
    """No file at the path: status missing, the verdict rests on the budget, the check says so."""
    plan = plan_baseline([make_target()], tmp_path / "none.json", DEFAULT_LIMIT)
    result = _judged(make_result(), plan)
    assert result.baseline is not None
    assert result.baseline.status == "missing"
    assert result.baseline.message == f"no baseline file at {tmp_path / 'none.json'} (a first run?)"
    assert result.verdict.passed


def test_other_configuration_is_refused(tmp_path: Path) -> None:
    """A baseline of another path is a ConfigError naming the setting and both values (the
    path: another origin alone is a preview of the same request, tests/test_preview_origin.py)."""
    path = tmp_path / "base.json"
    path.write_text(dump_runs([make_result(url="http://127.0.0.1:9/other")]))
    with pytest.raises(ConfigError) as caught:
        plan_baseline([make_target()], path, DEFAULT_LIMIT)
    assert "url: '/other' then, '/v1/chat/completions' now" in str(caught.value)


def test_a_changed_body_is_another_configuration() -> None:
    """Bodies are hidden in results, but their digests differ: a new body is not the same run."""
    base = make_target().redacted()
    head = make_target().model_copy(update={"body": SecretStr('{"messages": [1]}')})
    [(setting, then, now)] = config_differences(head.comparable(), base)
    assert setting == "body"
    assert str(then).startswith("*** (sha256 ")
    assert str(now).startswith("*** (sha256 ")
    assert then != now


def test_config_differences_ignore_budget_name_and_cost() -> None:
    """Budget, name, idle and cost do not change what was measured."""
    head = make_target("a").comparable()
    base = {**make_target("b").redacted(), "cost": "cheap", "idle": 60.0}
    assert config_differences(head, base) == []


def test_runs_round_trip_both_shapes() -> None:
    """One run is a RunResult document; several are {schema_version, runs}; both parse back."""
    one, two = make_result("a"), make_result("b")
    assert "numbers" in json.loads(dump_runs([one]))
    several = json.loads(dump_runs([one, two]))
    assert list(several) == ["schema_version", "runs"]
    assert parse_runs(dump_runs([one, two]), "x") == [one, two]
    assert parse_runs(dump_runs([one]), "x") == [one]


def test_parse_runs_refuses_other_json() -> None:
    """A JSON file that is not a result names the source and the first problem."""
    with pytest.raises(ConfigError, match=r"--baseline b.json: not a latency-gate result"):
        parse_runs('{"hello": 1}', "--baseline b.json")


# --- the CLI against demo endpoints ---------------------------------------------------------

SPEC = EndpointSpec(name="base", latency=0.04, jitter=0.05, seed=3, tokens=3, token_interval=0.001)
FEW = ["--warm-calls", "20", "--concurrency", "10", "--prompt", "Hi", "--no-floor"]


@pytest.fixture
def server() -> Iterator[DemoServer]:
    with serve_in_thread(SPEC) as servers:
        yield servers[0]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli.main, list(args), prog_name="latency-gate")


@pytest.mark.slow
def test_cli_unchanged_endpoint_passes(server: DemoServer, tmp_path: Path) -> None:
    """Against an unchanged endpoint the baseline run passes and says nothing regressed. (A
    limit of 50 %: one earlier run on a busy machine moves by more than 10 % from load alone,
    which is what this comparison cannot see, docs/statistics.md table j.)"""
    base = tmp_path / "base.json"
    first = invoke("probe", server.url, *FEW, "--json", str(base))
    assert first.exit_code == 0, first.output
    again = invoke("probe", server.url, *FEW, "--baseline", str(base), "--max-regression", "50%")
    assert again.exit_code == 0, again.output
    assert "baseline: no number regressed beyond noise and the 50 % limit" in again.output


@pytest.mark.slow
def test_cli_twice_slower_fails_naming_the_regression(server: DemoServer, tmp_path: Path) -> None:
    """The same endpoint answering twice as slowly: exit 1, warm p95's regression named."""
    base = tmp_path / "base.json"
    assert invoke("probe", server.url, *FEW, "--json", str(base)).exit_code == 0
    server.spec = SPEC.model_copy(update={"latency": SPEC.latency * 2})
    slower = invoke(
        "probe", server.url, *FEW, "--baseline", str(base), "--json", str(tmp_path / "h")
    )
    assert slower.exit_code == 1, slower.output
    assert slower.stdout.startswith("FAIL: regression: warm p95 ")
    head = RunResult.model_validate_json((tmp_path / "h").read_text())
    assert head.baseline is not None
    assert "warm_p95" in {d.number for d in head.baseline.regressions}


@pytest.mark.slow
def test_cli_missing_baseline_said_plainly(server: DemoServer, tmp_path: Path) -> None:
    """No file at --baseline: the run passes on its budget and says no baseline was checked."""
    done = invoke("probe", server.url, *FEW, "--baseline", str(tmp_path / "none.json"))
    assert done.exit_code == 0, done.output
    assert f"no baseline: no baseline file at {tmp_path / 'none.json'} (a first run?)" in " ".join(
        done.output.split()
    )


def test_cli_other_configuration_exits_2(server: DemoServer, tmp_path: Path) -> None:
    """A baseline measured with other settings is refused before anything is measured."""
    base = tmp_path / "base.json"
    base.write_text(dump_runs([make_result(samples=healthy_samples())]))
    done = invoke("probe", server.url, *FEW, "--baseline", str(base))
    assert done.exit_code == 2
    assert "measured a different configuration (prompt: None then, 'Hi' now; " in done.output
    assert server.records == []


def test_cli_max_regression_needs_baseline(server: DemoServer) -> None:
    """--max-regression alone is bad input (exit 2), not silently ignored."""
    done = invoke("probe", server.url, *FEW, "--max-regression", "20%")
    assert done.exit_code == 2
    assert "--max-regression: needs --baseline, --baseline-url or --history to compare with" in (
        done.output
    )


def test_summary_shows_base_head_delta_and_the_test() -> None:
    """The job summary names the test and shows base, head, delta and the ratio's interval for
    every number."""
    from latency_gate.report.markdown import render_summary

    text = render_summary([apply_plan_for(_slow(2.0), make_result())])
    assert "### Against the baseline\n" in text
    assert (
        "Test: exact permutation test of each percentile at the limit (the exact conditional "
        "test of two counts for the error rate), one-sided alpha 0.02 for a regression and 0.1 "
        "for 'not regressed', spent over the looks."
    ) in text
    # Each value keeps its unit on its line (no-break spaces): the result column is wide.
    assert (
        "| warm p95 | 285\u00a0ms | 570\u00a0ms | +285\u00a0ms\u00a0(+100\u00a0%) | x1.68 to x2.28 "
        "| ❌ regressed |"
    ) in text
    assert (
        "| cold start | 420\u00a0ms | 840\u00a0ms | +420\u00a0ms\u00a0(+100\u00a0%) | — | " in text
    )
    assert (
        "- regression: warm p95 285 ms → 570 ms (+100 %), head / base 1.68 to 2.28 (one-sided "
        "99.9 % and 99.0 %, the test's)" in text
    )
