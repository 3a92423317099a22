"""The capacity's settings at every edge: `--capacity`, `--capacity-max`, `--min-capacity`, the
action's inputs and its `capacity` output, a targets file's keys, `max-calls: auto` sized for the
search, and the settings no search can honour refused with exit 2 before any call."""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT
from fake_github import parse_github_output

from latency_gate import action, cli
from latency_gate.config import build_target
from latency_gate.config.plan.feasible import plan_warnings
from latency_gate.config.plan.needs import effective_max_calls, needs_of
from latency_gate.demo import DemoServer, EndpointSpec, serve_in_thread
from latency_gate.errors import ConfigError

FAST = EndpointSpec(latency=0.01, tokens=1, token_interval=0, stream_format="raw")


@pytest.fixture(scope="module")
def server() -> Iterator[DemoServer]:
    with serve_in_thread(FAST) as (server,):
        yield server


def _target(**raw: str) -> dict[str, str | list[str] | None]:
    return {"url": "http://127.0.0.1:9/", **raw}


# --- the settings ----------------------------------------------------------------------------


def test_off_by_default_and_min_capacity_turns_it_on() -> None:
    """No search unless asked; a minimum to hold is a search to make, up to 64 by default."""
    plain = build_target(_target())
    assert (plain.capacity, plain.capacity_max, plain.min_capacity) == (False, 64, None)
    gated = build_target(_target(**{"min-capacity": "8"}))
    assert (gated.capacity, gated.capacity_max, gated.min_capacity) == (True, 64, 8)
    assert build_target(_target(**{"min-capacity": "off"})).min_capacity is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"min-capacity": "80"},
            "invalid input min-capacity: 80 is above capacity-max 64, the most calls at once "
            "the search tries: raise capacity-max or lower min-capacity",
        ),
        (
            {"capacity": "true", "concurrency": "100"},
            "invalid input capacity-max: 64 is below concurrency 100, the level the search "
            "starts from: raise capacity-max or lower concurrency",
        ),
        (
            {"capacity": "true", "max-concurrent-p95": "off"},
            "invalid input capacity: the capacity is the most calls at once whose concurrent "
            "p95 holds its budget, and max-concurrent-p95 is off: give it a budget",
        ),
        (
            {"min-capacity": "4", "max-concurrent-p95": "off"},
            "invalid input min-capacity: the capacity is the most calls at once whose "
            "concurrent p95 holds its budget, and max-concurrent-p95 is off: give it a budget",
        ),
        ({"capacity-max": "0"}, "invalid input capacity-max: expected a whole number of at least"),
        ({"min-capacity": "many"}, "invalid input min-capacity: expected a whole number"),
        ({"capacity": "maybe"}, "invalid input capacity: expected true or false"),
    ],
)
def test_settings_no_search_can_honour_are_refused(raw: dict[str, str], message: str) -> None:
    """Each names its input and what to do."""
    with pytest.raises(ConfigError) as caught:
        build_target(_target(**raw))
    assert str(caught.value).startswith(message)


def test_auto_max_calls_adds_the_search_s_worst_case() -> None:
    """With the default budget, 500 calls for the checks and 2,790 more at most for the search
    from 10 at once up to 64 (every level to its cap of 130 calls, down its costliest sequence
    of outcomes, the run's own level included), said."""
    target = build_target(_target(capacity="true"))
    needs = needs_of(target)
    assert (needs.capacity, needs.design) == (2790, 3290)
    assert effective_max_calls(target) == 3290
    assert plan_warnings(target) == [
        "max-calls sized to 3,290: 500 for the checks and up to 2,790 for the capacity search"
    ]
    assert effective_max_calls(build_target(_target())) == 500


def test_a_cap_that_may_stop_the_search_is_said() -> None:
    """A given max-calls under what the search can take: the report will say "at least"."""
    target = build_target(_target(capacity="true", **{"max-calls": "600"}))
    assert effective_max_calls(target) == 600
    assert plan_warnings(target) == [
        "max-calls 600 may stop the capacity search before it ends (after the checks' 500 "
        "calls it can take up to 2,790): its figure is then the highest level that held, said as "
        "'at least'"
    ]


def test_the_capacity_settings_do_not_keep_a_baseline_from_comparing() -> None:
    """The search runs after the looks on calls of its own: a run with it compares with one
    without it."""
    with_it = build_target(_target(**{"min-capacity": "4", "capacity-max": "32"}))
    assert with_it.comparable() == build_target(_target()).comparable()


def test_a_targets_file_takes_the_keys(tmp_path: Path) -> None:
    """capacity, capacity-max and min-capacity in a targets file, a boolean and counts."""
    path = tmp_path / "targets.yml"
    path.write_text(
        "targets:\n"
        "  - name: a\n    url: http://127.0.0.1:9/\n    capacity: true\n    capacity-max: 16\n"
        "  - name: b\n    url: http://127.0.0.1:9/\n    min-capacity: 4\n",
        encoding="utf-8",
    )
    from latency_gate.config.targets_file import load_targets

    a, b = load_targets(path, given={}, environ={})
    assert (a.capacity, a.capacity_max, a.min_capacity) == (True, 16, None)
    assert (b.capacity, b.capacity_max, b.min_capacity) == (True, 64, 4)


# --- the CLI ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--min-capacity", "100"],
            "Error: invalid input --min-capacity: 100 is above capacity-max 64, the most calls "
            "at once the search tries: raise capacity-max or lower min-capacity\n",
        ),
        (
            ["--capacity", "--capacity-max", "4"],
            "Error: invalid input --capacity-max: 4 is below concurrency 10, the level the "
            "search starts from: raise capacity-max or lower concurrency\n",
        ),
        (
            ["--capacity", "--max-concurrent-p95", "off"],
            "Error: invalid input --capacity: the capacity is the most calls at once whose "
            "concurrent p95 holds its budget, and max-concurrent-p95 is off: give it a budget\n",
        ),
    ],
)
def test_cli_exits_2_before_any_call(server: DemoServer, args: list[str], message: str) -> None:
    """One message naming the option, exit 2, and the endpoint never asked."""
    before = len(server.records)
    result = CliRunner().invoke(cli.main, ["probe", server.url, *args])
    assert result.exit_code == 2, result.output
    assert result.stderr == message
    assert len(server.records) == before


@pytest.mark.slow
def test_cli_writes_the_capacity_in_the_json_and_fails_under_the_minimum(
    server: DemoServer, tmp_path: Path
) -> None:
    """--capacity-max 4 from 2 at once: found 4; --min-capacity 4 passes with it. The JSON
    holds the levels with their own calls."""
    out = tmp_path / "result.json"
    args = [
        "probe",
        server.url,
        "--no-floor",
        "--warm-calls",
        "3",
        "--concurrency",
        "2",
        "--max-error-rate",
        "off",
        "--capacity-max",
        "4",
        "--min-capacity",
        "4",
        "--json",
        str(out),
    ]
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["capacity"]["found"] == 4
    assert [level["concurrency"] for level in data["capacity"]["levels"]] == [2, 4]
    levels = data["capacity"]["levels"]
    assert sum(len(level["samples"]) for level in levels) == data["capacity"]["calls"]
    assert "capacity: holds concurrent p95 ≤ 3.00 s up to 4 calls at once, the most searched" in (
        " ".join(result.stdout.split())
    )


def _cli(*args: str, preexec: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LATENCY_GATE_")}
    environ["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.run(
        [sys.executable, "-m", "latency_gate", *args],
        env=environ,
        preexec_fn=preexec,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
        check=False,
    )


def test_capacity_max_over_the_open_files_limit_exits_2(server: DemoServer) -> None:
    """RLIMIT_NOFILE 256: the search's largest burst (capacity-max 1000) cannot fit: named,
    before a call, although --concurrency itself would."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    before = len(server.records)
    done = _cli("probe", server.url, "--capacity", "--capacity-max", "1000", preexec=limit)
    assert done.returncode == 2, done.stdout
    assert done.stdout == (
        "Error: invalid input --capacity-max: 1000 concurrent calls need about 1064 open "
        "files, but this machine allows 256 (ulimit -n); lower it, or raise the limit\n"
    )
    assert len(server.records) == before


# --- the action ------------------------------------------------------------------------------


def _action(
    server: DemoServer, tmp_path: Path, inputs: dict[str, str]
) -> tuple[int, str, dict[str, str]]:
    """The action on a push event with these inputs: (exit code, log, outputs)."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main"}))
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    summary.touch()
    output.touch()
    given = {
        "url": server.url,
        "warm-calls": "3",
        "concurrency": "2",
        "max-error-rate": "off",
        "comment": "never",
        # action.yml's defaults, as the runner passes them
        "capacity": "false",
        "capacity-max": "64",
        "min-capacity": "",
        **inputs,
    }
    env = {f"INPUT_{k.upper()}": v for k, v in given.items()}
    env |= {
        "GITHUB_EVENT_NAME": "push",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "octo-org/octo-repo",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_WORKSPACE": str(tmp_path),
    }
    out = io.StringIO()
    code = action.main(env, out=out)
    return code, out.getvalue(), parse_github_output(output.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_action_output_capacity(server: DemoServer, tmp_path: Path) -> None:
    """capacity: true writes the capacity found as an output; without it the output is empty."""
    code, log, outputs = _action(server, tmp_path, {"capacity": "true", "capacity-max": "4"})
    assert code == 0, log
    assert outputs["capacity"] == "4"
    plain = tmp_path / "plain"
    plain.mkdir()
    code, log, outputs = _action(server, plain, {})
    assert code == 0, log
    assert outputs["capacity"] == ""


def test_action_min_capacity_over_capacity_max_exits_2(server: DemoServer, tmp_path: Path) -> None:
    """min-capacity 100 over the default capacity-max: one ::error naming the input, nothing
    measured."""
    before = len(server.records)
    code, log, outputs = _action(server, tmp_path, {"min-capacity": "100"})
    assert code == 2
    errors = [line for line in log.splitlines() if line.startswith("::error")]
    assert errors == [
        "::error title=latency-gate%3A invalid input::invalid input min-capacity: 100 is above "
        "capacity-max 64, the most calls at once the search tries: raise capacity-max or lower "
        "min-capacity"
    ]
    assert outputs == {}
    assert len(server.records) == before


def test_the_floors_least_calls_are_the_level_tests_own() -> None:
    """The fewest calls a clean level takes to hold (what `search_least_calls` counts) are the
    ones the level's hold test passes on: one call fewer leaves it undecided."""
    from latency_gate.assess.load.levels import HOLD_TEST
    from latency_gate.assess.maths.sequential import Decision
    from latency_gate.config.plan.search import search_least_calls

    calls, level = search_least_calls(1, 2, 64)
    assert level == 2
    clean = calls  # level 2: bursts of 2 until the hold test passes
    assert HOLD_TEST.decide(0, clean) is Decision.PASS
    assert HOLD_TEST.decide(0, clean - 2) is not Decision.PASS
